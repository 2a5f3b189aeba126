// Per-thread stacks of fixed-size entries, for the stack VM's program
// counters and the values below the top of `full` variables.
//
// The first kFlat levels are stored depth-major: level d of every lane is one
// contiguous row, allocated the first time any lane reaches it, so the
// threads of a step touch neighbouring memory instead of one heap block each.
// Deeper levels (rare: deep recursion) go to per-lane vectors, so memory
// stays proportional to what each thread really uses.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace ab {

template <typename Word>
class LaneStack {
 public:
  static constexpr uint32_t kFlat = 32;

  void init(size_t lanes, size_t words_per_entry) {
    lanes_ = lanes;
    words_ = words_per_entry;
    count_.assign(lanes, 0);
    for (auto& r : rows_) r.reset();
    deep_.assign(lanes, {});
  }
  uint32_t size(uint32_t lane) const { return count_[lane]; }
  void clear(uint32_t lane) {
    count_[lane] = 0;
    deep_[lane].clear();
  }
  [[gnu::always_inline]] void push(uint32_t lane, const Word* entry) {
    uint32_t d = count_[lane]++;
    if (d < kFlat) [[likely]] {
      Word* row = rows_[d].get();
      if (!row) [[unlikely]]
        row = grow(d);
      if (words_ == 1)
        row[lane] = entry[0];
      else
        std::memcpy(row + lane * words_, entry, words_ * sizeof(Word));
      return;
    }
    auto& v = deep_[lane];
    v.insert(v.end(), entry, entry + words_);
  }
  // Copies the top entry to `out` and removes it.
  [[gnu::always_inline]] void pop(uint32_t lane, Word* out) {
    uint32_t d = --count_[lane];
    if (d < kFlat) [[likely]] {
      const Word* row = rows_[d].get();
      if (words_ == 1)
        out[0] = row[lane];
      else
        std::memcpy(out, row + lane * words_, words_ * sizeof(Word));
      return;
    }
    auto& v = deep_[lane];
    std::memcpy(out, v.data() + v.size() - words_, words_ * sizeof(Word));
    v.resize(v.size() - words_);
  }

 private:
  Word* grow(uint32_t d) {
    rows_[d] = std::make_unique<Word[]>(lanes_ * words_);
    return rows_[d].get();
  }
  size_t lanes_ = 0;
  size_t words_ = 1;
  std::vector<uint32_t> count_;
  std::unique_ptr<Word[]> rows_[kFlat];
  std::vector<std::vector<Word>> deep_;
};

}  // namespace ab
