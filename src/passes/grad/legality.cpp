// What value_and_grad cannot differentiate, and the messages that say so
// (each at the construct's line; docs/language.md, "Gradients").
#include "passes/grad/internal.h"

namespace ab::gradient {

bool check_grad_call(const Instr& in, const Function& callee, const std::optional<Type>& x,
                     const FunctionTypes& ct, Diagnostics& diags) {
  if (!x || x->is_tuple || !is_float(x->tensor.dtype)) {
    diags.error(in.args[0].loc,
                "value_and_grad differentiates with respect to its second argument, which "
                "must be an f64 or f32 scalar or tensor; here it is " +
                    (x ? x->str() : std::string("of a type not known without the inputs")));
    return false;
  }
  if (ct.results.size() != 1 || !ct.results[0] || ct.results[0]->is_tuple ||
      !ct.results[0]->tensor.shape.empty() || !is_float(ct.results[0]->tensor.dtype)) {
    diags.error(
        in.callee.loc,
        "value_and_grad needs '" + callee.name.name + "' to return one f64 scalar" +
            (ct.results.size() == 1 && ct.results[0] ? "; it returns " + ct.results[0]->str()
                                                     : std::string()));
    return false;
  }
  return true;
}

bool Grad::check(const Function& g, const FunctionTypes& ft) {
  bool ok = true;
  const std::string& gn = g.name.name;
  auto known = [&](const std::string& v, SourceLoc loc) {
    if (ft.vars.count(v)) return;
    error(loc, "the type of '" + v + "' in '" + gn +
                   "' is not known without the inputs; give the inputs, or annotate");
    ok = false;
  };
  for (const auto& p : g.params) known(p.name.name, p.name.loc);
  for (const auto& b : g.blocks) {
    for (const auto& in : b.instrs) {
      std::vector<const Pattern*> leaves;
      in.out.names(leaves);
      for (const Pattern* l : leaves) known(l->name, in.loc);
      if (in.kind == InstrKind::Call && in.grad) {
        error(in.loc, "value_and_grad inside '" + gn +
                          "', a function being differentiated: gradients of gradients are not "
                          "supported");
        ok = false;
      } else if (in.kind == InstrKind::Prim && prim_grad(in.prim) == GradKind::Random) {
        error(in.loc, "'" + in.callee.name + "' draws random numbers in '" + gn +
                          "', a function being differentiated; draw them outside and pass them "
                          "in as arguments");
        ok = false;
      }
    }
  }
  if (ft.results.size() > 0)
    for (const auto& r : ft.results)
      if (!r) {
        error(g.loc, "the result types of '" + gn + "' are not known without the inputs");
        return false;
      }
  return ok;
}

void Grad::check_active(const Function& g, const FunctionTypes& ft,
                        const std::set<std::string>& active) {
  auto reads_active = [&](const Instr& in) {
    for (const auto& o : in.args)
      if (o.is_var && active.count(o.name)) return true;
    return false;
  };
  for (const auto& b : g.blocks)
    for (const auto& in : b.instrs) {
      if (in.kind != InstrKind::Prim || !reads_active(in)) continue;
      if (prim_grad(in.prim) == GradKind::None) {
        error(in.loc, "'" + in.callee.name +
                          (is_custom_prim(in.prim) ? "' is a custom primitive without a gradient"
                                                   : "' has no gradient") +
                          ", and its operands depend on the differentiated argument");
      } else if (in.prim == PrimId::Cast && !in.out.is_tuple &&
                 !has_float(ft.vars.at(in.out.name))) {
        error(in.loc, "casting a value that depends on the differentiated argument to " +
                          ft.vars.at(in.out.name).str() +
                          " loses its gradient; compute integers from values that do not "
                          "depend on it");
      }
    }
}

void Grad::recursion_error(const std::string& callee, SourceLoc why) {
  error(why, "'" + callee + "' is called recursively from '" + chain_.back() +
                 "'; recursion cannot be differentiated (write it as a loop)");
}

void Grad::unknown_types_error(const std::string& callee, SourceLoc why) {
  error(why, "the types of '" + callee + "' are not known");
}

}  // namespace ab::gradient
