// Result names and the entry (docs/language.md, "Result names" and "Modules and
// functions"): which names a run's outputs get (signature, returns, calls,
// tuple leaves, defaults), that every VM, --threads and --on-error record
// keep them, JSON's "names" and --output DIR/NAME.npy; which function is the
// entry without --entry; the warning for a batch of 1 that reads
// thread_index().
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using Names = std::vector<std::string>;

autobatch::Program compiled(const std::string& text, const std::string& entry = "") {
  autobatch::CompileOptions o;
  o.entry = entry;
  autobatch::Result<autobatch::Program> p = autobatch::compile(text, o);
  INFO(p.rendered());
  REQUIRE(p.ok());
  return *p;
}

// The output names of a run of `text` on x = [1.0, 2.0], the same in every VM.
Names names_of(const std::string& text, const std::string& entry = "") {
  autobatch::Program p = compiled(text, entry);
  double x[] = {1.0, 2.0};
  Names first;
  for (const char* vm : {"stack", "stackless", "reference"}) {
    autobatch::RunOptions o;
    o.vm = vm;
    autobatch::RunResult r = p.run({autobatch::ArrayView::of(x, 2)}, o);
    INFO(r.rendered());
    REQUIRE(r.ok());
    REQUIRE(r.names.size() == r.outputs.size());
    if (std::string(vm) == "stack")
      first = r.names;
    else
      CHECK(r.names == first);
  }
  return first;
}

ab_test::Proc cli(const std::vector<std::string>& args) {
  return ab_test::run_binary(AUTOBATCH_SOURCE_DIR, args, std::nullopt, 60);
}

}  // namespace

TEST_CASE("names: the signature's, else the returned variables', else out<k>") {
  // The old output: {"outputs": [[...], [...]]}, files out0.npy, out1.npy.
  CHECK(names_of("func f(x: f64) -> (total: f64, n: i64) {\n  return x * 2.0, 1\n}\n") ==
        Names{"total", "n"});
  CHECK(names_of("func f(x: f64) {\n  total = x * 2.0\n  leaves = 3\n  return total, leaves\n}\n") ==
        Names{"total", "leaves"});
  // Unnamed: an expression, a literal; returns that disagree.
  CHECK(names_of("func f(x: f64) {\n  return x * 2.0, 1\n}\n") == Names{"out0", "out1"});
  CHECK(names_of("func f(x: f64) {\n  a = x\n  b = x\n  if x > 1.0 {\n    return a, x\n  }\n"
                 "  return b, x\n}\n") == Names{"out0", "x"});
  // The signature's names win over the returns'; unnamed results keep theirs.
  CHECK(names_of("func f(x: f64) -> (s: f64, f64) {\n  y = x\n  return x, y\n}\n") ==
        Names{"s", "y"});
  // Block form: a return of variables names the results too.
  CHECK(names_of("func f(x: f64) {\nentry:\n  y = mul(x, 2.0)\n  return y\n}\n") == Names{"y"});
}

TEST_CASE("names: return g(x) and a, b = g(x); return a, b pass on g's names") {
  const char* text = R"(func integrate(x: f64) -> (total: f64, leaves: i64) {
  return x, 2
}
func main(x: f64) {
  return integrate(x)
}
func renamed(x: f64) {
  s, n = integrate(x)
  return s, n
}
func recursive(x: f64) {
  if x > 1.5 {
    return recursive(x - 1.0)
  }
  return integrate(x)
}
)";
  CHECK(names_of(text) == Names{"total", "leaves"});
  CHECK(names_of(text, "renamed") == Names{"s", "n"});
  CHECK(names_of(text, "recursive") == Names{"total", "leaves"});
}

