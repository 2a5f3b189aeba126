// The convergence summary through the public API (autobatch::summarize) and
// the CLI (`autobatch summary`): rows and their names, --skip, the warnings,
// the JSON, and every kind of bad input with its message and exit status 2.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>

#include "autobatch/autobatch.h"
#include "cli_harness.h"
#include "temp_dir.h"

namespace {

using ab_test::Proc;

Proc cli(const std::vector<std::string>& args) {
  return ab_test::run_binary(AUTOBATCH_SOURCE_DIR, args, std::nullopt, 60);
}

// `chains` independent AR(1) chains of `draws` draws of f64[2], chain-major, the second
// element shifted by `shift` in the last chain.
std::vector<double> chains_of(int64_t chains, int64_t draws, double shift, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> z;
  std::vector<double> x(static_cast<size_t>(chains * draws * 2));
  for (int64_t c = 0; c < chains; ++c) {
    double a = z(g), b = z(g);
    for (int64_t i = 0; i < draws; ++i) {
      a = 0.5 * a + 0.866 * z(g);
      b = 0.5 * b + 0.866 * z(g);
      x[static_cast<size_t>((c * draws + i) * 2)] = a;
      x[static_cast<size_t>((c * draws + i) * 2 + 1)] = b + (c == chains - 1 ? shift : 0.0);
    }
  }
  return x;
}

}  // namespace

TEST_CASE("summary: one row per element, named as the language indexes; skip leaves warm-up out") {
  const auto x = chains_of(4, 1000, 0.0, 3);
  autobatch::ArrayView v{autobatch::DType::F64, {4, 1000, 2}, x.data()};
  auto s = autobatch::summarize({{"theta", v}});
  REQUIRE(s.ok());
  CHECK(s->chains == 4);
  CHECK(s->draws == 1000);
  REQUIRE(s->rows.size() == 2);
  CHECK(s->rows[0].name == "theta[0]");
  CHECK(s->rows[1].name == "theta[1]");
  for (const auto& r : s->rows) {
    CHECK(r.rhat < 1.01);
    CHECK(r.ess_bulk > 400);
    CHECK(std::fabs(r.mean) < 4 * r.mcse);
    CHECK(r.q5 < r.q50);
    CHECK(r.q50 < r.q95);
  }
  CHECK(s->warnings.empty());
  // Skipping draws is summarizing the rest.
  auto t = autobatch::summarize({{"theta", v}}, 600);
  REQUIRE(t.ok());
  CHECK(t->draws == 400);
  std::vector<double> tail;
  for (int64_t c = 0; c < 4; ++c)
    tail.insert(tail.end(), x.begin() + (c * 1000 + 600) * 2, x.begin() + (c * 1000 + 1000) * 2);
  autobatch::ArrayView w{autobatch::DType::F64, {4, 400, 2}, tail.data()};
  auto u = autobatch::summarize({{"theta", w}});
  REQUIRE(u.ok());
  CHECK(t->rows[1].mean == u->rows[1].mean);
  CHECK(t->rows[1].rhat == u->rows[1].rhat);
  CHECK(t->rows[1].ess_tail == u->rows[1].ess_tail);
}

// Stan's names: counted from 1, no space after the comma (b[1,2]), as stansummary prints
// them; the same rows otherwise. The CLI's --names picks them.
TEST_CASE("summary: --names stan counts from 1, as Stan prints b[1,2]") {
  const auto x = chains_of(2, 100, 0.0, 5);  // [2, 100, 2], read as [2, 100, 1, 2] too
  autobatch::ArrayView v{autobatch::DType::F64, {2, 100, 1, 2}, x.data()};
  auto zero = autobatch::summarize({{"b", v}});
  auto stan = autobatch::summarize({{"b", v}}, 0, autobatch::ElementNames::Stan);
  REQUIRE(zero.ok());
  REQUIRE(stan.ok());
  REQUIRE(stan->rows.size() == 2);
  CHECK(zero->rows[1].name == "b[0, 1]");
  CHECK(stan->rows[0].name == "b[1,1]");
  CHECK(stan->rows[1].name == "b[1,2]");
  CHECK(stan->rows[1].mean == zero->rows[1].mean);
  ab_test::TempDir dir("ab_summary_names");
  autobatch::ArrayView flat{autobatch::DType::F64, {2, 100, 2}, x.data()};
  autobatch::RunResult r;
  r.batch = 2;
  r.outputs.push_back(autobatch::Array::copy_of(flat));
  r.names.push_back("theta");
  REQUIRE(autobatch::write_outputs(r, dir / "d/", false).ok());
  auto p = cli({"summary", dir / "d/", "--names", "stan"});
  CHECK(p.code == 0);
  CHECK(p.out.find("theta[1] ") != std::string::npos);
  CHECK(p.out.find("theta[2] ") != std::string::npos);
  CHECK(p.out.find("theta[0]") == std::string::npos);
  CHECK(cli({"summary", dir / "d/", "--names", "one"}).code == 2);
}

