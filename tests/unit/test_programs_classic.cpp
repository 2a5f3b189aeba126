// The classic example programs (programs/mandelbrot.ab, nqueens.ab, roots.ab)
// against answers computed here, natively, on inputs larger than their
// goldens: escape times of a 64x48 pixel grid, n-queens counts for n = 1..9,
// and a few hundred root-finding problems with known roots.
//
// Each program runs through the real CLI (AUTOBATCH_BINARY) under every VM
// (--vm stack, --vm reference, --vm stackless; the last may still fall back
// to the reference interpreter) and once more as the text `autobatch lower`
// prints, so the lowered form is checked on the same inputs. Outputs are
// compared exactly: the native code below performs the same floating-point
// operations in the same order as the programs, and, independently of that,
// the roots are checked against the known roots to a tolerance.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const fs::path kPrograms = fs::path(AUTOBATCH_SOURCE_DIR) / "programs";

// A fresh empty directory, removed at the end of the test.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("ab_classic_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  fs::path operator/(const std::string& name) const { return path / name; }
};

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs AUTOBATCH_BINARY with `args`, stdout and stderr going to files in `dir`.
Result run_cli(const ScratchDir& dir, const std::vector<std::string>& args) {
  ab_test::Proc p = ab_test::run_binary(dir.path, args, std::nullopt, 1800);
  REQUIRE_FALSE(p.timed_out);
  return Result{p.code, p.out, p.err};
}

