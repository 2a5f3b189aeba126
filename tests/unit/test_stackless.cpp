// The stackless VM (docs/engine.md, "The stackless VM"): every program in programs/ gives the
// reference interpreter's outputs bit for bit, and small cases named by what
// they check: inactive threads, runtime errors, deep recursion, tail calls,
// the step bound, calls of every shape, shared values, trace and statistics.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "io/inputs.h"
#include "parse/parser.h"
#include "passes/infer_types.h"
#include "passes/verify.h"
#include "vm/reference/reference.h"
#include "vm/stackless/stackless_vm.h"

using namespace ab;
namespace fs = std::filesystem;

namespace {

// A parsed, verified and typed program with its inputs.
struct Prepared {
  Module m;
  std::string entry;
  TypeInfo types;
  std::vector<Array> inputs;
  int64_t batch = 0;
};

Prepared prepare(Result<Module> m, std::string entry, const std::vector<std::string>& input_args,
                 std::optional<int64_t> batch_flag = std::nullopt) {
  INFO(m.diags().render());
  REQUIRE(m.ok());
  Prepared p{m.take(), std::move(entry), {}, {}, 0};
  Diagnostics d(p.m.source);
  ab::verify(p.m, d);
  const Function* f = find_entry(p.m, p.entry, d);
  INFO(d.render());
  REQUIRE(f);
  REQUIRE_FALSE(d.has_errors());
  p.entry = f->name.name;
  std::vector<ParamSpec> specs;
  for (const auto& par : f->params) specs.push_back({par.name.name, par.type});
  Result<InputSet> in = load_inputs(input_args, specs, batch_flag);
  INFO(in.diags().render());
  REQUIRE(in.ok());
  p.inputs = in->values;
  p.batch = in->batch;
  std::vector<std::optional<Type>> params;
  for (const auto& a : p.inputs) params.push_back(Type{false, a.type, {}});
  p.types = infer_types(p.m, p.entry, params, d);
  INFO(d.render());
  REQUIRE_FALSE(d.has_errors());
  return p;
}

Prepared prepare_text(const std::string& text, const std::string& entry, const std::string& json,
                      std::optional<int64_t> batch_flag = std::nullopt) {
  std::vector<std::string> args;
  if (!json.empty()) args.push_back(json);
  return prepare(parse_text("t.ab", text), entry, args, batch_flag);
}

RunResult stackless(const Prepared& p, const RunOptions& opt = {}) {
  return run_stackless(p.m, p.types, p.entry, p.inputs, p.batch, opt);
}
RunResult reference(const Prepared& p, const RunOptions& opt = {}) {
  return run_reference(p.m, p.types, p.entry, p.inputs, p.batch, opt);
}

// Outputs equal bit for bit (floats included: both call the same kernels),
// except that with `rel` > 0 f64 outputs may differ by that relative amount:
// a matrix product on a matrix stored once is one GEMM, which may round
// differently from per-thread products (docs/language.md, "Reference semantics").
void check_same_outputs(const RunResult& got, const RunResult& want, double rel = 0) {
  REQUIRE_FALSE(want.error);
  if (got.error) FAIL_CHECK(render_runtime_error(nullptr, *got.error));
  REQUIRE_FALSE(got.error);
  REQUIRE(got.outputs.size() == want.outputs.size());
  for (size_t i = 0; i < got.outputs.size(); ++i) {
    INFO("output " << i);
    CHECK(got.outputs[i].type == want.outputs[i].type);
    CHECK(got.outputs[i].batch == want.outputs[i].batch);
    REQUIRE(got.outputs[i].byte_size() == want.outputs[i].byte_size());
    if (rel > 0 && got.outputs[i].type.dtype == DType::F64) {
      for (size_t k = 0; k < got.outputs[i].byte_size() / 8; ++k) {
        double u = got.outputs[i].as<double>()[k], v = want.outputs[i].as<double>()[k];
        CHECK(std::fabs(u - v) <= rel * std::max(1.0, std::fabs(v)));
      }
      continue;
    }
    CHECK(std::memcmp(got.outputs[i].data.data(), want.outputs[i].data.data(),
                      got.outputs[i].byte_size()) == 0);
  }
}

void check_same_error(const RunResult& got, const RunResult& want) {
  REQUIRE(want.error);
  REQUIRE(got.error);
  CHECK(got.error->message == want.error->message);
  CHECK(got.error->thread == want.error->thread);
  CHECK(got.error->batch == want.error->batch);
  CHECK(got.error->function == want.error->function);
  CHECK(got.error->block == want.error->block);
  CHECK(got.error->loc.line == want.error->loc.line);
  CHECK(got.error->loc.col == want.error->loc.col);
}

std::vector<int64_t> i64s(const Array& a) {
  return std::vector<int64_t>(a.as<int64_t>(), a.as<int64_t>() + a.batch * a.event_size());
}

std::string entry_of(const Module& m) {
  const std::string& text = m.source->text();
  size_t at = text.find("# entry: ");
  if (at == std::string::npos) return "";
  return text.substr(at + 9, text.find('\n', at) - at - 9);
}

std::vector<nlohmann::json> read_lines(const fs::path& p) {
  std::ifstream f(p);
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(f, line)) out.push_back(nlohmann::json::parse(line));
  return out;
}

