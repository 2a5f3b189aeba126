// One thread's value of any type: a tensor (dtype, event shape, contiguous
// elements) or a tuple of values. The reference interpreter works on these;
// the batched VMs store variables as Arrays instead.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/array.h"
#include "ir/ops.h"
#include "ir/prim_types.h"
#include "ir/type.h"

namespace ab {

struct Value {
  bool is_tuple = false;
  TensorType type;
  Buffer data;
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
// `thread`: the thread's index in the whole batch (thread_index()).
std::optional<std::string> apply_kernel(PrimId op, const std::vector<const Value*>& args,
                                        const PrimAttrs& attrs, Value& result, int64_t thread);

// Per-thread results (one vector of values per thread) as one Array per
// result leaf, batch first.
std::vector<Array> gather_results(const std::vector<Type>& types,
                                  std::vector<std::vector<Value>>& per_thread);

}  // namespace ab
