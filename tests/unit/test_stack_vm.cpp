// The stack VM against the reference interpreter, and its trace, statistics,
// refill lanes and runtime errors.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/inputs.h"
#include "parse/parser.h"
#include "passes/pipeline.h"
#include "passes/verify.h"
#include "vm/reference/reference.h"
#include "vm/stack/stack_vm.h"
#include "stack_harness.h"

using namespace ab;
namespace fs = std::filesystem;

namespace {

using Loaded = stack_harness::Prog;
using stack_harness::stack;

std::string header_entry(const Module& m) {
  const std::string& text = m.source->text();
  size_t at = text.find("# entry: ");
  if (at == std::string::npos) return m.funcs.front().name.name;
  return text.substr(at + 9, text.find('\n', at) - at - 9);
}

Loaded load(const std::string& text_or_path, const std::vector<std::string>& inputs,
            bool is_path = false) {
  Result<Module> m = is_path ? parse_file(text_or_path) : parse_text("t.ab", text_or_path);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  Diagnostics d(m->source);
  ab::verify(*m, d);
  REQUIRE_FALSE(d.has_errors());
  Loaded l{m.take(), {}, {}, ""};
  l.entry = header_entry(l.m);
  const Function* f = l.m.find_func(l.entry);
  REQUIRE(f);
  std::vector<ParamSpec> specs;
  for (const auto& p : f->params) specs.push_back({p.name.name, p.type});
  Result<InputSet> in = load_inputs(inputs, specs, std::nullopt);
  INFO(in.diags().render());
  REQUIRE(in.ok());
  l.inputs = in.take();
  for (const auto& a : l.inputs.values) l.types.push_back(Type{false, a.type, {}});
  return l;
}

RunResult reference(const Loaded& l, RunOptions opt = {}) {
  Diagnostics d;
  TypeInfo t = infer_types(l.m, l.entry, l.types, d);
  REQUIRE_FALSE(d.has_errors());
  return run_reference(l.m, t, l.entry, l.inputs.values, l.inputs.batch, opt);
}

// Exact equality; floats within `rel` (for shared-matrix GEMM rounding).
void same(const RunResult& a, const RunResult& b, double rel = 0) {
  REQUIRE_FALSE(a.error);
  REQUIRE_FALSE(b.error);
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const Array& x = a.outputs[i];
    const Array& y = b.outputs[i];
    REQUIRE(x.type == y.type);
    REQUIRE(x.byte_size() == y.byte_size());
    if (rel == 0 || x.type.dtype != DType::F64) {
      CHECK(std::memcmp(x.data.data(), y.data.data(), x.byte_size()) == 0);
      continue;
    }
    for (size_t k = 0; k < x.byte_size() / 8; ++k) {
      double u = x.as<double>()[k], v = y.as<double>()[k];
      CHECK(std::fabs(u - v) <= rel * std::max(1.0, std::fabs(v)));
    }
  }
}

}  // namespace

TEST_CASE("stack VM: every program gives the reference's outputs") {
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(AUTOBATCH_SOURCE_DIR) / "programs")) {
    if (e.path().extension() != ".ab") continue;
    fs::path json = e.path();
    json.replace_extension(".json");
    if (!fs::exists(json)) continue;
    INFO(e.path().string());
    Loaded l = load(e.path().string(), {json.string()}, true);
    // A matrix product on a shared matrix is one GEMM, which may round
    // differently from per-thread products (docs/language.md, "Reference semantics").
    bool gemm = l.m.source->text().find("matvec") != std::string::npos ||
                l.m.source->text().find("matmul") != std::string::npos;
    same(stack(l), reference(l), gemm ? 1e-12 : 0);
    ++n;
  }
  CHECK(n >= 19);
}