// The outputs of `autobatch run PROG --entry ENTRY --inputs INPUTS EXTRA...`.
json run_outputs(const ScratchDir& dir, const fs::path& prog, const std::string& entry,
                 const fs::path& inputs, const std::vector<std::string>& extra) {
  std::vector<std::string> args{"run", prog.string(), "--entry",
                                entry, "--inputs",    inputs.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  const Result r = run_cli(dir, args);
  INFO("autobatch run ", prog.filename().string(), " failed: ", r.err);
  REQUIRE(r.code == 0);
  const json j = json::parse(r.out);
  REQUIRE(j.contains("outputs"));
  return j["outputs"];
}

// The inputs of one program for each way of running it. Batched runs (the
// stack VM, and the lowered text, which runs on it) take the large batch;
// the reference interpreter runs one thread after the other, which is slow
// under the sanitizers, so it and the stackless VM (which may fall back to
// it) take a subset; the lowered text takes `lowered`, or else the batch.
struct Inputs {
  json batched;
  json single;
  json lowered = nullptr;
};

// Runs the program under every VM and, lowered by `autobatch lower` (without
// inputs), under the default VM; calls check(outputs, inputs) for each run.
template <class Check>
void run_everywhere(const std::string& name, const std::string& entry, const Inputs& inputs,
                    Check check) {
  ScratchDir dir;
  const fs::path prog = kPrograms / (name + ".ab");
  const fs::path batched = dir / "batched.json", single = dir / "single.json";
  const fs::path lowered_in = dir / "lowered.json";
  const json& lowered_inputs = inputs.lowered.is_null() ? inputs.batched : inputs.lowered;
  std::ofstream(batched) << inputs.batched.dump();
  std::ofstream(single) << inputs.single.dump();
  std::ofstream(lowered_in) << lowered_inputs.dump();

  SUBCASE("--vm stack") {
    check(run_outputs(dir, prog, entry, batched, {"--vm", "stack"}), inputs.batched);
  }
  SUBCASE("--vm reference") {
    check(run_outputs(dir, prog, entry, single, {"--vm", "reference"}), inputs.single);
  }
  SUBCASE("--vm stackless") {
    check(run_outputs(dir, prog, entry, single, {"--vm", "stackless"}), inputs.single);
  }
  SUBCASE("lowered, then run") {
    const Result low = run_cli(dir, {"lower", prog.string(), "--entry", entry});
    INFO("autobatch lower failed: ", low.err);
    REQUIRE(low.code == 0);
    const fs::path lowered = dir / (name + ".lowered.ab");
    std::ofstream(lowered) << low.out;
    check(run_outputs(dir, lowered, entry, lowered_in, {}), lowered_inputs);
  }
}

// The elements k = 0, step, 2*step, ... of every batched (array) input; a
// batch-1 input given as a bare value stays as it is.
json every_nth(const json& inputs, size_t step) {
  json out = json::object();
  for (const auto& [key, value] : inputs.items()) {
    if (!value.is_array()) {
      out[key] = value;
      continue;
    }
    json sub = json::array();
    for (size_t k = 0; k < value.size(); k += step) sub.push_back(value[k]);
    out[key] = sub;
  }
  return out;
}

// --- mandelbrot ---------------------------------------------------------------

// Escape time as programs/mandelbrot.ab computes it, operation for operation.
int64_t escape_time(double cx, double cy, int64_t max_iter) {
  double x = 0.0, y = 0.0;
  int64_t i = 0;
  for (;;) {
    const double xx = x * x, yy = y * y;
    if (!(xx + yy <= 4.0 && i < max_iter)) break;
    const double xy = x * y;
    x = (xx - yy) + cx;
    y = (xy + xy) + cy;
    ++i;
  }
  return i;
}

TEST_CASE("programs: mandelbrot escape times of a 64x48 grid equal native ones") {
  const int width = 64, height = 48;
  const int64_t max_iter = 60;
  std::vector<double> cx, cy;
  for (int row = 0; row < height; ++row)
    for (int col = 0; col < width; ++col) {
      cx.push_back(-2.2 + (col + 0.5) * 3.0 / width);
      cy.push_back(1.2 - (row + 0.5) * 2.4 / height);
    }
  std::vector<int64_t> expected;
  for (size_t k = 0; k < cx.size(); ++k) expected.push_back(escape_time(cx[k], cy[k], max_iter));
  // The grid must exercise the divergence: points that escape at once, late,
  // and never.
  CHECK(std::count(expected.begin(), expected.end(), max_iter) > 200);
  CHECK(std::count(expected.begin(), expected.end(), 1) > 50);
  CHECK(std::count_if(expected.begin(), expected.end(),
                      [&](int64_t t) { return t > 20 && t < max_iter; }) > 20);

  // The reference interpreter gets every 16th pixel (192 of them).
  const json inputs = {{"cx", cx}, {"cy", cy}, {"max_iter", max_iter}};
  run_everywhere("mandelbrot", "escape_time", {inputs, every_nth(inputs, 16)},
                 [&](const json& out, const json& in) {
                   const auto xs = in["cx"].get<std::vector<double>>();
                   const auto ys = in["cy"].get<std::vector<double>>();
                   std::vector<int64_t> want;
                   for (size_t k = 0; k < xs.size(); ++k)
                     want.push_back(escape_time(xs[k], ys[k], max_iter));
                   REQUIRE(out.size() == 1);
                   CHECK(out[0].get<std::vector<int64_t>>() == want);
                 });
}

// --- nqueens ------------------------------------------------------------------

// Solutions and search-tree nodes (partial boards with no two queens
// attacking, the empty board included) by bitmask backtracking: a different
// algorithm from the program's column-per-row board.
void queens(int n, uint32_t cols, uint32_t diag1, uint32_t diag2, int64_t& solutions,
            int64_t& nodes, int row) {
  ++nodes;
  if (row == n) {
    ++solutions;
    return;
  }
  const uint32_t all = (1u << n) - 1;
  for (uint32_t free = all & ~(cols | diag1 | diag2); free != 0; free &= free - 1) {
    const uint32_t bit = free & -free;
    queens(n, cols | bit, ((diag1 | bit) << 1) & all, (diag2 | bit) >> 1, solutions, nodes,
           row + 1);
  }
}

TEST_CASE("programs: nqueens counts the solutions for n = 1..9") {
  // Known counts (OEIS A000170), to check the native code itself.
  const std::vector<int64_t> known{1, 0, 0, 2, 10, 4, 40, 92, 352};
  auto native = [&](int64_t n, bool want_nodes) {
    int64_t solutions = 0, nodes = 0;
    queens(static_cast<int>(n), 0, 0, 0, solutions, nodes, 0);
    return want_nodes ? nodes : solutions;
  };
  for (int n = 1; n <= 9; ++n) REQUIRE(native(n, false) == known[n - 1]);

  // The stack VM gets every n, the small ones twice, in an order that puts
  // long and short searches side by side. The reference interpreter runs
  // n = 9 alone for seconds under the sanitizers, so it gets n = 1..7, and
  // the lowered text n = 1..8.
  const json batched = {{"n", {9, 1, 5, 8, 2, 7, 3, 6, 4, 4, 6, 3, 7, 2, 5, 1}}};
  const json up_to_8 = {{"n", {8, 1, 5, 2, 7, 3, 6, 4, 4, 6, 3, 7, 2, 5, 1}}};
  const json single = {{"n", {1, 2, 3, 4, 5, 6, 7}}};
  auto check = [&](const json& out, const json& in) {
    REQUIRE(out.size() == 2);
    std::vector<int64_t> solutions, nodes;
    for (int64_t n : in["n"].get<std::vector<int64_t>>()) {
      solutions.push_back(native(n, false));
      nodes.push_back(native(n, true));
    }
    CHECK(out[0].get<std::vector<int64_t>>() == solutions);
    CHECK(out[1].get<std::vector<int64_t>>() == nodes);
  };
  run_everywhere("nqueens", "nqueens", {batched, single, up_to_8}, check);
}

// --- roots --------------------------------------------------------------------

// p(x) and p'(x) by Horner's rule, as programs/roots.ab's horner.
std::pair<double, double> horner(const std::vector<double>& c, double x) {
  double p = c[0], d = 0.0;
  for (size_t k = 1; k < c.size(); ++k) {
    d = d * x + p;
    p = p * x + c[k];
  }
  return {p, d};
}

std::pair<double, int64_t> bisect(const std::vector<double>& c, double lo, double hi, double tol) {
  const bool neg_lo = horner(c, lo).first < 0.0;
  int64_t i = 0;
  while (hi - lo > tol) {
    const double mid = (lo + hi) * 0.5;
    if (mid == lo || mid == hi) break;
    const double f = horner(c, mid).first;
    ++i;
    if (f == 0.0) return {mid, i};
    if ((f < 0.0) == neg_lo)
      lo = mid;
    else
      hi = mid;
  }
  return {(lo + hi) * 0.5, i};
}

std::pair<double, int64_t> newton(const std::vector<double>& c, double x, double tol,
                                  int64_t max_iter) {
  int64_t i = 0;
  while (i < max_iter) {
    const auto [p, d] = horner(c, x);
    const double step = p / d;
    x = x - step;
    ++i;
    if (std::abs(step) <= tol) break;
  }
  return {x, i};
}

TEST_CASE(
    "programs: roots finds known roots of 300 cubics and square roots by bisection and Newton") {
  const double tol = 1e-12;
  const int64_t max_iter = 100;
  std::mt19937_64 rng(20240611);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::vector<double>> coef;
  std::vector<double> lo, hi, x0;
  std::vector<std::vector<double>> known;  // the exact roots each problem was built from
  for (int k = 0; k < 300; ++k) {
    if (k % 4 == 3) {
      // x^2 - a on [0, max(a, 1)] from x0 = max(a, 1): Newton's square root.
      const double a = 0.01 + 1000.0 * unit(rng) * unit(rng);
      coef.push_back({0.0, 1.0, 0.0, -a});
      lo.push_back(0.0);
      hi.push_back(std::max(a, 1.0));
      x0.push_back(std::max(a, 1.0));
      known.push_back({std::sqrt(a)});
      continue;
    }
    // a (x - r0)(x - r1)(x - r2) with r0 < r1 < r2 at least 0.5 apart; the
    // bracket holds r1 alone, Newton starts anywhere in [-12, 12].
    const double r0 = -10.0 + 6.0 * unit(rng);
    const double r1 = r0 + 0.5 + 6.0 * unit(rng);
    const double r2 = r1 + 0.5 + 6.0 * unit(rng);
    const double a = (k % 2 == 0 ? 1.0 : -1.0) * (0.5 + 2.0 * unit(rng));
    coef.push_back({a, -a * (r0 + r1 + r2), a * (r0 * r1 + r0 * r2 + r1 * r2), -a * r0 * r1 * r2});
    lo.push_back((r0 + r1) / 2);
    hi.push_back((r1 + r2) / 2);
    x0.push_back(-12.0 + 24.0 * unit(rng));
    known.push_back({r1, r0, r2});
  }

  // The native answers, and what they must satisfy whatever the program does.
  std::vector<double> xb, xn;
  std::vector<int64_t> ib, ni_all;
  int newton_converged = 0;
  for (size_t k = 0; k < coef.size(); ++k) {
    const auto [b, bi] = bisect(coef[k], lo[k], hi[k], tol);
    const auto [n, ni] = newton(coef[k], x0[k], tol, max_iter);
    xb.push_back(b);
    ib.push_back(bi);
    xn.push_back(n);
    ni_all.push_back(ni);
    // Bisection finds the root in its bracket to the tolerance (plus what the
    // rounding of the coefficients moves the root by).
    CHECK(std::abs(b - known[k][0]) <= 1e-9 * std::max(1.0, std::abs(known[k][0])));
    // Newton, where it stops before max_iter, stops at one of the roots.
    if (ni < max_iter) {
      ++newton_converged;
      double best = INFINITY;
      for (double r : known[k]) best = std::min(best, std::abs(n - r));
      CHECK(best <= 1e-8 * std::max(1.0, std::abs(n)));
    }
  }
  CHECK(newton_converged >= 290);
  // Iteration counts must differ from thread to thread.
  CHECK(*std::max_element(ni_all.begin(), ni_all.end()) -
            *std::min_element(ni_all.begin(), ni_all.end()) >=
        5);
  CHECK(*std::max_element(ib.begin(), ib.end()) - *std::min_element(ib.begin(), ib.end()) >= 5);

  // The reference interpreter gets every 8th problem (38 of them).
  const json inputs = {{"coef", coef}, {"lo", lo},   {"hi", hi},
                       {"x0", x0},     {"tol", tol}, {"max_iter", max_iter}};
  run_everywhere("roots", "roots", {inputs, every_nth(inputs, 8)},
                 [&](const json& out, const json& in) {
                   const size_t step = in["lo"].size() == coef.size() ? 1 : 8;
                   REQUIRE(out.size() == 4);
                   const auto got_xb = out[0].get<std::vector<double>>();
                   const auto got_ib = out[1].get<std::vector<int64_t>>();
                   const auto got_xn = out[2].get<std::vector<double>>();
                   const auto got_in = out[3].get<std::vector<int64_t>>();
                   REQUIRE(got_xb.size() == in["lo"].size());
                   REQUIRE(got_in.size() == in["lo"].size());
                   for (size_t j = 0; j < got_xb.size(); ++j) {
                     const size_t k = j * step;
                     INFO("problem ", k);
                     CHECK(got_xb[j] == xb[k]);
                     CHECK(got_ib[j] == ib[k]);
                     CHECK(got_xn[j] == xn[k]);
                     CHECK(got_in[j] == ni_all[k]);
                   }
                 });
}

}  // namespace