fs::path temp_path(const std::string& name) {
  return fs::temp_directory_path() /
         ("autobatch_stackless_" + std::to_string(::getpid()) + "_" + name);
}

const char* kFib = R"(
func fib(n: i64) -> i64 {
entry:
  small = le(n, 1)
  branch small, base, recur
base:
  return 1
recur:
  n1 = sub(n, 1)
  a = call fib(n1)
  n2 = sub(n, 2)
  b = call fib(n2)
  s = add(a, b)
  return s
}
)";

const char* kTri = R"(
func tri(n: i64) -> i64 {
entry:
  z = le(n, 0)
  branch z, base, recur
base:
  return 0
recur:
  m = sub(n, 1)
  r = call tri(m)
  s = add(r, n)
  return s
}
)";

}  // namespace

TEST_CASE("stackless: every program in programs/ gives the reference interpreter's outputs") {
  int checked = 0;
  for (const auto& e : fs::directory_iterator(fs::path(AUTOBATCH_SOURCE_DIR) / "programs")) {
    if (e.path().extension() != ".ab") continue;
    INFO(e.path().string());
    Result<Module> m = parse_file(e.path().string());
    REQUIRE(m.ok());
    std::string entry = entry_of(*m);
    fs::path json = e.path();
    json.replace_extension(".json");
    std::vector<std::string> args;
    if (fs::exists(json)) args.push_back(json.string());
    Prepared p = prepare(std::move(m), entry, args);
    Stats stats;
    RunOptions opt;
    opt.stats = &stats;
    RunResult got = stackless(p, opt);
    RunResult want = reference(p);
    const std::string& text = p.m.source->text();
    double rel =
        text.find("matvec") != std::string::npos || text.find("matmul") != std::string::npos ? 1e-12
                                                                                             : 0;
    check_same_outputs(got, want, rel);
    CHECK(stats.steps == got.steps);
    // Refill mode: two lanes take the threads in turn.
    RunOptions two;
    two.lanes = 2;
    check_same_outputs(stackless(p, two), want, rel);
    ++checked;
  }
  CHECK(checked >= 15);
}

TEST_CASE("stackless: a division guarded by a branch never fails in threads that skipped it") {
  Prepared p = prepare_text(R"(
func main(a: i64, b: i64) -> i64 {
entry:
  z = eq(b, 0)
  branch z, zero, divide
zero:
  return -1
divide:
  q = div(a, b)
  return q
}
)",
                            "main", R"({"a": [7, 8, 9, 10, 11, 12], "b": [2, 0, 3, 0, 0, -5]})");
  RunResult r = stackless(p);
  check_same_outputs(r, reference(p));
  CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{3, -1, 3, -1, -1, -3});
}

TEST_CASE("stackless: division by zero names the failing thread, function and block") {
  Prepared p = prepare_text(R"(
func f(a, b) -> i64 {
entry:
  goto work
work:
  q = div(a, b)
  return q
}

func main(a: i64, b: i64) -> i64 {
entry:
  r = call f(a, b)
  return r
}
)",
                            "main", R"({"a": [1, 2, 3, 4, 5, 6], "b": [1, 1, 1, 0, 1, 0]})");
  RunResult r = stackless(p);
  REQUIRE(r.error);
  CHECK(r.error->message == "integer division by zero");
  CHECK(r.error->thread == 3);
  CHECK(r.error->batch == 6);
  CHECK(r.error->function == "f");
  CHECK(r.error->block == "work");
  CHECK(r.error->loc.line == 6);
  CHECK(r.error->loc.col == 7);
  CHECK(r.outputs.empty());
  check_same_error(r, reference(p));
}

