#include "io/json_write.h"

#include <cassert>
#include <charconv>
#include <cmath>

namespace ab {

namespace {

// Adds ".0" to an integral-looking float so that it does not read back as an
// integer ("1" -> "1.0"; "1e+30" and "0.5" stay).
void ensure_float_look(std::string& out, size_t start) {
  for (size_t k = start; k < out.size(); ++k)
    if (out[k] == '.' || out[k] == 'e') return;
  out += ".0";
}

template <typename F>
void append_float(std::string& out, F v) {
  if (std::isnan(v)) {
    out += "\"NaN\"";
  } else if (std::isinf(v)) {
    out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    char buf[64];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    size_t start = out.size();
    out.append(buf, r.ptr);
    ensure_float_look(out, start);
  }
}

template <typename T>
void append_int(std::string& out, T v) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_element(std::string& out, DType dtype, const std::byte* p) {
  switch (dtype) {
    case DType::Bool:
      out += *reinterpret_cast<const uint8_t*>(p) ? "true" : "false";
      return;
    case DType::I32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      append_int(out, v);
      return;
    }
    case DType::I64: {
      int64_t v;
      std::memcpy(&v, p, 8);
      append_int(out, v);
      return;
    }
    case DType::F32: {
      float v;
      std::memcpy(&v, p, 4);
      append_f32(out, v);
      return;
    }
    case DType::F64: {
      double v;
      std::memcpy(&v, p, 8);
      append_f64(out, v);
      return;
    }
  }
}

// Writes the sub-array of `shape[dim:]` starting at `*p`, advancing `*p`.
void append_nested(std::string& out, const Shape& shape, size_t dim, DType dtype,
                   const std::byte*& p) {
  if (dim == shape.size()) {
    append_element(out, dtype, p);
    p += dtype_size(dtype);
    return;
  }
  out += '[';
  for (int64_t k = 0; k < shape[dim]; ++k) {
    if (k) out += ", ";
    append_nested(out, shape, dim + 1, dtype, p);
  }
  out += ']';
}

template <typename Json>
void append_value(std::string& out, const Json& v) {
  switch (v.type()) {
    case Json::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ", ";
        first = false;
        out += Json(it.key()).dump();
        out += ": ";
        append_value(out, it.value());
      }
      out += '}';
      return;
    }
    case Json::value_t::array: {
      out += '[';
      for (size_t k = 0; k < v.size(); ++k) {
        if (k) out += ", ";
        append_value(out, v[k]);
      }
      out += ']';
      return;
    }
    case Json::value_t::number_float:
      append_f64(out, v.template get<double>());
      return;
    default:
      out += v.dump();
      return;
  }
}

}  // namespace

void append_f64(std::string& out, double v) { append_float(out, v); }
void append_f32(std::string& out, float v) { append_float(out, v); }

void append_array_json(std::string& out, const Array& a, int64_t batch) {
  assert(a.batch == batch || a.batch == 1);
  const size_t row_bytes = static_cast<size_t>(a.event_size()) * dtype_size(a.type.dtype);
  out += '[';
  for (int64_t b = 0; b < batch; ++b) {
    if (b) out += ", ";
    const std::byte* p = a.data.data() + (a.batch == 1 ? 0 : static_cast<size_t>(b) * row_bytes);
    append_nested(out, a.type.shape, 0, a.type.dtype, p);
  }
  out += ']';
}

void append_json_value(std::string& out, const nlohmann::json& v) { append_value(out, v); }
void append_json_value(std::string& out, const nlohmann::ordered_json& v) { append_value(out, v); }

}  // namespace ab
