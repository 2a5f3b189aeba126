// IR to ops: each lowered block's instructions become the stack VM's ops
// (kernel calls, copies, pops) on leaves and constants, with the block's
// terminator, loop shape and fused compare-and-branch.
#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

void StackVM::flatten(const Pattern& p, std::vector<Out>& out) const {
  if (p.is_tuple) {
    for (const auto& e : p.elems) flatten(e, out);
    return;
  }
  for (int32_t l : var_leaves_.at(p.name)) out.push_back({l, p.in_place});
}

Ref StackVM::constant(const Literal& lit, const std::optional<Type>& t) {
  Value v = literal_constant(lit, t);
  constants_.push_back({v.type, v.data.buffer()});
  return Ref{-1, static_cast<int32_t>(constants_.size() - 1)};
}

void StackVM::compile(const FunctionTypes& types) {
  for (size_t bi = 0; bi < p_.blocks.size(); ++bi) {
    const Block& b = p_.blocks[bi];
    CBlock cb;
    for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
      const Instr& in = b.instrs[ii];
      Op op;
      op.loc = in.kind == InstrKind::Prim ? in.callee.loc : in.loc;
      if (in.kind == InstrKind::Pop) {
        op.kind = Op::Kind::Pop;
        for (const auto& n : in.popped)
          for (int32_t l : var_leaves_.at(n.name))
            if (leaves_[l].full()) op.pops.push_back(l);
        if (!op.pops.empty()) cb.ops.push_back(std::move(op));
        continue;
      }
      for (size_t a = 0; a < in.args.size(); ++a) {
        const Operand& o = in.args[a];
        if (o.is_var) {
          for (int32_t l : var_leaves_.at(o.name)) op.args.push_back(Ref{l, -1});
        } else {
          op.args.push_back(constant(o.lit, types.operand_types[bi][ii][a]));
        }
      }
      flatten(in.out, op.outs);
      bool is_kernel = in.kind == InstrKind::Prim && in.prim != PrimId::Tuple;
      op.kind = is_kernel ? Op::Kind::Kernel : Op::Kind::Copy;
      if (is_kernel) {
        op.fn = kernel_for(in.prim);
        op.prim = in.prim;
        op.attrs = resolve_attrs(in);
      }
      if (in.kind == InstrKind::Prim) ++cb.prims;
      if (in.kind == InstrKind::Copy && same_storage(op)) continue;  // coalesced: no work
      op.shared = !op.outs.empty();
      for (const auto& o : op.outs) op.shared = op.shared && leaves_[o.leaf].shared;
      cb.ops.push_back(std::move(op));
    }
    fold_set_copies(cb);
    const Terminator& t = b.term;
    cb.term = t.kind;
    cb.term_loc = t.loc;
    if (t.kind == TermKind::Branch) {
      cb.cond = var_leaves_.at(t.cond.name).front();
      cb.t1 = label_index_.at(t.target.name);
      cb.t2 = label_index_.at(t.target2.name);
      // A loop block: with the persistent schedule its chunk stays until it leaves.
      if ((cb.t1 == bi) != (cb.t2 == bi) && !leaves_[cb.cond].shared) cb.self = cb.t1 == bi ? 1 : 0;
      if (cb.self < 0) fuse_compare(cb);
    } else if (t.kind == TermKind::Goto) {
      cb.t1 = label_index_.at(t.target.name);
    } else if (t.kind == TermKind::PushGoto) {
      cb.t1 = label_index_.at(t.target.name);   // where to return
      cb.t2 = label_index_.at(t.target2.name);  // the callee
    }
    blocks_.push_back(std::move(cb));
  }
}

// A copy whose every value already lies where it goes (its variables share
// storage). Not a copy into a full variable: that pushes (`x = x` saves x).
bool StackVM::same_storage(const Op& op) const {
  if (op.args.size() != op.outs.size()) return false;
  for (size_t k = 0; k < op.args.size(); ++k)
    if (op.args[k].leaf < 0 || op.args[k].leaf != op.outs[k].leaf ||
        leaves_[op.outs[k].leaf].full())
      return false;
  return true;
}

