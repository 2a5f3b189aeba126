// autobatch::sample: the model, the shipped sampler (lib/nuts.ab) and a
// generated driver compiled into one program that runs one chain per thread
// (docs/sampling.md, "autobatch sample").
#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "api/internal.h"
#include "io/json_input.h"
#include "parse/parser.h"

namespace autobatch {

namespace {

using Json = nlohmann::json;

// One value of a CmdStan JSON file (a number or rectangular nested lists)
// as an array of batch 1: the io module's reader, asked once for the shape
// and once more for the dtype (f64, or i64 when log_density annotates the
// parameter with an integer dtype) with its conversion checks.
// `annotated`: the parameter's type in the model, when it gives one: the
// value must have its shape (checked here, with the data file's name and
// the key, rather than as a type error in the generated driver).
Result<Array> json_value(const std::string& file, const std::string& key,
                         const nlohmann::ordered_json& v, bool integer,
                         const std::optional<ab::Type>& annotated) {
  if (annotated && !annotated->is_tuple) {
    ab::Result<ab::Array> a = ab::json_to_array(v, annotated->tensor, file, key, true);
    if (!a) return to_public(a.diags());
    return ArrayAccess::wrap(a.take());
  }
  ab::Result<ab::Array> probe = ab::json_to_array(v, std::nullopt, file, key, true);
  if (!probe) return to_public(probe.diags());
  ab::TensorType t{integer ? ab::DType::I64 : ab::DType::F64, probe->type.shape};
  ab::Result<ab::Array> a = ab::json_to_array(v, t, file, key, true);
  if (!a) return to_public(a.diags());
  return ArrayAccess::wrap(a.take());
}

Result<nlohmann::ordered_json> read_json(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return std::vector<Diagnostic>{
        option_error("cannot read " + std::string(what) + " '" + path + "': no such file")};
  std::stringstream ss;
  ss << f.rdbuf();
  ab::Result<nlohmann::ordered_json> j = ab::parse_json_text(ss.str(), path);
  if (!j) return to_public(j.diags());
  return j.take();
}

// Why a run failed, as diagnostics: its own, or its runtime error (a
// model's, or RunOptions::cancel's) at its place.
Diagnostic diagnostic_of(const RuntimeError& e) {
  Diagnostic d;
  d.file = e.file;
  d.line = e.line;
  d.column = e.column;
  d.message = e.message;
  d.rendered = e.rendered;
  return d;
}

std::vector<Diagnostic> failure_of(const RunResult& run) {
  if (!run.diagnostics.empty()) return run.diagnostics;
  std::vector<Diagnostic> out;
  if (run.runtime_error) out.push_back(diagnostic_of(*run.runtime_error));
  return out;
}

// A number as the messages print it: %g, and NaN for any NaN (not "-nan").
std::string number_text(double v) {
  if (std::isnan(v)) return "NaN";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

uint64_t splitmix(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string out;
  for (int64_t d : s) out += ", " + std::to_string(d);
  return out;
}

// ---- declared parameters (docs/sampling.md, "Declared parameters") ----------

// One parameter of log_density that the model declares: its name, its
// constrained shape, its constraint ("" for none) with the bounds as code,
// and the slice of the unconstrained vector it comes from.
struct DeclaredParam {
  std::string name;
  std::vector<int64_t> shape;
  std::string kind;
  std::vector<std::string> bounds;
  int64_t offset = 0, size = 0;
};

struct DeclaredModel {
  std::vector<DeclaredParam> params;
  std::vector<std::string> data;  // log_density's arguments after the parameters
  int64_t dim = 0;                // the unconstrained size
};

// A model declares its parameters when log_density's arguments carry a
// constraint (`tau: f64 positive`, `mu: f64 unconstrained`), or when its
// first argument is an f64 scalar or matrix, which cannot be the hand-written
// form's vector theta.
bool is_declared(const ab::Function& ld) {
  for (const auto& p : ld.params)
    if (p.constraint) return true;
  if (ld.params.empty() || !ld.params[0].type || ld.params[0].type->is_tuple) return false;
  const auto& t = ld.params[0].type->tensor;
  return t.dtype == ab::DType::F64 && t.shape.size() != 1;
}

// The unconstrained size of a declared parameter of constrained shape `s`.
int64_t unconstrained_size(const std::string& kind, const std::vector<int64_t>& s) {
  const int64_t k = s.empty() ? 1 : s[0];
  if (kind == "simplex") return k - 1;
  if (kind == "cholesky_corr" || kind == "corr_matrix") return k * (k - 1) / 2;
  if (kind == "cov_matrix") return k + k * (k - 1) / 2;
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// A bound as code: a number as an f64 literal; a name (an earlier parameter
// or a data argument) as itself, cast to f64 where the data is an integer;
// an expression of them in parentheses, cast to f64 (`n - 1` of integer
// data is an integer).
std::string bound_code(const std::string& b, bool name, bool integer_data) {
  char* end = nullptr;
  double v = std::strtod(b.c_str(), &end);
  if (end && *end == '\0' && !b.empty()) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    std::string t = buf;
    if (t.find_first_of(".e") == std::string::npos) t += ".0";
    return t;
  }
  if (!name) return "cast((" + b + "), dtype=f64)";
  return integer_data ? "cast(" + b + ", dtype=f64)" : b;
}

Result<DeclaredModel> declared_model(const ab::Module& m, const ab::Function& ld) {
  auto error = [&](ab::SourceLoc loc, const std::string& msg) -> std::vector<Diagnostic> {
    ab::Diagnostics d(m.source);
    d.error(loc, msg);
    return to_public(d);
  };
  DeclaredModel dm;
  // The parameters: the leading arguments annotated with an f64 type.
  size_t n = 0;
  while (n < ld.params.size() && ld.params[n].type && !ld.params[n].type->is_tuple &&
         ld.params[n].type->tensor.dtype == ab::DType::F64)
    ++n;
  if (n == 0)
    return error(ld.loc, "log_density declares its parameters first, each with its f64 type "
                         "(`mu: f64, tau: f64 positive, ...`), then its data");
  std::set<std::string> data_names, integer_data;
  for (size_t i = n; i < ld.params.size(); ++i) {
    const ab::Param& p = ld.params[i];
    if (p.constraint)
      return error(p.constraint->loc,
                   "'" + p.name.name + "' is declared " + p.constraint->kind +
                       " but comes after the data argument '" + ld.params[n].name.name +
                       "': log_density takes its declared parameters first (each with its "
                       "f64 type), then its data");
    dm.data.push_back(p.name.name);
    data_names.insert(p.name.name);
    if (p.type && !p.type->is_tuple && ab::is_integer(p.type->tensor.dtype))
      integer_data.insert(p.name.name);
  }
  std::set<std::string> earlier;
  for (size_t i = 0; i < n; ++i) {
    const ab::Param& p = ld.params[i];
    DeclaredParam d;
    d.name = p.name.name;
    if (d.name == "theta" || d.name.find("__") != std::string::npos)
      return error(p.name.loc, "parameter '" + d.name +
                                   "' takes a name the sampler's outputs use ('theta', or one "
                                   "with '__'); name it otherwise");
    d.shape.assign(p.type->tensor.shape.begin(), p.type->tensor.shape.end());
    for (int64_t k : d.shape)
      if (k == 0)
        return error(p.type_loc, "parameter '" + d.name + "' has no elements (" +
                                     p.type->str() + "); a declared parameter needs at least one");
    if (p.constraint && p.constraint->kind != "unconstrained") {
      d.kind = p.constraint->kind;
      const auto& args = p.constraint->args;
      for (size_t k = 0; k < args.size(); ++k) {
        const std::string& b = args[k];
        char* end = nullptr;
        std::strtod(b.c_str(), &end);
        const bool number = end && *end == '\0';
        const std::vector<std::string> none;
        const auto& reads = k < p.constraint->reads.size() ? p.constraint->reads[k] : none;
        const bool name = !number && reads.size() == 1 && reads[0] == b;
        for (const std::string& v : number ? none : reads) {
          if (earlier.count(v) || data_names.count(v)) continue;
          const bool later = std::any_of(ld.params.begin(), ld.params.begin() + n,
                                         [&](const ab::Param& q) { return q.name.name == v; });
          const std::string what = later ? ": '" + v + "' is declared after it, and a bound may "
                                                        "read only the parameters declared before"
                                         : "";
          if (name)
            return error(p.constraint->loc,
                         "the bound '" + b + "' of '" + d.name +
                             "' is neither a number, nor a parameter declared before it, nor a "
                             "data argument of log_density" + what);
          return error(p.constraint->loc,
                       "the bound '" + b + "' of '" + d.name + "' reads '" + v +
                           "', which is neither a parameter declared before it nor a data "
                           "argument of log_density" + what);
        }
        d.bounds.push_back(bound_code(b, name, integer_data.count(b) > 0));
      }
    }
    d.offset = dm.dim;
    d.size = unconstrained_size(d.kind, d.shape);
    dm.dim += d.size;
    earlier.insert(d.name);
    dm.params.push_back(std::move(d));
  }
  return dm;
}

// The statements that read the declared parameters from the unconstrained
// vector q__, each constrained by its transform (lib/transforms.ab); a
// constrained one's log-Jacobian is left in JAC NAME (a name with '_' first
// is not warned about when unused).
std::string declared_reads(const DeclaredModel& dm, const std::string& jac = "j__") {
  std::string t;
  for (const auto& p : dm.params) {
    const std::string a = std::to_string(p.offset), b = std::to_string(p.offset + p.size);
    const bool matrix_kind = p.kind == "cholesky_corr" || p.kind == "corr_matrix" ||
                             p.kind == "cov_matrix";
    const bool reshaped = p.kind == "simplex" || p.kind == "ordered" ||
                          p.kind == "positive_ordered" || matrix_kind;
    std::string raw;
    if (p.shape.empty())
      raw = "q__[" + a + "]";
    else if (p.shape.size() == 1 || reshaped)
      raw = "q__[" + a + ":" + b + "]";
    else
      raw = "reshape(q__[" + a + ":" + b + "], shape=[" + shape_text(p.shape).substr(2) + "])";
    if (p.kind.empty()) {
      t += "  " + p.name + " = " + raw + "\n";
      continue;
    }
    std::string call;
    if (p.kind == "lower")
      call = "lower_bound(" + raw + ", " + p.bounds[0] + ")";
    else if (p.kind == "upper")
      call = "upper_bound(" + raw + ", " + p.bounds[0] + ")";
    else if (p.kind == "bounded")
      call = "bounded(" + raw + ", " + p.bounds[0] + ", " + p.bounds[1] + ")";
    else if (p.kind == "simplex" || matrix_kind)
      call = p.kind + "(" + raw + ", zeros(shape=[" + shape_text(p.shape).substr(2) + "]))";
    else  // positive, unit_interval, ordered, positive_ordered
      call = p.kind + "(" + raw + ")";
    t += "  " + p.name + ", " + jac + p.name + " = " + call + "\n";
  }
  return t;
}

// An entry that maps the declared parameters' constrained values (one set
// per chain) to the unconstrained vector, by the transforms' inverses
// (lib/transforms.ab, NAME_free): the starting points of --init FILE.json.
std::string unconstrain_text(const DeclaredModel& dm, const std::string& model_path) {
  std::string args;
  for (const auto& p : dm.params) args += (args.empty() ? "" : ", ") + p.name;
  for (const auto& d : dm.data) args += ", " + d;
  std::string t = "import " + Json(model_path).dump() + "\nimport transforms\n\n";
  t += "entry func declared_unconstrain(" + args + ") {\n";
  t += "  q__ = zeros(shape=[" + std::to_string(dm.dim) + "])\n";
  for (const auto& p : dm.params) {
    const std::string v = p.name;
    std::string x;
    if (p.kind.empty())
      x = v;
    else if (p.kind == "lower")
      x = "lower_bound_free(" + v + ", " + p.bounds[0] + ")";
    else if (p.kind == "upper")
      x = "upper_bound_free(" + v + ", " + p.bounds[0] + ")";
    else if (p.kind == "bounded")
      x = "bounded_free(" + v + ", " + p.bounds[0] + ", " + p.bounds[1] + ")";
    else if (p.kind == "simplex" || p.kind == "cholesky_corr" || p.kind == "corr_matrix" ||
             p.kind == "cov_matrix")
      x = p.kind + "_free(" + v + ", zeros(shape=[" + std::to_string(p.size) + "]))";
    else
      x = p.kind + "_free(" + v + ")";
    const std::string off = std::to_string(p.offset);
    if (p.shape.empty()) {
      t += "  q__[" + off + "] = " + x + "\n";
    } else {
      t += "  x__" + p.name + " = reshape(" + x + ", shape=[" + std::to_string(p.size) + "])\n";
      t += "  for k__ in range(" + std::to_string(p.size) + ") {\n";
      t += "    q__[" + off + " + k__] = x__" + p.name + "[k__]\n  }\n";
    }
  }
  t += "  return q__\n}\n";
  return t;
}

// --init FILE.json for a declared model: every declared parameter's value
// by name (its declared shape, the same for every chain, or one per chain
// with the chains first), mapped to the unconstrained theta of each chain;
// a value outside its parameter's support is an error.
Result<std::vector<double>> declared_init(const DeclaredModel& dm, const std::string& model_path,
                                          const std::vector<Array>& data,
                                          const nlohmann::ordered_json& j, const SampleOptions& o) {
  auto fail = [](const std::string& m) { return std::vector<Diagnostic>{option_error(m)}; };
  std::string all;
  for (const auto& p : dm.params) all += (all.empty() ? "" : ", ") + p.name;
  for (const auto& item : j.items())
    if (std::none_of(dm.params.begin(), dm.params.end(),
                     [&](const DeclaredParam& p) { return p.name == item.key(); }))
      return fail(o.init + " has '" + item.key() +
                  "', which is not a declared parameter (they are " + all + ")");
  const int64_t chains = o.chains;
  std::vector<std::vector<double>> values;
  for (const auto& p : dm.params) {
    if (!j.contains(p.name))
      return fail(o.init + " has no '" + p.name +
                  "': give the value of every declared parameter (" + all + "), or theta");
    auto a = json_value(o.init, p.name, j.at(p.name), false, std::nullopt);
    if (!a) return a.diagnostics();
    const std::vector<int64_t> got(a->shape().begin() + 1, a->shape().end());
    std::vector<int64_t> each = p.shape;
    each.insert(each.begin(), chains);
    int64_t n = 1;
    for (int64_t d : p.shape) n *= d;
    if (got != p.shape && got != each)
      return fail(o.init + ": '" + p.name + "' must be f64" +
                  (p.shape.empty() ? "" : "[" + shape_text(p.shape).substr(2) + "]") +
                  ", or " + std::to_string(chains) + " of them, one per chain");
    const double* v = a->as<double>();
    std::vector<double> buf(static_cast<size_t>(chains * n));
    for (int64_t c = 0; c < chains; ++c)
      for (int64_t i = 0; i < n; ++i)
        buf[static_cast<size_t>(c * n + i)] = v[got == each ? c * n + i : i];
    values.push_back(std::move(buf));
  }
  CompileOptions co;
  co.name = "<autobatch sample --init>";
  co.primitives = o.primitives;
  auto program = compile(unconstrain_text(dm, model_path), co);
  if (!program) return program.diagnostics();
  std::vector<ArrayView> in;
  for (size_t k = 0; k < dm.params.size(); ++k)
    in.push_back(ArrayView::of(values[k].data(), chains, dm.params[k].shape));
  for (const auto& a : data) in.push_back(a.view());
  // One short run: interpreted, with no native code compiled in the
  // background for a program that does not run again.
  RunOptions ro;
  ro.jit = false;
  ro.max_stack_depth = o.run.max_stack_depth;
  RunResult run = program->run(in, ro);
  if (!run.ok()) return failure_of(run);
  const double* q = run.outputs[0].as<double>();
  std::vector<double> out(q, q + chains * dm.dim);
  for (int64_t c = 0; c < chains; ++c)
    for (const auto& p : dm.params)
      for (int64_t i = 0; i < p.size; ++i)
        if (!std::isfinite(out[static_cast<size_t>(c * dm.dim + p.offset + i)]))
          return fail(o.init + ": the value of '" + p.name + "'" +
                      (chains > 1 ? " for chain " + std::to_string(c) : std::string()) +
                      " is not in its support (" +
                      (p.kind.empty() ? "unconstrained, finite" : p.kind) + ")");
  return out;
}

std::string joined(const std::vector<std::string>& v, const std::string& prefix = "") {
  std::string out;
  for (const auto& x : v) out += (out.empty() ? "" : ", ") + prefix + x;
  return out;
}

// The functions the driver calls for a declared model: the log density on
// the unconstrained vector (the model's at the constrained values plus the
// log-Jacobians), and constrain, which gives the declared parameters' values
// and then those of the model's own constrain, if it has one (`extras`: its
// results' names).
std::string declared_text(const DeclaredModel& dm, const std::vector<std::string>& extras) {
  std::vector<std::string> names;
  for (const auto& p : dm.params) names.push_back(p.name);
  const std::string d = dm.data.empty() ? "" : ", " + joined(dm.data);
  const std::string head = "(q__: f64[" + std::to_string(dm.dim) + "]" + d + ")";
  const std::string reads = declared_reads(dm);
  const std::string reads_only = declared_reads(dm, "_j__");
  std::string t;
  t += "import transforms\n\n";
  t += "# The model's declared parameters from the unconstrained vector q__.\n";
  t += "func declared_log_density" + head + " -> f64 {\n" + reads;
  t += "  lp__ = log_density(" + joined(names) + d + ")\n";
  for (const auto& p : dm.params)
    if (!p.kind.empty()) t += "  lp__ += j__" + p.name + "\n";
  t += "  return lp__\n}\n\n";
  t += "func declared_constrain" + head + " {\n" + reads_only;
  std::vector<std::string> out = names;
  if (!extras.empty()) {
    t += "  " + joined(extras) + " = constrain(" + joined(names) + d + ")\n";
    out.insert(out.end(), extras.begin(), extras.end());
  }
  t += "  return " + joined(out) + "\n}\n\n";
  return t;
}

// The generated driver: the model and the sampler imported, lp_grad over
// the data tuple, and the entry that warms up and records the draws.
// `declared`: the functions generated for a model that declares its
// parameters (declared_text), which the driver calls in place of the
// model's log_density and constrain.
std::string driver_text(const std::string& model_path, const std::vector<std::string>& data,
                        int64_t dim, int64_t samples,
                        const std::vector<std::pair<std::string, std::vector<int64_t>>>& quantities,
                        bool has_constrain, bool own_gradient, bool dense,
                        const std::string& declared) {
  // The sampler's functions for the metric: nuts_warmup and nuts_transition
  // with a diagonal inverse metric, their nuts_dense_ twins with a dense one
  // (which also take the momentum factor, computed once after warm-up).
  const std::string prefix = dense ? "nuts_dense_" : "nuts_";
  const std::string factor = dense ? "p_factor, " : "";
  const std::string ld = declared.empty() ? "log_density" : "declared_log_density";
  const std::string cs = declared.empty() ? "constrain" : "declared_constrain";
  std::string d_args, d_pack, d_unpack;
  for (size_t i = 0; i < data.size(); ++i) {
    d_args += ", data_" + data[i];
    d_unpack += (i ? ", " : "") + std::string("u_") + data[i];
  }
  std::string packed = data.empty()       ? "0"
                       : data.size() == 1 ? "data_" + data[0]
                                          : "tuple(" + d_args.substr(2) + ")";
  std::string t;
  t += "# Generated by autobatch sample: " + model_path + " with the shipped sampler.\n";
  t += "import " + Json(model_path).dump() + "\nimport nuts\n\n";
  t += declared;
  t += "inline func lp_grad(q, data) {\n";
  if (data.size() >= 2) t += "  (" + d_unpack + ") = data\n";
  std::string call_args;
  for (const auto& n : data) call_args += ", " + (data.size() >= 2 ? "u_" + n : std::string("data"));
  t += own_gradient ? "  return log_density_and_grad(q" + call_args + ")\n}\n\n"
                    : "  return value_and_grad(" + ld + ", q" + call_args + ")\n}\n\n";
  t += "entry func sample_chain(init, key, radius" + d_args +
       ", n_warmup, max_depth, target_accept) {\n";
  t += "  data = " + packed + "\n";
  // A random start (radius > 0) is drawn again while its density is not finite.
  t += "  q = init\n";
  t += "  tries = 0\n";
  t += "  finite = false\n";
  t += "  while radius > 0.0 and not finite and tries < 100 {\n";
  t += "    key, k = split(key)\n";
  t += "    q = (2.0 * uniform(k, init) - 1.0) * radius\n";
  t += "    lp, g = nuts_lp_grad(q, data)\n";
  t += "    finite = isfinite(lp) and all(isfinite(g))\n";
  t += "    tries += 1\n";
  t += "  }\n";
  // A chain whose start (the last one drawn, or --init's) has no finite log
  // density or gradient is not run: the host reports it (start_ok and
  // start_lp, the last two outputs), as Stan's "Initialization failed".
  t += "  start_lp, start_g = nuts_lp_grad(q, data)\n";
  t += "  start_ok = isfinite(start_lp) and all(isfinite(start_g))\n";
  t += "  n_samples = " + std::to_string(samples) + "\n";
  t += "  if not start_ok {\n";
  t += "    n_warmup = 0\n";
  t += "    n_samples = 0\n";
  t += "  }\n";
  t += "  q, lp, g, key, step, inv_metric, warmup_divergent, warmup_nonfinite, nonfinite_at, "
       "nonfinite_q = " + prefix + "warmup(q, key, data, n_warmup, max_depth, target_accept)\n";
  if (dense) t += "  p_factor = nuts_dense_momentum_factor(inv_metric)\n";
  t += "  nonfinite = 0\n";
  const std::string S = std::to_string(samples);
  t += "  theta = zeros(shape=[" + S + ", " + std::to_string(dim) + "])\n";
  t += "  stats = zeros(shape=[" + S + ", 6])\n";
  for (const auto& [name, shape] : quantities)
    t += "  c_" + name + " = zeros(shape=[" + S + shape_text(shape) + "])\n";
  t += "  for s in range(n_samples) {\n";
  t += "    key, k = split(key)\n";
  t += "    q, lp, g, accept, depth, n_leapfrog, divergent, energy, bad, q_bad = " + prefix +
       "transition(q, lp, g, k, step, inv_metric, " + factor + "max_depth, data)\n";
  // The chain's iterations so far, for the host (run_sample): warm-up's
  // transitions counted first, as nuts_warmup reports them.
  t += "    progress(n_warmup + s + 1)\n";
  // The first transition that met a log density that is not finite, over
  // warm-up and sampling (iterations numbered on from warm-up's).
  t += "    nonfinite, nonfinite_at, nonfinite_q = nuts_note_nonfinite(bad, nonfinite, "
       "nonfinite_at, nonfinite_q, q_bad, n_warmup + s)\n";
  t += "    theta[s] = q\n";
  t += "    stats[s] = [lp, accept, cast(depth, dtype=f64), cast(n_leapfrog, dtype=f64), "
       "cast(divergent, dtype=f64), energy]\n";
  if (has_constrain) {
    std::string outs, args;
    for (size_t i = 0; i < quantities.size(); ++i) outs += std::string(i ? ", " : "") + "v_" + quantities[i].first;
    for (const auto& n : data) args += ", data_" + n;
    t += "    " + outs + " = " + cs + "(q" + args + ")\n";
    for (const auto& [name, shape] : quantities) t += "    c_" + name + "[s] = v_" + name + "\n";
  }
  t += "  }\n";
  std::string ret =
      "theta, stats, step, inv_metric, warmup_divergent, warmup_nonfinite, nonfinite, "
      "nonfinite_at, nonfinite_q";
  for (const auto& q : quantities) ret += ", c_" + q.first;
  t += "  return " + ret + ", start_ok, start_lp\n}\n";
  return t;
}

}  // namespace

Result<SampleJob> prepare_sample(const SampleOptions& o) {
  auto start = std::chrono::steady_clock::now();
  auto fail = [](const std::string& m) { return std::vector<Diagnostic>{option_error(m)}; };
  if (o.chains < 1) return fail("--chains must be at least 1");
  if (o.warmup < 0) return fail("--warmup must not be negative");
  if (o.samples < 1) return fail("--samples must be at least 1");
  if (o.max_depth < 1 || o.max_depth > 30) return fail("--max-depth must be in 1..30");
  if (!(o.target_accept > 0 && o.target_accept < 1))
    return fail("--target-accept must be in (0, 1)");

  // The model: log_density's data parameters, theta's size, constrain.
  ab::Result<ab::Module> m = ab::parse_file(o.model);
  if (!m) return to_public(m.diags());
  const ab::Function* own = m->find_func("log_density_and_grad");
  const ab::Function* ld = own ? own : m->find_func("log_density");
  if (!ld)
    return fail(o.model +
                ": a model defines func log_density(theta: f64[D], DATA...) -> f64 (or "
                "log_density_and_grad, returning the log density and its gradient)");
  const std::string ld_name = ld->name.name;
  // A model that declares its parameters: the sampler makes the
  // unconstrained vector and its transforms (declared_text).
  std::optional<DeclaredModel> dm;
  if (!own && is_declared(*ld)) {
    auto d = declared_model(*m, *ld);
    if (!d) return d.diagnostics();
    dm = std::move(*d);
  }
  if (!dm && (ld->params.empty() || !ld->params[0].type || ld->params[0].type->is_tuple ||
      ld->params[0].type->tensor.dtype != ab::DType::F64 ||
      ld->params[0].type->tensor.shape.size() != 1))
    return fail(o.model + ":" + std::to_string(ab::local_line(ld->loc.line)) + ": " + ld_name +
                "'s first parameter must be annotated with its size, as in "
                "`theta: f64[3]` (the unconstrained parameters, a vector)");
  const int64_t dim = dm ? dm->dim : ld->params[0].type->tensor.shape[0];
  for (const char* reserved :
       {"lp_grad", "sample_chain", "declared_log_density", "declared_constrain"})
    if (m->find_func(reserved))
      return fail(o.model + ": the model defines '" + std::string(reserved) +
                  "', a name autobatch sample uses; rename it");
  std::vector<std::string> data_names;
  std::vector<bool> integer;
  std::vector<std::optional<ab::Type>> annotated;
  for (size_t i = dm ? ld->params.size() - dm->data.size() : 1; i < ld->params.size(); ++i) {
    data_names.push_back(ld->params[i].name.name);
    const auto& t = ld->params[i].type;
    integer.push_back(t && !t->is_tuple && ab::is_integer(t->tensor.dtype));
    annotated.push_back(t);
  }
  const ab::Function* constrain = m->find_func("constrain");
  if (constrain && constrain->params.size() != ld->params.size())
    return fail(o.model + ": constrain takes the arguments of " + ld_name +
                (dm ? " (the declared parameters, constrained, and the data)"
                    : " (theta and the data)"));

  // The data: one whole value per key, batch 1.
  std::vector<Array> data;
  // (A declared model's data file is read even when it takes no data, to
  // check that the file holds none of its parameters.)
  if (!data_names.empty() || (dm && !o.data.empty())) {
    if (o.data.empty())
      return fail(ld_name + " takes data (" + data_names.front() + ", ...); give --data DATA.json");
    auto j = read_json(o.data, "data");
    if (!j) return j.diagnostics();
    if (!j->is_object()) return fail(o.data + ": CmdStan data is a JSON object of named values");
    // A declared parameter the data also has: most likely a data argument
    // annotated f64 among the parameters, which the data would not reach.
    if (dm)
      for (const auto& p : dm->params)
        if (j->contains(p.name))
          return fail(o.data + " has '" + p.name + "', which " + ld_name +
                      " declares as a parameter (its leading f64-annotated arguments are "
                      "parameters); put the data arguments after the parameters, the first "
                      "one without an f64 type");
    for (size_t i = 0; i < data_names.size(); ++i) {
      auto it = j->find(data_names[i]);
      if (it == j->end())
        return fail(o.data + " has no '" + data_names[i] + "', which " + ld_name + " takes");
      auto a = json_value(o.data, data_names[i], *it, integer[i], annotated[i]);
      if (!a) return a.diagnostics();
      data.push_back(std::move(*a));
    }
  }

  SampleJob r;
  r.options = o;
  r.warnings = module_warnings(*m, "");
  if (o.seed) {
    r.seed = *o.seed;
  } else {
    r.seed = static_cast<uint64_t>(
        std::chrono::system_clock::now().time_since_epoch().count() & 0x7fffffffffffffff);
  }

  // One run of a model's function at theta = 0 with the data: the results'
  // names, types and shapes.
  std::error_code ec;
  const std::string model_path = std::filesystem::absolute(o.model, ec).string();
  // `prelude`: generated functions the call needs; `call`: the call, when
  // it is not FN(theta, DATA...).
  auto probe = [&](const std::string& fn, const std::string& prelude = "",
                   const std::string& body = "") -> Result<RunResult> {
    std::string args;
    for (const auto& n : data_names) args += ", " + n;
    std::string text = "import " + Json(model_path).dump() + "\n" + prelude + "entry func probe_" +
                       fn + "(q__" + args + ") {\n" +
                       (body.empty() ? "  return " + fn + "(q__" + args + ")\n" : body) +
                       "}\n";
    CompileOptions co;
    co.name = "<autobatch sample>";
    co.primitives = o.primitives;
    auto p = compile(text, co);
    if (!p) return p.diagnostics();
    std::vector<double> zero(static_cast<size_t>(dim), 0.0);
    std::vector<ArrayView> in{ArrayView::of(zero.data(), 1, {dim})};
    for (const auto& a : data) in.push_back(a.view());
    // One run at one point: interpreted, since native code compiled in the
    // background would not be used again (and a process that ends while
    // such a compile runs can crash inside LLVM).
    RunOptions ro;
    ro.jit = false;
    ro.max_stack_depth = o.run.max_stack_depth;
    return p->run(in, ro);
  };

  // log_density_and_grad returns (f64, f64[D]): checked here, where the
  // message can say so, rather than by type errors inside the sampler. (A
  // runtime error at theta = 0 is left to the run, which reports it as one.)
  if (own) {
    auto pr = probe("log_density_and_grad");
    if (!pr) return pr.diagnostics();
    if (!pr->diagnostics.empty()) return pr->diagnostics;
    const auto& out = pr->outputs;
    bool fits = out.size() == 2 && out[0].dtype() == DType::F64 && out[0].shape().size() == 1 &&
                out[1].dtype() == DType::F64 && out[1].shape().size() == 2 &&
                out[1].shape()[1] == dim;
    if (!fits && !pr->runtime_error) {
      std::string got;
      for (const auto& a : out) {
        got += got.empty() ? "" : ", ";
        got += std::string(dtype_name(a.dtype()));
        if (a.shape().size() > 1) {
          got += "[";
          for (size_t k = 1; k < a.shape().size(); ++k)
            got += (k > 1 ? ", " : "") + std::to_string(a.shape()[k]);
          got += "]";
        }
      }
      return fail(o.model + ":" + std::to_string(ab::local_line(ld->loc.line)) +
                  ": log_density_and_grad must return the log density and its gradient, "
                  "(f64, f64[" + std::to_string(dim) + "]); it returns (" + got + ")");
    }
  }

  // The constrained quantities' names and shapes, from one run of constrain.
  std::vector<std::pair<std::string, std::vector<int64_t>>> quantities;
  std::string declared;
  if (dm) {
    // The model's own constrain takes the constrained parameters: its
    // results' names from one run at q = 0, then the generated functions.
    std::vector<std::string> extras;
    if (constrain) {
      std::vector<std::string> names;
      for (const auto& p : dm->params) names.push_back(p.name);
      std::string args;
      for (const auto& n : data_names) args += ", " + n;
      auto pr = probe("constrain", "import transforms\n",
                      declared_reads(*dm, "_j__") + "  return constrain(" + joined(names) + args +
                          ")\n");
      if (!pr) return pr.diagnostics();
      if (!pr->ok()) return failure_of(*pr);
      for (size_t k = 0; k < pr->outputs.size(); ++k) {
        std::string name = k < pr->names.size() ? pr->names[k] : "";
        if (name.empty()) name = "out" + std::to_string(k);
        for (const auto& e : names)
          if (name == e)
            return fail(o.model + ": constrain's result '" + name +
                        "' has the name of a declared parameter, which is recorded already; "
                        "name it otherwise");
        extras.push_back(name);
      }
    }
    declared = declared_text(*dm, extras);
  }
  if (constrain || dm) {
    auto pr = dm ? probe("declared_constrain", declared) : probe("constrain");
    if (!pr) return pr.diagnostics();
    if (!pr->ok()) return failure_of(*pr);
    for (size_t k = 0; k < pr->outputs.size(); ++k) {
      std::string name = k < pr->names.size() ? pr->names[k] : "out" + std::to_string(k);
      for (char& c : name)
        if (c == '.') c = '_';
      if (name == "theta" || name.find("__") != std::string::npos)
        return fail(o.model + ": constrain's result '" + name +
                    "' takes a name the sampler's outputs use; name it otherwise");
      std::vector<int64_t> shape(pr->outputs[k].shape().begin() + 1, pr->outputs[k].shape().end());
      quantities.emplace_back(name, shape);
    }
  }

  for (const auto& q : quantities) r.quantities.push_back(q.first);
  r.driver = driver_text(model_path, data_names, dim, o.samples, quantities,
                         constrain != nullptr || dm, own != nullptr,
                         o.metric == SampleMetric::Dense, declared);
  CompileOptions co;
  co.name = "<autobatch sample>";
  co.primitives = o.primitives;
  auto program = compile(r.driver, co);
  if (!program) return program.diagnostics();
  r.program = std::move(*program);
  if (o.program_only) return r;

  // Per chain: the start, the key; shared: the data and the settings.
  std::vector<double> init(static_cast<size_t>(o.chains * dim), 0.0);
  double radius = 2.0;
  if (!o.init.empty()) {
    char* end = nullptr;
    double v = std::strtod(o.init.c_str(), &end);
    if (end && *end == '\0' && end != o.init.c_str()) {
      if (!(v >= 0)) return fail("--init: a radius must not be negative");
      radius = v;
    } else {
      auto j = read_json(o.init, "initial values");
      if (!j) return j.diagnostics();
      radius = 0;
      if (dm && j->is_object() && !j->contains("theta")) {
        // The declared parameters' values by name, mapped to theta.
        auto q = declared_init(*dm, model_path, data, *j, o);
        if (!q) return q.diagnostics();
        init = std::move(*q);
      } else {
        if (!j->is_object() || !j->contains("theta"))
          return fail(o.init + (dm ? ": initial values are a JSON object of the declared "
                                     "parameters' values by name, or {\"theta\": [...]}"
                                   : ": initial values are a JSON object {\"theta\": [...]}"));
        auto a = json_value(o.init, "theta", (*j)["theta"], false, std::nullopt);
        if (!a) return a.diagnostics();
        const auto& s = a->shape();  // [1, ...]
        bool one = s.size() == 2 && s[1] == dim;
        bool each = s.size() == 3 && s[1] == o.chains && s[2] == dim;
        if (!one && !each)
          return fail(o.init + ": theta must have " + std::to_string(dim) + " values, or " +
                      std::to_string(o.chains) + " rows of " + std::to_string(dim));
        const double* v0 = a->as<double>();
        for (int64_t c = 0; c < o.chains; ++c)
          for (int64_t i = 0; i < dim; ++i)
            init[static_cast<size_t>(c * dim + i)] = v0[each ? c * dim + i : i];
      }
    }
  }
  std::vector<int64_t> keys(static_cast<size_t>(o.chains));
  uint64_t state = r.seed;
  for (auto& k : keys) k = static_cast<int64_t>(splitmix(state) >> 1);
  int64_t n_warmup = o.warmup, max_depth = o.max_depth;
  double target = o.target_accept;
  std::vector<ArrayView> in{ArrayView::of(init.data(), o.chains, {dim}),
                            ArrayView::of(keys.data(), o.chains), ArrayView::of(&radius, 1)};
  for (const auto& a : data) in.push_back(a.view());
  in.push_back(ArrayView::of(&n_warmup, 1));
  in.push_back(ArrayView::of(&max_depth, 1));
  in.push_back(ArrayView::of(&target, 1));
  for (const ArrayView& v : in) r.inputs.arrays.push_back(Array::copy_of(v));
  r.inputs.batch = o.chains;
  r.init_radius = radius;
  r.declared = dm.has_value();
  r.prepare_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

namespace {

// Per chain: the transitions whose trajectory met a log density that is not
// finite (warm-up and sampling apart), and the first one's iteration and
// point (run outputs 5 to 8).
void nonfinite_report(const SampleOptions& o, const RunResult& run, SampleResult& r) {
  r.warmup_nonfinite = run.outputs[5];
  r.nonfinite = run.outputs[6];
  r.nonfinite_at = run.outputs[7];
  r.nonfinite_theta = run.outputs[8];
  for (int64_t c = 0; c < o.chains; ++c) {
    r.warmup_nonfinite_total += r.warmup_nonfinite.as<int64_t>()[c];
    r.nonfinite_total += r.nonfinite.as<int64_t>()[c];
  }
}

// The warning: how many, in how many chains, and the first chain's first
// point, so that the user sees where the model leaves its support.
std::string nonfinite_warning(const SampleOptions& o, const SampleResult& r, bool declared) {
  const int64_t* wn = r.warmup_nonfinite.as<int64_t>();
  const int64_t* sn = r.nonfinite.as<int64_t>();
  const int64_t* at = r.nonfinite_at.as<int64_t>();
  int64_t chains = 0, first = -1;
  for (int64_t c = 0; c < o.chains; ++c)
    if (wn[c] + sn[c] > 0) {
      ++chains;
      if (first < 0) first = c;
    }
  std::ostringstream w;
  w << "the log density was not finite (NaN, or -inf outside the model's support) in the "
       "trajectories of "
    << r.warmup_nonfinite_total << " of " << o.chains * o.warmup << " warm-up and "
    << r.nonfinite_total << " of " << o.chains * o.samples << " sampling transitions, in "
    << chains << " of " << o.chains << " chain" << (o.chains == 1 ? "" : "s") << "; first in chain "
    << first << " at " << (at[first] < o.warmup ? "warm-up" : "sampling") << " iteration "
    << (at[first] < o.warmup ? at[first] : at[first] - o.warmup) << ", unconstrained theta = [";
  const int64_t d = r.nonfinite_theta.num_elements() / std::max<int64_t>(1, o.chains);
  const double* q = r.nonfinite_theta.as<double>() + first * d;
  for (int64_t k = 0; k < d && k < 10; ++k) w << (k ? ", " : "") << q[k];
  if (d > 10) w << ", ... (" << d << " values)";
  w << "]. Those steps count as divergent; ";
  if (declared)
    w << "the declared constraints keep the parameters inside their support, so either the "
         "density itself is not finite there (a log of zero, a scale from the data that is not "
         "positive), or a parameter went so far out on the unconstrained scale that its "
         "constrained value rounded to its bound (a few such warm-up steps are harmless)";
  else
    w << "if the model can leave its support (a scale that goes negative), declare the "
         "parameter's constraint (`tau: f64 positive`), or map theta onto it (exp() with its "
         "log-Jacobian, or lib/transforms.ab)";
  return w.str();
}

}  // namespace

std::optional<RuntimeError> sample_start_error(const SampleJob& job, const RunResult& run) {
  if (!run.ok() || run.outputs.size() < 2) return std::nullopt;
  const SampleOptions& o = job.options;
  const Array& ok = run.outputs[run.outputs.size() - 2];  // start_ok, [chains]
  const double* lp = run.outputs.back().as<double>();      // start_lp, [chains]
  std::vector<int64_t> failed;
  for (int64_t c = 0; c < o.chains; ++c)
    if (!ok.as<bool>()[c]) failed.push_back(c);
  if (failed.empty()) return std::nullopt;
  const int64_t c = failed[0];
  std::ostringstream m;
  m << "chain " << c;
  if (failed.size() > 1)
    m << " (and " << failed.size() - 1 << " other" << (failed.size() > 2 ? "s" : "") << " of "
      << o.chains << ")";
  const std::string value = number_text(lp[c]);
  if (job.init_radius > 0)
    m << " found no start where the log density and its gradient are finite: 100 points drawn "
         "uniformly in (-"
      << job.init_radius << ", " << job.init_radius
      << ") on the unconstrained scale were tried, the last with log density " << value
      << " (Stan's \"Initialization failed\"); check the model at its data (a scale that is not "
         "positive, a log of a negative), or give a start with --init FILE.json";
  else
    m << "'s start (--init " << o.init << ") has log density " << value
      << (std::isfinite(lp[c]) ? " but a gradient that is not finite" : "")
      << ": give a start inside the model's support where the log density is finite";
  RuntimeError e;
  e.file = o.model;
  e.thread = c;
  e.batch = o.chains;
  e.message = m.str();
  e.rendered = o.model + ": runtime error: " + e.message + "\n";
  return e;
}

Result<SampleResult> finish_sample(const SampleJob& job, const RunResult& run,
                                   double run_seconds) {
  if (!run.ok()) return failure_of(run);
  if (auto e = sample_start_error(job, run)) return std::vector<Diagnostic>{diagnostic_of(*e)};
  const SampleOptions& o = job.options;
  SampleResult r;
  r.seed = job.seed;
  r.driver = job.driver;
  // Outputs: theta, stats, step, inv_metric, warmup_divergent,
  // warmup_nonfinite, nonfinite, nonfinite_at, nonfinite_q, quantities.
  r.draws.emplace_back("theta", run.outputs[0]);
  for (size_t k = 0; k < job.quantities.size(); ++k)
    r.draws.emplace_back(job.quantities[k], run.outputs[9 + k]);
  const Array& st = run.outputs[1];  // [chains, samples, 6]
  const char* stat_names[6] = {"lp__",         "accept_stat__", "treedepth__",
                               "n_leapfrog__", "divergent__",   "energy__"};
  const double* sv = st.as<double>();
  std::vector<double> column(static_cast<size_t>(o.chains * o.samples));
  for (int k = 0; k < 6; ++k) {
    for (int64_t i = 0; i < o.chains * o.samples; ++i) column[static_cast<size_t>(i)] = sv[i * 6 + k];
    r.stats.emplace_back(stat_names[k],
                         Array::copy_of(ArrayView::of(column.data(), o.chains, {o.samples})));
  }
  for (int64_t i = 0; i < o.chains * o.samples; ++i) {
    r.divergent += sv[i * 6 + 4] != 0;
    r.max_depth_hits += sv[i * 6 + 2] >= static_cast<double>(o.max_depth);
  }
  r.step_size = run.outputs[2];
  r.inv_metric = run.outputs[3];
  for (int64_t c = 0; c < o.chains; ++c) r.warmup_divergent += run.outputs[4].as<int64_t>()[c];
  nonfinite_report(o, run, r);

  std::vector<std::pair<std::string, ArrayView>> views;
  for (const auto& [name, a] : r.draws) views.emplace_back(name, a.view());
  auto s = summarize(views, 0, o.names);
  if (!s) return s.diagnostics();
  r.summary = std::move(*s);
  const int64_t total = o.chains * o.samples;
  if (r.divergent > 0)
    r.warnings.push_back(std::to_string(r.divergent) + " of " + std::to_string(total) +
                         " transitions after warm-up diverged; the draws may be biased (try a "
                         "larger --target-accept, or reparameterize the model)");
  if (r.warmup_nonfinite_total + r.nonfinite_total > 0)
    r.warnings.push_back(nonfinite_warning(o, r, job.declared));
  // A step size that warm-up drove to NaN, zero or infinity: the chain did
  // not move (a density flat in some direction, an improper posterior).
  {
    std::vector<int64_t> bad;
    const double* step = r.step_size.as<double>();
    for (int64_t c = 0; c < o.chains; ++c)
      if (!std::isfinite(step[c]) || step[c] <= 0) bad.push_back(c);
    if (!bad.empty()) {
      const std::string v = number_text(step[bad[0]]);
      r.warnings.push_back(
          "warm-up left " + std::to_string(bad.size()) + " of " + std::to_string(o.chains) +
          " chain" + (o.chains == 1 ? "" : "s") + " with a step size that is not a positive "
          "number (chain " + std::to_string(bad[0]) + ": " + v + "), so their draws are not "
          "from the posterior: the density may be flat in some direction (an improper "
          "posterior: give every parameter a proper prior) or not finite near the start");
    }
  }
  if (r.max_depth_hits > 0)
    r.warnings.push_back(std::to_string(r.max_depth_hits) + " of " + std::to_string(total) +
                         " transitions reached the maximum tree depth (" +
                         std::to_string(o.max_depth) + "); consider a larger --max-depth");
  r.warnings.insert(r.warnings.end(), r.summary.warnings.begin(), r.summary.warnings.end());
  r.seconds = job.prepare_seconds + run_seconds;
  return r;
}

namespace {
// A runtime error of the driver, or where --time-limit stopped it, names
// the chains its threads run ("in chain 2 of 4", not "in thread 2 of 4").
RunResult chains_named(RunResult run) {
  auto rename = [](std::string& s) {
    for (auto [from, to] : {std::pair{" in thread ", " in chain "},
                            std::pair{" threads finished", " chains finished"},
                            std::pair{" thread finished", " chain finished"},
                            std::pair{"still running: thread ", "still running: chain "}})
      for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at))
        s.replace(at, std::string_view(from).size(), to);
  };
  if (run.runtime_error) {
    rename(run.runtime_error->message);
    rename(run.runtime_error->rendered);
  }
  return run;
}
}  // namespace

RunResult run_sample(const SampleJob& job, RunOptions ro,
                     const std::function<void(const SampleProgress&)>& progress) {
  if (!progress) return chains_named(job.program->run(job.inputs, ro));
  const SampleOptions& o = job.options;
  // Chain c's latest progress(n): the iterations it has done.
  std::vector<std::atomic<int64_t>> done(static_cast<size_t>(o.chains));
  for (auto& d : done) d.store(0, std::memory_order_relaxed);
  SampleProgress sp;
  sp.chains = o.chains;
  sp.warmup = o.warmup;
  sp.samples = o.samples;
  sp.iterations.assign(static_cast<size_t>(o.chains), 0);
  // The figures only grow: a slot read is at least what an earlier read gave
  // (relaxed loads of one atomic are coherent), so no clamp is needed.
  auto report = [&](double seconds) {
    sp.seconds = seconds;
    sp.done = 0;
    sp.slowest = INT64_MAX;
    sp.fastest = 0;
    for (size_t c = 0; c < done.size(); ++c) {
      const int64_t n = done[c].load(std::memory_order_relaxed);
      sp.iterations[c] = n;
      sp.done += n;
      sp.slowest = std::min(sp.slowest, n);
      sp.fastest = std::max(sp.fastest, n);
    }
    progress(sp);
  };
  ro.thread_progress = done.data();
  auto run_progress = std::move(ro.progress);
  ro.progress = [&](const Progress& p) {
    if (run_progress) run_progress(p);
    report(p.seconds);
  };
  auto start = std::chrono::steady_clock::now();
  RunResult run = job.program->run(job.inputs, ro);
  if (run.ok())
    report(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return chains_named(std::move(run));
}

Result<SampleResult> sample(const SampleOptions& o) {
  auto job = prepare_sample(o);
  if (!job) return job.diagnostics();
  if (o.program_only) {
    SampleResult r;
    r.seed = job->seed;
    r.driver = job->driver;
    return r;
  }
  auto start = std::chrono::steady_clock::now();
  RunResult run = run_sample(*job, o.run, o.progress);
  return finish_sample(
      *job, run, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

}  // namespace autobatch
