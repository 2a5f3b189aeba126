// autobatch_bench: the batched stack VM against plain C++ that runs each
// thread alone, on the workloads DEVELOPERS.md holds the VM to:
//   collatz  a branchy integer loop              (target: within 2x native)
//   fib      recursion                           (target: within 4x native)
//   power    matvec on a shared matrix in a loop (target: faster than per-thread BLAS)
// The VM runs the programs of programs/ through the library (parse, compile,
// run_stack); only the run phase is timed, best of several repetitions.
// Prints one JSON object. Usage: autobatch_bench [--quick] [PROGRAMS_DIR]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "passes/pipeline.h"
#include "vm/stack_vm.h"

using namespace ab;
using Clock = std::chrono::steady_clock;

namespace {

double best_of(int reps, const std::function<void()>& f) {
  double best = 1e300;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}

struct Prepared {
  Module source;
  Compiled compiled;
  FunctionTypes types;
};

Prepared prepare(const std::string& path, const std::string& entry,
                 const std::vector<Array>& inputs) {
  Result<Module> m = load_and_verify(path);
  if (!m) {
    fprintf(stderr, "%s", m.diags().render().c_str());
    exit(2);
  }
  CompileOptions co;
  co.entry = entry;
  for (const auto& a : inputs) co.entry_types.push_back(Type{false, a.type, {}});
  Result<Compiled> c = compile(*m, co);
  if (!c) {
    fprintf(stderr, "%s", c.diags().render().c_str());
    exit(2);
  }
  Diagnostics d;
  FunctionTypes ft = infer_program_types(*c->lowered.program, co.entry_types, d, m->source);
  return {m.take(), c.take(), ft};
}

RunResult run_vm(const Prepared& p, const std::vector<Array>& inputs, int64_t batch) {
  RunOptions ro;
  RunResult r = run_stack(*p.compiled.lowered.program, p.types, inputs, batch, ro);
  if (r.error) {
    fprintf(stderr, "runtime error: %s\n", r.error->message.c_str());
    exit(1);
  }
  return r;
}

Array i64_array(const std::vector<int64_t>& v) {
  Array a(TensorType{DType::I64, {}}, static_cast<int64_t>(v.size()));
  std::memcpy(a.data.data(), v.data(), v.size() * 8);
  return a;
}

nlohmann::ordered_json result(int64_t batch, double native, double vm, double target,
                              const char* rule) {
  return {{"batch", batch},
          {"native_s", native},
          {"vm_s", vm},
          {"ratio", vm / native},
          {"target", target},
          {"target_rule", rule},
          {"meets_target", vm / native <= target}};
}

// ---- collatz -------------------------------------------------------------
nlohmann::ordered_json bench_collatz(const std::string& dir, int64_t B, int reps,
                                     const char* program = "collatz.ab") {
  std::mt19937_64 g(7);
  std::vector<int64_t> n(B);
  for (auto& v : n) v = 1 + static_cast<int64_t>(g() % 10000000);
  std::vector<int64_t> native_out(B);
  double tn = best_of(reps, [&] {
    for (int64_t i = 0; i < B; ++i) {
      int64_t x = n[i], s = 0;
      while (x > 1) {
        x = (x % 2 == 1) ? 3 * x + 1 : x / 2;
        ++s;
      }
      native_out[i] = s;
    }
  });
  std::vector<Array> in{i64_array(n)};
  Prepared p = prepare(dir + "/" + program, "collatz_steps", in);
  RunResult r;
  double tv = best_of(reps, [&] { r = run_vm(p, in, B); });
  bool same = std::memcmp(r.outputs[0].data.data(), native_out.data(), B * 8) == 0;
  int64_t iters = 0;
  for (auto v : native_out) iters += v;
  auto j = result(B, tn, tv, 2.0, "vm <= 2x native");
  j["iterations"] = iters;
  j["vm_ns_per_iteration"] = tv / static_cast<double>(iters) * 1e9;
  j["native_ns_per_iteration"] = tn / static_cast<double>(iters) * 1e9;
  j["outputs_equal"] = same;
  return j;
}

// ---- straggler: one thread loops long among threads that stop at once ------
int64_t spin_native(int64_t n) {
  uint64_t acc = 0;
  for (; n > 0; --n) acc = acc * 31 + static_cast<uint64_t>(n);
  return static_cast<int64_t>(acc);
}

nlohmann::ordered_json bench_straggler(const std::string& dir, int64_t B, int reps, int64_t trip) {
  std::vector<int64_t> n(B, 0);
  n[B / 2] = trip;
  std::vector<Array> in{i64_array(n)}, alone{i64_array({trip})};
  Prepared p = prepare(dir + "/spin.ab", "spin", in);
  RunResult r;
  double tv = best_of(reps, [&] { r = run_vm(p, in, B); });
  double ta = best_of(reps, [&] { run_vm(p, alone, 1); });
  int64_t want = 0;
  double tn = best_of(reps, [&] { want = spin_native(n[B / 2]); });
  nlohmann::ordered_json j = {{"batch", B},
                              {"trip", trip},
                              {"vm_s", tv},
                              {"vm_long_thread_alone_s", ta},
                              {"native_long_thread_s", tn},
                              {"ratio", tv / ta},
                              {"target", 1.5},
                              {"target_rule", "vm <= 1.5x the long thread alone (vm, batch 1)"},
                              {"meets_target", tv / ta <= 1.5}};
  j["outputs_equal"] = r.outputs[0].as<int64_t>()[B / 2] == want;
  return j;
}

// ---- fib -------------------------------------------------------------------
int64_t fib_native(int64_t n) { return n <= 1 ? 1 : fib_native(n - 1) + fib_native(n - 2); }

nlohmann::ordered_json bench_fib(const std::string& dir, int64_t B, int reps, int lo, int hi) {
  std::mt19937_64 g(11);
  std::vector<int64_t> n(B);
  for (auto& v : n) v = lo + static_cast<int64_t>(g() % static_cast<uint64_t>(hi - lo + 1));
  std::vector<int64_t> native_out(B);
  double tn = best_of(reps, [&] {
    for (int64_t i = 0; i < B; ++i) native_out[i] = fib_native(n[i]);
  });
  std::vector<Array> in{i64_array(n)};
  Prepared p = prepare(dir + "/fib.ab", "fib", in);
  RunResult r;
  double tv = best_of(reps, [&] { r = run_vm(p, in, B); });
  bool same = std::memcmp(r.outputs[0].data.data(), native_out.data(), B * 8) == 0;
  auto j = result(B, tn, tv, 4.0, "vm <= 4x native");
  j["n_range"] = {lo, hi};
  j["outputs_equal"] = same;
  return j;
}

// ---- power iteration on a shared matrix ----------------------------------------
nlohmann::ordered_json bench_power(const std::string& dir, int64_t B, int reps, int64_t d,
                                   int64_t k) {
  std::mt19937_64 g(13);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> A(d * d);
  for (int64_t i = 0; i < d; ++i)
    for (int64_t j = 0; j <= i; ++j)
      A[i * d + j] = A[j * d + i] = u(g) / std::sqrt(static_cast<double>(d));
  std::vector<double> x0(B * d);
  for (auto& v : x0) v = u(g);
  std::vector<int64_t> ks(B, k);
  std::vector<double> native_out(B * d);
  // Native: each thread alone, one BLAS matrix-vector product per step.
  double tn = best_of(reps, [&] {
    std::vector<double> x(d), y(d);
    for (int64_t t = 0; t < B; ++t) {
      std::copy(x0.begin() + t * d, x0.begin() + (t + 1) * d, x.begin());
      for (int64_t it = 0; it < k; ++it) {
        cblas_dgemv(CblasRowMajor, CblasNoTrans, static_cast<int>(d), static_cast<int>(d), 1.0,
                    A.data(), static_cast<int>(d), x.data(), 1, 0.0, y.data(), 1);
        double s = 0;
        for (int64_t i = 0; i < d; ++i) s += y[i] * y[i];
        double norm = std::sqrt(s);
        for (int64_t i = 0; i < d; ++i) x[i] = y[i] / norm;
      }
      std::copy(x.begin(), x.end(), native_out.begin() + t * d);
    }
  });
  Array a(TensorType{DType::F64, {d, d}}, 1);  // batch 1: shared by every thread
  std::memcpy(a.data.data(), A.data(), A.size() * 8);
  Array xs(TensorType{DType::F64, {d}}, B);
  std::memcpy(xs.data.data(), x0.data(), x0.size() * 8);
  std::vector<Array> in{std::move(a), std::move(xs), i64_array(ks)};
  Prepared p = prepare(dir + "/power_iteration.ab", "power", in);
  RunResult r;
  double tv = best_of(reps, [&] { r = run_vm(p, in, B); });
  double maxdiff = 0;
  const double* got = r.outputs[0].as<double>();
  for (int64_t i = 0; i < B * d; ++i)
    maxdiff = std::max(maxdiff, std::fabs(got[i] - native_out[i]));
  auto j = result(B, tn, tv, 1.0, "vm faster than per-thread BLAS");
  j["dim"] = d;
  j["steps_per_thread"] = k;
  j["max_abs_difference"] = maxdiff;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  openblas_set_num_threads(1);
  bool quick = false;
  std::string dir = "programs", only;  // --only NAME: one workload (a prefix of its key)
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--quick")
      quick = true;
    else if (std::string(argv[i]) == "--only" && i + 1 < argc)
      only = argv[++i];
    else
      dir = argv[i];
  }
  auto want = [&](const char* key) { return only.empty() || std::string(key).rfind(only, 0) == 0; };
  int reps = quick ? 1 : 3;
  nlohmann::ordered_json out;
  if (want("collatz")) out["collatz"] = bench_collatz(dir, quick ? 4096 : 65536, reps);
  if (want("collatz_large"))
    out["collatz_large"] = bench_collatz(dir, quick ? 16384 : 262144, reps);
  if (want("collatz_select"))
    out["collatz_select"] = bench_collatz(dir, quick ? 4096 : 65536, reps, "collatz_select.ab");
  if (want("collatz_select_large"))
    out["collatz_select_large"] =
        bench_collatz(dir, quick ? 16384 : 262144, reps, "collatz_select.ab");
  if (want("straggler"))
    out["straggler"] = bench_straggler(dir, quick ? 4096 : 65536, reps, quick ? 100000 : 2000000);
  if (want("fib")) out["fib"] = bench_fib(dir, quick ? 256 : 4096, reps, 10, quick ? 16 : 20);
  if (want("fib_seed"))  // the seed's fibonacci measurement: 1024 threads, n in [10, 18]
    out["fib_seed"] = bench_fib(dir, quick ? 256 : 1024, reps, 10, quick ? 14 : 18);
  if (want("power")) out["power"] = bench_power(dir, quick ? 256 : 4096, reps, 64, 20);
  printf("%s\n", out.dump(2).c_str());
  return 0;
}
