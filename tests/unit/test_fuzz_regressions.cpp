// Replays the fuzz targets' bodies (tests/fuzz/targets.h) without libFuzzer:
// every case under tests/fuzz/regressions/TARGET/ (inputs a fuzzer once
// crashed or hung on, kept after the fix), and the seeds the fuzzers start
// from (the programs, the diagnostic cases, the inputs files, the .npy
// seeds). Each must run to the end without a crash, an exception or a
// failed invariant; under tools/test this runs with ASan and UBSan.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "../fuzz/targets.h"

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = AUTOBATCH_SOURCE_DIR;

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Files directly in `dir` whose name ends in `suffix` ("" for all), sorted.
std::vector<fs::path> files_in(const fs::path& dir, const std::string& suffix = "") {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!e.is_regular_file() || name == "README.md") continue;
    if (name.size() >= suffix.size() &&
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

size_t replay(const std::vector<fs::path>& files,
              const std::function<void(std::string_view)>& body) {
  for (const auto& f : files) {
    INFO("replaying " << f.string());
    const std::string bytes = slurp(f);
    CHECK_NOTHROW(body(bytes));
  }
  return files.size();
}

std::vector<fs::path> program_seeds() {
  std::vector<fs::path> out;
  for (const char* dir :
       {"programs", "programs/lowered", "tests/golden/diag", "tests/golden/fmt"}) {
    auto more = files_in(kRoot / dir, ".ab");
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

}  // namespace

TEST_CASE("fuzz regressions: front_end (parse, print, verify, infer types)") {
  CHECK(replay(program_seeds(), ab::fuzz::front_end) > 40);
  replay(files_in(kRoot / "tests/fuzz/regressions/front_end"), ab::fuzz::front_end);
}

TEST_CASE("fuzz regressions: pipeline (compile and a bounded run)") {
  CHECK(replay(program_seeds(), ab::fuzz::pipeline) > 40);
  replay(files_in(kRoot / "tests/fuzz/regressions/pipeline"), ab::fuzz::pipeline);
}

TEST_CASE("fuzz regressions: json_inputs") {
  // The seeds as the fuzz run makes them: each inputs file behind each of
  // the four parameter-list selectors.
  size_t n = 0;
  for (const auto& f : files_in(kRoot / "programs", ".json")) {
    const std::string text = slurp(f);
    for (char pick = 0; pick < 4; ++pick) {
      INFO(f.string() << " with selector " << int(pick));
      CHECK_NOTHROW(ab::fuzz::json_inputs(std::string(1, pick) + text));
      ++n;
    }
  }
  CHECK(n > 40);
  replay(files_in(kRoot / "tests/fuzz/regressions/json_inputs"), ab::fuzz::json_inputs);
}

TEST_CASE("fuzz regressions: npy") {
  CHECK(replay(files_in(kRoot / "tests/fuzz/seeds/npy"), ab::fuzz::npy) >= 5);
  replay(files_in(kRoot / "tests/fuzz/regressions/npy"), ab::fuzz::npy);
}
