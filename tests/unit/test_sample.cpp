// autobatch sample (src/api/sample.cpp, lib/nuts.ab): the draws of three
// standard posteriors agree with moments computed apart from the sampler
// (tests/sample/posteriors/reference.json, by quadrature; the Gaussian's are
// exact): every mean within 4 MCSE, every sd within 10%, R-hat below 1.01, at
// most a handful of divergences. The dense metric (--metric dense) on a
// strongly correlated Gaussian (its adapted inverse metric against the
// covariance, its leapfrog steps against the diagonal metric's) and on eight
// schools. And the command's outputs, its reproducibility, and its errors.
#include <doctest/doctest.h>

#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "cli_harness.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;
const fs::path kModels = fs::path(AUTOBATCH_SOURCE_DIR) / "programs" / "models";

struct Moment {
  double mean, sd;
};

std::map<std::string, Moment> reference(const std::string& model) {
  std::ifstream f(fs::path(AUTOBATCH_SOURCE_DIR) / "tests/sample/posteriors/reference.json");
  nlohmann::json j = nlohmann::json::parse(f);
  std::map<std::string, Moment> out;
  for (const auto& [k, v] : j.at(model).items()) out[k] = {v.at("mean"), v.at("sd")};
  return out;
}

autobatch::SampleOptions options(const std::string& model) {
  autobatch::SampleOptions o;
  o.model = (kModels / (model + ".ab")).string();
  o.data = (kModels / (model + ".data.json")).string();
  o.seed = 20261127;
  return o;
}

void check_posterior(const autobatch::SampleResult& r, const std::map<std::string, Moment>& ref) {
  std::map<std::string, const autobatch::SummaryRow*> rows;
  for (const auto& row : r.summary.rows) rows[row.name] = &row;
  for (const auto& entry : ref) {
    const std::string& name = entry.first;
    const Moment& m = entry.second;
    CAPTURE(name);
    REQUIRE(rows.count(name));
    const autobatch::SummaryRow& row = *rows[name];
    CAPTURE(row.mean);
    CAPTURE(row.mcse);
    CAPTURE(row.sd);
    CAPTURE(m.mean);
    CAPTURE(m.sd);
    CHECK(std::abs(row.mean - m.mean) <= 4 * row.mcse);
    CHECK(std::abs(row.sd / m.sd - 1) <= 0.1);
  }
  for (const auto& row : r.summary.rows) {
    CAPTURE(row.name);
    CHECK(row.rhat < 1.01);
  }
  CHECK(r.divergent <= 5);
  CHECK(r.max_depth_hits == 0);
}

}  // namespace

TEST_CASE("sample: eight schools (non-centered) matches its quadrature") {
  auto r = autobatch::sample(options("eight_schools"));
  REQUIRE_MESSAGE(r, r.rendered());
  check_posterior(*r, reference("eight_schools"));
  // theta and the quantities constrain names, [chains, draws, ...].
  REQUIRE(r->draws.size() == 4);
  CHECK(r->draws[0].first == "theta");
  CHECK(r->draws[0].second.shape() == std::vector<int64_t>{4, 1000, 10});
  CHECK(r->draws[1].first == "mu");
  CHECK(r->draws[3].first == "effect");
  CHECK(r->draws[3].second.shape() == std::vector<int64_t>{4, 1000, 8});
  CHECK(r->stats.size() == 6);
  CHECK(r->step_size.shape() == std::vector<int64_t>{4});
  CHECK(r->inv_metric.shape() == std::vector<int64_t>{4, 10});
}

TEST_CASE("sample: logistic regression matches its quadrature") {
  auto r = autobatch::sample(options("logistic"));
  REQUIRE_MESSAGE(r, r.rendered());
  check_posterior(*r, reference("logistic"));
}

TEST_CASE("sample: a correlated Gaussian has its exact moments") {
  auto r = autobatch::sample(options("gaussian_ar1"));
  REQUIRE_MESSAGE(r, r.rendered());
  std::map<std::string, Moment> exact;
  for (int i = 0; i < 10; ++i) exact["theta[" + std::to_string(i) + "]"] = {i - 4.5, 1.0};
  check_posterior(*r, exact);
}

TEST_CASE("sample: a model that gives its own gradient (log_density_and_grad)") {
  ab_test::TempDir dir("ab_sample_own");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name)) << text;
    return (dir / name);
  };
  // A Gaussian with sds 1 and 3 and correlation 0.5, its gradient by hand;
  // log_density (a wrong one) is there too, and is not used.
  autobatch::SampleOptions o;
  o.model = write("own.ab",
                  "func log_density(theta: f64[2], prec: f64[2, 2]) -> f64 {\n"
                  "  return 0.0\n}\n"
                  "func log_density_and_grad(theta: f64[2], prec: f64[2, 2]) {\n"
                  "  g = -matvec(prec, theta)\n"
                  "  return 0.5 * dot(theta, g), g\n}\n");
  // The precision matrix of cov [[1, 1.5], [1.5, 9]].
  const double det = 9.0 - 2.25;
  o.data = write("own.json", "{\"prec\": [[" + std::to_string(9.0 / det) + ", " +
                                 std::to_string(-1.5 / det) + "], [" + std::to_string(-1.5 / det) +
                                 ", " + std::to_string(1.0 / det) + "]]}");
  o.seed = 5;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  CHECK(r->driver.find("return log_density_and_grad(q, data)") != std::string::npos);
  CHECK(r->driver.find("value_and_grad") == std::string::npos);
  check_posterior(*r, {{"theta[0]", {0.0, 1.0}}, {"theta[1]", {0.0, 3.0}}});

  // Results that are not (f64, f64[D]): said so, at the function.
  for (const char* ret : {"0.5 * dot(theta, g)", "0.5 * dot(theta, g), [1.0, 2.0, 3.0]"}) {
    CAPTURE(ret);
    o.model = write("bad.ab", std::string("\n\nfunc log_density_and_grad(theta: f64[2], prec) {\n"
                                          "  g = -matvec(prec, theta)\n  return ") +
                                  ret + "\n}\n");
    auto bad = autobatch::sample(o);
    REQUIRE_FALSE(bad);
    CHECK(bad.rendered().find("bad.ab:3: log_density_and_grad must return the log density and "
                              "its gradient, (f64, f64[2])") != std::string::npos);
  }
}

TEST_CASE("sample: a log density that is not finite is counted per chain and named in a warning") {
  ab_test::TempDir dir("ab_sample_nonfinite");
  // sigma sampled unconstrained: where it goes negative the density is NaN.
  autobatch::SampleOptions o;
  o.model = dir / "neg.ab";
  std::ofstream(o.model) << "import dists\n"
                            "func log_density(theta: f64[2], y) -> f64 {\n"
                            "  return sum(normal_lpdf(y, theta[0], theta[1])) + "
                            "normal_lpdf(theta[1], 0.0, 5.0)\n}\n";
  o.data = dir / "neg.json";
  std::ofstream(o.data) << R"({"y": [1.0, 2.5, 0.3, 1.7, 2.2, 0.9]})";
  o.chains = 4;
  o.warmup = 200;
  o.samples = 200;
  o.seed = 3;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  CHECK(r->warmup_nonfinite_total > 0);
  REQUIRE(r->nonfinite_at.shape() == std::vector<int64_t>{4});
  REQUIRE(r->nonfinite_theta.shape() == std::vector<int64_t>{4, 2});
  int64_t counted = 0;
  for (int64_t c = 0; c < 4; ++c) {
    const int64_t n = r->warmup_nonfinite.as<int64_t>()[c] + r->nonfinite.as<int64_t>()[c];
    const int64_t at = r->nonfinite_at.as<int64_t>()[c];
    counted += n;
    CHECK((n == 0) == (at < 0));
    // The point named is where the density is NaN: its sigma is negative.
    if (n > 0) CHECK(r->nonfinite_theta.as<double>()[c * 2 + 1] < 0.0);
  }
  CHECK(counted == r->warmup_nonfinite_total + r->nonfinite_total);
  bool warned = false;
  for (const std::string& w : r->warnings)
    warned = warned || w.find("the log density was not finite") != std::string::npos;
  CHECK(warned);

  // A model that stays on its support: none counted, no warning.
  auto ok = autobatch::sample(options("eight_schools"));
  REQUIRE_MESSAGE(ok, ok.rendered());
  CHECK(ok->warmup_nonfinite_total == 0);
  CHECK(ok->nonfinite_total == 0);
  for (const std::string& w : ok->warnings) CHECK(w.find("not finite") == std::string::npos);
}

