// Activity analysis: which variables of a function being differentiated
// depend on the parameters differentiated (and so have adjoints).
#include "passes/grad/internal.h"

namespace ab::gradient {

std::set<std::string> active_variables(const Function& g, const FunctionTypes& ft,
                                       const std::vector<bool>& mask) {
  std::set<std::string> a;
  for (size_t i = 0; i < g.params.size(); ++i)
    if (mask[i] && has_float(ft.vars.at(g.params[i].name.name))) a.insert(g.params[i].name.name);
  auto reads_active = [&](const Instr& in) {
    for (const auto& o : in.args)
      if (o.is_var && a.count(o.name)) return true;
    return false;
  };
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& b : g.blocks)
      for (const auto& in : b.instrs) {
        if (!reads_active(in)) continue;
        if (in.kind == InstrKind::Prim && prim_grad(in.prim) == GradKind::Zero) continue;
        std::vector<const Pattern*> leaves;
        in.out.names(leaves);
        for (const Pattern* l : leaves)
          if (has_float(ft.vars.at(l->name)) && a.insert(l->name).second) changed = true;
      }
  }
  return a;
}

}  // namespace ab::gradient
