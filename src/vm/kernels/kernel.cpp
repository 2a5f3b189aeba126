// The kernel registry (one entry per line of ops.def) and the helpers the
// kernels share: scratch memory, broadcast maps, number formatting.
#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <memory>
#include <new>
#include <utility>

#include "vm/kernels/kernel_impl.h"

namespace ab {

namespace {

constexpr PrimId kFirstCustom = static_cast<PrimId>(kBuiltinPrimCount);

// Custom kernels by slot (id - first custom id); published once, never changed.
std::atomic<const CustomKernel*> g_custom_kernels[kMaxCustomPrims];

// One plain function per custom slot, so that kernel_for can hand the VMs a
// KernelFn like any built-in's.
template <size_t Slot>
bool custom_trampoline(const KernelCall& call, KernelError* err) {
  const CustomKernel* k = g_custom_kernels[Slot].load(std::memory_order_acquire);
  if (!k || !*k) {
    err->lane = 0;
    err->message = "internal: custom primitive without a kernel";
    return false;
  }
  return (*k)(call, err);
}

template <size_t... Slots>
constexpr std::array<KernelFn, sizeof...(Slots)> make_trampolines(std::index_sequence<Slots...>) {
  return {&custom_trampoline<Slots>...};
}
constexpr auto kTrampolines = make_trampolines(std::make_index_sequence<kMaxCustomPrims>{});

}  // namespace

KernelFn kernel_for(PrimId op) {
  static const KernelFn kTable[] = {
#define AB_PRIM(id, ...) &kern::kernel_##id,
#include "ir/ops.def"
#undef AB_PRIM
  };
  if (op == PrimId::Tuple) return nullptr;
  auto i = static_cast<size_t>(op);
  if (i < std::size(kTable)) return kTable[i];
  if (is_custom_prim(op)) return kTrampolines[i - static_cast<size_t>(kFirstCustom)];
  return nullptr;
}

void set_custom_kernel(PrimId id, CustomKernel kernel) {
  size_t slot = static_cast<size_t>(id) - static_cast<size_t>(kFirstCustom);
  if (!is_custom_prim(id) || slot >= kMaxCustomPrims) return;
  g_custom_kernels[slot].store(new CustomKernel(std::move(kernel)), std::memory_order_release);
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
