#include "ir/tail_call.h"

#include <set>
#include <string>
#include <vector>

namespace ab {

bool is_tail_self_call(const Function& f, size_t bi, size_t k) {
  const Block& b = f.blocks[bi];
  const Instr& in = b.instrs[k];
  if (in.kind != InstrKind::Call || in.callee.name != f.name.name || k + 1 != b.instrs.size() ||
      b.term.kind != TermKind::Return)
    return false;
  const auto& vals = b.term.values;
  bool discarded = in.out.is_tuple && in.out.elems.empty();
  if (discarded) return vals.empty();
  std::vector<const Pattern*> leaves;
  if (vals.size() == 1) {
    if (in.out.is_tuple) return false;
    leaves.push_back(&in.out);
  } else {
    if (!in.out.is_tuple || in.out.elems.size() != vals.size()) return false;
    for (const auto& e : in.out.elems) {
      if (e.is_tuple) return false;
      leaves.push_back(&e);
    }
  }
  for (size_t i = 0; i < vals.size(); ++i)
    if (!vals[i].is_var || vals[i].name != leaves[i]->name) return false;
  // The same variable twice would need a copy.
  std::set<std::string> seen;
  for (const auto* l : leaves)
    if (!seen.insert(l->name).second) return false;
  return true;
}

}  // namespace ab
