// autobatch_bench: the batched VM against plain baselines on the workloads
// of the performance targets (docs/performance.md). Every row runs one
// program of programs/ through the library and one baseline on the same
// inputs, checks that their outputs match, and reports:
//   name, batch, baseline (what the VM is compared with), baseline_s, vm_s
//   (best of the repetitions; the median and spread too), ratio = vm_s /
//   baseline_s, ns_per_thread_step = vm_s / thread_steps, where thread_steps
//   is the row's `step_unit` summed over threads (loop iterations, or calls
//   for fib), outputs_match, target, met.
// The VM runs through the public API (autobatch::compile_file once per row,
// then Program::run), with RunOptions::threads 1 unless a row says otherwise
// (`vm_method`); each timed run is one Program::run call (its types and JIT
// code are cached after the first).
//
// Usage: autobatch_bench [--suite programs|users] [--quick] [--check] [--only NAME[,NAME...]]
//                        [PROGRAMS_DIR]
//   --suite  programs (this file's rows, the default) or users (users.cpp: programs written
//            as users write them, every VM mode against per-thread C++ and NumPy)
//   --quick  small sizes, one repetition (a smoke run: timings mean little)
//   --check  exit 1 unless every row's outputs match
// Prints one JSON object on stdout and a table on stderr.
#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "autobatch/autobatch.h"
#include "ir/array.h"

using namespace ab;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;

namespace {

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

[[noreturn]] void fail(const std::string& msg) {
  fprintf(stderr, "autobatch_bench: %s\n", msg.c_str());
  exit(2);
}

// ---- timing ------------------------------------------------------------------

struct Timing {
  std::vector<double> samples;
  double best() const { return *std::min_element(samples.begin(), samples.end()); }
  double median() const {
    std::vector<double> s = samples;
    std::sort(s.begin(), s.end());
    size_t n = s.size();
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
  // (max - min) / median: how much the repetitions disagree.
  double spread() const {
    auto [lo, hi] = std::minmax_element(samples.begin(), samples.end());
    return (*hi - *lo) / median();
  }
};

Timing time_reps(int reps, const std::function<void()>& f) {
  Timing t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    t.samples.push_back(seconds_since(t0));
  }
  return t;
}

// ---- the one place the bench calls the library -----------------------------
// Through the public API (include/autobatch/autobatch.h): a program compiled
// once, run with RunOptions (threads: the real --threads).

struct VmOptions {
  int threads = 1;  // RunOptions::threads: the batch cut into this many shards
};

// How a run with these options executes, for the JSON.
std::string method_of(const VmOptions& o) {
  if (o.threads <= 1) return "Program::run, threads 1";
  return "Program::run, threads " + std::to_string(o.threads) +
         " (contiguous shards, one std::thread each)";
}

class VmProgram {
 public:
  // Parses and verifies `path`, its entry `entry` (types are inferred, the
  // lowered program built and JIT code compiled on the first run for a set
  // of input types, then cached).
  VmProgram(const std::string& path, const std::string& entry) {
    auto t0 = Clock::now();
    autobatch::CompileOptions co;
    co.entry = entry;
    autobatch::Result<autobatch::Program> p = autobatch::compile_file(path, co);
    if (!p) fail(p.rendered());
    program_ = std::make_unique<autobatch::Program>(*p);
    compile_s_ = seconds_since(t0);
  }

  // compile_file's time.
  double compile_seconds() const { return compile_s_; }

  // The first run on `inputs` (which must be this program's first): its
  // compile phase (type inference, lowering) and an estimate of the JIT's
  // compile time, the first run's run phase minus the best of two later ones.
  struct FirstRun {
    double compile_s = 0, jit_s = 0;
  };
  FirstRun first_run(const std::vector<autobatch::ArrayView>& inputs) const {
    autobatch::RunOptions ro;
    ro.threads = 1;
    ro.stats = true;
    auto once = [&] {
      autobatch::RunResult r = program_->run(inputs, ro);
      if (!r.ok()) fail(r.rendered());
      return *r.stats;
    };
    autobatch::Stats first = once();
    double later = 1e30;
    for (int i = 0; i < 2; ++i) later = std::min(later, once().seconds.at("run"));
    return {first.seconds.at("compile"), std::max(0.0, first.seconds.at("run") - later)};
  }

