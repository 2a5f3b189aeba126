// Per-thread stacks of fixed-size entries, for the stack VM's program
// counters and the values below the top of `full` variables.
//
// The caller keeps each lane's depth (one counter per lane, which it needs
// anyway) and addresses entries by level, so a push or pop is one counter
// update and one access to the entry.
//
// The first kFlat levels are stored depth-major: level d of every lane is one
// contiguous row, allocated (with the rows up to twice as deep as those
// made so far) the first time any lane reaches it, so the
// threads of a step touch neighbouring memory instead of one heap block each.
// Deeper levels (rare: deep recursion) go to per-lane vectors, so memory
// stays proportional to what each thread really uses. A push checks one
// bound: the rows below head_.ready exist; anything else takes the slow path.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace ab {

template <typename Word>
class LaneStack {
 public:
  // 2048: compiled code addresses these levels' rows directly (the JIT's
  // chain copies a thread's entries from them; a deeper thread's window
  // goes through get/put, window() below, once per entry and chain call).
  // Recursions a hundred or two deep are common (a list walked, a
  // triangular sum), and a gradient's loop of T steps recurses T deep
  // (once per iteration). The table of rows is made
  // by init(), only for stacks that are used, and rows are made in blocks,
  // so a level no thread reaches costs address space only.
  static constexpr uint32_t kFlat = 2048;

  void init(size_t lanes, size_t words_per_entry) {
    lanes_ = lanes;
    words_ = words_per_entry;
    blocks_.clear();
    row_ = std::make_unique<Word*[]>(kFlat);
    head_.ready = 0;
    deep_.clear();  // made when a lane first goes deeper than kFlat
  }
  // The lane's stack is empty again.
  void clear(uint32_t lane) {
    if (!deep_.empty()) deep_[lane].clear();
  }

  // Where the entry at `level` of `lane` lives, for writing (a push).
  // The hot path is one comparison: levels below head_.ready have their row.
  [[gnu::always_inline]] Word* put(uint32_t lane, uint32_t level) {
    if (level < head_.ready) [[likely]]
      return row_[level] + lane * words_;
    return put_slow(lane, level);
  }
  // put and get for stacks of one word per entry.
  [[gnu::always_inline]] Word* put1(uint32_t lane, uint32_t level) {
    if (level < head_.ready) [[likely]]
      return row_[level] + lane;
    return put_slow(lane, level);
  }
  [[gnu::always_inline]] const Word* get1(uint32_t lane, uint32_t level) const {
    if (level < kFlat) [[likely]]
      return row_[level] + lane;
    return deep_[lane].data() + (level - kFlat);
  }
  // Makes all kFlat rows now (for the JIT's chain, which stops a thread
  // before a level without its row), in blocks of kBlockRows rows: mapped
  // pages, of which only those a thread writes take memory.
  void make_flat_rows() {
    if (head_.ready < kFlat) put_slow(0, kFlat - 1);
  }
  // For compiled code (vm/jit): the rows of the first kFlat levels (those
  // below *ready_ptr() exist) and their number.
  // ready_ptr() points to a Head: the number of rows made, then the stack
  // itself (for the chain's window, below, at levels of any depth).
  struct Head {
    uint32_t ready = 0;
    const LaneStack* self = nullptr;
  };
  Word* const* rows() const { return row_.get(); }
  const uint32_t* ready_ptr() const {
    head_.self = this;  // (where the stack is now: compiled code is given this pointer)
    return &head_.ready;
  }
  // For the chain (vm/jit) holding a window of a deep stack: `count`
  // one-word entries of `lane` from `level` on, copied to buf (in) or
  // back from it. Levels read were written before.
  void window(uint32_t lane, uint32_t level, uint32_t count, Word* buf, bool in) {
    for (uint32_t i = 0; i < count; ++i) {
      if (in)
        buf[i] = *get(lane, level + i);
      else
        *put(lane, level + i) = buf[i];
    }
  }

  // The entry at `level` of `lane`, written before by put (a pop).
  [[gnu::always_inline]] const Word* get(uint32_t lane, uint32_t level) const {
    if (level < kFlat) [[likely]]
      return row_[level] + lane * words_;
    return deep_[lane].data() + (level - kFlat) * words_;
  }

 private:
  Word* put_slow(uint32_t lane, uint32_t level) {
    if (level < kFlat) {
      if (!row_[level]) {
        // The rows up to twice those made so far (at least to this level):
        // a thread going deeper finds its rows made, and compiled code,
        // which stops before a level without its row, stops a few times
        // per stack instead of once per level.
        // In blocks of up to kBlockRows rows (written before read): one
        // allocation per block, not per row, and none larger than a block
        // (many lanes make them mapped pages that only the lanes writing
        // them touch).
        const uint32_t upto =
            std::min<uint32_t>(kFlat, std::max<uint32_t>(level + 1, 2 * head_.ready));
        const size_t row = lanes_ * words_;
        while (head_.ready < upto) {
          const uint32_t n = std::min<uint32_t>(upto - head_.ready, kBlockRows);
          blocks_.push_back(std::make_unique_for_overwrite<Word[]>(n * row));
          for (uint32_t d = 0; d < n; ++d) row_[head_.ready + d] = blocks_.back().get() + d * row;
          head_.ready += n;
        }
      }
      return row_[level] + lane * words_;
    }
    if (deep_.empty()) deep_.resize(lanes_);
    auto& v = deep_[lane];
    size_t at = (level - kFlat) * words_;
    if (v.size() < at + words_) v.resize(at + words_);
    return v.data() + at;
  }
  static constexpr uint32_t kBlockRows = 256;
  size_t lanes_ = 0;
  size_t words_ = 1;
  mutable Head head_;             // rows 0 .. head_.ready-1 are allocated
  std::unique_ptr<Word*[]> row_;  // the row of each level below head_.ready (made by init())
  std::vector<std::unique_ptr<Word[]>> blocks_;  // the rows' memory, a block per growth
  std::vector<std::vector<Word>> deep_;
};

}  // namespace ab