TEST_CASE("stack VM: the trace agrees with its active counts and with the statistics") {
  Loaded l = load(std::string(AUTOBATCH_SOURCE_DIR) + "/programs/fib.ab",
                  {R"({"n": [6, 7, 8, 7]})"}, true);
  fs::path path = fs::temp_directory_path() / "autobatch_trace_test.jsonl";
  TraceWriter trace(path.string(), MaskFormat::Bits);
  Stats stats;
  RunOptions opt;
  opt.trace = &trace;
  opt.stats = &stats;
  RunResult r = stack(l, opt);
  trace.close();
  REQUIRE_FALSE(r.error);
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  auto header = nlohmann::json::parse(line);
  CHECK(header["trace"] == "autobatch");
  CHECK(header["vm"] == "stack");
  CHECK(header["batch"] == 4);
  std::vector<std::string> blocks = header["blocks"];
  CHECK(blocks.front() == "fib.entry");
  int64_t steps = 0;
  std::map<std::string, int64_t> per_block;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    CHECK(j["step"] == steps);
    std::string mask = j["mask"];
    CHECK(mask.size() == 4);
    CHECK(std::count(mask.begin(), mask.end(), '1') == j["active"].get<int64_t>());
    CHECK(blocks.at(j["pc"].get<size_t>()) == j["block"].get<std::string>());
    ++per_block[j["block"]];
    ++steps;
  }
  CHECK(steps == stats.steps);
  CHECK(steps == r.steps);
  for (size_t b = 0; b < stats.block_names.size(); ++b)
    CHECK(per_block[stats.block_names[b]] == stats.block_executions[b]);
  // The same work as the reference: every primitive runs once per thread that reaches it.
  Stats ref_stats;
  RunOptions ropt;
  ropt.stats = &ref_stats;
  RunResult rr = reference(l, ropt);
  CHECK(ref_stats.lane_operations == stats.lane_operations);
  CHECK(stats.peak_stack_depth >= 7);
  fs::remove(path);
}

TEST_CASE("stack VM: refill lanes give the outputs of the plain run") {
  Loaded l = load(std::string(AUTOBATCH_SOURCE_DIR) + "/programs/collatz.ab",
                  {R"({"n": [1, 27, 97, 5, 871, 2, 6171, 3]})"}, true);
  RunResult plain = stack(l);
  for (int64_t lanes : {1, 2, 3, 7, 8, 100}) {
    RunOptions opt;
    opt.lanes = lanes;
    INFO(lanes);
    same(stack(l, opt), plain);
  }
}

// Without --lanes, threads whose own variables are large run on fewer lanes
// (Tuning::lane_bytes_budget), refilled as threads halt: the outputs are the
// plain run's, and the log says so. Scalar programs keep a lane per thread.
TEST_CASE("stack VM: large per-thread variables run on fewer lanes, with the plain run's outputs") {
  CHECK(stack_auto_lanes(100000, 8) == 100000);  // a few words per lane
  CHECK(stack_auto_lanes(1000, 1024) == 1000);    // all of it within the budget
  CHECK(stack_auto_lanes(8192, 8192) == 256);     // at least min_auto_lanes
  CHECK(stack_auto_lanes(8192, 1024) == 1024);    // budget / bytes, whole chunks
  CHECK(stack_auto_lanes(200, 1 << 20) == 200);   // never more lanes than threads
  // A recursion's small variables: their stacks grow with its depth.
  CHECK(stack_auto_lanes(100000, 128, true) == 8192);
  CHECK(stack_auto_lanes(4096, 128, true) == 4096);  // within the budget
  const int64_t n = 3000;
  std::string ks;
  for (int64_t i = 0; i < n; ++i) ks += (i ? ", " : "") + std::to_string((i * 37) % 50);
  Loaded l = load(R"(func f(k: i64) -> f64 {
  v = fill(1.0, shape=[64])
  i = 0
  while i < k {
    v = v * 0.5 + 1.0
    i = i + 1
  }
  return sum(v)
}
)",
                  {R"({"k": [)" + ks + "]}"});
  RunResult r = stack(l);
  REQUIRE_FALSE(r.error);
  CHECK(r.log.find("3000 threads on ") != std::string::npos);
  RunOptions plain;
  plain.lanes = n;  // one lane per thread, as asked
  RunResult p = stack(l, plain);
  CHECK(p.log.find("threads on") == std::string::npos);
  same(r, p);
  same(r, reference(l));
}

