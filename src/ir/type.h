// Types of the language: a dtype with an event shape, or a tuple of types.
// The batch dimension is never part of a type: every value exists once per
// thread (or once for all threads, when it is shared; see the VM).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ab {

enum class DType : uint8_t { Bool, I32, I64, F32, F64 };

const char* dtype_name(DType d);
std::optional<DType> parse_dtype(std::string_view s);
size_t dtype_size(DType d);
inline bool is_float(DType d) { return d == DType::F32 || d == DType::F64; }
inline bool is_integer(DType d) { return d == DType::I32 || d == DType::I64; }

using Shape = std::vector<int64_t>;
int64_t num_elements(const Shape& s);
std::string shape_str(const Shape& s);  // "[2,3]"; "" for a scalar

struct TensorType {
  DType dtype = DType::F64;
  Shape shape;
  int64_t num_elements() const { return ab::num_elements(shape); }
  bool operator==(const TensorType&) const = default;
};

struct Type {
  bool is_tuple = false;
  TensorType tensor;        // when !is_tuple
  std::vector<Type> elems;  // when is_tuple

  static Type scalar(DType d) { return Type{false, {d, {}}, {}}; }
  static Type tensor_of(DType d, Shape s) { return Type{false, {d, std::move(s)}, {}}; }
  static Type tuple(std::vector<Type> elems) { return Type{true, {}, std::move(elems)}; }
  bool operator==(const Type&) const = default;
  std::string str() const;  // "f64[3]", "(i64, (f64[2,2], bool))"
  // The tensor leaves in order (a tensor is its own single leaf).
  void leaves(std::vector<TensorType>& out) const;
};

}  // namespace ab