  // Inputs in the command line's forms (a JSON file, ...).
  autobatch::Inputs load_inputs(const std::vector<std::string>& args) const {
    autobatch::Result<autobatch::Inputs> in = program_->load_inputs(args);
    if (!in) fail(in.rendered());
    return *in;
  }

  // The outputs of running every thread (batch `batch`; an input of batch 1
  // is shared). A runtime error ends the bench.
  std::vector<autobatch::Array> run(const std::vector<Array>& inputs, int64_t batch,
                                    const VmOptions& opt = {}) const {
    autobatch::RunOptions ro;
    ro.threads = std::max(1, opt.threads);
    autobatch::RunResult r = program_->run(views(inputs), ro);
    if (!r.ok()) fail(r.rendered());
    if (r.batch != batch) fail("internal: batch " + std::to_string(r.batch));
    return std::move(r.outputs);
  }

 private:
  static std::vector<autobatch::ArrayView> views(const std::vector<Array>& inputs) {
    std::vector<autobatch::ArrayView> v;
    for (const auto& a : inputs) {
      autobatch::ArrayView av;
      av.dtype = static_cast<autobatch::DType>(a.type.dtype);
      av.shape.push_back(a.batch);
      for (int64_t d : a.type.shape) av.shape.push_back(d);
      av.data = a.data.data();
      v.push_back(std::move(av));
    }
    return v;
  }