TEST_CASE("stack VM: a division guarded by a branch does not fail in threads that skip it") {
  Loaded l = load(
      "func f(a, b) {\ne:\n  nz = ne(b, 0)\n  branch nz, d, s\nd:\n  q = div(a, b)\n  return "
      "q\ns:\n  return 0\n}\n",
      {R"({"a": [7, 8, 9], "b": [2, 0, -4]})"});
  RunResult r = stack(l);
  REQUIRE_FALSE(r.error);
  CHECK(r.outputs[0].as<int64_t>()[0] == 3);
  CHECK(r.outputs[0].as<int64_t>()[1] == 0);
  CHECK(r.outputs[0].as<int64_t>()[2] == -3);
}

TEST_CASE("stack VM: division by zero names the thread, function and block") {
  Loaded l = load("func f(a, b) {\ne:\n  goto work\nwork:\n  q = div(a, b)\n  return q\n}\n",
                  {R"({"a": [1, 2, 3, 4, 5], "b": [1, 1, 0, 1, 1]})"});
  RunResult r = stack(l);
  REQUIRE(r.error);
  CHECK(r.error->thread == 2);
  CHECK(r.error->batch == 5);
  CHECK(r.error->function == "f");
  CHECK(r.error->block == "work");
  CHECK(r.error->loc.line == 5);
  CHECK(r.error->loc.col == 7);
  CHECK(r.error->message.find("division by zero") != std::string::npos);
}

TEST_CASE("stack VM: the stack bound and the step bound are runtime errors") {
  const char* down =
      "func d(n) {\ne:\n  z = le(n, 0)\n  branch z, b, r\nb:\n  return 0\nr:\n  m = sub(n, 1)\n  x "
      "= call d(m)\n  y = add(x, 1)\n  return y\n}\n";
  Loaded l = load(down, {R"({"n": [3, 100, 5]})"});
  RunOptions opt;
  opt.max_stack_depth = 50;
  RunResult r = stack(l, opt);
  REQUIRE(r.error);
  CHECK(r.error->thread == 1);
  CHECK(r.error->message.find("stack depth limit of 50") != std::string::npos);
  CHECK(r.error->message.find("'d'") != std::string::npos);
  RunOptions steps;
  steps.max_steps = 10;
  RunResult s = stack(l, steps);
  REQUIRE(s.error);
  CHECK(s.error->message.find("--max-steps 10 exceeded") != std::string::npos);
}

TEST_CASE("stack VM: recursion 100000 deep in one thread next to shallow ones") {
  Loaded l = load(
      "func d(n) {\ne:\n  z = le(n, 0)\n  branch z, b, r\nb:\n  return 0\nr:\n  m = sub(n, 1)\n  x "
      "= call d(m)\n  y = add(x, 1)\n  return y\n}\n",
      {R"({"n": [100000, 3, 0]})"});
  RunOptions opt;
  opt.max_stack_depth = 200000;
  RunResult r = stack(l, opt);
  REQUIRE_FALSE(r.error);
  CHECK(r.outputs[0].as<int64_t>()[0] == 100000);
  CHECK(r.outputs[0].as<int64_t>()[1] == 3);
}

TEST_CASE("stack VM: a batch-1 input is shared and broadcast") {
  Loaded l = load("func f(s, x) {\ne:\n  y = mul(s, x)\n  return y\n}\n",
                  {R"({"s": [2.5], "x": [1.0, 2.0, 4.0]})"});
  RunResult r = stack(l);
  REQUIRE_FALSE(r.error);
  CHECK(r.outputs[0].batch == 3);
  CHECK(r.outputs[0].as<double>()[2] == 10.0);
}

