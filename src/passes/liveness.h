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
#include <bit>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ir/ir.h"

namespace ab {

using VarSet = std::set<std::string>;

// The variables of a list of blocks numbered densely, in the order of their
// names (so walking a set of them by number visits the names sorted, as a
// VarSet does). The index owns its names: it stays valid when the blocks
// change.
class VarIndex {
 public:
  VarIndex() = default;
  // Every variable the blocks read, write or pop, and `extra`.
  explicit VarIndex(const std::vector<Block>& blocks, const VarSet& extra = {});
  VarIndex(const std::vector<Block>& blocks, const std::vector<std::string_view>& extra);
  // The views in ids_ point into names_' strings, so a copy rebuilds them (a
  // move keeps the strings where they are).
  VarIndex(const VarIndex& o) : names_(o.names_) { rebuild(); }
  VarIndex& operator=(const VarIndex& o) {
    if (this != &o) names_ = o.names_, rebuild();
    return *this;
  }
  VarIndex(VarIndex&&) = default;
  VarIndex& operator=(VarIndex&&) = default;
  int find(std::string_view name) const {  // -1 if not a variable of the blocks
    auto it = ids_.find(name);
    return it == ids_.end() ? -1 : it->second;
  }
  const std::string& name(int id) const { return names_[static_cast<size_t>(id)]; }
  size_t size() const { return names_.size(); }

 private:
  void rebuild();
  std::vector<std::string> names_;                   // [id], sorted
  std::unordered_map<std::string_view, int> ids_;  // views of names_
};

// A set of variables of a VarIndex, one bit each.
class LiveBits {
 public:
  LiveBits() = default;
  explicit LiveBits(size_t n) : w_((n + 63) / 64, 0) {}
  bool test(int i) const {
    return i >= 0 && (w_[static_cast<size_t>(i) >> 6] >> (i & 63) & 1) != 0;
  }
  void set(int i) { w_[static_cast<size_t>(i) >> 6] |= uint64_t{1} << (i & 63); }
  void reset(int i) { w_[static_cast<size_t>(i) >> 6] &= ~(uint64_t{1} << (i & 63)); }
  LiveBits& operator|=(const LiveBits& o) {
    for (size_t k = 0; k < w_.size(); ++k) w_[k] |= o.w_[k];
    return *this;
  }
  LiveBits& operator&=(const LiveBits& o) {
    for (size_t k = 0; k < w_.size(); ++k) w_[k] &= o.w_[k];
    return *this;
  }
  LiveBits& subtract(const LiveBits& o) {
    for (size_t k = 0; k < w_.size(); ++k) w_[k] &= ~o.w_[k];
    return *this;
  }
  bool operator==(const LiveBits&) const = default;
  // Calls f(id) for every member, in increasing id (name) order.
  template <class F>
  void for_each(F f) const {
    for (size_t k = 0; k < w_.size(); ++k)
      for (uint64_t x = w_[k]; x; x &= x - 1)
        f(static_cast<int>(k * 64 + static_cast<size_t>(std::countr_zero(x))));
  }
  VarSet names(const VarIndex& vars) const;

 private:
  std::vector<uint64_t> w_;
};

// Liveness at block boundaries only, as bits: what most passes need, without
// a set per instruction. Same fixpoint as compute_liveness.
struct BlockLiveness {
  VarIndex vars;
  std::vector<LiveBits> live_in;   // [block]
  std::vector<LiveBits> live_out;  // [block]
};
BlockLiveness compute_block_liveness(const std::vector<Block>& blocks,
                                     const VarSet& extra_live_at_exit = {});
// The same, given all_successors(blocks).
BlockLiveness compute_block_liveness(const std::vector<Block>& blocks,
                                     const std::vector<std::vector<size_t>>& succ,
                                     const VarSet& extra_live_at_exit = {});

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
