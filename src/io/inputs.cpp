#include "io/inputs.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "io/io_error.h"
#include "io/json_input.h"
#include "io/npy.h"
#include "io/scalar.h"
#include "support/strings.h"

namespace ab {

using ojson = nlohmann::ordered_json;

namespace {

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

bool is_inline_json(std::string_view arg) {
  size_t first = arg.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (arg[first] == '{' || arg[first] == '[');
}

// Collects the inputs: which parameter came from where, and every error.
class Loader {
 public:
  Loader(const std::vector<ParamSpec>& params, bool defer_npy)
      : params_(params), defer_npy_(defer_npy) {
    values_.resize(params.size());
    on_disk_.resize(params.size());
    origins_.resize(params.size());
    for (const auto& p : params) names_.push_back(p.name);
  }

  void load_arg(const std::string& arg, int inline_count) {
    if (is_inline_json(arg)) {
      std::string origin =
          inline_count > 1 ? "inline JSON #" + std::to_string(inline_number_++) : "inline JSON";
      given_.push_back(origin);
      load_json_text(arg, origin);
      return;
    }
    given_.push_back(arg);
    size_t eq = arg.find('=');
    if (eq != std::string::npos && is_identifier(std::string_view(arg).substr(0, eq))) {
      load_npy(arg.substr(0, eq), arg.substr(eq + 1));
      return;
    }
    if (looks_like_npy(arg)) return load_unnamed_npy(arg);
    load_json_file(arg);
  }

  // Params with no input, tuple types and batch sizes: checked once all
  // arguments are in.
  Result<InputSet> finish(const std::vector<std::string>& input_args,
                          std::optional<int64_t> batch_flag) {
    for (size_t k = 0; k < params_.size(); ++k) {
      // After a source that could not be read at all, or a misspelt name,
      // "missing" would only repeat the error already reported.
      if (values_[k] || is_tuple(k) || unreadable_source_ || suggested_.count(params_[k].name))
        continue;
      std::string given =
          input_args.empty() ? "no --inputs were given" : "inputs given: " + join(given_, ", ");
      error("missing input for parameter '" + params_[k].name + "' (" + given + ")");
    }
    if (batch_flag && *batch_flag < 1)
      error("--batch " + std::to_string(*batch_flag) + ": the batch size must be at least 1");
    if (diags_.has_errors()) return diags_;

    InputSet set;
    std::vector<size_t> sized;  // parameters whose batch is not 1
    for (size_t k = 0; k < params_.size(); ++k)
      if (values_[k]->batch != 1) sized.push_back(k);
    bool mismatch = false;
    for (size_t k : sized) mismatch |= values_[k]->batch != values_[sized[0]]->batch;
    if (mismatch) {
      std::vector<std::string> parts;
      for (size_t k : sized)
        parts.push_back(quote(params_[k].name) + " has " + std::to_string(values_[k]->batch) +
                        " (" + origins_[k] + ")");
      return io_error(
          "batch sizes differ: " + join(parts, ", ") +
          "; every input must have the same batch size, or 1 to share one value among all threads");
    }
    set.batch = sized.empty() ? (batch_flag ? *batch_flag : 1) : values_[sized[0]]->batch;
    if (batch_flag && !sized.empty() && *batch_flag != set.batch) {
      size_t k = sized[0];
      return io_error("--batch " + std::to_string(*batch_flag) +
                      " disagrees with the inputs: " + quote(params_[k].name) + " has batch size " +
                      std::to_string(set.batch) + " (" + origins_[k] + ")");
    }
    for (auto& v : values_) set.values.push_back(std::move(*v));
    if (defer_npy_) set.on_disk = std::move(on_disk_);
    return set;
  }

  void check_tuples() {
    for (size_t k = 0; k < params_.size(); ++k)
      if (is_tuple(k))
        error("parameter '" + params_[k].name + "' has the tuple type " +
              params_[k].declared->str() +
              "; tuple-typed inputs are not supported: give the entry one parameter per tensor");
  }

 private:
  bool is_tuple(size_t k) const { return params_[k].declared && params_[k].declared->is_tuple; }

  void error(std::string message) { diags_.error(SourceLoc{}, std::move(message)); }
  void take(const Diagnostics& d) { diags_.append(d); }

  std::optional<std::string> read_file(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      error(path + ": cannot read the inputs file: it is a directory");
      return std::nullopt;
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error(path + ": cannot read the inputs file: " + std::strerror(errno));
      return std::nullopt;
    }
    std::ostringstream ss;
    ss << in.rdbuf();
    return std::move(ss).str();
  }

  void load_json_file(const std::string& path) {
    if (auto text = read_file(path))
      load_json_text(*text, path);
    else
      unreadable_source_ = true;
  }