TEST_CASE("stack VM: an empty batch gives empty outputs") {
  Loaded l = load("func f(x) {\ne:\n  y = add(x, 1)\n  return y\n}\n", {R"({"x": []})"});
  RunResult r = stack(l);
  REQUIRE_FALSE(r.error);
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].batch == 0);
}

TEST_CASE("stack VM: an instruction writing a shared and a per-thread variable shares neither") {
  // w has one write, of a shared tuple; v is written twice. Found by the
  // random differential tests: w was stored once but written per thread.
  Loaded l = load(
      "func f(p) {\ne:\n  v = min(p, 6)\n  t = tuple(6, -8)\n  (w, v) = t\n  x = add(w, v)\n  y = "
      "add(x, p)\n  return y\n}\n",
      {R"({"p": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]})"});
  same(stack(l), reference(l));
}

TEST_CASE("stack VM: a read-only input is read in place, without a per-lane copy") {
  // x and k are never written: the VM reads the caller's arrays (its log
  // counts the bytes borrowed); a parameter the program writes, and refill
  // lanes (a lane runs several inputs), keep the copy. Outputs agree in all.
  const char* text =
      "func f(x, k) {\ne:\n  acc = mul(x, 0.0)\n  i = add(k, 0)\n  goto l\nl:\n  acc = add(acc, "
      "x)\n  i = sub(i, 1)\n  c = gt(i, 0)\n  branch c, l, d\nd:\n  return acc\n}\n";
  Loaded l = load(text, {R"({"x": [1.0], "k": [1]})"});
  const int64_t n = 1000000;
  Array x(l.inputs.values[0].type, n), k(l.inputs.values[1].type, n);
  for (int64_t t = 0; t < n; ++t) {
    x.as<double>()[t] = 0.5 * static_cast<double>(t);
    k.as<int64_t>()[t] = 1 + t % 3;
  }
  l.inputs.values = {std::move(x), std::move(k)};
  l.inputs.batch = n;
  auto check = [&](const RunResult& r) {
    REQUIRE_FALSE(r.error);
    REQUIRE(r.outputs.size() == 1);
    const double* out = r.outputs[0].as<double>();
    int64_t bad = 0;
    for (int64_t t = 0; t < n; ++t)
      bad += out[t] != 0.5 * static_cast<double>(t) * static_cast<double>(1 + t % 3);
    CHECK(bad == 0);
  };
  for (bool jit : {true, false}) {
    INFO("jit " << jit);
    RunOptions opt;
    opt.jit = jit;
    RunResult r = stack(l, opt);
    check(r);
    CHECK(r.log.find("inputs read in place: 16000000 bytes") != std::string::npos);
    opt.lanes = 1000;  // lanes refilled: lane t does not keep input t
    RunResult refill = stack(l, opt);
    check(refill);
    CHECK(refill.log.find("read in place") == std::string::npos);
  }
  // A batch-1 (shared) input is read in place too.
  Loaded s = load("func f(v: f64[3], y) {\ne:\n  w = sum(v)\n  z = mul(w, y)\n  return z\n}\n",
                  {R"({"v": [[1.0, 2.0, 4.0]], "y": [1.0, 2.0]})"});
  RunResult rs = stack(s);
  REQUIRE_FALSE(rs.error);
  CHECK(rs.outputs[0].as<double>()[1] == 14.0);
  CHECK(rs.log.find("inputs read in place: 40 bytes") != std::string::npos);
  // A parameter the program writes is copied (and the caller's array unchanged).
  Loaded w = load("func f(x) {\ne:\n  x = add(x, 1.0)\n  return x\n}\n", {R"({"x": [1.0, 2.0]})"});
  RunResult rw = stack(w);
  REQUIRE_FALSE(rw.error);
  CHECK(rw.outputs[0].as<double>()[1] == 3.0);
  CHECK(w.inputs.values[0].as<double>()[1] == 2.0);
  CHECK(rw.log.find("read in place") == std::string::npos);
}