TEST_CASE("summary: a chain elsewhere and too few draws are warned about, naming the quantity") {
  const auto x = chains_of(4, 1000, 2.0, 5);
  autobatch::ArrayView v{autobatch::DType::F64, {4, 1000, 2}, x.data()};
  auto s = autobatch::summarize({{"beta", v}});
  REQUIRE(s.ok());
  CHECK(s->rows[0].rhat < 1.01);
  CHECK(s->rows[1].rhat > 1.1);
  REQUIRE(s->warnings.size() >= 2);
  CHECK(s->warnings[0].find("R-hat above 1.01 for 1 of 2 quantities (beta[1] 1.") == 0);
  bool bulk = false;
  for (const auto& w : s->warnings) bulk = bulk || w.find("bulk ESS below 400") == 0;
  CHECK(bulk);
  // Constant draws: R-hat and ESS undefined (NaN, null in JSON), and no warning for them.
  std::vector<int32_t> k(2 * 50, 7);
  autobatch::ArrayView c{autobatch::DType::I32, {2, 50}, k.data()};
  auto t = autobatch::summarize({{"k", c}});
  REQUIRE(t.ok());
  CHECK(t->rows[0].mean == 7.0);
  CHECK(std::isnan(t->rows[0].rhat));
  CHECK(t->warnings.empty());
  auto j = nlohmann::json::parse(t->json());
  CHECK(j["rows"][0]["name"] == "k");
  CHECK(j["rows"][0]["rhat"].is_null());
  CHECK(j["rows"][0]["mean"] == 7.0);
}

TEST_CASE("summary: bad draws are errors that say what is wrong") {
  std::vector<double> x(12, 0.0);
  auto flat = autobatch::summarize({{"a", {autobatch::DType::F64, {12}, x.data()}}});
  REQUIRE(!flat.ok());
  CHECK(flat.rendered().find("a: draws must be shaped [chains, draws, ...]; its shape is [12]") !=
        std::string::npos);
  auto mixed = autobatch::summarize({{"a", {autobatch::DType::F64, {2, 6}, x.data()}},
                                     {"b", {autobatch::DType::F64, {3, 4}, x.data()}}});
  REQUIRE(!mixed.ok());
  CHECK(mixed.rendered().find("b: 3 chains of 4 draws, where a has 2 chains of 6 draws") !=
        std::string::npos);
  auto skipped = autobatch::summarize({{"a", {autobatch::DType::F64, {2, 6}, x.data()}}}, 6);
  REQUIRE(!skipped.ok());
  CHECK(skipped.rendered().find("no draws left to summarize") != std::string::npos);
  CHECK(!autobatch::summarize({}).ok());
}

TEST_CASE("summary: the CLI reads .npy files and directories of them") {
  ab_test::TempDir dir;
  // mh_gauss writes draws.npy and accepted.npy ([chains] only: not draws).
  Proc run = cli({"run", "programs/mh_gauss.ab", "--inputs",
                  "programs/mh_gauss.json", "--output", (dir.path / "out").string() + "/"});
  INFO(run.err);
  REQUIRE(run.code == 0);
  const std::string draws = (dir.path / "out" / "draws.npy").string();
  Proc s = cli({"summary", draws});
  INFO(s.err);
  CHECK(s.code == 0);
  CHECK(s.out.find("4 chains of 200 draws\n") == 0);
  CHECK(s.out.find("ESS_bulk") != std::string::npos);
  CHECK(s.out.find("\ndraws[0] ") != std::string::npos);
  CHECK(s.out.find("\ndraws[1] ") != std::string::npos);
  // Four chains of 200 draws of a random-walk Metropolis are too few: the warnings say so.
  CHECK(s.err.find("autobatch: warning: bulk ESS below 400 for 2 of 2 quantities") !=
        std::string::npos);
  Proc j = cli({"summary", draws, "--json", "--skip", "100"});
  CHECK(j.code == 0);
  auto parsed = nlohmann::json::parse(j.out);
  CHECK(parsed["draws"] == 100);
  CHECK(parsed["rows"].size() == 2);
  // The directory also holds accepted.npy, shaped [4]: left out, with a
  // warning naming it; given alone, it is an error.
  Proc d = cli({"summary", (dir.path / "out").string() + "/"});
  CHECK(d.code == 0);
  CHECK(d.out.find("\ndraws[1] ") != std::string::npos);
  CHECK(d.err.find("warning: left out") != std::string::npos);
  CHECK(d.err.find("accepted.npy: draws must be shaped [chains, draws, ...]; its shape is [4]") !=
        std::string::npos);
  Proc a = cli({"summary", (dir.path / "out" / "accepted.npy").string()});
  CHECK(a.code == 2);
  CHECK(a.err.find("its shape is [4]") != std::string::npos);
  Proc missing = cli({"summary", (dir.path / "none.npy").string()});
  CHECK(missing.code == 2);
  CHECK(missing.err.find("none.npy") != std::string::npos);
  Proc text = cli({"summary", "README.md"});
  CHECK(text.code == 2);
  CHECK(text.err.find("README.md: expected FILE.npy or a directory of them (DIR/)") !=
        std::string::npos);
  Proc neg = cli({"summary", draws, "--skip", "-3"});
  CHECK(neg.code == 2);
  CHECK(neg.err.find("--skip must not be negative") != std::string::npos);
}
