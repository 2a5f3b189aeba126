#include "ir/block_pool.h"

#include <sys/mman.h>

#include <cstdint>
#include <mutex>
#include <utility>
#include <vector>

// Under AddressSanitizer a kept block is poisoned, so a use after release is
// still reported (as with a block freed to the heap).
#if defined(__SANITIZE_ADDRESS__)
#define AB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define AB_ASAN 1
#endif
#endif
#ifdef AB_ASAN
#include <sanitizer/asan_interface.h>
#define AB_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define AB_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define AB_POISON(p, n) ((void)(p), (void)(n))
#define AB_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ab {

namespace {

constexpr std::align_val_t kAlign{64};

// Large requests are rounded up to whole pages, so that runs of one program
// ask for the same few sizes.
size_t rounded(size_t bytes) {
  return bytes < kPoolMinBytes ? bytes : (bytes + 4095) & ~size_t{4095};
}

struct Pool {
  std::mutex mu;
  std::vector<std::pair<size_t, void*>> free;  // (rounded size, block)
  size_t bytes = 0;
};

// Never destroyed: blocks stay reachable until the process ends.
Pool& pool() {
  static Pool* p = new Pool;
  return *p;
}

// A block of kHugeMinBytes or more asks the kernel for transparent huge pages
// (where it gives them only on request: /sys/kernel/mm/transparent_hugepage/
// enabled is "madvise"), as NumPy does for its arrays of 4 MiB and more. A
// fresh block is faulted in as the run first writes it, and with 4 KiB pages
// that is a fault per page (about 0.25 ms per MiB: a 16 M-thread batch's
// 128 MiB input, read into such a block, spent as long in faults as in the
// copy); with 2 MiB pages, one fault per 2 MiB. Only the whole pages inside
// the block are advised; a kernel without THP ignores it.
constexpr size_t kHugeMinBytes = size_t{4} << 20;

void advise_huge_pages(void* block, size_t bytes) {
#ifdef MADV_HUGEPAGE
  if (bytes < kHugeMinBytes) return;
  const uintptr_t page = 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(block) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(block) + bytes) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)block;
  (void)bytes;
#endif
}

}  // namespace

void* pool_allocate(size_t bytes) {
  const size_t r = rounded(bytes);
  if (r >= kPoolMinBytes) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    for (size_t i = p.free.size(); i-- > 0;) {
      if (p.free[i].first != r) continue;
      void* block = p.free[i].second;
      p.free.erase(p.free.begin() + static_cast<std::ptrdiff_t>(i));
      p.bytes -= r;
      AB_UNPOISON(block, r);
      return block;
    }
  }
  void* block = ::operator new[](r == 0 ? 1 : r, kAlign);
  advise_huge_pages(block, r);
  return block;
}

void pool_release(void* block, size_t bytes) noexcept {
  if (!block) return;
  const size_t r = rounded(bytes);
  if (r >= kPoolMinBytes && r <= kPoolMaxBytes) {
    Pool& p = pool();
    std::lock_guard<std::mutex> lock(p.mu);
    // Over the cap, the blocks kept longest go first (recent sizes are the
    // ones the next run asks for).
    size_t drop = 0;
    for (size_t kept = p.bytes; drop < p.free.size() && kept + r > kPoolMaxBytes; ++drop) {
      kept -= p.free[drop].first;
      AB_UNPOISON(p.free[drop].second, p.free[drop].first);
      ::operator delete[](p.free[drop].second, kAlign);
    }
    for (size_t i = 0; i < drop; ++i) p.bytes -= p.free[i].first;
    p.free.erase(p.free.begin(), p.free.begin() + static_cast<std::ptrdiff_t>(drop));
    try {
      p.free.emplace_back(r, block);
      p.bytes += r;
      AB_POISON(block, r);
      return;
    } catch (...) {  // no room to remember it: free it below
    }
  }
  ::operator delete[](block, kAlign);
}

}  // namespace ab