TEST_CASE("sample: CmdStan's CSV files hold the draws, the statistics and the adaptation") {
  auto o = options("eight_schools");
  o.chains = 2;
  o.warmup = 150;
  o.samples = 40;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  ab_test::TempDir dir("ab_sample_csv");
  const std::string out = dir / "csv/";
  REQUIRE(autobatch::write_cmdstan_csv(*r, o, out));
  CHECK_FALSE(autobatch::write_cmdstan_csv(*r, o, dir / "no_slash"));
  for (int64_t c = 0; c < 2; ++c) {
    CAPTURE(c);
    std::ifstream f(out + "output_" + std::to_string(c + 1) + ".csv");
    REQUIRE(f.good());
    std::string line, header, step;
    std::vector<std::vector<std::string>> rows;
    while (std::getline(f, line)) {
      if (line.rfind("# Step size = ", 0) == 0) step = line.substr(14);
      if (line.empty() || line[0] == '#') continue;
      if (header.empty()) {
        header = line;
        continue;
      }
      std::vector<std::string> cells;
      std::stringstream ss(line);
      for (std::string x; std::getline(ss, x, ',');) cells.push_back(x);
      rows.push_back(cells);
    }
    CHECK(header.rfind("lp__,accept_stat__,stepsize__,treedepth__,n_leapfrog__,divergent__,"
                       "energy__,theta.1,theta.2,",
                       0) == 0);
    CHECK(header.find(",theta.10,mu,tau,effect.1,") != std::string::npos);
    CHECK(header.substr(header.size() - 9) == ",effect.8");
    CHECK(std::stod(step) == r->step_size.as<double>()[c]);
    REQUIRE(rows.size() == 40);
    // Every value as the result holds it (17 digits read back exactly).
    const double* theta = r->draws[0].second.as<double>();
    const double* tau = r->draws[2].second.as<double>();
    const double* lp = r->stats[0].second.as<double>();
    for (size_t i = 0; i < rows.size(); ++i) {
      REQUIRE(rows[i].size() == 7 + 10 + 1 + 1 + 8);
      CHECK(std::stod(rows[i][0]) == lp[c * 40 + static_cast<int64_t>(i)]);
      for (int k = 0; k < 10; ++k)
        CHECK(std::stod(rows[i][7 + k]) == theta[(c * 40 + static_cast<int64_t>(i)) * 10 + k]);
      CHECK(std::stod(rows[i][18]) == tau[c * 40 + static_cast<int64_t>(i)]);
    }
  }
}

TEST_CASE("sample: the same seed gives the same draws, on any number of OS threads") {
  auto o = options("logistic");
  o.chains = 3;
  o.warmup = 150;
  o.samples = 50;
  o.run.threads = 1;
  auto a = autobatch::sample(o);
  o.run.threads = 2;
  auto b = autobatch::sample(o);
  REQUIRE(a);
  REQUIRE(b);
  const auto& x = a->draws[0].second;
  const auto& y = b->draws[0].second;
  REQUIRE(x.num_elements() == y.num_elements());
  for (int64_t i = 0; i < x.num_elements(); ++i) CHECK(x.as<double>()[i] == y.as<double>()[i]);
  o.seed = 7;
  auto c = autobatch::sample(o);
  REQUIRE(c);
  CHECK(c->draws[0].second.as<double>()[0] != x.as<double>()[0]);
}

TEST_CASE("sample: progress sees every chain's iterations grow to warm-up + samples, same draws") {
  auto o = options("logistic");
  o.chains = 3;
  o.warmup = 150;
  o.samples = 50;
  auto plain = autobatch::sample(o);
  REQUIRE(plain);
  std::vector<autobatch::SampleProgress> seen;
  int64_t run_calls = 0;
  o.run.progress = [&](const autobatch::Progress&) { ++run_calls; };
  o.progress = [&](const autobatch::SampleProgress& p) { seen.push_back(p); };
  auto watched = autobatch::sample(o);
  REQUIRE(watched);
  CHECK(run_calls > 0);  // the run's own progress is still called
  REQUIRE(seen.size() >= 3);
  bool warming = false, sampling = false;
  bool monotone = true, consistent = true;
  for (size_t i = 0; i < seen.size(); ++i) {
    const auto& p = seen[i];
    CHECK(p.chains == 3);
    CHECK(p.warmup == 150);
    CHECK(p.samples == 50);
    REQUIRE(p.iterations.size() == 3);
    int64_t sum = 0, lo = INT64_MAX, hi = 0;
    for (size_t c = 0; c < 3; ++c) {
      const int64_t n = p.iterations[c];
      monotone = monotone && n >= 0 && n <= 200 && (i == 0 || n >= seen[i - 1].iterations[c]);
      sum += n;
      lo = std::min(lo, n);
      hi = std::max(hi, n);
    }
    consistent = consistent && sum == p.done && lo == p.slowest && hi == p.fastest;
    monotone = monotone && (i == 0 || p.seconds >= seen[i - 1].seconds);
    warming = warming || (!p.sampling() && p.done > 0);
    sampling = sampling || (p.sampling() && !p.finished());
  }
  CHECK(monotone);
  CHECK(consistent);
  CHECK(warming);   // a report during warm-up,
  CHECK(sampling);  // one after it, before the end,
  const auto& last = seen.back();  // and the last at the end
  CHECK(last.finished());
  CHECK(last.iterations == std::vector<int64_t>{200, 200, 200});
  // The draws, statistics and adaptation do not depend on progress.
  auto same = [](const autobatch::Array& a, const autobatch::Array& b) {
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           std::memcmp(a.data(), b.data(), a.byte_size()) == 0;
  };
  REQUIRE(plain->draws.size() == watched->draws.size());
  for (size_t k = 0; k < plain->draws.size(); ++k)
    CHECK(same(plain->draws[k].second, watched->draws[k].second));
  for (size_t k = 0; k < plain->stats.size(); ++k)
    CHECK(same(plain->stats[k].second, watched->stats[k].second));
  CHECK(same(plain->step_size, watched->step_size));
  CHECK(same(plain->inv_metric, watched->inv_metric));
  // Without warm-up the chains start sampling at once.
  o.warmup = 0;
  seen.clear();
  REQUIRE(autobatch::sample(o));
  REQUIRE(!seen.empty());
  CHECK(seen.front().sampling());
  CHECK(seen.back().iterations == std::vector<int64_t>{50, 50, 50});
}

TEST_CASE("sample: no finite start is an error; a step size warm-up drove to NaN a warning") {
  ab_test::TempDir dir("ab_sample_start");
  autobatch::SampleOptions o;
  o.chains = 3;
  o.warmup = 1000;
  o.samples = 10;
  o.seed = 1;
  // NaN everywhere (a negative scale in the data): no chain starts, as
  // Stan's "Initialization failed"; the error names a chain and how many.
  o.model = dir / "neg.ab";
  std::ofstream(o.model) << "import dists\n"
                            "func log_density(theta: f64[1], s) -> f64 {\n"
                            "  return normal_lpdf(theta[0], 0.0, s)\n}\n";
  o.data = dir / "neg.json";
  std::ofstream(o.data) << R"({"s": -1.0})";
  auto r = autobatch::sample(o);
  REQUIRE_FALSE(r);
  CHECK(r.rendered().find("chain 0 (and 2 others of 3) found no start") != std::string::npos);
  // With --init, the start given.
  o.init = dir / "init.json";
  std::ofstream(o.init) << R"({"theta": [0.5]})";
  r = autobatch::sample(o);
  REQUIRE_FALSE(r);
  CHECK(r.rendered().find("start (--init") != std::string::npos);
  // A flat density: the step size grows until it is NaN.
  o.init = "";
  o.chains = 1;
  o.data = "";
  o.model = dir / "flat.ab";
  std::ofstream(o.model) << "func log_density(theta: f64[1]) -> f64 {\n"
                            "  return 0.0 * theta[0]\n}\n";
  r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  bool warned = false;
  for (const std::string& w : r->warnings)
    warned = warned || w.find("step size that is not a positive number") != std::string::npos;
  CHECK(warned);
}

