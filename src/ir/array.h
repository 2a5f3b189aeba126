// A batch of tensors of one TensorType, stored contiguously: [batch] + event
// shape, C order. `bool` is stored as one byte (0 or 1). This is the unit the
// I/O layer reads and writes and the VMs hold per variable.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "ir/block_pool.h"
#include "ir/type.h"

namespace ab {

// Frees what Buffer allocated (not what it borrowed): large blocks go back
// to the pool (ir/block_pool.h) for the next run.
struct BufferFree {
  bool owned = true;
  size_t bytes = 0;  // as allocated
  void operator()(std::byte* p) const {
    if (owned) pool_release(p, bytes);
  }
};

// Owning, 64-byte aligned, zero-initialised bytes.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes) { resize(bytes); }
  Buffer(const Buffer& o) { *this = o; }
  Buffer(Buffer&&) noexcept = default;
  Buffer& operator=(const Buffer& o) {
    if (this != &o) {
      resize(o.size_);
      if (size_) std::memcpy(data_.get(), o.data_.get(), size_);
    }
    return *this;
  }
  Buffer& operator=(Buffer&&) noexcept = default;
  // A view of `bytes` bytes at `data`, owned by the caller (who keeps them
  // alive and unchanged while the Buffer is used): an embedder's input, given
  // to the VMs without a copy. Never written through (but see lend); copies
  // of it own theirs.
  static Buffer borrow(const void* data, size_t bytes) {
    Buffer b;
    b.data_ = std::unique_ptr<std::byte[], Free>(static_cast<std::byte*>(const_cast<void*>(data)),
                                                 Free{false});
    b.size_ = bytes;
    return b;
  }
  // `bytes` bytes, not initialised: for a buffer the caller fills at once
  // (a file read into it, a copy). Zeroing first would touch every page
  // twice, which for an input of a large batch costs as much as the read.
  static Buffer for_overwrite(size_t bytes) {
    Buffer b;
    b.allocate(bytes);
    return b;
  }
  // A view of memory the caller owns and lends to be written (the rows of
  // a run's outputs in the whole batch's arrays: RunOptions::output_rows).
  // Not freed by the Buffer; copies of it own theirs.
  static Buffer lend(std::byte* data, size_t bytes) { return borrow(data, bytes); }
  void resize(size_t bytes) {
    if (!data_.get_deleter().owned) {  // borrowed: let go, then own what follows
      (void)data_.release();
      data_.get_deleter().owned = true;
      size_ = 0;
    }
    if (bytes == size_) return;
    allocate(bytes);
    if (bytes) std::memset(data_.get(), 0, bytes);
  }
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  using Free = BufferFree;
  void allocate(size_t bytes) {
    data_.reset(bytes ? static_cast<std::byte*>(pool_allocate(bytes)) : nullptr);
    data_.get_deleter().bytes = bytes;
    size_ = bytes;
  }
  std::unique_ptr<std::byte[], Free> data_;
  size_t size_ = 0;
};

struct Array {
  TensorType type;    // dtype and event shape
  int64_t batch = 0;  // leading dimension
  Buffer data;

  Array() = default;
  Array(TensorType t, int64_t b)
      : type(std::move(t)),
        batch(b),
        data(static_cast<size_t>(b * type.num_elements()) * dtype_size(type.dtype)) {}
  int64_t event_size() const { return type.num_elements(); }
  size_t byte_size() const { return data.size(); }
  template <typename T>
  T* as() {
    return reinterpret_cast<T*>(data.data());
  }
  template <typename T>
  const T* as() const {
    return reinterpret_cast<const T*>(data.data());
  }
};

}  // namespace ab
