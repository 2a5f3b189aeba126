// liveness: which variables are live into and out of every block and out of
// every instruction (docs/engine.md, "Passes").
//
// A backward dataflow fixpoint over the control-flow graph, so loops are
// supported: live-out(B) = union of live-in over B's successors, and
// live-in(I) = reads(I) ∪ (live-out(I) \ writes(I)), instruction by
// instruction. Reads are variable operands and branch conditions and return
// values; writes are the leaves of an instruction's pattern. `pop x` neither
// reads nor writes x.
//
// Works on a function's blocks, or on a lowered program's blocks where
// `push_goto RET, TARGET` has both RET and TARGET as successors (the callee
// runs and comes back) and `indirect_goto`/`halt` have none.
#pragma once
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

using VarSet = std::set<std::string>;

struct LivenessInfo {
  std::vector<VarSet> live_in;                 // [block]
  std::vector<VarSet> live_out;                // [block]
  std::vector<std::vector<VarSet>> instr_out;  // [block][instr]: live after it
  std::vector<VarSet> term_in;                 // [block]: live before the terminator
};

// `extra_live_at_exit`: variables read after a returning block (a lowered
// program's outputs, read at halt).
LivenessInfo compute_liveness(const std::vector<Block>& blocks,
                              const VarSet& extra_live_at_exit = {});

void instr_reads(const Instr& in, VarSet& out);
void instr_writes(const Instr& in, VarSet& out);
void term_reads(const Terminator& t, VarSet& out);
std::vector<size_t> successors(const std::vector<Block>& blocks, size_t b);
// Every block's successors at once, through one index of the labels:
// O(n log n) where n calls of successors() are O(n^2).
std::vector<std::vector<size_t>> all_successors(const std::vector<Block>& blocks);

// The module (or lowered program) printed with `# live-in:` and `# live-out:`
// comments: the `print-liveness` debugging view. It still parses.
std::string print_liveness(const Module& m);

}  // namespace ab
