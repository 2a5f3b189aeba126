#include "io/json_input.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "io/io_error.h"
#include "io/scalar.h"

namespace ab {

using ojson = nlohmann::ordered_json;

namespace {

// 1-based line and column of byte `pos` (0-based) in `text`.
std::pair<size_t, size_t> line_col(std::string_view text, size_t pos) {
  pos = std::min(pos, text.size());
  size_t line = 1, line_start = 0;
  for (size_t k = 0; k < pos; ++k)
    if (text[k] == '\n') ++line, line_start = k + 1;
  return {line, pos - line_start + 1};
}

// Python's json.dump writes NaN and the infinities as the bare words NaN,
// Infinity and -Infinity, which JSON does not have: outside strings, each
// becomes the string form ("NaN") that inputs accept (docs/language.md, "Inputs and outputs").
// `quotes` receives the offsets (in the result) of the quotes inserted, to map error positions
// back. Returns false (and leaves `out` alone) if there is none.
bool quote_bare_nonfinite(std::string_view text, std::string& out, std::vector<size_t>& quotes) {
  auto word_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
  };
  bool in_string = false, found = false;
  size_t copied = 0;
  for (size_t k = 0; k < text.size(); ++k) {
    char c = text[k];
    if (in_string) {
      if (c == '\\')
        ++k;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
      continue;
    }
    if (c != 'N' && c != 'I' && c != '-') continue;
    if (k > 0 && word_char(text[k - 1])) continue;
    size_t len = 0;
    for (std::string_view w : {"NaN", "Infinity", "-Infinity"})
      if (text.substr(k, w.size()) == w) len = w.size();
    if (len == 0 || (k + len < text.size() && word_char(text[k + len]))) continue;
    if (!found) out.reserve(text.size() + 16);
    found = true;
    out.append(text.substr(copied, k - copied));
    quotes.push_back(out.size());
    out += '"';
    out.append(text.substr(k, len));
    quotes.push_back(out.size());
    out += '"';
    copied = k + len;
    k += len - 1;
  }
  if (found) out.append(text.substr(copied));
  return found;
}

// nlohmann's message without its "[json.exception...] parse error at line
// L, column C: " prefix (we print our own position).
std::string parse_error_reason(const std::string& what) {
  size_t at = what.find("column ");
  if (at != std::string::npos) {
    size_t colon = what.find(": ", at);
    if (colon != std::string::npos) return what.substr(colon + 2);
  }
  return what;
}

const char* kind_name(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null:
      return "null";
    case ojson::value_t::object:
      return "an object";
    case ojson::value_t::array:
      return "a list";
    case ojson::value_t::string:
      return "a string";
    case ojson::value_t::boolean:
      return "a boolean";
    case ojson::value_t::binary:
      return "binary data";
    case ojson::value_t::discarded:
      return "nothing";
    default:
      return "a number";
  }
}

// A JSON leaf as a InputScalar, or nullopt if it is not an element at all.
std::optional<InputScalar> leaf_scalar(const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::boolean:
      return InputScalar::of_bool(v.get<bool>());
    case ojson::value_t::number_integer:
      return InputScalar::of_int(v.get<int64_t>());
    case ojson::value_t::number_unsigned:
      return InputScalar::of_uint(v.get<uint64_t>());
    case ojson::value_t::number_float:
      return InputScalar::of_float(v.get<double>());
    case ojson::value_t::string: {
      const auto& s = v.get_ref<const std::string&>();
      if (s == "NaN") return InputScalar::of_float(std::numeric_limits<double>::quiet_NaN());
      if (s == "Infinity") return InputScalar::of_float(std::numeric_limits<double>::infinity());
      if (s == "-Infinity") return InputScalar::of_float(-std::numeric_limits<double>::infinity());
      return std::nullopt;
    }
    default:
      return std::nullopt;
  }
}

