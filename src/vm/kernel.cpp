// The kernel registry (one entry per line of ops.def) and the helpers the
// kernels share: scratch memory, broadcast maps, number formatting.
#include <algorithm>
#include <charconv>
#include <memory>
#include <new>

#include "vm/kernel_impl.h"

namespace ab {

KernelFn kernel_for(PrimId op) {
  static const KernelFn kTable[] = {
#define AB_PRIM(id, name, lo, hi, attrs, group, kind, dtypes, doc) &kern::kernel_##id,
#include "ir/ops.def"
#undef AB_PRIM
  };
  if (op == PrimId::Tuple) return nullptr;
  auto i = static_cast<size_t>(op);
  return i < std::size(kTable) ? kTable[i] : nullptr;
}

namespace kern {

// Tuples are never a kernel's business: the VM moves their leaves.
bool kernel_Tuple(const KernelCall&, KernelError* err) {
  return fail(err, 0, "internal: 'tuple' has no kernel");
}

namespace {
struct AlignedFree {
  void operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t{64}); }
};
struct ScratchSlot {
  std::unique_ptr<std::byte[], AlignedFree> data;
  size_t size = 0;
};
thread_local ScratchSlot t_scratch[kScratchSlots];
}  // namespace

void* scratch_bytes(int slot, size_t bytes) {
  ScratchSlot& s = t_scratch[slot];
  if (bytes > s.size) {
    size_t want = std::max(bytes, s.size * 2);
    want = (want + 63) & ~size_t{63};
    s.data.reset(static_cast<std::byte*>(::operator new[](want, std::align_val_t{64})));
    s.size = want;
  }
  return s.data.get();
}

Bcast make_bcast(std::span<const int64_t> in, std::span<const int64_t> out, int slot) {
  if (std::equal(in.begin(), in.end(), out.begin(), out.end())) return {1, nullptr};
  int64_t in_elems = 1, total = 1;
  for (int64_t d : in) in_elems *= d;
  for (int64_t d : out) total *= d;
  if (in_elems == 1) return {0, nullptr};
  const size_t R = out.size(), r = in.size();
  // Per result dimension: the operand's stride (0 where broadcast) and the
  // odometer digit. Ranks are small; only absurd ones use the heap.
  constexpr size_t kInline = 16;
  int64_t inline_buf[2 * kInline];
  std::vector<int64_t> heap_buf;
  int64_t* stride = inline_buf;
  if (R > kInline) {
    heap_buf.assign(2 * R, 0);
    stride = heap_buf.data();
  }
  int64_t* counter = stride + std::max(R, kInline);
  std::fill(stride, stride + R, 0);
  std::fill(counter, counter + R, 0);
  int64_t s = 1;
  for (size_t i = r; i-- > 0;) {
    size_t d = i + (R - r);
    if (in[i] != 1) stride[d] = s;
    s *= in[i];
  }
  int64_t* table = scratch<int64_t>(slot, total);
  int64_t off = 0;
  for (int64_t k = 0; k < total; ++k) {
    table[k] = off;
    for (size_t d = R; d-- > 0;) {  // odometer increment of the result index
      off += stride[d];
      if (++counter[d] < out[d]) break;
      off -= stride[d] * counter[d];
      counter[d] = 0;
    }
  }
  return {0, table};
}

std::string format_number(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace kern
}  // namespace ab
