#include "io/scalar.h"

#include <cfloat>
#include <cmath>
#include <cstring>

#include "io/json_write.h"

namespace ab {

std::string input_scalar_str(const InputScalar& s) {
  switch (s.kind) {
    case InputScalar::Kind::Bool:
      return s.b ? "true" : "false";
    case InputScalar::Kind::Int:
      return std::to_string(s.i);
    case InputScalar::Kind::UInt:
      return std::to_string(s.u);
    case InputScalar::Kind::Float: {
      std::string out;
      append_f64(out, s.f);
      if (out.front() == '"') out = out.substr(1, out.size() - 2);
      return out;
    }
  }
  return "?";
}

namespace {

template <typename T>
void put(void* dst, T v) {
  std::memcpy(dst, &v, sizeof v);
}

// An integral double in [lo, hi]; both bounds are exactly representable.
std::optional<std::string> check_integral(double v, double lo, double hi, DType dtype) {
  if (std::isnan(v) || std::isinf(v) || v != std::trunc(v))
    return input_scalar_str(InputScalar::of_float(v)) + " is not an integer";
  if (v < lo || v > hi)
    return input_scalar_str(InputScalar::of_float(v)) + " is out of range for " + dtype_name(dtype);
  return std::nullopt;
}

std::optional<std::string> store_integer(const InputScalar& s, DType dtype, void* dst) {
  const bool i32 = dtype == DType::I32;
  const int64_t lo = i32 ? INT32_MIN : INT64_MIN;
  const int64_t hi = i32 ? INT32_MAX : INT64_MAX;
  int64_t v = 0;
  switch (s.kind) {
    case InputScalar::Kind::Bool:
      return "expected a number, found the boolean " + input_scalar_str(s);
    case InputScalar::Kind::Int:
      if (s.i < lo || s.i > hi)
        return input_scalar_str(s) + " is out of range for " + dtype_name(dtype);
      v = s.i;
      break;
    case InputScalar::Kind::UInt:
      if (s.u > static_cast<uint64_t>(hi))
        return input_scalar_str(s) + " is out of range for " + dtype_name(dtype);
      v = static_cast<int64_t>(s.u);
      break;
    case InputScalar::Kind::Float: {
      // -2^63 is exact; 2^63 - 1 is not a double, so test against 2^63 exclusively.
      double dlo = static_cast<double>(lo), dhi = i32 ? static_cast<double>(hi) : 0x1p63;
      if (auto e = check_integral(s.f, dlo, dhi, dtype)) return e;
      // -2^63 itself as a float is out of range too: the integer -2^63 in
      // JSON is read as an integer, so a float equal to it came from an
      // integer below the range (-9223372036854775809 rounds to it).
      if (!i32 && (s.f == 0x1p63 || s.f == -0x1p63))
        return input_scalar_str(s) + " is out of range for i64";
      v = static_cast<int64_t>(s.f);
      break;
    }
  }
  if (i32)
    put(dst, static_cast<int32_t>(v));
  else
    put(dst, v);
  return std::nullopt;
}

double as_double(const InputScalar& s) {
  switch (s.kind) {
    case InputScalar::Kind::Int:
      return static_cast<double>(s.i);
    case InputScalar::Kind::UInt:
      return static_cast<double>(s.u);
    case InputScalar::Kind::Float:
      return s.f;
    case InputScalar::Kind::Bool:
      break;
  }
  return 0;
}

}  // namespace

std::optional<std::string> store_scalar(const InputScalar& s, DType dtype, void* dst) {
  switch (dtype) {
    case DType::Bool:
      if (s.kind != InputScalar::Kind::Bool)
        return "expected a boolean, found the number " + input_scalar_str(s);
      put<uint8_t>(dst, s.b ? 1 : 0);
      return std::nullopt;
    case DType::I32:
    case DType::I64:
      return store_integer(s, dtype, dst);
    case DType::F32:
    case DType::F64:
      break;
  }
  if (s.kind == InputScalar::Kind::Bool)
    return "expected a number, found the boolean " + input_scalar_str(s);
  double v = as_double(s);
  if (dtype == DType::F64) {
    put(dst, v);
    return std::nullopt;
  }
  // Values just above FLT_MAX round down to it; from FLT_MAX + half an ulp
  // (2^103) on they would round to infinity, which is a range error.
  if (std::isfinite(v) && std::fabs(v) > FLT_MAX) {
    if (std::fabs(v) >= static_cast<double>(FLT_MAX) + 0x1p103)
      return input_scalar_str(s) + " is out of range for f32";
    put(dst, v > 0 ? FLT_MAX : -FLT_MAX);
    return std::nullopt;
  }
  put(dst, static_cast<float>(v));
  return std::nullopt;
}

InputScalar load_scalar(DType dtype, const std::byte* data, int64_t index) {
  const std::byte* p = data + static_cast<size_t>(index) * dtype_size(dtype);
  switch (dtype) {
    case DType::Bool:
      return InputScalar::of_bool(*reinterpret_cast<const uint8_t*>(p) != 0);
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return InputScalar::of_int(v);
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      return InputScalar::of_int(v);
    }
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      return InputScalar::of_float(v);
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      return InputScalar::of_float(v);
    }
  }
  return InputScalar{};
}

std::string index_str(const Shape& shape, int64_t index) {
  std::string out;
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t extent = shape[d] > 0 ? shape[d] : 1;
    out = "[" + std::to_string(index % extent) + "]" + out;
    index /= extent;
  }
  return out;
}

std::optional<Array> convert_dtype(Array a, DType dtype, std::string& why) {
  if (a.type.dtype == dtype) return std::move(a);
  Array out(TensorType{dtype, a.type.shape}, a.batch);
  const int64_t n = a.batch * a.event_size();
  Shape full{a.batch};
  full.insert(full.end(), a.type.shape.begin(), a.type.shape.end());
  const size_t size = dtype_size(dtype);
  for (int64_t k = 0; k < n; ++k) {
    InputScalar s = load_scalar(a.type.dtype, a.data.data(), k);
    if (auto e = store_scalar(s, dtype, out.data.data() + static_cast<size_t>(k) * size)) {
      why = "element " + index_str(full, k) + ": " + *e;
      return std::nullopt;
    }
  }
  return out;
}

}  // namespace ab