// Walks `v` against `shape` (batch first), collecting the leaves in C order.
// Returns an error message (without origin) on ragged or wrong nesting,
// naming the element by its indices (`x[3][1]`), which are spelled out only
// then: a batch of many elements is read without a string per element.
class Walker {
 public:
  // `whole`: the shape is the value's own, with no batch dimension.
  Walker(const Shape& shape, bool declared, bool whole = false)
      : shape_(shape), declared_(declared), whole_(whole), at_(shape.size(), 0) {
    int64_t n = 1;
    for (int64_t d : shape) n *= std::max<int64_t>(d, 0);
    leaves.reserve(static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 26)));
  }
  std::vector<InputScalar> leaves;

  std::optional<std::string> walk(const ojson& v, size_t dim, const std::string& param) {
    auto where = [&] {
      std::string path = param;
      for (size_t d = 0; d < dim; ++d) path += "[" + std::to_string(at_[d]) + "]";
      return path;
    };
    if (dim == shape_.size()) {
      auto s = leaf_scalar(v);
      if (s) {
        leaves.push_back(*s);
        return std::nullopt;
      }
      if (v.is_array())
        return where() + " is a list where a number or boolean was expected" + why_shape();
      if (v.is_string())
        return where() + " is the string " + v.dump() +
               "; the only strings allowed are \"NaN\", \"Infinity\" and \"-Infinity\"";
      return where() + " is " + kind_name(v) + ", expected a number or boolean";
    }
    if (!v.is_array())
      return where() + " is " + kind_name(v) + " where a list of " + std::to_string(shape_[dim]) +
             " was expected" + why_shape();
    if (static_cast<int64_t>(v.size()) != shape_[dim])
      return where() + " has " + std::to_string(v.size()) + " elements, expected " +
             std::to_string(shape_[dim]) + why_shape();
    for (size_t k = 0; k < v.size(); ++k) {
      at_[dim] = k;
      if (auto e = walk(v[k], dim + 1, param)) return e;
    }
    return std::nullopt;
  }

 private:
  // With a declared type, wrong nesting is a shape error; without one, the
  // first elements set the shape and any other nesting is ragged.
  std::string why_shape() const {
    if (!declared_) return " (ragged nesting)";
    if (whole_) return "";  // the type named before says the shape
    Shape event(shape_.begin() + 1, shape_.end());
    return event.empty() ? " (each thread's value is a scalar)"
                         : " (each thread's value has shape " + shape_str(event) + ")";
  }
  const Shape& shape_;
  bool declared_;
  bool whole_;
  std::vector<size_t> at_;  // the indices of the element being read, per dimension
};

// The shape the nesting suggests, following first elements.
Shape nesting_shape(const ojson& v) {
  Shape s;
  const ojson* p = &v;
  while (p->is_array()) {
    s.push_back(static_cast<int64_t>(p->size()));
    if (p->empty()) break;
    p = &(*p)[0];
  }
  return s;
}

std::optional<DType> infer_dtype(const std::vector<InputScalar>& leaves, std::string& why) {
  bool any_bool = false, any_number = false, any_float = false;
  for (const auto& s : leaves) {
    any_bool |= s.kind == InputScalar::Kind::Bool;
    any_number |= s.kind != InputScalar::Kind::Bool;
    any_float |= s.kind == InputScalar::Kind::Float;
  }
  if (any_bool && any_number) {
    why = "mixes booleans and numbers";
    return std::nullopt;
  }
  if (any_bool) return DType::Bool;
  if (any_float) return DType::F64;
  if (leaves.empty()) return DType::F64;  // as NumPy: an empty list is float
  return DType::I64;
}

}  // namespace