TEST_CASE("sample: --init, a radius or given values") {
  ab_test::TempDir dir("ab_sample");
  auto o = options("logistic");
  o.chains = 2;
  o.warmup = 0;
  o.samples = 1;
  o.init = (dir / "init.json");
  std::ofstream(o.init) << R"({"theta": [0.5, -1.0, 2.0]})";
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  std::ofstream(o.init) << R"({"theta": [0.5, -1.0]})";
  r = autobatch::sample(o);
  REQUIRE_FALSE(r);
  CHECK(r.rendered().find("theta must have 3 values, or 2 rows of 3") != std::string::npos);
  o.init = "0.5";
  CHECK(autobatch::sample(o));
}

TEST_CASE("sample: a model or data that does not fit is a clear error") {
  ab_test::TempDir dir("ab_sample");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name)) << text;
    return (dir / name);
  };
  struct Bad {
    std::string model, data, message;
  };
  const std::string data = write("d.json", R"({"y": [1.0, 2.0], "other": 3})");
  const Bad bad[] = {
      {"func f(theta: f64[2], y) -> f64 {\n  return 0.0\n}\n", data, "defines func log_density"},
      {"func log_density(theta, y) -> f64 {\n  return sum(theta)\n}\n", data,
       "must be annotated with its size"},
      {"func log_density(theta: f64[2], z) -> f64 {\n  return sum(theta * z)\n}\n", data,
       "has no 'z', which log_density takes"},
      {"func log_density(theta: f64[2], y) -> f64 {\n  return sum(theta * y)\n}\n",
       write("bad.json", "{\"y\": [1.0, \"a\"]}"), "parameter 'y': y[1] is the string \"a\""},
      {"func log_density(theta: f64[2], y) -> f64 {\n  return sum(theta * y)\n}\n",
       write("notjson.json", "{\"y\": [1.0,"), "notjson.json:1:12: invalid JSON"},
      {"func log_density(theta: f64[2], y) -> f64 {\n  return sum(theta * y)\n}\n",
       write("ragged.json", "{\"y\": [[1.0], [2.0, 3.0]]}"),
       "y[1] has 2 elements, expected 1 (ragged nesting)"},
      {"func log_density(theta: f64[2], y: i64[2]) -> f64 {\n  return sum(theta) * 1.0\n}\n",
       write("halves.json", "{\"y\": [1, 0.5]}"), "element y[1]: 0.5 is not an integer"},
      {"func log_density(theta: f64[2], y) -> f64 {\n  return sum(theta * y)\n}\n"
       "func constrain(theta: f64[2], y) -> (theta: f64[2]) {\n  return theta\n}\n",
       data, "takes a name the sampler's outputs use"},
      {"func log_density(theta: f64[2], y) -> f64 {\n  k = normal(3)\n  return sum(theta * y) * k\n"
       "}\n",
       data, "draws random numbers"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.model);
    autobatch::SampleOptions o;
    o.model = write("m.ab", b.model);
    o.data = b.data;
    o.warmup = 10;
    o.samples = 10;
    auto r = autobatch::sample(o);
    REQUIRE_FALSE(r);
    CAPTURE(r.rendered());
    CHECK(r.rendered().find(b.message) != std::string::npos);
  }

  // A runtime error of the model (an index out of range for some draws): a
  // diagnostic at the model's line, and the CLI's exit 1 with nothing on stdout.
  autobatch::SampleOptions o;
  o.model = write("index.ab",
                  "func log_density(theta: f64[2], y) -> f64 {\n"
                  "  i = cast(floor(theta[0] * 10.0), dtype=i64)\n"
                  "  return -0.5 * sum(theta * theta) + y[i]\n}\n");
  o.data = data;
  o.seed = 3;
  auto r = autobatch::sample(o);
  REQUIRE_FALSE(r);
  REQUIRE(r.diagnostics().size() == 1);
  CHECK(r.diagnostics()[0].line == 3);
  CHECK(r.rendered().find("runtime error: index") != std::string::npos);
  auto p = ab_test::run_binary(dir.path, {"sample", o.model, "--data", data, "--seed", "3"},
                               std::nullopt, 60);
  CHECK(p.code == 1);
  CHECK(p.out.empty());
  CHECK(p.err.find("index.ab:3:") != std::string::npos);
}

TEST_CASE("autobatch sample: the table, the files, and exit 2 on bad flags") {
  ab_test::TempDir dir("ab_sample_cli");
  const std::string model = (kModels / "eight_schools.ab").string();
  const std::string data = (kModels / "eight_schools.data.json").string();
  auto p = ab_test::run_binary(
      dir.path, {"sample", model, "--data", data, "--seed", "3", "--chains", "2", "--warmup", "300",
                 "--samples", "200", "--output", (dir / "out") + "/"},
      std::nullopt, 120);
  CAPTURE(p.err);
  REQUIRE(p.code == 0);
  CHECK(p.out.find("ESS_bulk") != std::string::npos);
  CHECK(p.out.find("\ntau ") != std::string::npos);
  CHECK(p.out.find("step sizes:") != std::string::npos);
  CHECK(p.out.find("divergent transitions:") != std::string::npos);
  for (const char* f :
       {"theta.npy", "mu.npy", "tau.npy", "effect.npy", "lp__.npy", "accept_stat__.npy",
        "treedepth__.npy", "n_leapfrog__.npy", "divergent__.npy", "energy__.npy",
        "adaptation/step_size.npy", "adaptation/inv_metric.npy"})
    CHECK_MESSAGE(fs::exists((dir / "out") + "/" + f), f);
  // The files summarize as the command did, one file or the whole folder
  // (the adaptation's results, which are not draws, are in a folder of their own).
  auto s = ab_test::run_binary(dir.path, {"summary", (dir / "out") + "/theta.npy"},
                               std::nullopt, 60);
  CHECK(s.code == 0);
  CHECK(s.out.find("2 chains of 200 draws") != std::string::npos);
  auto all = ab_test::run_binary(dir.path, {"summary", (dir / "out") + "/"}, std::nullopt, 60);
  CAPTURE(all.err);
  CHECK(all.code == 0);
  CHECK(all.out.find("\ntau ") != std::string::npos);
  CHECK(all.out.find("lp__") != std::string::npos);

  auto bad = ab_test::run_binary(dir.path, {"sample", model, "--data", data, "--chains", "0"},
                                 std::nullopt, 60);
  CHECK(bad.code == 2);
  auto csv = ab_test::run_binary(
      dir.path, {"sample", model, "--data", data, "--csv", (dir / "csv")}, std::nullopt, 60);
  CHECK(csv.code == 2);
  CHECK(csv.out.empty());
  CHECK(csv.err.find("give a folder, ending in '/'") != std::string::npos);
  auto missing = ab_test::run_binary(dir.path, {"sample", model}, std::nullopt, 60);
  CHECK(missing.code == 2);
  CHECK(missing.err.find("give --data DATA.json") != std::string::npos);
  // One .npy file cannot hold the draws and the statistics: refused before sampling.
  auto npy = ab_test::run_binary(
      dir.path, {"sample", model, "--data", data, "--output", (dir / "draws.npy")}, std::nullopt,
      60);
  CHECK(npy.code == 2);
  CHECK(npy.out.empty());
  CHECK(npy.err.find("give DIR/ for one .npy file each") != std::string::npos);
  auto printed = ab_test::run_binary(dir.path, {"sample", model, "--data", data, "--print-program"},
                                     std::nullopt, 60);
  CHECK(printed.code == 0);
  CHECK(printed.out.find("import nuts") != std::string::npos);
  CHECK(printed.out.find("value_and_grad(log_density") != std::string::npos);
}