  std::unique_ptr<autobatch::Program> program_;
  double compile_s_ = 0;
};

// ---- inputs and comparisons ------------------------------------------------------

Array i64_array(const std::vector<int64_t>& v) {
  Array a(TensorType{DType::I64, {}}, static_cast<int64_t>(v.size()));
  std::memcpy(a.data.data(), v.data(), v.size() * 8);
  return a;
}
Array f64_array(const std::vector<double>& v, Shape event, int64_t batch) {
  Array a(TensorType{DType::F64, std::move(event)}, batch);
  if (v.size() * 8 != a.byte_size()) fail("internal: f64_array size");
  std::memcpy(a.data.data(), v.data(), a.byte_size());
  return a;
}
Array f64_scalar(double v) { return f64_array({v}, {}, 1); }
bool equal_i64(const autobatch::Array& a, const std::vector<int64_t>& v) {
  return a.byte_size() == v.size() * 8 && std::memcmp(a.data(), v.data(), a.byte_size()) == 0;
}
// max |a - b| / max(1, max |b|)
double rel_difference(const autobatch::Array& a, const std::vector<double>& b) {
  double diff = 0, scale = 1;
  const double* x = a.as<double>();
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(x[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}
constexpr double kFloatTolerance = 1e-9;  // BLAS gemv and the VM's GEMM round differently

// ---- rows ---------------------------------------------------------------------

enum class Rule { RatioAtMost, SpeedupAtLeast, VmSecondsAtMost };

struct Row {
  std::string name, program, baseline, step_unit, vm_method = method_of({});
  int64_t batch = 0;
  Timing base, vm;
  int64_t thread_steps = 0;
  bool outputs_match = false;
  Rule rule = Rule::RatioAtMost;
  double target = 0;
  std::string target_text;
  Json extra = Json::object();

  double ratio() const { return vm.best() / base.best(); }
  bool met() const {
    switch (rule) {
      case Rule::RatioAtMost:
        return ratio() <= target;
      case Rule::SpeedupAtLeast:
        return 1.0 / ratio() >= target;
      case Rule::VmSecondsAtMost:
        return vm.best() <= target;
    }
    return false;
  }
  Json to_json() const {
    Json j;
    j["name"] = name;
    j["program"] = program;
    j["batch"] = batch;
    j["baseline"] = baseline;
    j["vm_method"] = vm_method;
    j["baseline_s"] = base.best();
    j["vm_s"] = vm.best();
    j["ratio"] = ratio();
    j["ns_per_thread_step"] = vm.best() / static_cast<double>(thread_steps) * 1e9;
    j["thread_steps"] = thread_steps;
    j["step_unit"] = step_unit;
    j["outputs_match"] = outputs_match;
    j["target"] = target_text;
    j["met"] = met();
    j["reps"] = vm.samples.size();
    j["baseline_median_s"] = base.median();
    j["baseline_spread"] = base.spread();
    j["vm_median_s"] = vm.median();
    j["vm_spread"] = vm.spread();
    for (auto& [k, v] : extra.items()) j[k] = v;
    return j;
  }
};

struct Ctx {
  std::string dir;
  bool quick = false;
  int reps = 3;
  std::string path(const char* file) const { return dir + "/" + file; }
};

// collatz: a branchy integer loop. thread_steps: loop iterations.
int64_t collatz_native(int64_t x) {
  int64_t s = 0;
  while (x > 1) {
    x = (x % 2 == 1) ? 3 * x + 1 : x / 2;
    ++s;
  }
  return s;
}

std::vector<int64_t> collatz_inputs(int64_t B) {
  std::mt19937_64 g(7);
  std::vector<int64_t> n(B);
  for (auto& v : n) v = 1 + static_cast<int64_t>(g() % 10000000);
  return n;
}

Row row_collatz(const Ctx& c, int64_t B) {
  Row r;
  r.name = "collatz_" + std::to_string(B);
  r.program = "collatz.ab";
  r.batch = B;
  r.baseline = "native C++, one thread";
  r.step_unit = "loop iterations";
  r.rule = Rule::RatioAtMost;
  r.target = 0.5;
  r.target_text = "vm <= 0.5x native";
  std::vector<int64_t> n = collatz_inputs(B), want(B);
  r.base = time_reps(c.reps, [&] {
    for (int64_t i = 0; i < B; ++i) want[i] = collatz_native(n[i]);
  });
  std::vector<Array> in{i64_array(n)};
  VmProgram p(c.path(r.program.c_str()), "collatz_steps");
  std::vector<autobatch::Array> got;
  r.vm = time_reps(c.reps, [&] { got = p.run(in, B); });
  r.outputs_match = equal_i64(got[0], want);
  r.thread_steps = std::accumulate(want.begin(), want.end(), int64_t{0});
  return r;
}

// fib: recursion. thread_steps: calls of fib (including the first).
int64_t fib_native(int64_t n) { return n <= 1 ? 1 : fib_native(n - 1) + fib_native(n - 2); }
int64_t fib_calls(int64_t n) {
  return 2 * fib_native(n) - 1;
}  // calls(n) = 1 + calls(n-1) + calls(n-2)

std::vector<int64_t> fib_inputs(int64_t B, int lo, int hi, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::vector<int64_t> n(B);
  for (auto& v : n) v = lo + static_cast<int64_t>(g() % static_cast<uint64_t>(hi - lo + 1));
  return n;
}

Row fib_row(const Ctx& c, const std::vector<int64_t>& n) {
  Row r;
  int64_t B = static_cast<int64_t>(n.size());
  r.program = "fib.ab";
  r.batch = B;
  r.baseline = "native C++, one thread";
  r.step_unit = "calls";
  std::vector<int64_t> want(B);
  r.base = time_reps(c.reps, [&] {
    for (int64_t i = 0; i < B; ++i) want[i] = fib_native(n[i]);
  });
  std::vector<Array> in{i64_array(n)};
  VmProgram p(c.path("fib.ab"), "fib");
  std::vector<autobatch::Array> got;
  r.vm = time_reps(c.reps, [&] { got = p.run(in, B); });
  r.outputs_match = equal_i64(got[0], want);
  for (int64_t v : n) r.thread_steps += fib_calls(v);
  return r;
}

Row row_fib(const Ctx& c) {
  int64_t B = c.quick ? 256 : 4096;
  int hi = c.quick ? 16 : 20;
  Row r = fib_row(c, fib_inputs(B, 10, hi, 11));
  r.name = "fib_" + std::to_string(B);
  r.rule = Rule::RatioAtMost;
  r.target = 4.0;
  r.target_text = "vm <= 4x native";
  r.extra["n_range"] = {10, hi};
  return r;
}

// The seed's fibonacci benchmark: 1024 threads, n uniform in [10, 18]. The
// seed's own stackless VM took 0.67 s on it (a fixed figure: the seed is
// Python/TF and does not run here); the target is 100x that.
// --quick keeps the 1024 threads but lowers the largest n to 14.
Row row_fib_seed(const Ctx& c) {
  int hi = c.quick ? 14 : 18;
  Row r = fib_row(c, fib_inputs(1024, 10, hi, 17));
  r.name = "fib_seed_1024";
  r.rule = Rule::VmSecondsAtMost;
  r.target = 0.0067;
  r.target_text = "vm_s <= 6.7 ms (seed's stackless VM: 0.67 s)";
  r.extra["n_range"] = {10, hi};
  r.extra["seed_reference_s"] = 0.67;
  return r;
}

// A Python with NumPy: $AUTOBATCH_PYTHON, else the first of python3 and
// /usr/bin/python3 that imports numpy.
std::string numpy_python() {
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("AUTOBATCH_PYTHON")) candidates.push_back(e);
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  for (const auto& py : candidates)
    if (std::system(("'" + py + "' -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) return py;
  fail("no Python with NumPy found (set AUTOBATCH_PYTHON)");
}

// random walk to +-bound, split + uniform each step, against a NumPy masked
// loop (tools/bench/walk_numpy.py) on the same keys with bit-identical
// random numbers. thread_steps: walk steps.
Row row_random_walk(const Ctx& c) {
  Row r;
  int64_t B = c.quick ? 1000 : 20000;
  int64_t bound = c.quick ? 10 : 20;
  r.name = "random_walk_" + std::to_string(B);
  r.program = "random_walk.ab";
  r.batch = B;
  r.baseline = "NumPy masked loop (tools/bench/walk_numpy.py), loop only";
  r.step_unit = "walk steps";
  r.rule = Rule::RatioAtMost;
  r.target = 0.25;
  r.target_text = "vm >= 4x faster than NumPy (ratio <= 0.25)";
  r.extra["bound"] = bound;
  std::mt19937_64 g(23);
  std::vector<int64_t> keys(B);
  for (auto& k : keys) k = static_cast<int64_t>(g());

  // The NumPy baseline, in a child process.
  namespace fs = std::filesystem;
  fs::path tmp = fs::temp_directory_path() / ("autobatch_bench_walk_" + std::to_string(getpid()));
  fs::create_directories(tmp);
  {
    std::ofstream f(tmp / "keys.bin", std::ios::binary);
    f.write(reinterpret_cast<const char*>(keys.data()), B * 8);
  }
  fs::path script = fs::path(c.dir) / ".." / "tools" / "bench" / "walk_numpy.py";
  std::string cmd = "'" + numpy_python() + "' '" + script.string() + "' '" +
                    (tmp / "keys.bin").string() + "' " + std::to_string(bound) + " '" +
                    (tmp / "out.bin").string() + "' " +
                    std::to_string(std::min(c.reps, 3));  // NumPy takes ~20 s a run
  std::string report;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) report.append(buf, n);
    if (pclose(p) != 0) fail("the NumPy baseline failed: " + cmd);
  } else {
    fail("cannot run " + cmd);
  }
  Json nj = Json::parse(report);
  r.base.samples = nj["seconds"].get<std::vector<double>>();
  r.extra["numpy_iterations"] = nj["iterations"];
  std::vector<int64_t> numpy_out(2 * B);
  {
    std::ifstream f(tmp / "out.bin", std::ios::binary);
    f.read(reinterpret_cast<char*>(numpy_out.data()), 2 * B * 8);
    if (!f) fail("the NumPy baseline wrote no outputs");
  }
  fs::remove_all(tmp);

  std::vector<Array> in{i64_array(keys), i64_array({bound})};
  VmProgram p(c.path(r.program.c_str()), "walk");
  std::vector<autobatch::Array> got;
  r.vm = time_reps(c.reps, [&] { got = p.run(in, B); });
  std::vector<int64_t> steps(numpy_out.begin(), numpy_out.begin() + B);
  std::vector<int64_t> pos(numpy_out.begin() + B, numpy_out.end());
  r.outputs_match = equal_i64(got[0], steps) && equal_i64(got[1], pos);
  r.thread_steps = std::accumulate(steps.begin(), steps.end(), int64_t{0});
  return r;
}

// Symmetric d x d matrix with entries u/sqrt(d) plus `shift` on the diagonal.
std::vector<double> shared_matrix(int64_t d, double shift, std::mt19937_64& g) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> A(d * d);
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j <= i; ++j)
      A[i * d + j] = A[j * d + i] = u(g) / std::sqrt(static_cast<double>(d));
  for (int64_t i = 0; i < d; ++i) A[i * d + i] += shift;
  return A;
}

void gemv(const std::vector<double>& A, int64_t d, const double* x, double* y) {
  cblas_dgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(d), static_cast<int>(d), 1.0, A.data(),
              static_cast<int>(d), x, 1, 0.0, y, 1);
}

