// Trace formats (issue 13): the compact and Chrome formats, the summary's
// divergence and depths, threads numbered by input under --lanes,
// utilization not applicable to the reference VM, cancellation and progress,
// and the report's data read back from every format.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "fib_blocks.h"
#include "report/report.h"
#include "vm/trace.h"

namespace fs = std::filesystem;

namespace {

const char* kFib = kFibBlocks;

const char* kSpin = R"(func spin(n: i64) -> i64 {
entry:
  acc = 0
  done = le(n, 0)
  branch done, finish, loop
loop:
  t = mul(acc, 31)
  acc = add(t, n)
  n = sub(n, 1)
  done = le(n, 0)
  branch done, finish, loop
finish:
  return acc
}
)";

fs::path temp(const std::string& name) {
  return fs::temp_directory_path() / ("ab_trace_fmt_" + std::to_string(::getpid()) + "_" + name);
}

std::vector<std::string> lines_of(const fs::path& p) {
  std::ifstream in(p);
  std::vector<std::string> out;
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

nlohmann::json report_data(const fs::path& p) {
  std::string out, err;
  bool ok = ab::report::trace_data_json(p.string(), out, err);
  INFO(err);
  REQUIRE(ok);
  return nlohmann::json::parse(out);
}

autobatch::RunResult run_fib(const std::vector<int64_t>& n, autobatch::RunOptions o) {
  auto p = autobatch::compile(kFib);
  REQUIRE(p.ok());
  return p->run({autobatch::ArrayView::of(n.data(), static_cast<int64_t>(n.size()))}, o);
}

}  // namespace

TEST_CASE("trace summary: a group that splits, one that does not, depths") {
  ab::TraceSummary s;
  s.init(4, 3);
  uint32_t all[] = {0, 1, 2, 3}, lo[] = {0, 1}, hi[] = {2, 3};
  uint32_t d1[] = {1, 1, 1, 1}, d2[] = {2, 2};
  s.add({0, 0, all, 4, 4, -1, d1});       // block 0 on every thread ...
  s.add({1, 1, lo, 2, 4, -1, d2});        // ... splits: two go to block 1,
  s.add({2, 2, hi, 2, 4, 3, nullptr});    // two to block 2;
  s.add({3, 1, all, 4, 4, -1, nullptr});  // blocks 1 and 2 both go on to 1 whole
  s.finish();
  CHECK(s.steps == 4);
  CHECK(s.blocks[0].groups == 1);
  CHECK(s.blocks[0].splits == 1);
  CHECK(s.blocks[1].groups == 1);  // the last step's group was never seen again
  CHECK(s.blocks[1].splits == 0);
  CHECK(s.blocks[2].splits == 0);
  CHECK(s.blocks[1].thread_steps == 6);
  CHECK(s.blocks[0].utilization_sum == doctest::Approx(1.0));
  REQUIRE(s.depth_histogram.size() == 4);
  CHECK(s.depth_histogram[1] == 4);
  CHECK(s.depth_histogram[2] == 2);
  CHECK(s.depth_histogram[3] == 2);
  ab::TraceSummary back;
  REQUIRE(back.from_json(nlohmann::json::parse(s.to_json().dump())));
  CHECK(back.blocks[0].splits == 1);
  CHECK(back.depth_histogram == s.depth_histogram);
}

TEST_CASE("trace formats: jsonl, compact and chrome describe the same run") {
  std::vector<int64_t> n = {1, 2, 3, 4, 5, 6, 7, 8};
  int64_t steps = 0;
  std::vector<std::pair<std::string, int64_t>> per_block;
  std::map<std::string, nlohmann::json> data;
  for (std::string fmt : {"jsonl", "compact", "chrome"}) {
    CAPTURE(fmt);
    fs::path path = temp("fib." + fmt);
    autobatch::RunOptions o;
    o.trace_path = path.string();
    o.trace_format = fmt;
    o.stats = true;
    auto r = run_fib(n, o);
    REQUIRE(r.ok());
    steps = r.stats->steps;
    per_block = r.stats->block_executions;
    data[fmt] = report_data(path);
    if (fmt == "chrome") {
      // Valid JSON as a whole, one X event per step on its block's track.
      auto j = nlohmann::json::parse(slurp(path));
      int64_t slices = 0;
      std::set<int64_t> tracks;
      for (const auto& e : j["traceEvents"])
        if (e["ph"] == "X") {
          ++slices;
          tracks.insert(e["tid"].get<int64_t>());
          CHECK(e["args"]["active"].get<int64_t>() >= 1);
        }
      CHECK(slices == steps);
      size_t ran = 0;
      for (const auto& [name, k] : per_block) ran += k > 0;
      CHECK(tracks.size() == ran);  // one track per block that ran
    }
    if (fmt == "compact") {
      auto lines = lines_of(path);
      auto h = nlohmann::json::parse(lines.front());
      CHECK(h["format"] == "compact");
      CHECK(nlohmann::json::parse(lines.back()).contains("summary"));
    }
    fs::remove(path);
  }
  for (const auto& kv : data) {  // no structured binding: CAPTURE is a lambda (clang 15)
    const std::string& fmt = kv.first;
    const nlohmann::json& d = kv.second;
    CAPTURE(fmt);
    CHECK(d["stats"]["steps"] == steps);
    CHECK(d["stats"]["batch"] == 8);
    CHECK(d["stats"]["vm"] == "stack");
    double u = d["stats"]["mean_utilization"];
    CHECK(u > 0.0);
    CHECK(u <= 1.0);
    for (const auto& b : d["blocks"]) {
      auto it = std::find_if(per_block.begin(), per_block.end(),
                             [&](const auto& p) { return p.first == b["name"]; });
      REQUIRE(it != per_block.end());
      CHECK(b["executions"] == it->second);
    }
    int64_t total = 0;
    for (const auto& s : d["timeline"]["series"])
      for (const auto& v : s["values"]) total += std::llround(v.get<double>());
    CHECK(total == d["stats"]["thread_steps"]);
  }
  // Masks and depths: divergence and the depth histogram (chrome's from the
  // summary event it ends with).
  for (std::string fmt : {"jsonl", "compact", "chrome"}) {
    CAPTURE(fmt);
    const auto& d = data[fmt];
    CHECK(d["divergence_known"] == true);
    const auto& h = d["depth_histogram"];
    REQUIRE(h.is_array());
    CHECK(h.size() == 9);  // fib(8) at depth 1 calls down to fib(1) at depth 8
    CHECK(d["stats"]["peak_depth"] == 8);
    int64_t splits = 0;
    for (const auto& b : d["blocks"])
      if (b["name"] == "fib.entry") splits = b["splits"];
    CHECK(splits > 0);  // `branch small` sends threads both ways
  }
  CHECK(data["jsonl"]["blocks"] == data["compact"]["blocks"]);
  CHECK(data["jsonl"]["blocks"] == data["chrome"]["blocks"]);
}