namespace {

// gaussian_dense's exact covariance, from its data file ("cov").
std::vector<std::vector<double>> dense_covariance() {
  std::ifstream f(kModels / "gaussian_dense.data.json");
  return nlohmann::json::parse(f).at("cov").get<std::vector<std::vector<double>>>();
}

double mean_leapfrogs(const autobatch::SampleResult& r) {
  for (const auto& [name, a] : r.stats)
    if (name == "n_leapfrog__") {
      double s = 0;
      for (int64_t i = 0; i < a.num_elements(); ++i) s += a.as<double>()[i];
      return s / static_cast<double>(a.num_elements());
    }
  return -1;
}

}  // namespace

// ---- declared parameters (docs/sampling.md, "Declared parameters") ---------

namespace {

// The transforms' tests run many small programs once each: interpreted, so
// that no native code is left compiling in the background when the process
// ends (a test process that exits during such a compile can crash inside
// LLVM; unit_tests -tc="dists*" alone shows it on main too).
autobatch::RunOptions interpreted() {
  autobatch::RunOptions o;
  o.jit = false;
  return o;
}

// log |det A| of a square matrix (row-major), by elimination with partial pivoting.
double log_abs_det(std::vector<double> a, int n) {
  double out = 0;
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(a[r * n + c]) > std::abs(a[p * n + c])) p = r;
    if (a[p * n + c] == 0) return -INFINITY;
    for (int k = 0; k < n; ++k) std::swap(a[c * n + k], a[p * n + k]);
    out += std::log(std::abs(a[c * n + c]));
    for (int r = c + 1; r < n; ++r) {
      double f = a[r * n + c] / a[c * n + c];
      for (int k = c; k < n; ++k) a[r * n + k] -= f * a[c * n + k];
    }
  }
  return out;
}

// A declared model's summary rows against known moments: each mean within 4
// MCSE, each sd within `sd_tol` (relative), R-hat below 1.01.
void check_moments(const autobatch::SampleResult& r, const std::map<std::string, Moment>& ref,
                   double sd_tol = 0.1) {
  std::map<std::string, const autobatch::SummaryRow*> rows;
  for (const auto& row : r.summary.rows) rows[row.name] = &row;
  for (const auto& entry : ref) {
    // (not a structured binding: clang 15 cannot capture one in CAPTURE's lambda)
    const std::string& name = entry.first;
    const Moment& m = entry.second;
    CAPTURE(name);
    REQUIRE(rows.count(name));
    const autobatch::SummaryRow& row = *rows[name];
    CAPTURE(row.mean);
    CAPTURE(row.mcse);
    CAPTURE(row.sd);
    CAPTURE(m.mean);
    CAPTURE(m.sd);
    CHECK(std::abs(row.mean - m.mean) <= 4 * row.mcse);
    CHECK(std::abs(row.sd / m.sd - 1) <= sd_tol);
    CHECK(row.rhat < 1.01);
  }
}

const autobatch::Array& draws_of(const autobatch::SampleResult& r, const std::string& name) {
  for (const auto& [n, a] : r.draws)
    if (n == name) return a;
  FAIL("no draws named " << name);
  return r.draws[0].second;
}

}  // namespace

TEST_CASE("sample: --metric dense recovers a strongly correlated Gaussian and its covariance") {
  const auto cov = dense_covariance();
  const double mu[3] = {1.0, -2.0, 0.5};
  std::map<std::string, Moment> exact;
  for (int i = 0; i < 3; ++i)
    exact["theta[" + std::to_string(i) + "]"] = {mu[i], std::sqrt(cov[i][i])};
  auto o = options("gaussian_dense");
  o.metric = autobatch::SampleMetric::Dense;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  CHECK(r->driver.find("nuts_dense_warmup(") != std::string::npos);
  CHECK(r->driver.find("nuts_dense_transition(") != std::string::npos);
  check_posterior(*r, exact);
  // Each chain's adapted inverse metric is the posterior covariance: every
  // element within 30% of the scale sqrt(Sigma_ii Sigma_jj) (the last window
  // holds 500 draws), and exactly symmetric.
  REQUIRE(r->inv_metric.shape() == std::vector<int64_t>{4, 3, 3});
  const double* m = r->inv_metric.as<double>();
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 3; ++j) {
        CAPTURE(c);
        CAPTURE(i);
        CAPTURE(j);
        const double v = m[(c * 3 + i) * 3 + j];
        CAPTURE(v);
        CHECK(std::abs(v - cov[i][j]) <= 0.3 * std::sqrt(cov[i][i] * cov[j][j]));
        CHECK(v == m[(c * 3 + j) * 3 + i]);
      }
  // The draws' correlation of theta[0] and theta[1] is the posterior's, 0.99.
  const double* th = r->draws[0].second.as<double>();
  const int64_t n = r->draws[0].second.num_elements() / 3;
  double s0 = 0, s1 = 0, s00 = 0, s11 = 0, s01 = 0;
  for (int64_t k = 0; k < n; ++k) {
    s0 += th[3 * k];
    s1 += th[3 * k + 1];
  }
  s0 /= static_cast<double>(n);
  s1 /= static_cast<double>(n);
  for (int64_t k = 0; k < n; ++k) {
    const double a = th[3 * k] - s0, b = th[3 * k + 1] - s1;
    s00 += a * a;
    s11 += b * b;
    s01 += a * b;
  }
  CHECK(std::abs(s01 / std::sqrt(s00 * s11) - 0.99) < 0.005);

  // The diagonal metric takes out the scales but not the correlations: its
  // trajectories are several times longer (docs/sampling.md gives the figures).
  o.metric = autobatch::SampleMetric::Diag;
  auto d = autobatch::sample(o);
  REQUIRE_MESSAGE(d, d.rendered());
  CHECK(d->inv_metric.shape() == std::vector<int64_t>{4, 3});
  const double dense_steps = mean_leapfrogs(*r), diag_steps = mean_leapfrogs(*d);
  CAPTURE(dense_steps);
  CAPTURE(diag_steps);
  CHECK(dense_steps > 0);
  CHECK(3 * dense_steps < diag_steps);
}

TEST_CASE("sample: --metric dense on an isotropic Gaussian: the diagonal metric's posterior") {
  ab_test::TempDir dir("ab_sample_isotropic");
  autobatch::SampleOptions o;
  o.model = dir / "iso.ab";
  std::ofstream(o.model) << "func log_density(theta: f64[4]) -> f64 {\n"
                            "  return -0.5 * dot(theta, theta)\n}\n";
  o.seed = 8;
  o.warmup = 500;
  o.samples = 500;
  o.metric = autobatch::SampleMetric::Dense;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  o.metric = autobatch::SampleMetric::Diag;
  auto d = autobatch::sample(o);
  REQUIRE_MESSAGE(d, d.rendered());
  std::map<std::string, Moment> exact;
  for (int i = 0; i < 4; ++i) exact["theta[" + std::to_string(i) + "]"] = {0.0, 1.0};
  check_posterior(*r, exact);
  check_posterior(*d, exact);
  for (size_t k = 0; k < 4; ++k) {
    const auto& a = r->summary.rows[k];
    const auto& b = d->summary.rows[k];
    CAPTURE(a.name);
    CHECK(std::abs(a.mean - b.mean) <= 4 * std::hypot(a.mcse, b.mcse));
  }
  // The adapted dense metric is near the identity: the off-diagonal terms
  // near 0, the diagonal near the diagonal metric's 1.
  REQUIRE(r->inv_metric.shape() == std::vector<int64_t>{4, 4, 4});
  const double* m = r->inv_metric.as<double>();
  for (int c = 0; c < 4; ++c)
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) {
        CAPTURE(c);
        CAPTURE(i);
        CAPTURE(j);
        CHECK(std::abs(m[(c * 4 + i) * 4 + j] - (i == j ? 1.0 : 0.0)) < 0.3);
      }
}

