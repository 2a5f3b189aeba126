#include "passes/allocation_strategy.h"

#include <map>
#include <set>

#include "passes/liveness.h"

namespace ab {

void allocation_strategy(Program& p, const LoweringInfo& info) {
  // Which functions each function can reach (itself included).
  CallGraph edges;
  for (const auto& c : info.calls) edges[c.caller].insert(c.callee);
  std::set<std::string> full;
  for (const auto& c : info.calls) {
    std::set<std::string> r = reachable_from(edges, c.callee);
    for (const auto& v : c.live_across)
      if (r.count(owner_function(v))) full.insert(v);
  }

  VarSet outputs;
  for (const auto& o : p.outputs) outputs.insert(o.name);
  // Which variables are read, and which cross a block boundary (live into or
  // out of some block, or an input or output), as bits over the program's
  // variables: no set of names per block.
  BlockLiveness live = compute_block_liveness(p.blocks, outputs);
  const VarIndex& vars = live.vars;
  LiveBits read(vars.size()), crosses(vars.size());
  for (const auto& o : p.outputs) read.set(vars.find(o.name)), crosses.set(vars.find(o.name));
  for (const auto& b : p.blocks) {
    for (const auto& in : b.instrs)
      for (const auto& a : in.args)
        if (a.is_var) read.set(vars.find(a.name));
    if (b.term.kind == TermKind::Branch) read.set(vars.find(b.term.cond.name));
    for (const auto& v : b.term.values)
      if (v.is_var) read.set(vars.find(v.name));
  }
  for (size_t b = 0; b < p.blocks.size(); ++b) {
    crosses |= live.live_in[b];
    crosses |= live.live_out[b];
  }
  std::set<std::string> inputs;
  for (const auto& i : p.inputs) inputs.insert(i.name);
  for (auto& v : p.vars) {
    const std::string& n = v.name.name;
    int id = vars.find(n);
    if (!read.test(id))
      v.storage = StorageClass::Null;
    else if (full.count(n))
      v.storage = StorageClass::Full;
    else if (!crosses.test(id) && !inputs.count(n))
      v.storage = StorageClass::Temporary;
    else
      v.storage = StorageClass::Register;
  }
  // Pops of anything but full variables do nothing.
  for (auto& b : p.blocks) {
    std::vector<Instr> kept;
    for (auto& in : b.instrs) {
      if (in.kind == InstrKind::Pop) {
        std::vector<NameRef> names;
        for (const auto& n : in.popped)
          if (full.count(n.name)) names.push_back(n);
        if (names.empty()) continue;
        in.popped = std::move(names);
      }
      kept.push_back(std::move(in));
    }
    b.instrs = std::move(kept);
  }
}

}  // namespace ab