TEST_CASE(
    "stackless: recursion 100000 deep runs on an explicit stack and is bounded by "
    "max_stack_depth") {
  Prepared p = prepare_text(kTri, "tri", R"({"n": [100000]})");
  RunOptions opt;
  opt.max_stack_depth = 200000;
  Stats stats;
  opt.stats = &stats;
  RunResult ok = stackless(p, opt);
  REQUIRE_FALSE(ok.error);
  CHECK(i64s(ok.outputs[0]) == std::vector<int64_t>{5000050000});
  CHECK(stats.peak_stack_depth == 100001);

  opt.max_stack_depth = 1000;
  opt.stats = nullptr;
  RunResult bounded = stackless(p, opt);
  REQUIRE(bounded.error);
  CHECK(bounded.error->message == "stack depth limit of 1000 frames exceeded calling 'tri'");
  CHECK(bounded.error->thread == 0);
  CHECK(bounded.error->function == "tri");
  CHECK(bounded.error->block == "recur");
  check_same_error(bounded, reference(p, opt));
}

TEST_CASE("stackless: a tail self-call reuses its frame, so it takes no stack") {
  // count's call of itself is a tail call (ir/tail_call.h); main's is not.
  Prepared p = prepare_text(R"(
func count(n: i64, acc: i64) -> i64 {
entry:
  z = eq(n, 0)
  branch z, base, recur
base:
  return acc
recur:
  m = sub(n, 1)
  a = add(acc, n)
  r = call count(m, a)
  return r
}

func main(n: i64) -> i64 {
entry:
  r = call count(n, 0)
  return r
}
)",
                            "main", R"({"n": [100000, 3, 0, 250]})");
  RunOptions opt;
  opt.max_stack_depth = 10;
  Stats stats;
  opt.stats = &stats;
  RunResult r = stackless(p, opt);
  REQUIRE_FALSE(r.error);
  CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{5000050000, 6, 0, 31375});
  CHECK(stats.peak_stack_depth == 2);  // main's frame and count's
  opt.stats = nullptr;
  check_same_outputs(r, reference(p, opt));
}

TEST_CASE("stackless: the stack bound names the first thread that goes too deep") {
  Prepared p = prepare_text(kTri, "tri", R"({"n": [3, 50, 2, 70]})");
  RunOptions opt;
  opt.max_stack_depth = 20;
  RunResult r = stackless(p, opt);
  REQUIRE(r.error);
  CHECK(r.error->thread == 1);
  check_same_error(r, reference(p, opt));
}

TEST_CASE("stackless: max_steps stops a program that does not terminate") {
  Prepared p = prepare_text(R"(
func main(n: i64) -> i64 {
entry:
  goto loop
loop:
  n = add(n, 1)
  goto loop
}
)",
                            "main", R"({"n": [1, 2]})");
  RunOptions opt;
  opt.max_steps = 10;
  RunResult r = stackless(p, opt);
  REQUIRE(r.error);
  CHECK(r.error->message == "--max-steps 10 exceeded");
  CHECK(r.error->function == "main");
  CHECK(r.error->block == "loop");
  CHECK(r.error->thread == 0);
  CHECK(r.steps == 11);
}

TEST_CASE("stackless: max_steps bounds each thread's queue entries; within the bound succeeds") {
  Prepared p = prepare_text(kFib, "fib", R"({"n": [6, 7, 8, 7]})");
  RunResult free = stackless(p);
  REQUIRE_FALSE(free.error);
  // Alone, the longest thread (n = 8) takes one queue entry per step.
  Prepared longest = prepare_text(kFib, "fib", R"({"n": [8]})");
  RunResult alone = stackless(longest);
  REQUIRE_FALSE(alone.error);
  RunOptions opt;
  opt.max_steps = alone.steps;
  check_same_outputs(stackless(p, opt), free);
  opt.max_steps = alone.steps - 1;
  RunResult over = stackless(p, opt);
  REQUIRE(over.error);
  CHECK(over.error->thread == 2);
}