TEST_CASE("sample: --metric dense on eight schools matches its quadrature and the diagonal metric") {
  auto o = options("eight_schools");
  o.metric = autobatch::SampleMetric::Dense;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  check_posterior(*r, reference("eight_schools"));
  CHECK(r->inv_metric.shape() == std::vector<int64_t>{4, 10, 10});
  o.metric = autobatch::SampleMetric::Diag;
  auto d = autobatch::sample(o);
  REQUIRE_MESSAGE(d, d.rendered());
  // Every quantity's mean agrees between the two within 4 combined MCSE.
  REQUIRE(r->summary.rows.size() == d->summary.rows.size());
  for (size_t k = 0; k < r->summary.rows.size(); ++k) {
    const auto& a = r->summary.rows[k];
    const auto& b = d->summary.rows[k];
    CAPTURE(a.name);
    REQUIRE(a.name == b.name);
    CHECK(std::abs(a.mean - b.mean) <= 4 * std::hypot(a.mcse, b.mcse));
    CHECK(std::abs(a.sd / b.sd - 1) <= 0.1);
  }
}

TEST_CASE("sample: CmdStan's CSV files hold a dense metric as CmdStan writes it") {
  auto o = options("gaussian_dense");
  o.metric = autobatch::SampleMetric::Dense;
  o.chains = 2;
  o.warmup = 150;
  o.samples = 20;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  REQUIRE(r->inv_metric.shape() == std::vector<int64_t>{2, 3, 3});
  ab_test::TempDir dir("ab_sample_csv_dense");
  const std::string out = dir / "csv/";
  REQUIRE(autobatch::write_cmdstan_csv(*r, o, out));
  for (int64_t c = 0; c < 2; ++c) {
    CAPTURE(c);
    std::ifstream f(out + "output_" + std::to_string(c + 1) + ".csv");
    REQUIRE(f.good());
    std::vector<std::string> lines;
    for (std::string line; std::getline(f, line);) lines.push_back(line);
    size_t at = 0;
    bool metric = false;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (lines[i] == "#         metric = dense_e") metric = true;
      if (lines[i] == "# Elements of inverse mass matrix:") at = i;
    }
    CHECK(metric);
    REQUIRE(at > 0);
    REQUIRE(lines.size() > at + 4);
    // Three rows of three, every value as the result holds it.
    for (int64_t i = 0; i < 3; ++i) {
      std::string row = lines[at + 1 + static_cast<size_t>(i)];
      REQUIRE(row.rfind("# ", 0) == 0);
      std::stringstream ss(row.substr(2));
      std::vector<double> cells;
      for (std::string x; std::getline(ss, x, ',');) cells.push_back(std::stod(x));
      REQUIRE(cells.size() == 3);
      for (int64_t k = 0; k < 3; ++k)
        CHECK(cells[static_cast<size_t>(k)] == r->inv_metric.as<double>()[(c * 3 + i) * 3 + k]);
    }
    CHECK(lines[at + 4].rfind("# ", 0) != 0);  // the draws follow
  }
}

TEST_CASE("autobatch sample --metric: dense writes [chains, D, D], a bad value is exit 2") {
  ab_test::TempDir dir("ab_sample_metric");
  const std::string model = (kModels / "gaussian_dense.ab").string();
  const std::string data = (kModels / "gaussian_dense.data.json").string();
  auto p = ab_test::run_binary(
      dir.path, {"sample", model, "--data", data, "--seed", "3", "--chains", "2", "--warmup", "200",
                 "--samples", "100", "--metric", "dense", "--output", (dir / "out") + "/"},
      std::nullopt, 120);
  CAPTURE(p.err);
  REQUIRE(p.code == 0);
  CHECK(p.out.find("theta[2]") != std::string::npos);
  std::ifstream f((dir / "out") + "/adaptation/inv_metric.npy", std::ios::binary);
  std::string head(128, '\0');
  f.read(head.data(), 128);
  CHECK(head.find("'shape': (2, 3, 3)") != std::string::npos);

  auto printed = ab_test::run_binary(
      dir.path, {"sample", model, "--data", data, "--metric", "dense", "--print-program"},
      std::nullopt, 60);
  CHECK(printed.code == 0);
  CHECK(printed.out.find("p_factor = nuts_dense_momentum_factor(inv_metric)") != std::string::npos);

  for (const char* v : {"dens", "unit", ""}) {
    CAPTURE(v);
    auto bad = ab_test::run_binary(dir.path, {"sample", model, "--data", data, "--metric", v},
                                   std::nullopt, 60);
    CHECK(bad.code == 2);
    CHECK(bad.out.empty());
    CAPTURE(bad.err);
    CHECK(bad.err.find("--metric") != std::string::npos);
  }
}

TEST_CASE("transforms: each log-Jacobian is log |det J| by finite differences") {
  // Each transform of lib/transforms.ab at a point y, with the free
  // coordinates of its value (those the others are determined by: a
  // simplex's first K-1, a correlation's below the diagonal, a covariance's
  // lower triangle): its log-Jacobian must be log |det d free / d y|.
  struct Case {
    const char* call;
    int n;
    const char* free;
  };
  const Case cases[] = {
      {"positive(y)", 3, "v"},
      {"lower_bound(y, -1.5)", 2, "v"},
      {"upper_bound(y, 2.0)", 2, "v"},
      {"bounded(y, -1.0, 4.0)", 3, "v"},
      {"unit_interval(y)", 2, "v"},
      {"positive_softplus(y)", 2, "v"},
      {"ordered(y)", 4, "v"},
      {"positive_ordered(y)", 3, "v"},
      {"simplex(y, zeros(shape=[2]))", 1, "v[:1]"},
      {"simplex(y, zeros(shape=[4]))", 3, "v[:3]"},
      {"cholesky_corr(y, zeros(shape=[2, 2]))", 1, "[v[1][0]]"},
      {"cholesky_corr(y, zeros(shape=[3, 3]))", 3, "[v[1][0], v[2][0], v[2][1]]"},
      {"cholesky_corr(y, zeros(shape=[4, 4]))", 6,
       "[v[1][0], v[2][0], v[2][1], v[3][0], v[3][1], v[3][2]]"},
      {"corr_matrix(y, zeros(shape=[3, 3]))", 3, "[v[1][0], v[2][0], v[2][1]]"},
      {"corr_matrix(y, zeros(shape=[4, 4]))", 6,
       "[v[1][0], v[2][0], v[2][1], v[3][0], v[3][1], v[3][2]]"},
      {"cov_matrix(y, zeros(shape=[2, 2]))", 3, "[v[0][0], v[1][0], v[1][1]]"},
      {"cov_matrix(y, zeros(shape=[3, 3]))", 6,
       "[v[0][0], v[1][0], v[1][1], v[2][0], v[2][1], v[2][2]]"},
  };
  for (const Case& c : cases) {
    const std::string call = c.call;
    CAPTURE(call);
    const int n = c.n;
    std::string text = "import transforms\nentry func f(y: f64[" + std::to_string(n) +
                       "]) {\n  v, lj = " + c.call + "\n  return " + c.free + ", lj\n}\n";
    auto p = autobatch::compile(text);
    REQUIRE_MESSAGE(p, p.rendered());
    // Row 0: y; rows 1 + 2k and 2 + 2k: y -+ h in coordinate k.
    const double h = 1e-5;
    std::vector<double> y(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) y[k] = 0.7 * std::sin(1.3 * k + 0.4) - 0.2 * k + 0.1;
    std::vector<double> in;
    for (int row = 0; row < 2 * n + 1; ++row) {
      std::vector<double> z = y;
      if (row > 0) z[(row - 1) / 2] += (row % 2 ? -h : h);
      in.insert(in.end(), z.begin(), z.end());
    }
    auto run = p->run({autobatch::ArrayView::of(in.data(), 2 * n + 1, {n})}, interpreted());
    REQUIRE_MESSAGE(run.ok(), run.rendered());
    const double* v = run.outputs[0].as<double>();
    REQUIRE(run.outputs[0].num_elements() == (2 * n + 1) * n);
    std::vector<double> J(static_cast<size_t>(n * n));
    for (int i = 0; i < n; ++i)
      for (int k = 0; k < n; ++k)
        J[i * n + k] = (v[(2 + 2 * k) * n + i] - v[(1 + 2 * k) * n + i]) / (2 * h);
    const double lj = run.outputs[1].as<double>()[0];
    CHECK(std::abs(lj - log_abs_det(J, n)) < 1e-6);
  }
}