// `t = set(x, i.., v)`, then ops that touch neither t nor x, then `x = t`,
// where t is a temporary that nothing after reads: `x = set(x, i.., v)`, in
// place (the gradient's accumulation into the adjoint of an indexed tensor,
// whose new version goes back into the adjoint's variable). The same values,
// without writing the tensor whole: compiled code sets the element where it
// lies, so a block where some check may fail still compiles whole.
void StackVM::fold_set_copies(CBlock& cb) const {
  auto touches = [](const Op& o, int32_t l) {
    for (const Ref& a : o.args)
      if (a.leaf == l) return true;
    for (const Out& w : o.outs)
      if (w.leaf == l) return true;
    for (int32_t p : o.pops)
      if (p == l) return true;
    return false;
  };
  for (size_t i = 0; i < cb.ops.size(); ++i) {
    Op& set = cb.ops[i];
    if (set.kind != Op::Kind::Kernel || set.prim != PrimId::Set || set.shared ||
        set.outs.size() != 1 || set.args.size() < 3)
      continue;
    const int32_t t = set.outs[0].leaf, x = set.args[0].leaf;
    if (x < 0 || x == t || !leaves_[t].in_scratch() || leaves_[x].shared ||
        !(leaves_[x].type == leaves_[t].type))
      continue;
    bool ok = true;
    for (size_t a = 1; a < set.args.size(); ++a) ok = ok && set.args[a].leaf != x;
    size_t j = i + 1;
    for (; ok && j < cb.ops.size(); ++j) {
      const Op& o = cb.ops[j];
      if (o.kind == Op::Kind::Copy && o.args.size() == 1 && o.outs.size() == 1 &&
          o.args[0].leaf == t && o.outs[0].leaf == x)
        break;
      ok = !touches(o, t) && !touches(o, x);
    }
    if (!ok || j >= cb.ops.size()) continue;
    for (size_t k = j + 1; ok && k < cb.ops.size(); ++k) ok = !touches(cb.ops[k], t);
    if (!ok) continue;
    set.outs[0] = cb.ops[j].outs[0];
    cb.ops.erase(cb.ops.begin() + static_cast<long>(j));
  }
}

// Whether r is an i64 scalar read from each thread's own variable or a
// literal: what a fused compare reads.
bool StackVM::cmp_operand(const Ref& r, bool allow_constant) const {
  if (r.constant >= 0) {
    const Constant& c = constants_[r.constant];
    return allow_constant && c.type.dtype == DType::I64 && c.type.shape.empty();
  }
  const Leaf& l = leaves_[r.leaf];
  return !l.shared && !l.in_scratch() && l.type.dtype == DType::I64 && l.type.shape.empty();
}

void StackVM::fuse_compare(CBlock& cb) {
  if (cb.ops.empty()) return;
  const Op& op = cb.ops.back();
  const Leaf& c = leaves_[cb.cond];
  bool is_cmp = op.prim == PrimId::Eq || op.prim == PrimId::Ne || op.prim == PrimId::Lt ||
                op.prim == PrimId::Le || op.prim == PrimId::Gt || op.prim == PrimId::Ge;
  if (op.kind != Op::Kind::Kernel || !is_cmp || op.shared || op.outs.size() != 1 ||
      op.args.size() != 2 || op.outs[0].leaf != cb.cond || c.shared || !c.in_scratch())
    return;
  if (!cmp_operand(op.args[0], false) || !cmp_operand(op.args[1], true)) return;
  cb.fused_cmp = true;
  cb.cmp = op.prim;
  cb.cmp_a = op.args[0];
  cb.cmp_b = op.args[1];
}

}  // namespace ab::stack
