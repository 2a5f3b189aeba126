// One element on its way into a typed Array, and the checked conversion to a
// dtype. JSON values and .npy elements both pass through store_scalar, so a
// declared parameter type converts (and range-checks) them the same way.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ir/array.h"
#include "ir/type.h"

namespace ab {

struct InputScalar {
  enum class Kind : uint8_t { Bool, Int, UInt, Float };
  Kind kind = Kind::Int;
  bool b = false;
  int64_t i = 0;   // Kind::Int
  uint64_t u = 0;  // Kind::UInt: JSON integers above INT64_MAX
  double f = 0;    // Kind::Float

  static InputScalar of_bool(bool v) {
    InputScalar s;
    s.kind = Kind::Bool;
    s.b = v;
    return s;
  }
  static InputScalar of_int(int64_t v) {
    InputScalar s;
    s.kind = Kind::Int;
    s.i = v;
    return s;
  }
  static InputScalar of_uint(uint64_t v) {
    InputScalar s;
    s.kind = Kind::UInt;
    s.u = v;
    return s;
  }
  static InputScalar of_float(double v) {
    InputScalar s;
    s.kind = Kind::Float;
    s.f = v;
    return s;
  }
};

// The value as a user wrote it: "true", "3", "2.5", "NaN".
std::string input_scalar_str(const InputScalar& s);

// Converts `s` to `dtype` and stores it at `dst` (dtype_size(dtype) bytes).
// Returns why not when the value does not fit: booleans and numbers never
// convert into each other; an integer dtype needs an integral, finite,
// in-range value; f32 needs a value within float's range.
std::optional<std::string> store_scalar(const InputScalar& s, DType dtype, void* dst);

// Element `index` of a contiguous buffer of `dtype`, as a InputScalar.
InputScalar load_scalar(DType dtype, const std::byte* data, int64_t index);

// "[2][0]": the position of flat element `index` in an array of `shape`.
std::string index_str(const Shape& shape, int64_t index);

// `a` converted element by element to `dtype`; `a` itself when the dtype
// already matches (moved: a large input is never copied for nothing). On
// failure, `why` gets the first failing element's position and the reason,
// and the result is empty.
std::optional<Array> convert_dtype(Array a, DType dtype, std::string& why);

}  // namespace ab