TEST_CASE("transforms: each inverse (NAME_free) gives x back, and NaN off the support") {
  struct Case {
    const char* call;
    int n;
    const char* free;
  };
  const Case cases[] = {
      {"positive(y)", 3, "positive_free(v)"},
      {"lower_bound(y, -1.5)", 2, "lower_bound_free(v, -1.5)"},
      {"upper_bound(y, 2.0)", 2, "upper_bound_free(v, 2.0)"},
      {"bounded(y, -1.0, 4.0)", 3, "bounded_free(v, -1.0, 4.0)"},
      {"unit_interval(y)", 2, "unit_interval_free(v)"},
      {"ordered(y)", 4, "ordered_free(v)"},
      {"positive_ordered(y)", 3, "positive_ordered_free(v)"},
      {"simplex(y, zeros(shape=[4]))", 3, "simplex_free(v, zeros(shape=[3]))"},
      {"cholesky_corr(y, zeros(shape=[4, 4]))", 6, "cholesky_corr_free(v, zeros(shape=[6]))"},
      {"corr_matrix(y, zeros(shape=[3, 3]))", 3, "corr_matrix_free(v, zeros(shape=[3]))"},
      {"corr_matrix(y, zeros(shape=[4, 4]))", 6, "corr_matrix_free(v, zeros(shape=[6]))"},
      {"cov_matrix(y, zeros(shape=[3, 3]))", 6, "cov_matrix_free(v, zeros(shape=[6]))"},
  };
  for (const Case& c : cases) {
    const std::string call = c.call;
    CAPTURE(call);
    const int n = c.n;
    std::string text = "import transforms\nentry func f(y: f64[" + std::to_string(n) +
                       "]) {\n  v, lj = " + c.call + "\n  return " + c.free + "\n}\n";
    auto p = autobatch::compile(text);
    REQUIRE_MESSAGE(p, p.rendered());
    std::vector<double> y(static_cast<size_t>(n));
    for (int k = 0; k < n; ++k) y[k] = 0.7 * std::sin(1.3 * k + 0.4) - 0.2 * k + 0.1;
    auto run = p->run({autobatch::ArrayView::of(y.data(), 1, {n})}, interpreted());
    REQUIRE_MESSAGE(run.ok(), run.rendered());
    for (int k = 0; k < n; ++k) CHECK(std::abs(run.outputs[0].as<double>()[k] - y[k]) < 1e-9);
  }
  // Values off the support: not finite.
  const char* off[] = {
      "positive_free(-1.0)",
      "lower_bound_free(0.5, 1.0)",
      "bounded_free(1.5, 0.0, 1.0)",
      "ordered_free([1.0, 0.5])",
      "simplex_free([0.5, 0.6, -0.1], zeros(shape=[2]))",
      "simplex_free([0.5, 0.6, 0.1], zeros(shape=[2]))",
      "cholesky_corr_free([[1.0, 0.1], [0.0, 1.0]], zeros(shape=[1]))",
      "cholesky_corr_free([[1.0, 0.0], [0.6, 0.9]], zeros(shape=[1]))",
      "corr_matrix_free([[1.0, 2.0], [2.0, 1.0]], zeros(shape=[1]))",
      "corr_matrix_free([[2.0, 0.0], [0.0, 1.0]], zeros(shape=[1]))",
      "corr_matrix_free([[1.0, 0.1], [0.2, 1.0]], zeros(shape=[1]))",
      "cov_matrix_free([[1.0, 0.5], [0.0, 1.0]], zeros(shape=[3]))",
      "cov_matrix_free([[1.0, 2.0], [2.0, 1.0]], zeros(shape=[3]))",
  };
  for (const char* e : off) {
    const std::string expr = e;
    CAPTURE(expr);
    auto p = autobatch::compile("import transforms\nentry func f(z: f64) {\n  return sum(" + expr +
                                ") + z\n}\n");
    REQUIRE_MESSAGE(p, p.rendered());
    double z = 0;
    auto run = p->run({autobatch::ArrayView::of(&z, 1)}, interpreted());
    REQUIRE_MESSAGE(run.ok(), run.rendered());
    CHECK_FALSE(std::isfinite(run.outputs[0].as<double>()[0]));
  }
}

TEST_CASE("sample: --init gives declared parameters by name, on their support") {
  ab_test::TempDir dir("ab_sample_declared_init");
  auto o = options("eight_schools");
  o.model = (kModels / "eight_schools_declared.ab").string();
  o.chains = 2;
  o.init = dir / "init.json";
  auto theta_of = [&](const std::string& init) -> std::vector<double> {
    std::ofstream(o.init) << init;
    auto job = autobatch::prepare_sample(o);
    REQUIRE_MESSAGE(job, job.rendered());
    const auto& a = job->inputs.arrays[0];
    REQUIRE(a.shape() == std::vector<int64_t>{2, 10});
    CHECK(job->inputs.arrays[2].as<double>()[0] == 0.0);  // no random start
    return std::vector<double>(a.as<double>(), a.as<double>() + 20);
  };
  // One value for every chain: theta = (mu, log tau, eta).
  auto q = theta_of(R"({"mu": 1.5, "tau": 2.0, "eta": [0, 1, 2, 3, 4, 5, 6, 7]})");
  for (int c = 0; c < 2; ++c) {
    CHECK(q[c * 10] == 1.5);
    CHECK(std::abs(q[c * 10 + 1] - std::log(2.0)) < 1e-15);
    for (int k = 0; k < 8; ++k) CHECK(q[c * 10 + 2 + k] == k);
  }
  // One per chain, the chains first.
  q = theta_of(R"({"mu": [1.0, -1.0], "tau": [1.0, 3.0], "eta": [[0, 0, 0, 0, 0, 0, 0, 0],
                  [1, 1, 1, 1, 1, 1, 1, 1]]})");
  CHECK(q[0] == 1.0);
  CHECK(q[10] == -1.0);
  CHECK(q[1] == 0.0);
  CHECK(std::abs(q[11] - std::log(3.0)) < 1e-15);
  CHECK(q[19] == 1.0);
  // theta itself still works.
  q = theta_of(R"({"theta": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]})");
  CHECK(q[11] == 1.0);

  struct Bad {
    const char* init;
    const char* message;
  };
  const Bad bad[] = {
      {R"({"mu": 1.0, "tau": -2.0, "eta": [0, 0, 0, 0, 0, 0, 0, 0]})",
       "the value of 'tau' for chain 0 is not in its support (positive)"},
      {R"({"mu": 1.0, "tau": [1.0, 0.0], "eta": [0, 0, 0, 0, 0, 0, 0, 0]})",
       "the value of 'tau' for chain 1 is not in its support (positive)"},
      {R"({"mu": 1.0, "eta": [0, 0, 0, 0, 0, 0, 0, 0]})",
       "has no 'tau': give the value of every declared parameter (mu, tau, eta), or theta"},
      {R"({"mu": 1.0, "tau": [1.0, 2.0, 3.0], "eta": [0, 0, 0, 0, 0, 0, 0, 0]})",
       "'tau' must be f64, or 2 of them, one per chain"},
      {R"({"mu": 1.0, "tau": 1.0, "eta": [0, 0, 0], "zz": 1})",
       "has 'zz', which is not a declared parameter"},
      {R"({"mu": 1.0, "tau": 1.0, "eta": [0, 0, 0]})", "'eta' must be f64[8], or 2 of them"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.init);
    std::ofstream(o.init) << b.init;
    auto r = autobatch::prepare_sample(o);
    REQUIRE_FALSE(r);
    CAPTURE(r.rendered());
    CHECK(r.rendered().find(b.message) != std::string::npos);
  }

  // Every constraint's inverse through --init: the values come back as the
  // chains' start (no warm-up, so the draw is one transition from there; the
  // start itself is checked through theta).
  autobatch::SampleOptions d;
  d.model = dir / "all.ab";
  std::ofstream(d.model)
      << "func log_density(u: f64 bounded(lo, 2.0), s: f64[3] simplex, o: f64[2] ordered,\n"
         "                 L: f64[2, 2] cholesky_corr, C: f64[2, 2] corr_matrix,\n"
         "                 S: f64[2, 2] cov_matrix, lo) -> f64 {\n"
         "  return 0.0\n}\n";
  d.data = dir / "all.json";
  std::ofstream(d.data) << R"({"lo": -1})";
  d.init = dir / "all_init.json";
  std::ofstream(d.init) << R"({"u": 0.5, "s": [0.2, 0.3, 0.5], "o": [-1.0, 2.0],
      "L": [[1.0, 0.0], [0.6, 0.8]], "C": [[1.0, -0.5], [-0.5, 1.0]],
      "S": [[4.0, 1.0], [1.0, 2.0]]})";
  d.chains = 1;
  auto job = autobatch::prepare_sample(d);
  REQUIRE_MESSAGE(job, job.rendered());
  const double* x = job->inputs.arrays[0].as<double>();
  REQUIRE(job->inputs.arrays[0].shape() == std::vector<int64_t>{1, 10});
  CHECK(std::abs(x[0] - 0.0) < 1e-12);  // 0.5 is the middle of (-1, 2)
  // Stick-breaking: 0.2 = sigmoid(x - log 2); 0.3 / 0.8 = sigmoid(x).
  CHECK(std::abs(x[1] - (std::log(0.2 / 0.8) + std::log(2.0))) < 1e-12);
  CHECK(std::abs(x[2] - std::log(0.375 / 0.625)) < 1e-12);
  CHECK(x[3] == -1.0);
  CHECK(std::abs(x[4] - std::log(3.0)) < 1e-12);
  CHECK(std::abs(x[5] - std::atanh(0.6)) < 1e-12);
  CHECK(std::abs(x[6] - std::atanh(-0.5)) < 1e-12);
  // S = L L^T with L = [[2, 0], [0.5, sqrt(1.75)]].
  CHECK(std::abs(x[7] - std::log(2.0)) < 1e-12);
  CHECK(std::abs(x[8] - 0.5) < 1e-12);
  CHECK(std::abs(x[9] - 0.5 * std::log(1.75)) < 1e-12);
}

