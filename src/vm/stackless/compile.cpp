// The stackless VM's compiler: turns one IR function (with its inferred
// types) into the Func the interpreter runs: leaf layout, positions, Ops
// with their operand sources, constants stored once, and which variables
// are the same in every lane of a frame.
#include <map>

#include "ir/tail_call.h"
#include "passes/sharing.h"
#include "vm/literal.h"
#include "vm/slots.h"
#include "vm/stackless/stackless.h"

namespace ab::stackless {
namespace {

size_t count_leaves(const Type& t) {
  if (!t.is_tuple) return 1;
  size_t n = 0;
  for (const auto& e : t.elems) n += count_leaves(e);
  return n;
}

}  // namespace

void StacklessVM::compile(Func& cf, const Function& f, const FunctionTypes* ft,
                          const TypeInfo& types, uint32_t base) {
  cf.f = &f;
  cf.block_base = base;
  // Variables: a slot each, holding its tensor leaves (vm/slots); the
  // results' leaves follow them.
  std::vector<std::string> param_names;
  for (const auto& p : f.params) param_names.push_back(p.name.name);
  const Slots slots = compile_slots(f.blocks, param_names, ft ? *ft : FunctionTypes{});
  cf.leaf_types = slots.leaf_types;
  auto slot = [&](const std::string& name) -> uint32_t { return slots.at(name); };
  const std::vector<uint32_t>& slot_first = slots.first_leaf;
  const std::vector<uint32_t>& slot_count = slots.leaf_count;
  const std::vector<Type>& slot_type = slots.types;
  auto fallback = known_or_default;
  cf.var_leaves = static_cast<uint32_t>(cf.leaf_types.size());
  if (ft)
    for (const auto& r : ft->results) fallback(r).leaves(cf.leaf_types);
  cf.result_leaves = static_cast<uint32_t>(cf.leaf_types.size()) - cf.var_leaves;

  // Frame layout: leaves by decreasing dtype size, so that offset * n is
  // aligned for every leaf whatever n is.
  size_t L = cf.leaf_types.size();
  cf.leaf_bytes.resize(L);
  cf.leaf_offset.resize(L);
  std::vector<uint32_t> order(L);
  for (size_t l = 0; l < L; ++l) {
    order[l] = static_cast<uint32_t>(l);
    cf.leaf_bytes[l] =
        static_cast<uint32_t>(cf.leaf_types[l].num_elements() * dtype_size(cf.leaf_types[l].dtype));
  }
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return dtype_size(cf.leaf_types[a].dtype) > dtype_size(cf.leaf_types[b].dtype);
  });
  for (uint32_t l : order) {
    cf.leaf_offset[l] = cf.lane_bytes;
    cf.lane_bytes += cf.leaf_bytes[l];
  }

  for (const auto& p : f.params) {
    uint32_t s = slot(p.name.name);
    for (uint32_t j = 0; j < slot_count[s]; ++j) cf.param_leaves.push_back(slot_first[s] + j);
  }

  // Positions: each block's start, and the instruction after each call.
  std::map<std::string, uint32_t> label_of;
  for (size_t bi = 0; bi < f.blocks.size(); ++bi)
    label_of.emplace(f.blocks[bi].label.name, static_cast<uint32_t>(bi));
  std::vector<std::vector<uint32_t>> resume_at(f.blocks.size());
  for (uint32_t bi = 0; bi < f.blocks.size(); ++bi) {
    const Block& b = f.blocks[bi];
    cf.block_pos.push_back(static_cast<uint32_t>(cf.positions.size()));
    resume_at[bi].assign(b.instrs.size(), 0);
    uint32_t start = 0;
    for (uint32_t i = 0; i <= b.instrs.size(); ++i) {
      bool is_call = i < b.instrs.size() && b.instrs[i].kind == InstrKind::Call;
      if (!is_call && i < b.instrs.size()) continue;
      Position pos;
      pos.block = bi;
      pos.start = start;
      pos.end = i;
      pos.ends_in_call = is_call;
      for (uint32_t k = start; k < i; ++k) pos.prims += b.instrs[k].kind == InstrKind::Prim;
      cf.positions.push_back(pos);
      if (is_call) resume_at[bi][i] = static_cast<uint32_t>(cf.positions.size());
      start = i + 1;
    }
  }

  // Variables that hold one value for the whole frame (passes/sharing, with
  // the parameters as roots: a parameter is shared in a frame when the
  // caller passed a shared value). Which ones qualify is found here; whether
  // the operands are shared is seen when the assignment runs. A tail
  // self-call reuses the frame and rebinds the parameters of the lanes that
  // take it (stackless/calls.cpp), so a parameter that some tail self-call
  // passes anything but itself (in its own position) changes during the
  // frame: it is no root, and nothing computed from it is computed once.
  std::vector<bool> roots(param_names.size(), true);
  for (size_t bi = 0; bi < f.blocks.size(); ++bi)
    for (size_t ii = 0; ii < f.blocks[bi].instrs.size(); ++ii) {
      if (!is_tail_self_call(f, bi, ii)) continue;
      const std::vector<Operand>& args = f.blocks[bi].instrs[ii].args;
      for (size_t j = 0; j < roots.size(); ++j)
        if (j >= args.size() || !args[j].is_var || args[j].name != param_names[j])
          roots[j] = false;
    }
  SharingInfo sharing_info = sharing(f.blocks, param_names, roots);

  // Operand leaves: a variable's leaves, or a literal's constant.
  auto operand_type = [&](const Operand& o, const std::optional<Type>& lit_type) {
    return o.is_var ? slot_type[slot(o.name)] : fallback(lit_type);
  };
  auto add_leaves = [&](const Operand& o, const std::optional<Type>& lit_type,
                        std::vector<Source>& out) {
    if (o.is_var) {
      uint32_t s = slot(o.name);
      for (uint32_t j = 0; j < slot_count[s]; ++j)
        out.push_back(Source{static_cast<int32_t>(slot_first[s] + j)});
      return;
    }
    cf.constants.push_back(literal_constant(o.lit, lit_type));
    const Value& v = cf.constants.back();
    out.push_back(Source{-1, v.data.data(), &v.type});
  };
  // The reference's binding of a value to a pattern: a name takes the whole
  // value; a tuple pattern binds its elements to the value's elements.
  auto bind = [&](auto& self, const Pattern& p, const Type& vt, const Source* src,
                  std::vector<Move>& out) -> void {
    if (!p.is_tuple) {
      uint32_t s = slot(p.name);
      size_t k = std::min<size_t>(slot_count[s], count_leaves(vt));
      for (size_t j = 0; j < k; ++j)
        out.push_back(Move{static_cast<uint32_t>(slot_first[s] + j), src[j]});
      return;
    }
    if (!vt.is_tuple) return;
    size_t off = 0;
    for (size_t i = 0; i < p.elems.size() && i < vt.elems.size(); ++i) {
      self(self, p.elems[i], vt.elems[i], src + off, out);
      off += count_leaves(vt.elems[i]);
    }
  };
  auto lit_type = [&](size_t bi, size_t ii, size_t ai) -> std::optional<Type> {
    return ft ? ab::operand_type(*ft, bi, ii, ai) : std::nullopt;
  };

  cf.ops.resize(f.blocks.size());
  cf.terms.resize(f.blocks.size());
  for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
    const Block& b = f.blocks[bi];
    for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
      const Instr& in = b.instrs[ii];
      Op op;
      op.ir = &in;
      op.kind = in.kind;
      std::vector<const Pattern*> names;
      in.out.names(names);
      op.invariant = in.kind != InstrKind::Call && !names.empty();
      for (const Pattern* p : names) op.invariant = op.invariant && sharing_info.shared(p->name);
      std::vector<Source> srcs;
      for (size_t ai = 0; ai < in.args.size(); ++ai)
        add_leaves(in.args[ai], lit_type(bi, ii, ai), srcs);
      if (in.kind == InstrKind::Call) {
        op.callee = func_index(in.callee.name);
        op.call_args = std::move(srcs);
        op.resume = resume_at[bi][ii];
        op.tail = is_tail_self_call(f, bi, ii);
        std::vector<Type> rts;
        auto it = types.funcs.find(in.callee.name);
        if (it != types.funcs.end())
          for (const auto& r : it->second.results) rts.push_back(fallback(r));
        Type vt = rts.size() == 1 ? rts[0] : Type::tuple(rts);
        std::vector<Source> result_index;
        for (size_t r = 0; r < count_leaves(vt); ++r)
          result_index.push_back(Source{static_cast<int32_t>(r)});
        bool discarded = in.out.is_tuple && in.out.elems.empty();
        if (!discarded && !rts.empty()) bind(bind, in.out, vt, result_index.data(), op.results);
      } else if (in.kind == InstrKind::Copy ||
                 (in.kind == InstrKind::Prim && in.prim == PrimId::Tuple)) {
        op.moves_only = true;
        Type vt;
        if (in.kind == InstrKind::Copy) {
          vt = operand_type(in.args[0], lit_type(bi, ii, 0));
        } else {
          std::vector<Type> elems;
          for (size_t ai = 0; ai < in.args.size(); ++ai)
            elems.push_back(operand_type(in.args[ai], lit_type(bi, ii, ai)));
          vt = Type::tuple(std::move(elems));
        }
        std::vector<Move> moves;
        bind(bind, in.out, vt, srcs.data(), moves);
        for (const Move& mv : moves)
          if (mv.src.leaf != static_cast<int32_t>(mv.dest))
            op.moves.push_back(mv);  // x = x moves nothing
        for (const Move& a : op.moves)
          for (const Move& b : op.moves)
            if (&a != &b && b.src.leaf == static_cast<int32_t>(a.dest)) op.through_temp = true;
      } else if (in.kind == InstrKind::Prim) {
        op.kernel = kernel_for(in.prim);
        op.attrs = resolve_attrs(in);
        op.args = std::move(srcs);
        for (const Pattern* p : names) {
          uint32_t s = slot(p->name);
          for (uint32_t j = 0; j < slot_count[s]; ++j) op.outs.push_back(slot_first[s] + j);
        }
      }
      cf.ops[bi].push_back(std::move(op));
    }
    const Terminator& t = b.term;
    Term& term = cf.terms[bi];
    term.kind = t.kind;
    auto target = [&](const NameRef& label) {
      auto it = label_of.find(label.name);
      return cf.block_pos[it == label_of.end() ? 0 : it->second];
    };
    if (t.kind == TermKind::Branch) {
      uint32_t s = slot(t.cond.name);
      term.cond = static_cast<int32_t>(slot_first[s]);
      term.on_true = target(t.target);
      term.on_false = target(t.target2);
    } else if (t.kind == TermKind::Goto) {
      term.on_true = target(t.target);
    } else if (t.kind == TermKind::Return) {
      for (size_t vi = 0; vi < t.values.size(); ++vi) {
        std::optional<Type> rt;
        if (ft && bi < ft->return_types.size() && vi < ft->return_types[bi].size())
          rt = ft->return_types[bi][vi];
        add_leaves(t.values[vi], rt, term.values);
      }
      if (term.values.size() > cf.result_leaves) term.values.resize(cf.result_leaves);
    }
  }

  // The parameter leaves no instruction writes (a primitive's result, a
  // copy, a call's result) and no tail self-call rebinds (roots above): the
  // entry frame may read such a parameter in the caller's input array.
  std::vector<uint8_t> written(L, 0);
  for (const auto& ops : cf.ops)
    for (const Op& op : ops) {
      for (uint32_t l : op.outs) written[l] = 1;
      for (const Move& mv : op.moves) written[mv.dest] = 1;
      for (const Move& mv : op.results) written[mv.dest] = 1;
    }
  for (size_t j = 0; j < f.params.size(); ++j) {
    const uint32_t s = slot(f.params[j].name.name);
    for (uint32_t k = 0; k < slot_count[s]; ++k)
      cf.param_read_only.push_back(roots[j] && !written[slot_first[s] + k]);
  }
}

}  // namespace ab::stackless