TEST_CASE("stackless: mutual recursion where threads return at different depths") {
  Prepared p = prepare_text(R"(
func is_even(n) {
entry:
  z = eq(n, 0)
  branch z, yes, recur
yes:
  return true
recur:
  m = sub(n, 1)
  r = call is_odd(m)
  return r
}

func is_odd(n) {
entry:
  z = eq(n, 0)
  branch z, no, recur
no:
  return false
recur:
  m = sub(n, 1)
  r = call is_even(m)
  return r
}

func main(n: i64) -> (bool, i64) {
entry:
  e = call is_even(n)
  k = mul(n, 10)
  return e, k
}
)",
                            "main", R"({"n": [0, 5, 1, 12, 7, 2, 30]})");
  fs::path trace_file = temp_path("mutual.jsonl");
  {
    TraceWriter trace(trace_file.string(), MaskFormat::Bits);
    RunOptions opt;
    opt.trace = &trace;
    RunResult r = stackless(p, opt);
    trace.close();
    check_same_outputs(r, reference(p));
  }
  // Threads leave at different depths: the width of the frames shrinks.
  auto lines = read_lines(trace_file);
  fs::remove(trace_file);
  std::map<int64_t, int64_t> widest;
  for (size_t i = 1; i < lines.size(); ++i) {
    int64_t d = lines[i]["depth"], a = lines[i]["active"];
    widest[d] = std::max(widest[d], a);
  }
  CHECK(widest[1] == 7);
  CHECK(widest[2] == 7);
  CHECK(widest[32] == 1);
  CHECK(widest.rbegin()->first == 32);
}

TEST_CASE("stackless: a discarded call runs for its effect on nothing and binds nothing") {
  Prepared p = prepare_text(R"(
func twice(x) -> i64 {
entry:
  y = mul(x, 2)
  return y
}

func check(x: i64) {
entry:
  ok = ge(x, 0)
  branch ok, fine, bad
fine:
  return
bad:
  goto fine
}

func main(x: i64) -> i64 {
entry:
  y = add(x, 1)
  call twice(y)
  call check(x)
  z = call twice(y)
  return z
}
)",
                            "main", R"({"x": [1, -2, 3]})");
  RunResult r = stackless(p);
  check_same_outputs(r, reference(p));
  CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{4, -2, 8});
}

TEST_CASE("stackless: tuple results, nested destructuring and a swap through tuple()") {
  Prepared p = prepare_text(R"(
func nest(a, b, c) -> ((i64, (i64, i64))) {
entry:
  inner = tuple(b, c)
  t = tuple(a, inner)
  return t
}

func two(a: i64) -> (i64, i64) {
entry:
  small = lt(a, 0)
  branch small, neg, pos
neg:
  m = neg(a)
  return m, 1
pos:
  return a, 0
}

func main(a: i64, b: i64) -> (i64, i64, i64, i64, (i64, i64), i64) {
entry:
  x, (y, z) = call nest(a, b, 7)
  p, q = call two(b)
  x, y = tuple(y, x)
  t = call nest(z, p, q)
  (u, v) = t
  (w, pair) = v
  return x, y, u, q, v, w
}
)",
                            "main", R"({"a": [1, 2, 3], "b": [-4, 5, 0]})");
  RunResult r = stackless(p);
  check_same_outputs(r, reference(p));
  CHECK(i64s(r.outputs[0]) == std::vector<int64_t>{-4, 5, 0});
  CHECK(i64s(r.outputs[1]) == std::vector<int64_t>{1, 2, 3});
  CHECK(i64s(r.outputs[2]) == std::vector<int64_t>{7, 7, 7});
  CHECK(i64s(r.outputs[3]) == std::vector<int64_t>{1, 0, 0});
  CHECK(i64s(r.outputs[4]) == std::vector<int64_t>{4, 5, 0});
  CHECK(i64s(r.outputs[6]) == std::vector<int64_t>{4, 5, 0});
}

TEST_CASE(
    "stackless: shared inputs and values computed once per frame give the reference's outputs") {
  Prepared p = prepare_text(
      R"(
func scale(A, x, k) -> f64[2] {
entry:
  y = matvec(A, x)
  two = mul(k, 2.0)
  z = mul(y, two)
  return z
}

func main(x: f64[2], k: f64, n: i64) -> (f64[2], i64) {
entry:
  A = [[2.0, 1.0], [0.5, 4.0]]
  i = 0
  goto loop
loop:
  more = lt(i, n)
  branch more, body, done
body:
  c = mul(k, 0.5)
  x = call scale(A, x, c)
  i = add(i, 1)
  goto loop
done:
  return x, i
}
)",
      "main", R"({"x": [[1.0, 2.0], [0.5, -1.0], [0.0, 0.25]], "k": [0.5], "n": [0, 2, 3]})");
  REQUIRE(p.inputs[1].batch == 1);
  check_same_outputs(stackless(p), reference(p));
}

TEST_CASE("stackless: a batch of zero threads runs nothing") {
  Prepared p = prepare_text(kFib, "fib", R"({"n": []})");
  REQUIRE(p.batch == 0);
  RunResult r = stackless(p);
  REQUIRE_FALSE(r.error);
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].batch == 0);
  CHECK(r.steps == 0);
}