TEST_CASE("sample: declared parameters have their known distributions, on their support") {
  // Each parameter's density (or none) gives a known distribution on its
  // support, which the draws must match: a missing or wrong log-Jacobian
  // moves the moments.
  ab_test::TempDir dir("ab_sample_declared");
  autobatch::SampleOptions o;
  o.model = dir / "declared.ab";
  std::ofstream(o.model)
      << "import dists\n"
         "func log_density(lam: f64 positive, u: f64 bounded(0.0, 1.0), x: f64 lower(1.0),\n"
         "                 w: f64 upper(-2.0), s: f64[3] simplex, o: f64[2] ordered,\n"
         "                 po: f64[2] positive_ordered, L: f64[3, 3] cholesky_corr,\n"
         "                 C: f64[3, 3] corr_matrix, S: f64[2, 2] cov_matrix, m: f64[2, 2],\n"
         "                 b: f64 bounded(lo, 3.0), lo) -> f64 {\n"
         "  lp = exponential_lpdf(lam, 2.0) + exponential_lpdf(x - 1.0, 1.0)\n"
         "  lp += exponential_lpdf(-2.0 - w, 0.5) + normal_lpdf(o, 0.0, 1.0)\n"
         "  lp += exponential_lpdf(po, 1.0) + lkj_corr_cholesky_lpdf(L, 1.0)\n"
         "  # Wishart(5, I): log det S - trace(S) / 2\n"
         "  lp += log(S[0][0] * S[1][1] - S[1][0] * S[1][0]) - 0.5 * (S[0][0] + S[1][1])\n"
         "  return lp + normal_lpdf(m, 1.0, 2.0)\n"
         "}\n";
  o.data = dir / "declared.json";
  std::ofstream(o.data) << R"({"lo": 1})";
  o.seed = 11;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  // Unconstrained: 1 + 1 + 1 + 1 + 2 + 2 + 2 + 3 + 3 + 3 + 4 + 1.
  CHECK(r->draws[0].second.shape() == std::vector<int64_t>{4, 1000, 24});
  const double s3 = std::sqrt(2.0 / 36.0);  // Dirichlet(1, 1, 1)'s sd
  const double om = 1 / std::sqrt(M_PI);      // the larger of two normals' mean
  const double osd = std::sqrt(1 - 1 / M_PI);
  check_moments(*r, {{"lam", {0.5, 0.5}},
                     {"u", {0.5, std::sqrt(1.0 / 12)}},
                     {"x", {2.0, 1.0}},
                     {"w", {-4.0, 2.0}},
                     {"s[0]", {1.0 / 3, s3}},
                     {"s[1]", {1.0 / 3, s3}},
                     {"s[2]", {1.0 / 3, s3}},
                     {"o[0]", {-om, osd}},
                     {"o[1]", {om, osd}},
                     // The smaller of two Exp(1) is Exp(2); the larger adds an Exp(1).
                     {"po[0]", {0.5, 0.5}},
                     {"po[1]", {1.5, std::sqrt(1.25)}},
                     // LKJ(1) for K = 3: each correlation is Beta(3/2, 3/2) on (-1, 1).
                     {"L[1, 0]", {0.0, 0.5}},
                     {"L[2, 0]", {0.0, 0.5}},
                     {"C[1, 0]", {0.0, 0.5}},
                     {"C[2, 0]", {0.0, 0.5}},
                     {"C[2, 1]", {0.0, 0.5}},
                     {"S[0, 0]", {5.0, std::sqrt(10.0)}},
                     {"S[1, 0]", {0.0, std::sqrt(5.0)}},
                     {"S[1, 1]", {5.0, std::sqrt(10.0)}},
                     {"m[1, 1]", {1.0, 2.0}},
                     {"b", {2.0, std::sqrt(4.0 / 12)}}},
                0.12);
  CHECK(r->divergent <= 5);

  // Every draw on its support.
  const int64_t n = 4 * 1000;
  const double* lam = draws_of(*r, "lam").as<double>();
  const double* u = draws_of(*r, "u").as<double>();
  const double* s = draws_of(*r, "s").as<double>();
  const double* ord = draws_of(*r, "o").as<double>();
  const double* L = draws_of(*r, "L").as<double>();
  const double* C = draws_of(*r, "C").as<double>();
  const double* S = draws_of(*r, "S").as<double>();
  int64_t off = 0;
  for (int64_t i = 0; i < n; ++i) {
    off += !(lam[i] > 0) + !(u[i] > 0 && u[i] < 1);
    off += !(s[3 * i] >= 0 && s[3 * i + 1] >= 0 && s[3 * i + 2] >= 0 &&
             std::abs(s[3 * i] + s[3 * i + 1] + s[3 * i + 2] - 1) < 1e-12);
    off += !(ord[2 * i] < ord[2 * i + 1]);
    const double* l = L + 9 * i;
    off += !(l[1] == 0 && l[2] == 0 && l[5] == 0 &&
             std::abs(l[3] * l[3] + l[4] * l[4] - 1) < 1e-12);
    const double* c = C + 9 * i;
    off += !(std::abs(c[0] - 1) < 1e-12 && std::abs(c[4] - 1) < 1e-12 && c[1] == c[3]);
    const double* v = S + 4 * i;
    off += !(v[0] > 0 && v[1] == v[2] && v[0] * v[3] - v[1] * v[2] > 0);
  }
  CHECK(off == 0);
}

