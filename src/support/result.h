// Errors are values: a Result<T> holds either a T or the diagnostics that
// explain why there is none. Exceptions never cross the library's API.
#pragma once
#include <optional>
#include <utility>

#include "support/diag.h"

namespace ab {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}
  Result(Diagnostics diags) : diags_(std::move(diags)) {}
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  T take() { return std::move(*value_); }
  const Diagnostics& diags() const { return diags_; }

 private:
  std::optional<T> value_;
  Diagnostics diags_;
};

}  // namespace ab