TEST_CASE("names: a tuple result gives NAME.0, NAME.1, ...; repeated names give way") {
  CHECK(names_of("func f(x: f64) -> (p: (f64, (i64, f64)), f64) {\n"
                 "  return tuple(x, tuple(1, x)), x + 1.0\n}\n") ==
        Names{"p.0", "p.1.0", "p.1.1", "out3"});
  CHECK(names_of("func f(x: f64) {\n  return x, x\n}\n") == Names{"out0", "out1"});
  // Lowering keeps only names that do not repeat, so the lowered program runs alike.
  autobatch::Program twice = compiled("func f(x: f64) {\n  y = x\n  return x, x, y\n}\n");
  autobatch::Result<std::string> lowered = twice.lower();
  REQUIRE(lowered.ok());
  CHECK(lowered->find("-> (f.ret.0, f.ret.1, y: f.ret.2)") != std::string::npos);
  double x[] = {1.0};
  autobatch::RunResult r = compiled(*lowered).run({autobatch::ArrayView::of(x, 1)});
  REQUIRE(r.ok());
  CHECK(r.names == Names{"out0", "out1", "y"});
  CHECK(names_of("func f(x: f64) -> (out1: f64, f64) {\n  return x, x + 1.0\n}\n") ==
        Names{"out0", "out1"});
  CHECK(names_of("func f(x: f64) {\n  return\n}\n").empty());
}

TEST_CASE("names: kept by --threads, --on-error record and --stats, and in the JSON") {
  autobatch::Program p = compiled(
      "func f(k: i64) -> (q: i64, r: i64) {\n  return k / 3, 10 / (k % 5)\n}\n");
  CHECK(p.result_names() == Names{"q", "r"});
  std::vector<int64_t> k(3000);
  for (size_t i = 0; i < k.size(); ++i) k[i] = static_cast<int64_t>(i) + 1;
  autobatch::RunOptions o;
  o.threads = 3;
  o.stats = true;
  o.on_error = autobatch::OnError::Record;
  autobatch::RunResult r = p.run({autobatch::ArrayView::of(k.data(), 3000)}, o);
  REQUIRE(r.diagnostics.empty());
  CHECK(r.errors.size() == 600);
  CHECK(r.names == Names{"q", "r"});
  CHECK(r.json(false).find(R"(]], "names": ["q", "r"], "errors": [)") != std::string::npos);
}

TEST_CASE("names: a lowered program keeps the entry's names in its program line") {
  autobatch::Program p =
      compiled("func f(x: f64) -> (total: f64, f64) {\n  return x, x + 1.0\n}\n");
  autobatch::Result<std::string> lowered = p.lower();
  REQUIRE(lowered.ok());
  CHECK(lowered->find("program f(f.x) -> (total: f.ret.0, f.ret.1) {") != std::string::npos);
  autobatch::Program again = compiled(*lowered);
  CHECK(again.result_names() == Names{"total", ""});
  double x[] = {1.0, 2.0};
  autobatch::RunResult r = again.run({autobatch::ArrayView::of(x, 2)});
  REQUIRE(r.ok());
  CHECK(r.names == Names{"total", "out1"});
  // Without names in the program line, the outputs are out<k>.
  std::string plain = *lowered;
  plain.replace(plain.find("total: "), 7, "");
  CHECK(compiled(plain).result_names().empty());
}

