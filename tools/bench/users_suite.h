// The harness of the users' benchmark suite (tools/bench/users.cpp has the suite's
// description): timings, inputs, statistics, a row and its runs in every mode.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>

#include "autobatch/autobatch.h"
#include "users_native.h"

namespace users {

using Clock = std::chrono::steady_clock;
using Json = nlohmann::ordered_json;
using Outputs = std::vector<autobatch::Array>;

[[noreturn]] inline void fail(const std::string& msg) {
  fprintf(stderr, "autobatch_bench: %s\n", msg.c_str());
  exit(2);
}

struct Timing {
  std::vector<double> samples;
  double best() const { return *std::min_element(samples.begin(), samples.end()); }
  double median() const {
    std::vector<double> s = samples;
    std::sort(s.begin(), s.end());
    size_t n = s.size();
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  }
};

inline Timing time_reps(int reps, const std::function<void()>& f) {
  Timing t;
  for (int i = 0; i < reps; ++i) {
    auto t0 = Clock::now();
    f();
    t.samples.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return t;
}

// ---- inputs: owned buffers and the views passed to Program::run ----------------

struct Inputs {
  std::deque<std::vector<char>> store;
  std::vector<autobatch::ArrayView> views;
  template <typename T>
  void add(const std::vector<T>& v, int64_t batch, std::vector<int64_t> event = {}) {
    store.emplace_back(reinterpret_cast<const char*>(v.data()),
                       reinterpret_cast<const char*>(v.data() + v.size()));
    views.push_back(autobatch::ArrayView::of(reinterpret_cast<const T*>(store.back().data()),
                                             batch, std::move(event)));
  }
  // Booleans given as bytes 0 or 1 (std::vector<bool> holds bits).
  void add_bool(const std::vector<uint8_t>& v, int64_t batch, std::vector<int64_t> event = {}) {
    store.emplace_back(reinterpret_cast<const char*>(v.data()),
                       reinterpret_cast<const char*>(v.data() + v.size()));
    views.push_back(autobatch::ArrayView::of(reinterpret_cast<const bool*>(store.back().data()),
                                             batch, std::move(event)));
  }
  template <typename T>
  void scalar(T v) {
    add(std::vector<T>{v}, 1);
  }
};

// ---- statistics -----------------------------------------------------------------

struct Moments {
  double mean = 0, var = 0;
  int64_t n = 0;
};
template <typename T>
inline Moments moments(const T* x, int64_t n, int64_t stride = 1) {
  Moments m;
  m.n = n;
  for (int64_t i = 0; i < n; ++i) m.mean += static_cast<double>(x[i * stride]);
  m.mean /= static_cast<double>(n);
  for (int64_t i = 0; i < n; ++i) {
    double d = static_cast<double>(x[i * stride]) - m.mean;
    m.var += d * d;
  }
  m.var /= static_cast<double>(n);
  return m;
}
inline Moments from_json(const Json& j) {
  return {j["mean"].get<double>(), j["var"].get<double>(), j["count"].get<int64_t>()};
}
// Standard errors between two sample means.
inline double z_two(const Moments& a, const Moments& b) {
  double se = std::sqrt(a.var / static_cast<double>(a.n) + b.var / static_cast<double>(b.n));
  return se > 0 ? std::fabs(a.mean - b.mean) / se : (a.mean == b.mean ? 0.0 : INFINITY);
}
// Standard errors between a sample mean and the known mean of a law of variance `var`.
inline double z_known(const Moments& a, double mean, double var) {
  double se = std::sqrt(var / static_cast<double>(a.n));
  return se > 0 ? std::fabs(a.mean - mean) / se : (a.mean == mean ? 0.0 : INFINITY);
}
inline constexpr double kZ = 5.0;  // a statistical check fails beyond 5 standard errors

inline bool same_outputs(const Outputs& a, const Outputs& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].shape() != b[i].shape() || a[i].dtype() != b[i].dtype() ||
        std::memcmp(a[i].data(), b[i].data(), a[i].byte_size()) != 0)
      return false;
  return true;
}

// ---- rows -----------------------------------------------------------------------

struct Ctx {
  std::string dir;
  bool quick = false;
  int reps = 3;
};

struct Mode {
  const char* name;
  std::function<void(autobatch::RunOptions&)> set;
};
inline const std::vector<Mode>& modes() {
  static const std::vector<Mode> m = {
      {"default", [](autobatch::RunOptions&) {}},
      {"stackless", [](autobatch::RunOptions& o) { o.vm = "stackless"; }},
      {"jit_off", [](autobatch::RunOptions& o) { o.jit = false; }},
      {"min_pc", [](autobatch::RunOptions& o) { o.schedule = "min-pc"; }},
  };
  return m;
}

struct Row {
  std::string name, program, step_unit;
  int64_t batch = 0, thread_steps = 0;
  std::vector<std::pair<std::string, Timing>> vm;  // per mode, in modes() order
  bool modes_agree = true;
  Timing cpp, numpy;
  std::string cpp_what, numpy_what;
  Json checks = Json::array();
  Json extra = Json::object();

  void check(const std::string& what, bool ok, double value, double limit) {
    checks.push_back({{"what", what}, {"ok", ok}, {"value", value}, {"limit", limit}});
  }
  bool ok() const {
    return modes_agree && std::all_of(checks.begin(), checks.end(),
                                      [](const Json& c) { return c["ok"].get<bool>(); });
  }
  double ns(double s) const { return s / static_cast<double>(thread_steps) * 1e9; }
  size_t fastest() const {
    size_t f = 0;
    for (size_t i = 1; i < vm.size(); ++i)
      if (vm[i].second.best() < vm[f].second.best()) f = i;
    return f;
  }
  double default_over_fastest() const { return vm[0].second.best() / vm[fastest()].second.best(); }

