// Type inference's rules: what each instruction (copy, call, primitive) and
// terminator (branch, return) demands of the types it reads and writes,
// with the primitives' dtype groups from ops.def, and the messages that
// explain a conflict. Part of the Inference class (passes/inference.h).
#include <cmath>

#include "parse/syntax.h"
#include "passes/inference.h"
#include "support/strings.h"

namespace ab::infer {
namespace {

// ops.def's Dtypes column of the primitive, as groups (nargs: the operands
// of this use, for the groups over every operand).
std::vector<Group> groups_of(PrimId op, size_t nargs) {
  const auto weak_float = std::make_pair(DType::F64, Strength::Weak);
  const auto weak_int = std::make_pair(DType::I64, Strength::Weak);
  const auto strong_bool = std::make_pair(DType::Bool, Strength::Strong);
  const auto strong_i64 = std::make_pair(DType::I64, Strength::Strong);
  switch (prim_info(op).dtypes) {
    case DtypeGroups::SameDest01:
      return {{{0, 1}, true, std::nullopt, nullptr}};
    case DtypeGroups::SameDest0:
      return {{{0}, true, std::nullopt, nullptr}};
    case DtypeGroups::FloatDest0:
      return {{{0}, true, weak_float, "a float operand"}};
    case DtypeGroups::Float0:
      return {{{0}, false, weak_float, "a float operand"}};
    case DtypeGroups::Same01:
      return {{{0, 1}, false, std::nullopt, nullptr}};
    case DtypeGroups::Bool01:
      return {{{0, 1}, false, strong_bool, "bool operands"}};
    case DtypeGroups::Bool0:
      return {{{0}, false, strong_bool, "a bool operand"}};
    case DtypeGroups::AllDest: {
      Group g{{}, true, std::nullopt, nullptr};
      for (size_t i = 0; i < nargs; ++i) g.operands.push_back(static_cast<int>(i));
      return {g};
    }
    case DtypeGroups::Select:
      return {{{0}, false, strong_bool, "a bool condition"}, {{1, 2}, true, std::nullopt, nullptr}};
    case DtypeGroups::Get:
    case DtypeGroups::Set: {
      // x (and set's value, the last operand) with the result; each index
      // on its own (get(x, i, j) with i an i32 and j an i64).
      const bool set = prim_info(op).dtypes == DtypeGroups::Set;
      std::vector<Group> gs;
      Group x{{0}, true, std::nullopt, nullptr};
      if (set && nargs >= 3) x.operands.push_back(static_cast<int>(nargs - 1));
      gs.push_back(x);
      const size_t last = set ? nargs - 1 : nargs;
      for (size_t i = 1; i < std::max<size_t>(last, 2); ++i)
        gs.push_back({{static_cast<int>(i)}, false, weak_int, "an integer index"});
      return gs;
    }
    case DtypeGroups::Key0:
      return {{{0}, false, strong_i64, "an i64 key"}};
    case DtypeGroups::KeyFloat1:
      return {{{0}, false, strong_i64, "an i64 key"}, {{1}, false, weak_float, "a float operand"}};
    case DtypeGroups::KeyFloatDest1:
      return {{{0}, false, strong_i64, "an i64 key"}, {{1}, true, weak_float, "a float operand"}};
    case DtypeGroups::KeyInt1:
      return {{{0}, false, strong_i64, "an i64 key"}, {{1}, false, weak_int, "an integer"}};
    case DtypeGroups::FloatDest01:
      return {{{0, 1}, true, weak_float, "float operands"}};
    case DtypeGroups::None:
      return {};
  }
  return {};
}

}  // namespace

// How a message names an operand: the variable, or for a temporary of the
// front end the sub-expression it holds, as written.
std::string Inference::var_or_value(const Operand& o) const {
  if (!o.is_var) return "a literal";
  if (syntax::is_frontend_name(o.name) && o.loc.known() && m_.source &&
      o.loc.line <= m_.source->line_count()) {
    std::string_view line = m_.source->line(o.loc.line);
    if (o.loc.col >= 1 && o.loc.col - 1 < line.size())
      return "'" + std::string(line.substr(o.loc.col - 1, o.loc.len)) + "'";
  }
  return "'" + o.name + "'";
}

// "'t' is f64 because of line 14: t = t + 1.0", for a variable whose dtype
// an instruction fixed.
void Inference::cause(int node, const Operand* o) {
  if (node < 0 || !o || !o->is_var || syntax::is_frontend_name(o->name)) return;
  const SourceLoc& at = origin_loc_[static_cast<size_t>(node)];
  if (!at.known() || !m_.source || at.line > m_.source->line_count()) return;
  std::string_view line = m_.source->line(at.line);
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  const IType& t = nodes_[static_cast<size_t>(node)];
  std::string what = t.is_leaf() && t.strength == Strength::Weak
                         ? std::string(dtype_name(t.dtype)) + " (from a literal)"
                         : describe(t);
  std::string msg = "'" + o->name + "' is " + what + " because of line " + std::to_string(local_line(at.line)) +
                    ": " + std::string(line);
  if (said_.insert("note " + msg).second) d_.note({}, msg);
}

// "; convert it with cast(n, dtype=f64)" for a variable; for bool, a comparison.
std::string Inference::convert_hint(const std::string& quoted, const IType& t, DType want) {
  if (t.strength == Strength::Weak || quoted.size() < 3 || quoted.front() != '\'') return "";
  std::string n = quoted.substr(1, quoted.size() - 2);
  if (want == DType::Bool) return "; compare it instead, e.g. ne(" + n + ", 0)";
  return "; convert it with cast(" + n + ", dtype=" + dtype_name(want) + ")";
}

void Inference::instr(size_t fi, const Instr& in, const std::vector<int>& ops,
                      const PrimInfo* info) {
  const Function& f = m_.funcs[fi];
  switch (in.kind) {
    case InstrKind::Pop:
      return;
    case InstrKind::Copy: {
      Slot dest = pattern_slot(fi, in.out);
      equate(dest, node_slot(ops[0]), in.loc, [&](const IType& a, const IType& b) {
        return "cannot assign " + describe(b) + " to " + print_target(in.out) + " of type " +
               describe(a) + " (a variable has one type in its whole function)";
      });
      return;
    }
    case InstrKind::Call: {
      const Function* callee = m_.find_func(in.callee.name);
      if (!callee) return;
      size_t ci = index_of(*callee);
      for (size_t i = 0; i < ops.size() && i < callee->params.size(); ++i) {
        int param = var_node(ci, callee->params[i].name.name);
        equate(node_slot(ops[i]), node_slot(param), in.args[i].loc,
               [&](const IType& a, const IType& p) {
                 std::string from = origin_[param].empty() ? "" : " " + origin_[param];
                 return "argument " + std::to_string(i + 1) + " of '" + callee->name.name +
                        "' is " + describe(a) + " here, but parameter '" +
                        callee->params[i].name.name + "' is " + describe(p) + from +
                        "; a function has one type for each parameter";
               });
      }
      bool discarded = in.out.is_tuple && in.out.elems.empty();
      if (in.grad) {
        // value_and_grad(F, x, ...): F's one result, and a gradient of x's type.
        if (discarded || results_[ci].size() != 1 || ops.empty()) return;
        Slot both;
        both.is_tuple = true;
        both.elems = {results_slot(ci), node_slot(ops[0])};
        equate(pattern_slot(fi, in.out), both, in.loc, [&](const IType& a, const IType& r) {
          return "value_and_grad(" + callee->name.name + ", ...) gives " + describe(r) +
                 ", which does not fit " + print_target(in.out) + " of type " + describe(a);
        });
        return;
      }
      if (!discarded && !results_[ci].empty()) {
        equate(pattern_slot(fi, in.out), results_slot(ci), in.loc,
               [&](const IType& a, const IType& r) {
                 if (in.out.is_tuple && r.known() && !r.is_tuple)
                   return "'" + callee->name.name + "' returns one value (" + describe(r) +
                          "), but the pattern " + print_target(in.out) + " takes a tuple of " +
                          std::to_string(in.out.elems.size());
                 return "'" + callee->name.name + "' returns " + describe(r) +
                        ", which does not fit " + print_target(in.out) + " of type " + describe(a);
               });
      }
      return;
    }
    case InstrKind::Prim:
      prim(fi, in, ops, info);
      return;
  }
  (void)f;
}

std::string Inference::print_target(const Pattern& p) {
  if (!p.is_tuple) return "'" + p.name + "'";
  std::string out = "(";
  for (size_t i = 0; i < p.elems.size(); ++i) out += (i ? ", " : "") + print_target(p.elems[i]);
  return out + ")";
}

// `info`: find_prim of the instruction's name (found once, by build_deps).
void Inference::prim(size_t fi, const Instr& in, const std::vector<int>& ops,
                     const PrimInfo* info) {
  if (!info) return;
  Slot dest = pattern_slot(fi, in.out);
  if (info->id == PrimId::Tuple) {
    Slot packed;
    packed.is_tuple = true;
    for (int n : ops) packed.elems.push_back(node_slot(n));
    equate(dest, packed, in.loc, [&](const IType& a, const IType& b) {
      return "cannot assign " + describe(b) + " to " + print_target(in.out) + " of type " +
             describe(a);
    });
    return;
  }
  Strength result_strength = Strength::Strong;
  bool follows = false;
  for (const Group& g : groups_of(info->id, in.args.size())) {
    std::optional<std::pair<DType, Strength>> acc = g.extra;
    bool conflict = false, quiet = false;
    // The first member that set acc (none when g.extra did): its names are
    // made only for a message.
    bool have_first = false, first_is_dest = false;
    IType first_t;
    int first_node = -1;
    const Operand* first_op = nullptr;
    const IType dest_pre = read(dest);
    // How a message names a member: the operand, or the result.
    auto name_of = [&](bool is_dest, const Operand* op) {
      return is_dest ? print_target(in.out) : var_or_value(*op);
    };
    auto add = [&](const IType& t, bool is_dest, int node = -1, const Operand* op = nullptr) {
      if (!t.is_leaf() || conflict) return;
      if (!acc) {
        acc = {t.dtype, t.strength};
        have_first = true;
        first_is_dest = is_dest;
        first_t = t;
        first_node = node;
        first_op = op;
        return;
      }
      DType d = acc->first;
      Strength s = acc->second;
      if (join_dtype(d, s, t.dtype, t.strength)) {
        acc = {d, s};
        return;
      }
      conflict = true;
      quiet = quiet || t.tainted || first_t.tainted;
      if (quiet) return;
      const std::string name = name_of(is_dest, op);
      const std::string desc = is_dest ? "the result " + name : name;
      const std::string first_name = have_first ? name_of(first_is_dest, first_op) : "";
      const std::string first_desc =
          have_first ? (first_is_dest ? "the result " + first_name : first_name) + " (" +
                           describe(first_t) + ")"
                     : (g.extra ? std::string(g.needs) : "");
      if (g.extra && first_name.empty()) {
        error(in.callee.loc, "'" + in.callee.name + "' needs " + g.needs + ", but " + desc +
                                 " is " + describe(t) + convert_hint(name, t, g.extra->first));
      } else if (t.strength == Strength::Weak || first_t.strength == Strength::Weak) {
        // A literal, or a variable typed by literals only, next to a
        // variable of a dtype it cannot take. Converting the variable is
        // advice only if the result may then take the literal's dtype:
        // known once inference is done.
        const bool t_weak = t.strength == Strength::Weak;
        auto report = [this, loc = in.callee.loc, op_name = in.callee.name,
                       var = t_weak ? first_t : t, lit = t_weak ? t : first_t,
                       var_name = t_weak ? first_name : name, lit_name = t_weak ? name : first_name,
                       var_node = t_weak ? first_node : node, var_op = t_weak ? first_op : op,
                       lit_node = t_weak ? node : first_node, lit_op = t_weak ? op : first_op,
                       with_dest = g.with_dest, dest, target = print_target(in.out),
                       dest_name = in.out.is_tuple ? std::string() : in.out.name] {
          const char* kind = lit.dtype == DType::F64    ? "float"
                             : lit.dtype == DType::Bool ? "bool"
                                                        : "integer";
          const bool lit_is_var =
              lit_op && lit_op->is_var && !syntax::is_frontend_name(lit_op->name);
          std::string what = lit_is_var
                                 ? lit_name + " (" + (lit.dtype == DType::Bool ? "a " : "") + kind +
                                       " only because of literals)"
                                 : std::string(kind[0] == 'i' ? "an " : "a ") + kind + " literal";
          IType dt = with_dest ? read(dest) : IType{};
          bool contradicted =
              dt.is_leaf() && dt.strength == Strength::Strong && dt.dtype != lit.dtype;
          std::string hint;
          if (!contradicted) {
            hint = convert_hint(var_name, var, lit.dtype);
            if (lit_is_var && !hint.empty() && !(dt.is_leaf() && dt.strength == Strength::Strong))
              hint +=
                  ", or make " + lit_name + " " + dtype_name(var.dtype) + " where its literals are";
          } else if (lit_op && !lit_op->is_var && !lit_op->lit.is_tensor &&
                     lit_op->lit.elems.size() == 1 &&
                     lit_op->lit.elems[0].kind == Scalar::Kind::Float && is_integer(var.dtype) &&
                     std::isfinite(lit_op->lit.elems[0].f) &&
                     lit_op->lit.elems[0].f == std::floor(lit_op->lit.elems[0].f) &&
                     std::fabs(lit_op->lit.elems[0].f) < 9e15) {
            hint = "; the result " + target + " is " + describe(dt) + ", so write the literal as " +
                   std::to_string(static_cast<int64_t>(lit_op->lit.elems[0].f));
          } else {
            hint = "; the result " + target + " is " + describe(dt) +
                   ": store the float result in a new variable, or use an integer literal";
          }
          error(loc, "'" + op_name + "' mixes " + var_name + " (" + describe(var) + ") with " +
                         what + hint);
          cause(var_node, var_op);
          if (lit_is_var) cause(lit_node, lit_op);
          if (contradicted && !dest_name.empty()) {
            Operand d;
            d.name = dest_name;
            cause(dest.node, &d);
          }
        };
        if (g.with_dest && !dest_pre.is_leaf())
          pending_.push_back(report);
        else
          report();
        return;
      } else if (is_dest) {
        error(in.callee.loc, "'" + in.callee.name + "' gives " + describe(first_t) +
                                 " here, but the result " + name + " is " + describe(t) +
                                 " elsewhere (a variable has one type in its whole function; use "
                                 "a new name, or cast)");
      } else {
        // Suggest converting the integer side to the float side's dtype,
        // unless the result's dtype is fixed (here or, once inference is
        // done, elsewhere): then convert the side that differs from it,
        // or suggest nothing.
        auto report = [this, loc = in.callee.loc, op_name = in.callee.name, first_desc, desc, t,
                       first_t, name, first_name, first_node, first_op, node, op,
                       with_dest = g.with_dest, dest] {
          IType dt = with_dest ? read(dest) : IType{};
          bool fixed = dt.is_leaf() && dt.strength == Strength::Strong;
          bool first_float = is_float(first_t.dtype) && !is_float(t.dtype);
          if (fixed) first_float = first_t.dtype == dt.dtype;
          const std::string& victim = first_float ? name : first_name;
          DType to = first_float ? first_t.dtype : t.dtype;
          const IType& vt = first_float ? t : first_t;
          bool contradicted = fixed && to != dt.dtype;
          error(loc, "operands of '" + op_name + "' have different dtypes: " + first_desc +
                         " and " + desc + " (" + describe(t) + ")" +
                         (contradicted ? "" : convert_hint(victim, vt, to)));
          cause(first_node, first_op);
          cause(node, op);
        };
        if (g.with_dest && !dest_pre.is_leaf())  // the result's dtype may be fixed later
          pending_.push_back([this, report, at = inlined_at_] {
            inlined_at_ = at;
            report();
            inlined_at_ = SourceLoc{};
          });
        else
          report();
        return;
      }
      cause(first_node, first_op);
      cause(node, op);
    };
    for (int o : g.operands)
      if (o < static_cast<int>(ops.size()))
        add(nodes_[ops[o]], false, ops[o], &in.args[o]);
    IType dest_t = read(dest);
    if (g.with_dest) add(dest_t, true);
    if (conflict) {
      taint(dest);
      for (int o : g.operands)
        if (o < static_cast<int>(ops.size())) taint(node_slot(ops[o]));
      return;
    }
    if (!acc) continue;
    // Push the agreed dtype back into the members that have a type.
    for (int o : g.operands) {
      if (o >= static_cast<int>(ops.size()) || !nodes_[ops[o]].is_leaf()) continue;
      IType t = leaf(acc->first, acc->second, nodes_[ops[o]].shape);
      write(node_slot(ops[o]), t, in.loc);
    }
    if (g.with_dest) {
      follows = true;
      result_strength = acc->second;
      if (dest_t.is_leaf()) write(dest, leaf(acc->first, acc->second, dest_t.shape), in.loc);
    }
  }
  // The result, once every operand's type is known. An operand whose type
  // is unknown because of a reported error makes the result quiet too.
  std::vector<Type> arg_types;
  for (int o : ops) {
    if (!complete(nodes_[o])) {
      if (any_taint(nodes_[o])) taint(dest);
      return;
    }
    arg_types.push_back(to_type(nodes_[o]));
  }
  PrimTypeResult r = prim_result_type(info->id, arg_types, resolve_attrs(in));
  if (!r.ok()) {
    reports_here_ = true;
    if (reporting_) {
      error(in.callee.loc, r.error);
      taint(dest);  // what depends on it is not reported again
    }
    return;
  }
  IType result = from_type(*r.type, follows ? result_strength : Strength::Strong);
  if (too_large(result)) {
    reports_here_ = true;
    if (reporting_)
      error(in.callee.loc, "'" + in.callee.name + "' would make a value of type " + r.type->str() +
                               ", larger than the limit of 2^28 elements per thread");
    taint(dest);  // what depends on it is not reported again
    return;
  }
  for (int o : ops) result.tainted = result.tainted || any_taint(nodes_[o]);
  assign(dest, result, in.loc, [&](const IType& a, const IType& b) {
    return "'" + in.callee.name + "' gives " + describe(b) + " here, but " + print_target(in.out) +
           " is " + describe(a) + " elsewhere (a variable has one type in its whole function)";
  });
}

void Inference::terminator(size_t fi, const Terminator& t, const std::vector<int>& values) {
  const Function& f = m_.funcs[fi];
  if (t.kind == TermKind::Branch) {
    int c = var_node(fi, t.cond.name);
    assign(node_slot(c), leaf(DType::Bool, Strength::Strong), t.cond.loc,
           [&](const IType& a, const IType&) {
             Operand c;
             c.name = t.cond.name;
             c.loc = t.cond.loc;
             std::string hint =
                 a.is_leaf() && a.dtype == DType::Bool && !a.shape.empty()
                     ? " (if, while and infix and/or need one bool per thread; for tensors "
                       "use any(), all() or the elementwise and(a, b), or(a, b))"
                     : "";
             return "branch condition " + var_or_value(c) + " must be a scalar bool, but it is " +
                    describe(a) + hint;
           });
  }
  if (t.kind != TermKind::Return) return;
  for (size_t i = 0; i < values.size() && i < results_[fi].size(); ++i) {
    int r = results_[fi][i];
    equate(node_slot(values[i]), node_slot(r), t.values[i].loc,
           [&](const IType& a, const IType& b) {
             std::string from = origin_[r].empty() ? "" : " " + origin_[r];
             return "'" + f.name.name + "' returns " + describe(a) + " here, but its result " +
                    (results_[fi].size() > 1 ? std::to_string(i + 1) + " " : "") + "is " +
                    describe(b) + from;
           });
  }
}

}  // namespace ab::infer
