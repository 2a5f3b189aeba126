#include "ir/type.h"

namespace ab {

const char* dtype_name(DType d) {
  switch (d) {
    case DType::Bool:
      return "bool";
    case DType::I32:
      return "i32";
    case DType::I64:
      return "i64";
    case DType::F32:
      return "f32";
    case DType::F64:
      return "f64";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  if (s == "bool") return DType::Bool;
  if (s == "i32") return DType::I32;
  if (s == "i64") return DType::I64;
  if (s == "f32") return DType::F32;
  if (s == "f64") return DType::F64;
  return std::nullopt;
}

size_t dtype_size(DType d) {
  switch (d) {
    case DType::Bool:
      return 1;
    case DType::I32:
      return 4;
    case DType::I64:
      return 8;
    case DType::F32:
      return 4;
    case DType::F64:
      return 8;
  }
  return 0;
}

// Saturates at INT64_MAX (a shape read from a file may claim any size; the
// limits reject it afterwards).
int64_t num_elements(const Shape& s) {
  for (int64_t d : s)
    if (d == 0) return 0;
  int64_t n = 1;
  for (int64_t d : s)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

std::string shape_str(const Shape& s) {
  if (s.empty()) return "";
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::string Type::str() const {
  if (!is_tuple) return std::string(dtype_name(tensor.dtype)) + shape_str(tensor.shape);
  std::string out = "(";
  for (size_t i = 0; i < elems.size(); ++i) {
    if (i) out += ", ";
    out += elems[i].str();
  }
  return out + ")";
}

void Type::leaves(std::vector<TensorType>& out) const {
  if (!is_tuple) {
    out.push_back(tensor);
    return;
  }
  for (const auto& e : elems) e.leaves(out);
}

}  // namespace ab