TEST_CASE("cli: outputs carry names in JSON and in --output DIR/") {
  fs::path dir = fs::temp_directory_path() / ("ab_names_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const char* prog = "func f(x: f64) -> (total: f64, n: i64) {\n  return x, 2\n}\n";
  fs::create_directories(dir);
  {
    std::FILE* f = std::fopen((dir / "p.ab").c_str(), "w");
    REQUIRE(f);
    std::fputs(prog, f);
    std::fclose(f);
  }
  ab_test::Proc p = cli({"run", (dir / "p.ab").string(), "--inputs", R"({"x": [1.5]})"});
  CHECK(p.code == 0);
  CHECK(p.out == "{\"outputs\": [[1.5], [2]], \"names\": [\"total\", \"n\"]}\n");
  ab_test::Proc d = cli({"run", (dir / "p.ab").string(), "--inputs", R"({"x": [1.5]})",
                         "--output", (dir / "out").string() + "/"});
  CHECK(d.code == 0);
  CHECK(fs::exists(dir / "out" / "total.npy"));
  CHECK(fs::exists(dir / "out" / "n.npy"));
  CHECK_FALSE(fs::exists(dir / "out" / "out0.npy"));
  fs::remove_all(dir);
}

TEST_CASE("entry: --entry, else `entry func`, else main, else the only function nothing calls") {
  const char* helpers = R"(func helper(x) {
  return x + 1.0
}
func _debug(x) {
  return x
}
func simulate(x) {
  return helper(x) * 2.0
}
)";
  // The old message: "which function is the entry? name it with --entry".
  CHECK(compiled(helpers).entry() == "simulate");
  CHECK(compiled(helpers, "helper").entry() == "helper");
  CHECK(compiled(std::string(helpers) + "entry func other(x) {\n  return x\n}\n").entry() ==
        "other");
  CHECK(compiled(std::string(helpers) + "func main(x) {\n  return x\n}\n").entry() == "main");
  // A function calling itself still counts; mutual recursion leaves none.
  CHECK(compiled("func fib(n) {\n  if n <= 1 {\n    return 1\n  }\n"
                 "  return fib(n - 1) + fib(n - 2)\n}\nfunc _h(n) {\n  return n\n}\n")
            .entry() == "fib");
  // Two candidates: running says which, and how to choose.
  autobatch::Program two = compiled("func a(x) {\n  return x\n}\nfunc b(x) {\n  return x\n}\n");
  CHECK(two.entry().empty());
  double x = 1;
  autobatch::RunResult r = two.run({autobatch::ArrayView::of(&x, 1)});
  CHECK(r.rendered().find("which function is the entry? no other function calls a, b; mark one "
                          "'entry func NAME(...)' or name it with --entry") != std::string::npos);
  autobatch::Program none = compiled(
      "func is_even(n) {\n  if n == 0 {\n    return true\n  }\n  return is_odd(n - 1)\n}\n"
      "func is_odd(n) {\n  if n == 0 {\n    return false\n  }\n  return is_even(n - 1)\n}\n");
  CHECK(none.entry().empty());
}

TEST_CASE("cli: a run of batch 1 that reads thread_index() warns with the fix") {
  // The old behaviour: one thread ran, silently.
  const char* text = "func f(seed: i64) -> i64 {\n  return fold_in(seed, thread_index())\n}\n";
  CHECK(compiled(text).reads_thread_index());
  CHECK_FALSE(compiled("func f(x) {\n  return x\n}\n").reads_thread_index());
  CHECK(compiled("func g() {\n  return thread_index()\n}\nfunc f(x) {\n  return g() + x\n}\n", "f")
            .reads_thread_index());
  fs::path file = fs::temp_directory_path() / ("ab_tid_" + std::to_string(::getpid()) + ".ab");
  std::FILE* f = std::fopen(file.c_str(), "w");
  REQUIRE(f);
  std::fputs(text, f);
  std::fclose(f);
  ab_test::Proc one = cli({"run", file.string(), "--inputs", R"({"seed": 7})"});
  CHECK(one.code == 0);
  CHECK(one.err ==
        "autobatch: warning: one thread runs (every input has batch 1), but the program reads "
        "thread_index(); add --batch N to run N threads\n");
  ab_test::Proc many = cli({"run", file.string(), "--inputs", R"({"seed": 7})", "--batch", "3"});
  CHECK(many.code == 0);
  CHECK(many.err.empty());
  ab_test::Proc batched = cli({"run", file.string(), "--inputs", R"({"seed": [7, 8]})"});
  CHECK(batched.err.empty());
  fs::remove(file);
}