// power iteration on a shared 64x64 matrix. thread_steps: iterations.
Row row_power(const Ctx& c) {
  Row r;
  int64_t B = c.quick ? 256 : 4096, d = 64, k = 20;
  r.name = "power_iteration_" + std::to_string(B);
  r.program = "power_iteration.ab";
  r.batch = B;
  r.baseline = "per-thread BLAS (cblas_dgemv per thread and step), one thread";
  r.step_unit = "iterations";
  r.rule = Rule::RatioAtMost;
  r.target = 0.5;
  r.target_text = "vm <= 0.5x per-thread BLAS";
  std::mt19937_64 g(13);
  std::vector<double> A = shared_matrix(d, 0.0, g);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> x0(B * d);
  for (auto& v : x0) v = u(g);
  std::vector<double> want(B * d);
  r.base = time_reps(c.reps, [&] {
    std::vector<double> x(d), y(d);
    for (int64_t t = 0; t < B; ++t) {
      std::copy(x0.begin() + t * d, x0.begin() + (t + 1) * d, x.begin());
      for (int64_t it = 0; it < k; ++it) {
        gemv(A, d, x.data(), y.data());
        double s = 0;
        for (int64_t i = 0; i < d; ++i) s += y[i] * y[i];
        double norm = std::sqrt(s);
        for (int64_t i = 0; i < d; ++i) x[i] = y[i] / norm;
      }
      std::copy(x.begin(), x.end(), want.begin() + t * d);
    }
  });
  std::vector<Array> in{f64_array(A, {d, d}, 1), f64_array(x0, {d}, B),
                        i64_array(std::vector<int64_t>(B, k))};
  VmProgram p(c.path(r.program.c_str()), "power");
  std::vector<autobatch::Array> got;
  r.vm = time_reps(c.reps, [&] { got = p.run(in, B); });
  double diff = rel_difference(got[0], want);
  r.outputs_match = diff <= kFloatTolerance;
  r.thread_steps = B * k;
  r.extra["dim"] = d;
  r.extra["steps_per_thread"] = k;
  r.extra["max_rel_difference"] = diff;
  r.extra["tolerance"] = kFloatTolerance;
  return r;
}

