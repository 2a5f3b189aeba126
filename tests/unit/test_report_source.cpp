// The report in source terms (issue 25, items 7 and 8): every block carries
// the line and statement that made it, in the trace header, in --stats's
// "execution" and in every VM; block names agree across VMs; utilization
// under the default schedule means "lanes busy" as it does under min-pc; a
// Chrome trace records call depths and divergence.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "report/report.h"

namespace {

namespace fs = std::filesystem;

fs::path program_path(const std::string& name) {
  return fs::path(AUTOBATCH_SOURCE_DIR) / "programs" / name;
}

fs::path scratch(const std::string& name) {
  return fs::temp_directory_path() / ("ab_report_src_" + std::to_string(::getpid()) + "_" + name);
}

// The program of programs/NAME.ab run on programs/NAME.json (or `inputs`).
autobatch::RunResult run_example(const std::string& name, autobatch::RunOptions o,
                                 const std::string& inputs = "") {
  auto p = autobatch::compile_file(program_path(name + ".ab").string());
  REQUIRE(p.ok());
  auto in = p->load_inputs({inputs.empty() ? program_path(name + ".json").string() : inputs});
  REQUIRE(in.ok());
  return p->run(*in, o);
}

// The source line's text in programs/NAME.ab.
std::string line_of(const std::string& name, int line) {
  std::ifstream in(program_path(name + ".ab"));
  std::string l;
  for (int i = 0; i < line && std::getline(in, l); ++i) {
  }
  return l;
}

}  // namespace

TEST_CASE("report source: simpson's blocks carry their line and statement in every VM") {
  // Before: the trace and the stats named blocks `adapt.then.15` and
  // `adapt.endif.5.3` with no source line.
  std::map<std::string, std::map<std::string, autobatch::BlockExecution>> by_vm;
  for (std::string vm : {"stack", "stackless", "reference"}) {
    CAPTURE(vm);
    autobatch::RunOptions o;
    o.vm = vm;
    o.stats = true;
    auto r = run_example("simpson", o);
    REQUIRE(r.ok());
    REQUIRE(!r.execution.empty());
    for (const auto& e : r.execution) {
      CAPTURE(e.block);
      CHECK(e.line > 0);
      CHECK(!e.statement.empty());
      // The statement is that line's text, trimmed (a `func` line's
      // parameters shortened to `(...)`).
      CHECK(line_of("simpson", e.line).find(e.statement.substr(0, 10)) != std::string::npos);
      by_vm[vm][e.block] = e;
    }
    // The `if` that decides whether to recurse labels its arm and the block after it.
    bool then_seen = false;
    for (const auto& e : r.execution)
      if (e.block.rfind("adapt.then.", 0) == 0) {
        then_seen = true;
        CHECK(e.statement == "if depth <= 0 or abs(delta) <= 15.0 * tol");
      }
    CHECK(then_seen);
    // --stats's JSON says the same.
    auto j = nlohmann::json::parse(r.stats->json());
    for (const auto& [block, x] : j["execution"].items()) {
      CHECK(x["line"].get<int>() > 0);
      CHECK(x["statement"].is_string());
    }
  }
  // Block names agree: every stack-VM block is a block of the other VMs, or
  // one the lowering started after a call in it (`LABEL.N`), on the same line
  // when it is the same block.
  const auto& stack = by_vm["stack"];
  const auto& stackless = by_vm["stackless"];
  CHECK(by_vm["reference"].size() == stackless.size());
  for (const auto& entry : stack) {
    const std::string& name = entry.first;  // not a structured binding: CAPTURE is a lambda
    const auto& e = entry.second;
    CAPTURE(name);
    auto it = stackless.find(name);
    if (it != stackless.end()) {
      CHECK(it->second.line == e.line);
      continue;
    }
    size_t dot = name.rfind('.');
    REQUIRE(dot != std::string::npos);
    CHECK(std::regex_match(name.substr(dot + 1), std::regex("[0-9]+")));
    std::string base = name.substr(0, dot);
    bool known = stackless.count(base) || stack.count(base);
    CHECK(known);
  }
}