TEST_CASE("sample: a bound can be an expression of earlier parameters and data") {
  // Uniform on the triangle a, b > 0, a + b < 1 (Stan's `upper = 1 - a`): a
  // and b are each Beta(1, 2); c is 2 m - 1 plus an Exp(1), m integer data.
  ab_test::TempDir dir("ab_sample_bound_expr");
  autobatch::SampleOptions o;
  o.model = dir / "triangle.ab";
  std::ofstream(o.model)
      << "import dists\n"
         "func log_density(a: f64 unit_interval, b: f64 bounded(0.0, 1.0 - a),\n"
         "                 c: f64 lower(2 * m - 1), m) -> f64 {\n"
         "  return exponential_lpdf(c - cast(2 * m - 1, dtype=f64), 1.0)\n"
         "}\n";
  o.data = dir / "triangle.json";
  std::ofstream(o.data) << R"({"m": 2})";
  o.seed = 5;
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  CHECK(r->driver.find("b, j__b = bounded(q__[1], 0.0, cast((1.0 - a), dtype=f64))") !=
        std::string::npos);
  const double sd = std::sqrt(1.0 / 18);
  check_moments(*r, {{"a", {1.0 / 3, sd}}, {"b", {1.0 / 3, sd}}, {"c", {4.0, 1.0}}}, 0.12);
  const double* a = draws_of(*r, "a").as<double>();
  const double* b = draws_of(*r, "b").as<double>();
  const double* c = draws_of(*r, "c").as<double>();
  int64_t off = 0;
  for (int64_t i = 0; i < 4 * 1000; ++i)
    off += !(a[i] > 0 && b[i] > 0 && a[i] + b[i] < 1 && c[i] > 3);
  CHECK(off == 0);
}

TEST_CASE("sample: eight schools with declared parameters matches the hand-written model") {
  auto o = options("eight_schools");
  o.model = (kModels / "eight_schools_declared.ab").string();
  auto r = autobatch::sample(o);
  REQUIRE_MESSAGE(r, r.rendered());
  check_posterior(*r, reference("eight_schools"));
  // theta (unconstrained), the declared parameters, then constrain's quantity.
  REQUIRE(r->draws.size() == 5);
  CHECK(r->draws[0].first == "theta");
  CHECK(r->draws[0].second.shape() == std::vector<int64_t>{4, 1000, 10});
  CHECK(r->draws[1].first == "mu");
  CHECK(r->draws[2].first == "tau");
  CHECK(r->draws[3].first == "eta");
  CHECK(r->draws[3].second.shape() == std::vector<int64_t>{4, 1000, 8});
  CHECK(r->draws[4].first == "effect");
  // tau cannot leave its support: every draw is positive, and the density is
  // finite all along.
  const autobatch::Array& tau = r->draws[2].second;
  int64_t off = 0;
  for (int64_t i = 0; i < tau.num_elements(); ++i) off += !(tau.as<double>()[i] > 0);
  CHECK(off == 0);
  CHECK(r->warmup_nonfinite_total + r->nonfinite_total == 0);
  CHECK(r->driver.find("tau, j__tau = positive(q__[1])") != std::string::npos);
  CHECK(r->driver.find("value_and_grad(declared_log_density") != std::string::npos);
}

TEST_CASE("sample: a bad declaration is a clear error at its place") {
  ab_test::TempDir dir("ab_sample_declared_bad");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream((dir / name)) << text;
    return (dir / name);
  };
  struct Bad {
    std::string model, message;
  };
  const std::string data = write("d.json", R"({"y": [1.0, 2.0]})");
  const Bad bad[] = {
      {"func log_density(mu: f64, tau: f64 postive, y) -> f64 {\n  return mu\n}\n",
       "m.ab:1:36: error: unknown constraint 'postive' on parameter 'tau'"},
      {"func log_density(p: f64[3, 3] simplex, y) -> f64 {\n  return 0.0\n}\n",
       "m.ab:1:21: error: parameter 'p' is declared simplex, so its type must be f64[K], K >= 2"},
      {"func log_density(a: f64 bounded(2.0, 1.0), y) -> f64 {\n  return a\n}\n",
       "m.ab:1:25: error: parameter 'a' is declared bounded(2.0, 1.0): the lower bound must be "
       "below the upper"},
      {"func log_density(mu: f64, y, tau: f64 positive) -> f64 {\n  return mu\n}\n",
       "m.ab:1:39: error: 'tau' is declared positive but comes after the data argument 'y'"},
      {"func log_density(mu: f64 positive, y: f64[2]) -> f64 {\n  return mu\n}\n",
       "d.json has 'y', which log_density declares as a parameter"},
      {"func log_density(a: f64 lower(lo), y) -> f64 {\n  return a\n}\n",
       "m.ab:1:25: error: the bound 'lo' of 'a' is neither a number"},
      // Bounds that are expressions read only earlier parameters and data.
      {"func log_density(a: f64 bounded(0.0, 1.0 - z), y) -> f64 {\n  return a\n}\n",
       "m.ab:1:25: error: the bound '1.0 - z' of 'a' reads 'z', which is neither a parameter "
       "declared before it nor a data argument of log_density"},
      {"func log_density(a: f64 upper(exp(b)), b: f64, y) -> f64 {\n  return a\n}\n",
       "'b' is declared after it, and a bound may read only the parameters declared before"},
      {"func log_density(a: f64 lower(), y) -> f64 {\n  return a\n}\n",
       "expected a bound: a number, a name or an expression of them"},
      {"func log_density(a: f64[2, 0] positive, y) -> f64 {\n  return 0.0\n}\n",
       "m.ab:1:21: error: parameter 'a' has no elements (f64[2,0])"},
      {"func log_density(theta: f64 positive, y) -> f64 {\n  return theta\n}\n",
       "m.ab:1:18: error: parameter 'theta' takes a name the sampler's outputs use"},
      {"func log_density(mu: f64 positive, y) -> f64 {\n  return mu\n}\n"
       "func constrain(mu, y) -> (mu: f64) {\n  return mu\n}\n",
       "constrain's result 'mu' has the name of a declared parameter"},
      {"func log_density(mu: f64 positive, y) -> f64 {\n  return mu\n}\n"
       "func constrain(mu) -> f64 {\n  return mu\n}\n",
       "constrain takes the arguments of log_density (the declared parameters"},
  };
  for (const Bad& b : bad) {
    CAPTURE(b.model);
    autobatch::SampleOptions o;
    o.model = write("m.ab", b.model);
    o.data = data;
    o.warmup = 10;
    o.samples = 10;
    auto r = autobatch::sample(o);
    REQUIRE_FALSE(r);
    CAPTURE(r.rendered());
    CHECK(r.rendered().find(b.message) != std::string::npos);
  }
  // The CLI: exit 1, the message on stderr, nothing sampled.
  auto p = ab_test::run_binary(dir.path,
                               {"sample", write("m.ab", bad[0].model), "--data", data},
                               std::nullopt, 60);
  CHECK(p.code != 0);
  CHECK(p.out.empty());
  CHECK(p.err.find("unknown constraint 'postive'") != std::string::npos);
  // `check` finds it too, and shows a good declaration in the signature.
  auto c = ab_test::run_binary(dir.path, {"check", write("m.ab", bad[0].model)}, std::nullopt, 60);
  CHECK(c.code == 2);
  CHECK(c.err.find("m.ab:1:36: error: unknown constraint 'postive'") != std::string::npos);
  auto good = ab_test::run_binary(
      dir.path, {"check", (kModels / "eight_schools_declared.ab").string()}, std::nullopt, 60);
  CHECK(good.code == 0);
  CHECK(good.out.find(
            "func log_density(mu: f64, tau: f64 positive, eta: f64[8], y: ?, sigma: ?)") !=
        std::string::npos);
}