// leapfrog on f64[256] with a shared 256x256 matrix (q'' = -A q), two
// matrix-vector products per step. thread_steps: leapfrog steps.
Row row_leapfrog_matrix(const Ctx& c) {
  Row r;
  int64_t B = c.quick ? 64 : 1024, d = c.quick ? 64 : 256, k = c.quick ? 5 : 10;
  double eps = 0.1;
  r.name = "leapfrog_matrix_" + std::to_string(B);
  r.program = "leapfrog_matrix.ab";
  r.batch = B;
  r.baseline = "per-thread BLAS (cblas_dgemv per thread and product), one thread";
  r.step_unit = "leapfrog steps";
  r.rule = Rule::RatioAtMost;
  r.target = 0.5;
  r.target_text = "vm <= 0.5x per-thread BLAS";
  std::mt19937_64 g(29);
  std::vector<double> A = shared_matrix(d, 3.0, g);  // eigenvalues in about [1, 5]
  std::normal_distribution<double> z;
  std::vector<double> q0(B * d), p0(B * d);
  for (auto& v : q0) v = z(g);
  for (auto& v : p0) v = z(g);
  std::vector<double> want_q(B * d), want_p(B * d);
  r.base = time_reps(c.reps, [&] {
    std::vector<double> q(d), p(d), gr(d);
    double half = eps * 0.5;
    for (int64_t t = 0; t < B; ++t) {
      std::copy(q0.begin() + t * d, q0.begin() + (t + 1) * d, q.begin());
      std::copy(p0.begin() + t * d, p0.begin() + (t + 1) * d, p.begin());
      for (int64_t it = 0; it < k; ++it) {
        gemv(A, d, q.data(), gr.data());
        for (int64_t i = 0; i < d; ++i) p[i] -= gr[i] * half;
        for (int64_t i = 0; i < d; ++i) q[i] += p[i] * eps;
        gemv(A, d, q.data(), gr.data());
        for (int64_t i = 0; i < d; ++i) p[i] -= gr[i] * half;
      }
      std::copy(q.begin(), q.end(), want_q.begin() + t * d);
      std::copy(p.begin(), p.end(), want_p.begin() + t * d);
    }
  });
  std::vector<Array> in{f64_array(A, {d, d}, 1), f64_array(q0, {d}, B), f64_array(p0, {d}, B),
                        f64_scalar(eps), i64_array(std::vector<int64_t>(1, k))};
  VmProgram p(c.path(r.program.c_str()), "main");
  std::vector<autobatch::Array> got;
  r.vm = time_reps(c.reps, [&] { got = p.run(in, B); });
  double diff = std::max(rel_difference(got[0], want_q), rel_difference(got[1], want_p));
  r.outputs_match = diff <= kFloatTolerance;
  r.thread_steps = B * k;
  r.extra["dim"] = d;
  r.extra["steps_per_thread"] = k;
  r.extra["max_rel_difference"] = diff;
  r.extra["tolerance"] = kFloatTolerance;
  return r;
}