  Json to_json() const {
    Json j;
    j["name"] = name;
    j["program"] = program;
    j["batch"] = batch;
    j["step_unit"] = step_unit;
    j["thread_steps"] = thread_steps;
    Json m = Json::object();
    for (const auto& [mode, t] : vm)
      m[mode] = {{"best_s", t.best()}, {"median_s", t.median()}, {"reps", t.samples.size()},
                 {"ns_per_thread_step", ns(t.best())}};
    j["modes"] = m;
    j["modes_agree"] = modes_agree;
    j["fastest_mode"] = vm[fastest()].first;
    j["default_over_fastest"] = default_over_fastest();
    Json b = Json::object();
    if (!cpp.samples.empty())
      b["cpp"] = {{"what", cpp_what}, {"best_s", cpp.best()}, {"ns_per_thread_step", ns(cpp.best())},
                  {"default_over_baseline", vm[0].second.best() / cpp.best()}};
    if (!numpy.samples.empty())
      b["numpy"] = {{"what", numpy_what},
                    {"best_s", numpy.best()},
                    {"ns_per_thread_step", ns(numpy.best())},
                    {"default_over_baseline", vm[0].second.best() / numpy.best()}};
    j["baselines"] = b;
    j["checks"] = checks;
    j["ok"] = ok();
    for (auto& [k, v] : extra.items()) j[k] = v;
    return j;
  }
};

// Compiles PROGRAM (entry main), runs it in every mode (the batch from `batch` when no
// input is batched) and returns the default mode's outputs.
inline Outputs run_modes(const Ctx& c, Row& r, const Inputs& in, int reps) {
  autobatch::CompileOptions co;
  co.entry = "main";
  autobatch::Result<autobatch::Program> p = autobatch::compile_file(c.dir + "/" + r.program, co);
  if (!p) fail(p.rendered());
  Outputs first;
  for (const Mode& m : modes()) {
    autobatch::RunOptions ro;
    ro.threads = 1;
    ro.batch = r.batch;
    m.set(ro);
    Outputs got;
    auto once = [&] {
      autobatch::RunResult res = p->run(in.views, ro);
      if (!res.ok()) fail(r.name + ", mode " + m.name + ": " + res.rendered());
      got = std::move(res.outputs);
    };
    // An untimed run first: type inference, lowering and JIT code are cached by input
    // types, so when no input is batched a smaller batch does it. It waits for its JIT
    // code (jit_wait), so that the timed runs find it in the cache rather than run
    // interpreted while it compiles in the background.
    bool shared = std::all_of(in.views.begin(), in.views.end(),
                              [](const autobatch::ArrayView& v) { return v.batch() == 1; });
    ro.batch = shared ? std::min<int64_t>(r.batch, 256) : r.batch;
    ro.jit_wait = true;
    once();
    ro.jit_wait = false;
    ro.batch = r.batch;
    r.vm.emplace_back(m.name, time_reps(reps, once));
    if (first.empty())
      first = got;
    else if (!same_outputs(first, got))
      r.modes_agree = false;
    fprintf(stderr, "  %s %-9s %.3f s\n", r.name.c_str(), m.name, r.vm.back().second.best());
  }
  return first;
}

// The NumPy baseline ROW of users_numpy.py with parameters `prm`: its times and stats.
inline Json run_numpy(const Ctx& c, Row& r, const char* row, const Json& prm, int reps) {
  std::vector<std::string> candidates;
  if (const char* e = std::getenv("AUTOBATCH_PYTHON")) candidates.push_back(e);
  candidates.push_back("python3");
  candidates.push_back("/usr/bin/python3");
  std::string py;
  for (const auto& cand : candidates)
    if (std::system(("'" + cand + "' -c 'import numpy' >/dev/null 2>&1").c_str()) == 0) {
      py = cand;
      break;
    }
  if (py.empty()) fail("no Python with NumPy found (set AUTOBATCH_PYTHON)");
  namespace fs = std::filesystem;
  fs::path script = fs::path(c.dir) / ".." / "tools" / "bench" / "users_numpy.py";
  std::string cmd = "'" + py + "' '" + script.string() + "' " + row + " '" + prm.dump() + "' " +
                    std::to_string(reps);
  std::string report;
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) fail("cannot run " + cmd);
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) report.append(buf, n);
  if (pclose(f) != 0) fail("the NumPy baseline failed: " + cmd);
  Json j = Json::parse(report);
  r.numpy.samples = j["seconds"].get<std::vector<double>>();
  r.numpy_what = "NumPy masked loop, np.random.default_rng (tools/bench/users_numpy.py " +
                 std::string(row) + "), loop only";
  fprintf(stderr, "  %s numpy     %.3f s\n", r.name.c_str(), r.numpy.best());
  return j["stats"];
}

inline void time_cpp(Row& r, int reps, const std::string& what, const std::function<void()>& f) {
  r.cpp = time_reps(reps, f);
  r.cpp_what = what;
  fprintf(stderr, "  %s c++       %.3f s\n", r.name.c_str(), r.cpp.best());
}

inline constexpr const char* kCppPlain = "per-thread C++ (tools/bench/users_native.cpp), one thread";
inline constexpr const char* kCppRandom =
    "per-thread C++ with std::mt19937_64 (tools/bench/users_native.cpp), one thread";

}  // namespace users

namespace users {

// One row of the suite: its name (for --only) and how to run it.
struct RowSpec {
  std::string name;
  std::function<Row(const Ctx&)> run;
};
const std::vector<RowSpec>& row_table();  // users_rows.cpp

// `autobatch_bench --suite users ...` (users.cpp).
int suite_main(int argc, char** argv);

}  // namespace users