  void load_json_text(std::string_view text, const std::string& origin) {
    auto parsed = parse_json_text(text, origin);
    if (!parsed.ok()) {
      unreadable_source_ = true;
      return take(parsed.diags());
    }
    const ojson& doc = *parsed;
    if (doc.is_object()) {
      for (auto it = doc.begin(); it != doc.end(); ++it) {
        auto k = find_param(it.key());
        if (!k) {
          unknown_input(origin, it.key());
          continue;
        }
        assign(*k, origin, [&](const std::optional<TensorType>& t) {
          return json_to_array(it.value(), t, origin, it.key());
        });
      }
    } else if (doc.is_array()) {
      if (doc.size() > params_.size()) {
        error(origin + ": the list gives " + std::to_string(doc.size()) +
              " inputs but the entry has " + std::to_string(params_.size()) + " parameter" +
              (params_.size() == 1 ? "" : "s") + " (" + param_list() +
              "); a top-level JSON list gives the parameters in order — to give "
              "one parameter's batch, write {\"name\": [...]}");
        unreadable_source_ = true;
        return;
      }
      for (size_t k = 0; k < doc.size(); ++k)
        assign(k, origin, [&](const std::optional<TensorType>& t) {
          return json_to_array(doc[k], t, origin, params_[k].name);
        });
    } else {
      error(
          origin +
          ": expected a JSON object keyed by parameter name or a list in parameter order, found " +
          std::string(doc.is_string()    ? "a string"
                      : doc.is_boolean() ? "a boolean"
                      : doc.is_null()    ? "null"
                                         : "a number"));
      unreadable_source_ = true;
    }
  }

  // A .npy file holds one array, so one parameter: named by NAME=PATH, or
  // the only one the entry has.
  static bool looks_like_npy(const std::string& path) {
    if (path.size() >= 4) {
      std::string ext = path.substr(path.size() - 4);
      for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (ext == ".npy") return true;
    }
    std::ifstream in(path, std::ios::binary);
    char magic[6] = {};
    return in.read(magic, 6) && std::string_view(magic, 6) == "\x93NUMPY";
  }

  void load_unnamed_npy(const std::string& path) {
    if (params_.size() == 1) return load_npy(params_[0].name, path);
    unreadable_source_ = true;
    if (params_.empty()) {
      error(path + ": a .npy file gives one parameter, but the entry has none");
      return;
    }
    std::string stem = std::filesystem::path(path).stem().string();
    std::string name = find_param(stem) ? stem : "NAME";
    error(path + ": a .npy file gives one parameter: name it, as in --inputs " + name + "=" + path +
          " (the entry's parameters are " + param_list() + ")");
  }

  void load_npy(const std::string& name, const std::string& path) {
    auto k = find_param(name);
    if (!k) {
      unknown_input(name + "=" + path, name);
      return;
    }
    if (path.empty()) {
      error(name + "=: missing the path of the .npy file for parameter '" + name + "'");
      return;
    }
    assign(*k, path, [&](const std::optional<TensorType>& declared) -> Result<Array> {
      if (defer_npy_) {
        auto header = read_npy_header(path);
        if (!header.ok()) return named_errors(header.diags(), path, name);
        if (!header->shape.empty() && header->shape[0] != 1) {
          if (!declared) {
            TensorType t{header->dtype, Shape(header->shape.begin() + 1, header->shape.end())};
            return deferred(*k, path, name, *header, t);
          }
          if (auto e = check_npy_shape(header->shape, *declared, path, name)) return *e;
          return deferred(*k, path, name, *header, *declared);
        }
      }
      auto npy = read_npy_file(path);
      if (!npy.ok()) return named_errors(npy.diags(), path, name);
      if (!declared) return npy_to_array(npy.take());
      const std::string where =
          path + ": parameter '" + name + "' (" + Type{false, *declared, {}}.str() + "): ";
      if (auto e = check_npy_shape(npy->shape, *declared, path, name)) return *e;
      const DType file_dtype = npy->dtype;
      std::string why;
      auto converted = convert_dtype(npy_to_array(npy.take()), declared->dtype, why);
      if (!converted)
        return io_error(where + "(the file's dtype is " + npy_descr(file_dtype) + ") " + why);
      return std::move(*converted);
    });
  }

  // Name the parameter too: "a.npy: parameter 'x': dtype '>f8' is ...".
  static Diagnostics named_errors(const Diagnostics& d, const std::string& path,
                                  const std::string& name) {
    Diagnostics named;
    for (const auto& item : d.items()) {
      std::string msg = item.message;
      if (msg.rfind(path + ": ", 0) == 0) msg = msg.substr(path.size() + 2);
      named.error(item.loc, path + ": parameter '" + name + "': " + msg);
    }
    return named;
  }