// A straggler: thread 0 loops n times, the other threads stop at once.
// Baseline: the long thread's loop alone in native C++. thread_steps: loop
// iterations (all of thread 0's).
int64_t spin_native(int64_t n, int64_t seed) {
  uint64_t x = static_cast<uint64_t>(seed);
  for (int64_t i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<int64_t>(x);
}

Row row_straggler(const Ctx& c) {
  Row r;
  int64_t B = c.quick ? 4096 : 65536, n = c.quick ? 20000 : 2000000;
  r.name = "straggler_" + std::to_string(B);
  r.program = "straggler.ab";
  r.batch = B;
  r.baseline = "native C++: the long thread's loop alone";
  r.step_unit = "loop iterations";
  r.rule = Rule::RatioAtMost;
  r.target = 1.5;
  r.target_text = "vm <= 1.5x the long thread alone";
  std::vector<int64_t> ns(B, 0), seeds(B);
  ns[0] = n;
  for (int64_t i = 0; i < B; ++i) seeds[i] = i + 1;
  std::vector<int64_t> want(seeds);
  volatile int64_t sink = 0;
  r.base = time_reps(c.reps, [&] { sink = spin_native(ns[0], seeds[0]); });
  want[0] = sink;
  std::vector<Array> in{i64_array(ns), i64_array(seeds)};
  VmProgram p(c.path(r.program.c_str()), "spin");
  std::vector<autobatch::Array> got;
  r.vm = time_reps(c.reps, [&] { got = p.run(in, B); });
  r.outputs_match = equal_i64(got[0], want);
  r.thread_steps = n;
  // The VM on the long thread alone, for comparison.
  std::vector<Array> in1{i64_array({n}), i64_array({seeds[0]})};
  VmProgram p1(c.path(r.program.c_str()), "spin");
  Timing alone = time_reps(c.reps, [&] { got = p1.run(in1, 1); });
  r.outputs_match = r.outputs_match && got[0].as<int64_t>()[0] == want[0];
  r.extra["long_thread_iterations"] = n;
  r.extra["vm_long_thread_alone_s"] = alone.best();
  r.extra["ratio_to_vm_alone"] = r.vm.best() / alone.best();
  return r;
}

// --threads 2 against --threads 1 (the VM both times).
Row threads_row(const Ctx& c, const char* program, const char* entry, std::vector<Array> in,
                int64_t B, const std::vector<int64_t>& want, int64_t thread_steps,
                const char* unit) {
  Row r;
  r.program = program;
  r.batch = B;
  VmOptions two{2};
  r.baseline = "the VM, " + method_of({});
  r.vm_method = method_of(two);
  r.step_unit = unit;
  r.rule = Rule::SpeedupAtLeast;
  r.target = 1.7;
  r.target_text = "threads 2 >= 1.7x faster than threads 1";
  VmProgram p(c.path(program), entry);
  std::vector<autobatch::Array> got1, got2;
  r.base = time_reps(c.reps, [&] { got1 = p.run(in, B); });
  r.vm = time_reps(c.reps, [&] { got2 = p.run(in, B, two); });
  r.outputs_match = equal_i64(got1[0], want) && equal_i64(got2[0], want);
  r.thread_steps = thread_steps;
  r.extra["speedup"] = 1.0 / r.ratio();
  r.extra["hardware_threads"] = std::thread::hardware_concurrency();
  return r;
}

Row row_collatz_threads(const Ctx& c) {
  int64_t B = c.quick ? 8192 : 262144;
  std::vector<int64_t> n = collatz_inputs(B), want(B);
  for (int64_t i = 0; i < B; ++i) want[i] = collatz_native(n[i]);
  Row r = threads_row(c, "collatz.ab", "collatz_steps", {i64_array(n)}, B, want,
                      std::accumulate(want.begin(), want.end(), int64_t{0}), "loop iterations");
  r.name = "collatz_threads2_" + std::to_string(B);
  return r;
}

Row row_fib_threads(const Ctx& c) {
  int64_t B = c.quick ? 256 : 4096;
  std::vector<int64_t> n = fib_inputs(B, 10, c.quick ? 16 : 20, 11), want(B);
  int64_t calls = 0;
  for (int64_t i = 0; i < B; ++i) {
    want[i] = fib_native(n[i]);
    calls += fib_calls(n[i]);
  }
  Row r = threads_row(c, "fib.ab", "fib", {i64_array(n)}, B, want, calls, "calls");
  r.name = "fib_threads2_" + std::to_string(B);
  return r;
}

// Compile time of programs/nuts.ab: the front end (compile_file and the first
// run's compile phase: passes, type inference, lowering) and the JIT's
// (estimated from the first run; JIT code is cached process-wide, so only the
// first program instance measures it; `autobatch run -v` logs it exactly).
Json compile_nuts(const Ctx& c) {
  std::string path = c.path("nuts.ab");
  Timing front;
  double jit_s = 0;
  for (int i = 0; i < std::max(c.reps, 3); ++i) {
    VmProgram p(path, "main");
    autobatch::Inputs in = p.load_inputs({c.path("nuts.json")});
    VmProgram::FirstRun f = p.first_run(in.views());
    front.samples.push_back(p.compile_seconds() + f.compile_s);
    if (i == 0) jit_s = f.jit_s;
  }
  Json j;
  j["program"] = "nuts.ab";
  j["frontend_compile_s"] = front.best();
  j["frontend_compile_phases"] = "parse, verify, every pass, type inference, lowering";
  j["jit_compile_s"] = jit_s;
  j["jit_compile_method"] = "first run's run phase minus the best of two later runs (one sample)";
  j["target"] = "jit compile <= 50 ms";
  j["met"] = jit_s <= 0.050;
  return j;
}

struct RowSpec {
  const char* name;
  std::function<Row(const Ctx&)> run;
};

const std::vector<RowSpec>& row_table() {
  static const std::vector<RowSpec> rows = {
      {"collatz", [](const Ctx& c) { return row_collatz(c, c.quick ? 4096 : 65536); }},
      {"collatz_large", [](const Ctx& c) { return row_collatz(c, c.quick ? 8192 : 262144); }},
      {"fib", row_fib},
      {"fib_seed", row_fib_seed},
      {"random_walk", row_random_walk},
      {"power_iteration", row_power},
      {"leapfrog_matrix", row_leapfrog_matrix},
      {"straggler", row_straggler},
      {"collatz_threads", row_collatz_threads},
      {"fib_threads", row_fib_threads},
  };
  return rows;
}

void print_table(const std::vector<Row>& rows) {
  fprintf(stderr, "%-24s %7s %11s %11s %8s %9s %6s %4s  %s\n", "row", "batch", "baseline_s", "vm_s",
          "ratio", "ns/step", "match", "met", "target");
  for (const Row& r : rows)
    fprintf(stderr, "%-24s %7lld %11.5f %11.5f %8.3f %9.2f %6s %4s  %s\n", r.name.c_str(),
            static_cast<long long>(r.batch), r.base.best(), r.vm.best(), r.ratio(),
            r.vm.best() / static_cast<double>(r.thread_steps) * 1e9, r.outputs_match ? "yes" : "NO",
            r.met() ? "yes" : "no", r.target_text.c_str());
}

}  // namespace

