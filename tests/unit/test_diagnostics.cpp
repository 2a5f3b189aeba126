// The convergence diagnostics (src/sample/diagnostics.h) against a NumPy
// implementation of the same formulas on fixed draws
// (tests/sample/diagnostics/, made by tools/gen_diagnostics_reference.py),
// and the properties they must have whatever the reference says.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "io/npy.h"
#include "sample/diagnostics.h"

namespace {

namespace fs = std::filesystem;
const fs::path kDir = fs::path(AUTOBATCH_SOURCE_DIR) / "tests" / "sample" / "diagnostics";

struct Draws {
  std::vector<double> x;
  int64_t chains = 0, draws = 0;
};

Draws load(const std::string& name) {
  auto a = ab::read_npy_file((kDir / (name + ".npy")).string());
  REQUIRE(a.ok());
  REQUIRE(a->shape.size() == 2);
  Draws d;
  d.chains = a->shape[0];
  d.draws = a->shape[1];
  const auto* p = reinterpret_cast<const double*>(a->data.data());
  d.x.assign(p, p + d.chains * d.draws);
  return d;
}

// Equal within `rel` relative, or both NaN (the reference writes null).
void check_close(const nlohmann::json& want, double got, double rel, const std::string& what) {
  INFO(what << ": expected " << want.dump() << ", got " << got);
  if (want.is_null()) {
    CHECK(std::isnan(got));
    return;
  }
  const double w = want.get<double>();
  CHECK(std::fabs(got - w) <= rel * std::max(1.0, std::fabs(w)));
}

}  // namespace

TEST_CASE("diagnostics: every case equals the NumPy reference") {
  std::ifstream f(kDir / "expected.json");
  REQUIRE(f);
  const nlohmann::json ref = nlohmann::json::parse(f)["cases"];
  REQUIRE(ref.size() >= 10);
  for (const auto& [name, want] : ref.items()) {
    const Draws d = load(name);
    const ab::sample::Summary s = ab::sample::summarize(d.x.data(), d.chains, d.draws);
    const double tol = 1e-9;  // FFT against lag-by-lag sums: within 1e-12 here
    check_close(want["mean"], s.mean, tol, name + " mean");
    check_close(want["sd"], s.sd, tol, name + " sd");
    check_close(want["q5"], s.q5, tol, name + " q5");
    check_close(want["q50"], s.q50, tol, name + " q50");
    check_close(want["q95"], s.q95, tol, name + " q95");
    check_close(want["mcse"], s.mcse, tol, name + " mcse");
    check_close(want["ess_bulk"], s.ess_bulk, tol, name + " ess_bulk");
    check_close(want["ess_tail"], s.ess_tail, tol, name + " ess_tail");
    check_close(want["rhat"], s.rhat, tol, name + " rhat");
    check_close(want["split_rhat_basic"],
                ab::sample::split_rhat_basic(d.x.data(), d.chains, d.draws), tol,
                name + " split_rhat_basic");
    check_close(want["ess_basic"], ab::sample::ess_basic(d.x.data(), d.chains, d.draws), tol,
                name + " ess_basic");
  }
}

TEST_CASE("diagnostics: what the numbers must say") {
  // Independent draws: R-hat near 1, ESS near the number of draws.
  std::mt19937_64 g(7);
  std::normal_distribution<double> z;
  std::vector<double> iid(8 * 1000);
  for (double& v : iid) v = z(g);
  const auto s = ab::sample::summarize(iid.data(), 8, 1000);
  CHECK(s.rhat < 1.01);
  CHECK(s.ess_bulk > 6000);
  CHECK(s.ess_bulk < 10000);
  CHECK(std::fabs(s.mean) < 4 * s.mcse);
  // One chain elsewhere: R-hat far above 1.01, the bulk ESS small.
  std::vector<double> stuck = iid;
  for (int i = 0; i < 1000; ++i) stuck[7 * 1000 + i] += 3.0;
  const auto t = ab::sample::summarize(stuck.data(), 8, 1000);
  CHECK(t.rhat > 1.1);
  CHECK(t.ess_bulk < s.ess_bulk / 4);
  // A monotone transform leaves the bulk ESS unchanged (it sees only ranks); the folded
  // draws, and so R-hat's tail half, change with it.
  std::vector<double> e = iid;
  for (double& v : e) v = std::exp(v);
  const auto u = ab::sample::summarize(e.data(), 8, 1000);
  CHECK(u.ess_bulk == doctest::Approx(s.ess_bulk).epsilon(1e-12));
  CHECK(u.rhat < 1.01);
}

TEST_CASE("diagnostics: the normal quantile inverts the normal CDF") {
  for (double p : {1e-300, 1e-20, 1e-8, 0.001, 0.02425, 0.1, 0.3, 0.5, 0.7, 0.925, 0.97575, 0.999,
                   1 - 1e-9}) {
    const double x = ab::sample::normal_quantile(p);
    const double back = 0.5 * std::erfc(-x / std::sqrt(2.0));
    INFO("p = " << p << ", x = " << x);
    CHECK(std::fabs(back - p) <= 1e-13 * std::max(p, 1e-3));
  }
  CHECK(ab::sample::normal_quantile(0.5) == 0.0);
  CHECK(ab::sample::normal_quantile(0.975) == doctest::Approx(1.959963984540054).epsilon(1e-15));
  CHECK(std::isinf(ab::sample::normal_quantile(0.0)));
  CHECK(std::isnan(ab::sample::normal_quantile(1.5)));
}