TEST_CASE("report source: the trace header and the report name each block's line") {
  for (std::string fmt : {"jsonl", "compact", "chrome"}) {
    CAPTURE(fmt);
    fs::path path = scratch("simpson." + fmt);
    autobatch::RunOptions o;
    o.trace_path = path.string();
    o.trace_format = fmt;
    REQUIRE(run_example("simpson", o).ok());
    std::string data, error;
    REQUIRE(ab::report::trace_data_json(path.string(), data, error));
    auto d = nlohmann::json::parse(data);
    CHECK(d["source"].get<std::string>().find("simpson.ab") != std::string::npos);
    int with_if = 0;
    for (const auto& b : d["blocks"]) {
      CAPTURE(b["name"].get<std::string>());
      CHECK(b["line"].get<int>() > 0);
      with_if += b["statement"] == "if depth <= 0 or abs(delta) <= 15.0 * tol";
    }
    CHECK(with_if >= 2);  // the `if`'s arm and the block after it
    // Call depths are recorded in every format (a Chrome trace too, before
    // "peak call depth: not recorded"); simpson's example recurses 9 deep.
    CHECK(d["stats"]["peak_depth"].is_number());
    CHECK(d["stats"]["peak_depth"].get<int>() >= 5);
    CHECK(d["divergence_known"] == true);
    if (fmt == "chrome") {
      // Each block's track is named with its line and statement.
      std::ifstream in(path);
      std::string text((std::istreambuf_iterator<char>(in)), {});
      CHECK(text.find("simpson.ab:24: if depth <= 0") != std::string::npos);
      CHECK(text.find("\"call depth\"") != std::string::npos);
    }
    fs::remove(path);
  }
}

TEST_CASE("report source: a loop that keeps its threads busy shows it under either schedule") {
  // Before: the random walk's loop showed 19-30% utilization under the
  // default schedule (threads that had left the loop counted as idle lanes)
  // and 0.85-0.99 under min-pc.
  std::string inputs = R"({"seed": [42], "bound": [)";
  for (int i = 0; i < 300; ++i) inputs += (i ? "," : "") + std::to_string(3 + i % 17);
  inputs += "]}";
  // (--jit off's interpreted loop runs a chunk until it drains without
  // refilling it, so its lanes do go idle: a lower figure is the truth there.)
  std::map<std::string, double> util;
  for (std::string schedule : {"persistent", "min-pc"}) {
    for (bool jit : {true, false}) {
      CAPTURE(schedule);
      CAPTURE(jit);
      autobatch::RunOptions o;
      o.schedule = schedule;
      o.jit = jit;
      o.stats = true;
      auto r = run_example("walk", o, inputs);
      REQUIRE(r.ok());
      double u = r.stats->mean_utilization;
      CHECK(u > 0.3);
      CHECK(u <= 1.0);
      if (jit) util[schedule] = u;
    }
  }
  CHECK(util["persistent"] > 0.9);
  CHECK(util["persistent"] >= util["min-pc"] - 0.05);
}

TEST_CASE("report source: a runtime error names the same block in every VM") {
  // Before: the stack VM said `block endif` where the other VMs said
  // `block endif.1` (it cut a front-end label at its own dot).
  const char* text =
      "func g(x: i64) -> i64 {\n"
      "  return x\n"
      "}\n"
      "\n"
      "entry func main(n: i64) -> i64 {\n"
      "  y = 0\n"
      "  if n > 0 {\n"
      "    y = g(n)\n"
      "  }\n"
      "  z = 10 / (y - 3)\n"  // n = 3: in the block after the `if`
      "  w = g(z)\n"
      "  return w + 10 / (w - 5)\n"  // n = 5: after a call, in the same source block
      "}\n";
  auto p = autobatch::compile(text);
  REQUIRE(p.ok());
  for (int64_t bad : {3, 5}) {
    std::vector<std::string> blocks;
    for (std::string vm : {"stack", "stackless", "reference"}) {
      CAPTURE(vm);
      CAPTURE(bad);
      std::vector<int64_t> n = {1, bad};
      autobatch::RunOptions o;
      o.vm = vm;
      auto r = p->run({autobatch::ArrayView::of(n.data(), 2)}, o);
      REQUIRE(r.runtime_error.has_value());
      CHECK(r.runtime_error->function == "main");
      CHECK(r.runtime_error->line == (bad == 3 ? 10 : 12));
      blocks.push_back(r.runtime_error->block);
    }
    CHECK(blocks[0].rfind("endif.", 0) == 0);
    CHECK(blocks[0] == blocks[1]);
    CHECK(blocks[1] == blocks[2]);
  }
}