TEST_CASE("trace formats: auto is jsonl for small batches, compact for large ones") {
  for (int64_t batch : {8, 200}) {
    std::vector<int64_t> n(static_cast<size_t>(batch));
    for (int64_t i = 0; i < batch; ++i) n[i] = i % 9;
    fs::path path = temp("auto");
    autobatch::RunOptions o;
    o.trace_path = path.string();
    REQUIRE(run_fib(n, o).ok());
    auto h = nlohmann::json::parse(lines_of(path).front());
    CHECK(h.contains("format") == (batch > autobatch::kAutoJsonlBatch));
    fs::remove(path);
  }
}

TEST_CASE("trace: under --lanes the masks name inputs, not lanes") {
  std::vector<int64_t> n = {3, 0, 5, 1, 2, 4, 6, 1, 0, 2};
  for (std::string vm : {"stack", "stackless"}) {
    CAPTURE(vm);
    fs::path path = temp("lanes.jsonl");
    autobatch::RunOptions o;
    o.vm = vm;
    o.lanes = 3;
    o.trace_path = path.string();
    o.trace_format = "jsonl";
    REQUIRE(run_fib(n, o).ok());
    auto lines = lines_of(path);
    auto h = nlohmann::json::parse(lines[0]);
    CHECK(h["batch"] == 10);
    std::vector<bool> seen(10, false);
    for (size_t i = 1; i < lines.size(); ++i) {
      auto j = nlohmann::json::parse(lines[i]);
      std::string mask = j["mask"];
      REQUIRE(mask.size() == 10);
      CHECK(j["active"].get<int64_t>() <= 3);
      CHECK(j["live"].get<int64_t>() <= 3);
      for (size_t t = 0; t < 10; ++t) seen[t] = seen[t] || mask[t] == '1';
    }
    CHECK(std::count(seen.begin(), seen.end(), true) == 10);
    fs::remove(path);
  }
}

TEST_CASE("stats: utilization is not applicable to the reference VM") {
  autobatch::RunOptions o;
  o.vm = "reference";
  o.stats = true;
  auto r = run_fib({3, 4, 5}, o);
  REQUIRE(r.ok());
  CHECK_FALSE(r.stats->utilization_applicable);
  CHECK(nlohmann::json::parse(r.stats->json())["mean_utilization"].is_null());
  o.vm = "stack";
  r = run_fib({3, 4, 5}, o);
  CHECK(r.stats->utilization_applicable);
  CHECK(r.stats->mean_utilization > 0.0);
}

TEST_CASE("run: a cancel flag stops every VM within a few steps; progress is reported") {
  auto p = autobatch::compile(kSpin);
  REQUIRE(p.ok());
  std::vector<int64_t> n = {1000000000000, 3, 4};
  for (std::string vm : {"stack", "stackless", "reference"}) {
    for (bool jit : {true, false}) {
      if (vm != "stack" && !jit) continue;
      CAPTURE(vm);
      CAPTURE(jit);
      std::atomic<bool> cancel{false};
      int64_t calls = 0, last_steps = 0;
      fs::path path = temp("cancelled.trace");
      autobatch::RunOptions o;
      o.vm = vm;
      o.jit = jit;
      o.trace_path = vm == "stackless" ? path.string() : "";
      o.cancel = &cancel;
      o.progress = [&](const autobatch::Progress& pr) {
        ++calls;
        CHECK(pr.steps >= last_steps);
        last_steps = pr.steps;
        CHECK(pr.threads == 3);
        if (pr.steps > 5000) cancel = true;
      };
      auto r = p->run({autobatch::ArrayView::of(n.data(), 3)}, o);
      CHECK(r.cancelled);
      REQUIRE(r.runtime_error);
      CHECK(r.runtime_error->message.find("interrupted after") == 0);
      CHECK(calls >= 5000 / 256);
      CHECK(last_steps <= 5000 + 2 * 256);
      CHECK(r.outputs.empty());
      CHECK_FALSE(fs::exists(path));  // a cancelled run's trace is deleted
    }
  }
}
