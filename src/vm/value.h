// One thread's value of any type: a tensor (dtype, event shape, contiguous
// elements) or a tuple of values. The reference interpreter works on these;
// the batched VMs store variables as Arrays instead.
#pragma once
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/ops.h"
#include "ir/prim_types.h"
#include "ir/type.h"

namespace ab {

struct ProgressTable;  // vm/kernels/kernel.h

// One value's bytes, zero-initialised: up to kInline bytes (a scalar, or a
// few) are held inside, so that the reference interpreters, which make and
// drop a value per instruction, do not go to the heap for scalars. Aligned
// for every dtype.
class ValueBytes {
 public:
  static constexpr size_t kInline = 16;

  ValueBytes() = default;
  ValueBytes(const ValueBytes& o) { *this = o; }
  ValueBytes(ValueBytes&& o) noexcept { take(o); }
  ~ValueBytes() { delete[] heap_; }
  ValueBytes& operator=(const ValueBytes& o) {
    if (this != &o) {
      resize(o.size_);
      if (size_) std::memcpy(data(), o.data(), size_);
    }
    return *this;
  }
  ValueBytes& operator=(ValueBytes&& o) noexcept {
    if (this != &o) {
      delete[] heap_;
      heap_ = nullptr;
      take(o);
    }
    return *this;
  }
  void resize(size_t bytes) {
    if (bytes != size_) {
      delete[] heap_;
      heap_ = bytes > kInline ? new std::byte[bytes] : nullptr;
      size_ = bytes;
    }
    if (bytes) std::memset(data(), 0, bytes);
  }
  std::byte* data() { return heap_ ? heap_ : inline_; }
  const std::byte* data() const { return heap_ ? heap_ : inline_; }
  size_t size() const { return size_; }
  // The bytes copied into a Buffer (the batched VMs' storage).
  Buffer buffer() const {
    Buffer b(size_);
    if (size_) std::memcpy(b.data(), data(), size_);
    return b;
  }

 private:
  void take(ValueBytes& o) noexcept {
    size_ = o.size_;
    heap_ = o.heap_;
    if (!heap_) std::memcpy(inline_, o.inline_, kInline);
    o.heap_ = nullptr;
    o.size_ = 0;
  }
  std::byte* heap_ = nullptr;  // when size_ > kInline
  size_t size_ = 0;
  alignas(16) std::byte inline_[kInline] = {};
};

struct Value {
  bool is_tuple = false;
  TensorType type;
  ValueBytes data;
  std::vector<Value> elems;

  static Value tensor(const TensorType& t) {
    Value v;
    v.type = t;
    v.data.resize(static_cast<size_t>(t.num_elements()) * dtype_size(t.dtype));
    return v;
  }
  static Value of_type(const Type& t) {
    if (!t.is_tuple) return tensor(t.tensor);
    Value v;
    v.is_tuple = true;
    for (const auto& e : t.elems) v.elems.push_back(of_type(e));
    return v;
  }
  void leaves(std::vector<Value*>& out) {
    if (!is_tuple) {
      out.push_back(this);
      return;
    }
    for (auto& e : elems) e.leaves(out);
  }
};

// One primitive on one thread's values (the reference interpreters' way of
// calling a batched kernel: one lane, dense). Returns the kernel's error
// message, if any; `result` must already have the result's type.
// `thread`: the thread's index in the whole batch (thread_index(), progress);
// `progress`: the run's table for progress (RunOptions::progress_table).
std::optional<std::string> apply_kernel(PrimId op, const std::vector<const Value*>& args,
                                        const PrimAttrs& attrs, Value& result, int64_t thread,
                                        const ProgressTable* progress = nullptr);

// The result leaves' types of results of `types`, in order.
std::vector<TensorType> result_leaves(const std::vector<Type>& types);
// Thread t's results (values whose leaves are the outputs' leaves, in
// order) into row t of `outputs`: the reference interpreters store each
// thread's results as it finishes, so they keep no values per thread.
void put_results(std::vector<Array>& outputs, int64_t t, std::vector<Value>& results);

}  // namespace ab