namespace users {
int suite_main(int argc, char** argv);  // users.cpp
}

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--suite") {
      std::string suite = argv[i + 1];
      if (suite == "users") return users::suite_main(argc, argv);
      if (suite != "programs") fail("no suite named " + suite + " (programs, users)");
    }
  Ctx c;
  c.dir = "programs";
  bool check = false;
  int reps = 0;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--quick") {
      c.quick = true;
    } else if (a == "--check") {
      check = true;
    } else if (a == "--suite" && i + 1 < argc) {
      ++i;
    } else if (a == "--only" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string s; std::getline(ss, s, ',');) only.push_back(s);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) fail("--reps needs a positive count");
    } else if (a.starts_with("-")) {
      fail("unknown option " + a +
           "; usage: autobatch_bench [--quick] [--check] [--reps N] [--only NAME,...] "
           "[PROGRAMS_DIR]");
    } else {
      c.dir = a;
    }
  }
  c.reps = reps > 0 ? reps : c.quick ? 1 : 5;
  for (const auto& o : only)
    if (std::none_of(row_table().begin(), row_table().end(),
                     [&](const RowSpec& s) { return o == s.name || o == "compile"; }))
      fail("no row named " + o);
  std::vector<Row> rows;
  for (const RowSpec& s : row_table()) {
    if (!only.empty() && std::find(only.begin(), only.end(), s.name) == only.end()) continue;
    rows.push_back(s.run(c));
  }
  Json out;
  out["mode"] = c.quick ? "quick" : "full";
  out["hardware_threads"] = std::thread::hardware_concurrency();
  out["timing"] = "best of reps (median and spread = (max - min) / median also given)";
  out["ns_per_thread_step"] =
      "vm_s / thread_steps; thread_steps = the row's step_unit summed over all threads";
  out["ratio"] = "vm_s / baseline_s (best times)";
  out["rows"] = Json::array();
  for (const Row& r : rows) out["rows"].push_back(r.to_json());
  if (only.empty() || std::find(only.begin(), only.end(), "compile") != only.end())
    out["compile"] = compile_nuts(c);
  printf("%s\n", out.dump(2).c_str());
  print_table(rows);
  autobatch::wait_for_background_compiles();  // before exit (autobatch.h)
  if (check) {
    bool ok = std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.outputs_match; });
    if (!ok) {
      fprintf(stderr, "autobatch_bench: some rows' outputs do not match\n");
      return 1;
    }
  }
  return 0;
}