Result<ojson> parse_json_text(std::string_view text, const std::string& origin) {
  std::vector<std::string> repeated;
  std::vector<std::string> seen;
  auto track_keys = [&](int depth, ojson::parse_event_t event, ojson& parsed) {
    if (event == ojson::parse_event_t::key && depth == 1) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (std::find(seen.begin(), seen.end(), key) != seen.end())
        repeated.push_back(key);
      else
        seen.push_back(key);
    }
    return true;
  };
  ojson value;
  std::string quoted;
  std::vector<size_t> quotes;
  const bool rewritten = quote_bare_nonfinite(text, quoted, quotes);
  const std::string_view parsed_text = rewritten ? std::string_view(quoted) : text;
  try {
    value = ojson::parse(parsed_text.begin(), parsed_text.end(), track_keys);
  } catch (const ojson::parse_error& e) {
    size_t at = e.byte == 0 ? 0 : e.byte - 1;
    at -= static_cast<size_t>(std::lower_bound(quotes.begin(), quotes.end(), at) - quotes.begin());
    auto [line, col] = line_col(text, at);
    std::string reason = parse_error_reason(e.what());
    if (rewritten)  // show the bare words as they were written
      for (const char* w : {"NaN", "-Infinity", "Infinity"}) {
        const std::string q = std::string("\"") + w + "\"";
        for (size_t p = reason.find(q); p != std::string::npos; p = reason.find(q, p))
          reason.replace(p, q.size(), w);
      }
    if (reason.find("invalid literal") != std::string::npos)
      reason += " (a value is a number, true, false, a list, or NaN, Infinity or -Infinity)";
    return io_error(origin + ":" + std::to_string(line) + ":" + std::to_string(col) +
                    ": invalid JSON: " + reason);
  } catch (const ojson::out_of_range& e) {
    // "number overflow parsing '1e400'": placed at the number's first
    // occurrence in the text (nlohmann gives no position for it).
    std::string what = e.what();
    std::string where = origin;
    const size_t q = what.find('\'');
    const size_t q2 = q == std::string::npos ? q : what.find('\'', q + 1);
    if (q2 != std::string::npos) {
      const std::string number = what.substr(q + 1, q2 - q - 1);
      const size_t at = text.find(number);
      if (!number.empty() && at != std::string_view::npos) {
        auto [line, col] = line_col(text, at);
        where += ":" + std::to_string(line) + ":" + std::to_string(col);
      }
      return io_error(where + ": invalid JSON: the number " + number +
                      " is beyond the range of f64 (write Infinity or -Infinity for an infinite "
                      "value)");
    }
    return io_error(origin + ": invalid JSON: " + what);
  } catch (const std::exception& e) {
    return io_error(origin + ": invalid JSON: " + e.what());
  }
  if (!repeated.empty()) {
    Diagnostics d;
    for (const auto& key : repeated)
      d.error(SourceLoc{},
              origin + ": duplicate input '" + key + "': the key appears more than once");
    return d;
  }
  return value;
}

Result<Array> json_to_array(const ojson& value, const std::optional<TensorType>& declared,
                            const std::string& origin, const std::string& param, bool whole) {
  const std::string where =
      origin + ": parameter '" + param + "'" +
      (declared ? " (" + Type{false, *declared, {}}.str() + ")" : std::string()) + ": ";
  // Full shape, batch first; a bare scalar is one thread.
  Shape shape;
  if (whole) {
    shape = declared ? declared->shape : nesting_shape(value);
  } else if (declared) {
    if (!value.is_array() && declared->shape.empty()) {
      shape = {};
    } else if (!value.is_array()) {
      return io_error(where + param + " is " + kind_name(value) + ", but a value of shape " +
                      shape_str(declared->shape) +
                      " is a list with the batch first: [[...]] for one thread");
    } else {
      shape = {static_cast<int64_t>(value.size())};
      shape.insert(shape.end(), declared->shape.begin(), declared->shape.end());
    }
  } else {
    shape = nesting_shape(value);
  }
  Walker walker(shape, declared.has_value(), whole);
  std::string path = param;
  if (auto e = walker.walk(value, 0, path)) {
    std::string hint;
    if (!whole && declared && !declared->shape.empty() && nesting_shape(value) == declared->shape) {
      std::string text = value.dump();
      if (text.size() > 60) text = "[...]";
      hint = "; the batch dimension comes first: one thread is written [" + text + "]";
    }
    return io_error(where + *e + hint);
  }
  DType dtype;
  if (declared) {
    dtype = declared->dtype;
  } else {
    std::string why;
    auto d = infer_dtype(walker.leaves, why);
    if (!d) return io_error(where + why);
    dtype = *d;
  }
  Array a;
  a.type.dtype = dtype;
  if (whole) {
    a.batch = 1;
    a.type.shape = shape;
  } else if (shape.empty()) {
    a.batch = 1;
  } else {
    a.batch = shape[0];
    a.type.shape.assign(shape.begin() + 1, shape.end());
  }
  a.data.resize(walker.leaves.size() * dtype_size(dtype));
  const size_t size = dtype_size(dtype);
  for (size_t k = 0; k < walker.leaves.size(); ++k) {
    if (auto e = store_scalar(walker.leaves[k], dtype, a.data.data() + k * size))
      return io_error(where + "element " + param + index_str(shape, static_cast<int64_t>(k)) +
                      ": " + *e);
  }
  return a;
}

}  // namespace ab