TEST_CASE("stackless: trace lines and statistics agree with each other") {
  Prepared p = prepare_text(kFib, "fib", R"({"n": [6, 1, 8, 3, 0, 7]})");
  fs::path trace_file = temp_path("fib.jsonl");
  Stats stats;
  RunResult r;
  {
    TraceWriter trace(trace_file.string(), MaskFormat::Bits);
    RunOptions opt;
    opt.trace = &trace;
    opt.stats = &stats;
    r = stackless(p, opt);
    trace.close();
  }
  check_same_outputs(r, reference(p));
  auto lines = read_lines(trace_file);
  fs::remove(trace_file);
  REQUIRE(lines.size() >= 2);
  const auto& h = lines[0];
  CHECK(h["trace"] == "autobatch");
  CHECK(h["vm"] == "stackless");
  CHECK(h["batch"] == 6);
  CHECK(h["blocks"] == nlohmann::json::array({"fib.entry", "fib.base", "fib.recur"}));
  CHECK(static_cast<int64_t>(lines.size()) - 1 == r.steps);
  CHECK(stats.steps == r.steps);
  int64_t max_depth = 0, lane_ops = 0;
  std::vector<int64_t> per_block(3, 0);
  for (size_t i = 1; i < lines.size(); ++i) {
    const auto& l = lines[i];
    CHECK(l["step"] == static_cast<int64_t>(i - 1));
    REQUIRE(l.contains("depth"));
    std::string mask = l["mask"];
    CHECK(mask.size() == 6);
    CHECK(std::count(mask.begin(), mask.end(), '1') == l["active"].get<int64_t>());
    int64_t pc = l["pc"];
    CHECK(h["blocks"][pc] == l["block"]);
    ++per_block[pc];
    max_depth = std::max(max_depth, l["depth"].get<int64_t>());
    // fib's steps: entry runs `le`; recur runs `sub` up to each call, then
    // `sub` up to the second call, then `add` to the return.
    lane_ops += l["active"].get<int64_t>() * (pc == 1 ? 0 : 1);
  }
  CHECK(stats.block_executions == per_block);
  CHECK(stats.peak_stack_depth == max_depth);
  CHECK(max_depth == 8);
  CHECK(stats.lane_operations == lane_ops);
  CHECK(stats.primitive_executions == r.steps - per_block[1]);
  CHECK(stats.lane_operations <= stats.primitive_executions * 6);
  double mean = stats.to_json()["mean_utilization"];
  CHECK(mean > 0.0);
  CHECK(mean <= 1.0);
}

TEST_CASE("stackless: refill mode runs many threads on few lanes with the plain run's outputs") {
  std::string n = "[";
  for (int i = 0; i < 40; ++i) n += (i ? ", " : "") + std::to_string((i * 7) % 15);
  n += "]";
  Prepared p = prepare_text(kFib, "fib", "{\"n\": " + n + "}");
  RunResult want = reference(p);
  fs::path trace_file = temp_path("refill.jsonl");
  Stats stats;
  RunResult r;
  {
    TraceWriter trace(trace_file.string(), MaskFormat::Bits);
    RunOptions opt;
    opt.lanes = 4;
    opt.trace = &trace;
    opt.stats = &stats;
    r = stackless(p, opt);
    trace.close();
  }
  check_same_outputs(r, want);
  auto lines = read_lines(trace_file);
  fs::remove(trace_file);
  CHECK(lines[0]["batch"] == 40);
  for (size_t i = 1; i < lines.size(); ++i) {
    CHECK(lines[i]["active"].get<int64_t>() <= 4);
    std::string mask = lines[i]["mask"];
    CHECK(mask.size() == 40);
    CHECK(std::count(mask.begin(), mask.end(), '1') == lines[i]["active"].get<int64_t>());
  }
  double mean = stats.to_json()["mean_utilization"];
  CHECK(mean <= 1.0);
  // An error names the thread, not the lane.
  Prepared bad =
      prepare_text(R"(
func main(a: i64, b: i64) -> i64 {
entry:
  q = div(a, b)
  return q
}
)",
                   "main", R"({"a": [1, 2, 3, 4, 5, 6, 7], "b": [1, 1, 1, 1, 1, 0, 1]})");
  RunOptions opt;
  opt.lanes = 2;
  RunResult e = stackless(bad, opt);
  REQUIRE(e.error);
  CHECK(e.error->thread == 5);
  CHECK(e.error->batch == 7);
}
