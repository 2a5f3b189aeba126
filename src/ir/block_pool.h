// Large blocks of memory kept for reuse between runs.
//
// A run allocates its per-thread storage (a value per thread for each
// variable, the waiting lists, the outputs) and frees it at the end. Large
// blocks come from the kernel as fresh pages, and touching them costs a page
// fault each 4 KiB; two shards faulting at once contend for the process's
// memory map (measured: a two-shard collatz run at 1.5x the speed of one
// instead of 1.9x). Blocks of at least kPoolMinBytes are therefore kept when
// freed, up to kPoolMaxBytes in all (past it, the blocks kept longest are
// freed first), and handed out again for a request of the same rounded size.
// Smaller blocks go straight to the heap. Thread-safe.
#pragma once
#include <cstddef>
#include <new>
#include <vector>

namespace ab {

constexpr size_t kPoolMinBytes = size_t{64} << 10;
constexpr size_t kPoolMaxBytes = size_t{256} << 20;

// 64-byte aligned, uninitialised; never null (throws std::bad_alloc).
void* pool_allocate(size_t bytes);
// `bytes`: as given to pool_allocate.
void pool_release(void* p, size_t bytes) noexcept;

// A std::allocator that takes large arrays from the pool.
template <class T>
struct PoolAllocator {
  using value_type = T;
  PoolAllocator() = default;
  template <class U>
  PoolAllocator(const PoolAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(pool_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { pool_release(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const PoolAllocator<U>&) const {
    return true;
  }
};

}  // namespace ab

namespace ab {
template <class T>
using PoolVector = std::vector<T, PoolAllocator<T>>;
}  // namespace ab
