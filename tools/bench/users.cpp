// The users' benchmark suite (`autobatch_bench --suite users`, `tools/bench/run --suite
// users`): programs written the way a user writes them (programs/simpson.ab, dopri.ab,
// gillespie.ab, walk.ab, metropolis.ab, nuts_gauss.ab, and tools/bench/users/*.ab: the
// shapes of issue 34 at 10,000 and 100,000 threads: timeseries, an AR(5) log density, a
// loop of 195 steps holding a loop of 5 with indexed reads; gillespie_sir, an SIR epidemic,
// a `while i > 0` loop of random draws until it dies out; grid_paths, a plain recursion
// over a per-thread bool[8, 8] grid; nested_inline, a loop in a loop calling an inline
// function), each run through the public API in four modes of the VM, on one OS thread:
//   default    the stack VM with the JIT, persistent schedule (what `autobatch run` does)
//   stackless  --vm stackless
//   jit_off    --jit off
//   min_pc     --schedule min-pc
// against the baselines a user would otherwise write: per-thread C++ (users_native.cpp,
// same compiler flags) and, where the program draws random numbers, a vectorised NumPy
// masked loop with np.random.default_rng (users_numpy.py). Every mode's outputs must equal
// the default's bit for bit. The deterministic programs must equal the C++ baseline bit for
// bit and a known value within a tolerance; the random ones (other generators) are checked
// statistically: means within 5 standard errors of a known value, or of each other.
// Reported per row: ns per thread-step (the row's step_unit summed over threads) of every
// mode and baseline, the fastest mode and default / fastest.
#include "users_suite.h"

namespace users {

namespace {

void print_table(const std::vector<Row>& rows) {
  fprintf(stderr, "\nns per thread-step (one OS thread; best of the repetitions)\n");
  fprintf(stderr, "%-16s %7s %9s %9s %9s %9s %9s %9s %9s  %-9s %7s %s\n", "row", "batch",
          "steps/thr", "default", "stackless", "jit_off", "min_pc", "C++", "NumPy", "fastest",
          "def/fst", "ok");
  for (const Row& r : rows) {
    fprintf(stderr, "%-16s %7lld %9.1f", r.name.c_str(), static_cast<long long>(r.batch),
            static_cast<double>(r.thread_steps) / static_cast<double>(r.batch));
    for (const auto& m : r.vm) fprintf(stderr, " %9.2f", r.ns(m.second.best()));
    for (const Timing* t : {&r.cpp, &r.numpy}) {
      if (t->samples.empty())
        fprintf(stderr, " %9s", "-");
      else
        fprintf(stderr, " %9.2f", r.ns(t->best()));
    }
    fprintf(stderr, "  %-9s %7.2f %s\n", r.vm[r.fastest()].first.c_str(), r.default_over_fastest(),
            r.ok() ? "yes" : "NO");
  }
}

// The figures the performance targets name, from the rows that ran.
Json summary(const std::vector<Row>& rows) {
  Json s = Json::object();
  const Row* nuts_small = nullptr;
  const Row* nuts_large = nullptr;
  for (const Row& r : rows) {
    if (r.program == "walk.ab" && !r.numpy.samples.empty())
      s["walk"] = {{"batch", r.batch},
                   {"default_ns_per_thread_step", r.ns(r.vm[0].second.best())},
                   {"default_over_numpy", r.vm[0].second.best() / r.numpy.best()}};
    if (r.program == "nuts_gauss.ab") {
      if (!nuts_small || r.batch < nuts_small->batch) nuts_small = &r;
      if (!nuts_large || r.batch > nuts_large->batch) nuts_large = &r;
    }
  }
  if (nuts_small && nuts_large && nuts_small != nuts_large) {
    double a = nuts_small->ns(nuts_small->vm[0].second.best());
    double b = nuts_large->ns(nuts_large->vm[0].second.best());
    s["nuts_leapfrog"] = {{"small_batch", nuts_small->batch},
                          {"large_batch", nuts_large->batch},
                          {"default_ns_per_leapfrog_small", a},
                          {"default_ns_per_leapfrog_large", b},
                          {"large_over_small", b / a}};
  }
  return s;
}

}  // namespace

int suite_main(int argc, char** argv) {
  Ctx c;
  c.dir = "programs";
  bool check = false;
  int reps = 0;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--suite" && i + 1 < argc) {
      ++i;
    } else if (a == "--quick") {
      c.quick = true;
    } else if (a == "--check") {
      check = true;
    } else if (a == "--only" && i + 1 < argc) {
      std::stringstream ss(argv[++i]);
      for (std::string s; std::getline(ss, s, ',');) only.push_back(s);
    } else if (a == "--reps" && i + 1 < argc) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) fail("--reps needs a positive count");
    } else if (a.starts_with("-")) {
      fail("unknown option " + a +
           "; usage: autobatch_bench --suite users [--quick] [--check] [--reps N] "
           "[--only NAME,...] [PROGRAMS_DIR]");
    } else {
      c.dir = a;
    }
  }
  c.reps = reps > 0 ? reps : c.quick ? 1 : 3;
  for (const auto& o : only)
    if (std::none_of(row_table().begin(), row_table().end(),
                     [&](const RowSpec& s) { return o == s.name; }))
      fail("no row named " + o + " in the users suite");
  std::vector<Row> rows;
  for (const RowSpec& s : row_table()) {
    if (!only.empty() && std::find(only.begin(), only.end(), s.name) == only.end()) continue;
    fprintf(stderr, "%s\n", s.name.c_str());
    rows.push_back(s.run(c));
  }
  Json out;
  out["suite"] = "users";
  out["mode"] = c.quick ? "quick" : "full";
  out["hardware_threads"] = std::thread::hardware_concurrency();
  out["timing"] =
      "best of reps per mode and baseline, each one Program::run or one baseline loop on one OS "
      "thread (nuts rows of 8192 chains or more: one rep)";
  out["ns_per_thread_step"] =
      "seconds / thread_steps; thread_steps = the row's step_unit summed over all threads (the "
      "default mode's count)";
  out["rows"] = Json::array();
  for (const Row& r : rows) out["rows"].push_back(r.to_json());
  out["summary"] = summary(rows);
  printf("%s\n", out.dump(2).c_str());
  print_table(rows);
  if (check && !std::all_of(rows.begin(), rows.end(), [](const Row& r) { return r.ok(); })) {
    for (const Row& r : rows) {
      if (!r.modes_agree) fprintf(stderr, "%s: the modes' outputs differ\n", r.name.c_str());
      for (const Json& ch : r.checks)
        if (!ch["ok"].get<bool>())
          fprintf(stderr, "%s: failed: %s (%g, limit %g)\n", r.name.c_str(),
                  ch["what"].get<std::string>().c_str(), ch["value"].get<double>(),
                  ch["limit"].get<double>());
    }
    fprintf(stderr, "autobatch_bench: some rows' checks failed\n");
    return 1;
  }
  return 0;
}

}  // namespace users