  // The file's shape must be (batch, declared event shape...), or () for one
  // thread of a scalar.
  static std::optional<Diagnostics> check_npy_shape(const Shape& file, const TensorType& declared,
                                                    const std::string& path,
                                                    const std::string& name) {
    bool fits = file.size() == declared.shape.size() + 1 &&
                std::equal(declared.shape.begin(), declared.shape.end(), file.begin() + 1);
    if (file.empty() && declared.shape.empty()) fits = true;  // 0-d: one thread
    if (fits) return std::nullopt;
    return io_error(path + ": parameter '" + name + "' (" + Type{false, declared, {}}.str() +
                    "): the array has shape " + numpy_shape_str(file) + ", expected (batch" +
                    event_suffix(declared.shape) + "): the first axis is the batch");
  }

  // A batched .npy parameter left on disk: its type and batch, no data.
  Array deferred(size_t k, const std::string& path, const std::string& name,
                 const NpyHeader& header, const TensorType& type) {
    on_disk_[k] = NpySource{path, name, header, type.dtype};
    Array a;
    a.type = type;
    a.batch = header.shape[0];
    return a;
  }

  static std::string numpy_shape_str(const Shape& s) {
    std::string out = "(";
    for (size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
    return out + (s.size() == 1 ? ",)" : ")");
  }
  static std::string event_suffix(const Shape& event) {
    std::string out;
    for (int64_t d : event) out += ", " + std::to_string(d);
    return out;
  }

  template <typename Make>
  void assign(size_t k, const std::string& origin, Make make) {
    const ParamSpec& p = params_[k];
    if (values_[k]) {
      error("duplicate input for parameter '" + p.name + "': given in " + origins_[k] +
            " and again in " + origin);
      return;
    }
    if (is_tuple(k)) return;  // reported once by check_tuples
    std::optional<TensorType> declared;
    if (p.declared) declared = p.declared->tensor;
    Result<Array> a = make(declared);
    origins_[k] = origin;
    if (!a.ok()) {
      take(a.diags());
      values_[k] = Array{};  // given, though bad: not also "missing"
      return;
    }
    values_[k] = a.take();
  }

  void unknown_input(const std::string& origin, const std::string& name) {
    std::string best = closest_match(name, names_);
    if (!best.empty()) suggested_.insert(best);
    error(origin + ": unknown input '" + name + "'" +
          (best.empty() ? "" : " (did you mean '" + best + "'?)") +
          "; the entry's parameters are " + param_list());
  }

  std::optional<size_t> find_param(const std::string& name) const {
    for (size_t k = 0; k < params_.size(); ++k)
      if (params_[k].name == name) return k;
    return std::nullopt;
  }

  std::string param_list() const {
    if (params_.empty()) return "none";
    std::vector<std::string> q;
    for (const auto& n : names_) q.push_back(quote(n));
    return join(q, ", ");
  }

  const std::vector<ParamSpec>& params_;
  bool defer_npy_ = false;
  std::vector<std::optional<NpySource>> on_disk_;
  std::vector<std::string> names_;
  std::vector<std::optional<Array>> values_;
  std::vector<std::string> origins_;
  Diagnostics diags_;
  std::vector<std::string> given_;  // every --inputs, as messages name it
  int inline_number_ = 1;
  bool unreadable_source_ = false;
  std::set<std::string> suggested_;
};

}  // namespace

Result<InputSet> load_inputs(const std::vector<std::string>& input_args,
                             const std::vector<ParamSpec>& params,
                             std::optional<int64_t> batch_flag, bool defer_npy) {
  Loader loader(params, defer_npy);
  loader.check_tuples();
  int inline_count = 0;
  for (const auto& a : input_args) inline_count += is_inline_json(a);
  for (const auto& a : input_args) loader.load_arg(a, inline_count);
  return loader.finish(input_args, batch_flag);
}

Result<Array> read_input_rows(const NpySource& source, int64_t first, int64_t count) {
  auto rows = read_npy_rows(source.path, source.header, first, count);
  if (!rows.ok()) return rows.diags();
  Array a;
  a.type.dtype = source.header.dtype;
  a.type.shape.assign(source.header.shape.begin() + 1, source.header.shape.end());
  a.batch = count;
  a.data = rows.take();
  if (a.type.dtype == source.dtype) return a;
  std::string why;
  auto converted = convert_dtype(std::move(a), source.dtype, why);
  if (!converted)
    return io_error(source.path + ": parameter '" + source.param + "' (" +
                    dtype_name(source.dtype) + "), in rows " + std::to_string(first) + ".." +
                    std::to_string(first + count) + " (positions count from row " +
                    std::to_string(first) + "): (the file's dtype is " +
                    npy_descr(source.header.dtype) + ") " + why);
  return std::move(*converted);
}

}  // namespace ab
