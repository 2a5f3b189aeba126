// The public API (include/autobatch/autobatch.h): compile, run under every
// VM, errors as values, sharding over threads (--threads), concurrent runs of
// one Program, custom primitives (per-compile and global) in every VM.
#include <doctest/doctest.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

#include "autobatch/autobatch.h"
#include "fib_blocks.h"
#include "ir/array.h"  // Buffer::borrow, under the API
#include "vm/jit/jit.h"

namespace {

const char* kFib = kFibBlocks;

const char* kGcd = R"(func gcd(a: i64, b: i64) -> i64 {
entry:
  z = eq(b, 0)
  branch z, done, step
done:
  return a
step:
  r = mod(a, b)
  g = call gcd(b, r)
  return g
}
)";

std::vector<int64_t> ints(const autobatch::Array& a) {
  REQUIRE(a.dtype() == autobatch::DType::I64);
  const int64_t* p = a.as<int64_t>();
  return std::vector<int64_t>(p, p + a.num_elements());
}

std::vector<double> doubles(const autobatch::Array& a) {
  REQUIRE(a.dtype() == autobatch::DType::F64);
  const double* p = a.as<double>();
  return std::vector<double>(p, p + a.num_elements());
}

int64_t fib(int64_t n) { return n <= 1 ? 1 : fib(n - 1) + fib(n - 2); }

const char* const kVms[] = {"stack", "stackless", "reference"};

autobatch::CompileOptions named(const char* name) {
  autobatch::CompileOptions o;
  o.name = name;
  return o;
}

autobatch::Primitive prim(const char* name, int arity, const char* result, autobatch::Kernel k,
                          const char* doc = "") {
  autobatch::Primitive p;
  p.name = name;
  p.arity = arity;
  p.result = result;
  p.kernel = std::move(k);
  p.doc = doc;
  return p;
}

}  // namespace

TEST_CASE("api: fib from text under every VM") {
  auto p = autobatch::compile(kFib);
  REQUIRE_MESSAGE(p, p.rendered());
  CHECK(p->entry() == "fib");
  int64_t n[] = {6, 7, 8, 7};
  for (const char* vm : kVms) {
    autobatch::RunOptions o;
    o.vm = vm;
    o.stats = true;
    autobatch::RunResult r = p->run({autobatch::ArrayView::of(n, 4)}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    REQUIRE(r.outputs.size() == 1);
    CHECK(r.outputs[0].shape() == std::vector<int64_t>{4});
    CHECK(ints(r.outputs[0]) == std::vector<int64_t>{13, 21, 34, 21});
    REQUIRE(r.stats);
    CHECK(r.stats->steps > 0);
    CHECK(r.json(false) == R"({"outputs": [[13, 21, 34, 21]], "names": ["out0"]})");
  }
  auto sig = p->signature();
  REQUIRE(sig);
  CHECK((*sig)[0] == "func fib(n: i64) -> i64");
  auto low = p->lower();
  REQUIRE(low);
  CHECK(low->find("program fib(fib.n) -> (fib.ret.0)") != std::string::npos);
}

TEST_CASE("api: errors are values with locations") {
  auto bad = autobatch::compile("func f(x) {\nentry:\n  goto nowhere\n}\n", named("bad.ab"));
  REQUIRE_FALSE(bad);
  REQUIRE(!bad.diagnostics().empty());
  const autobatch::Diagnostic& d = bad.diagnostics()[0];
  CHECK(d.file == "bad.ab");
  CHECK(d.line == 3);
  CHECK(d.column > 0);
  CHECK(d.message.find("nowhere") != std::string::npos);
  CHECK(d.rendered.find("bad.ab:3:") == 0);

  auto missing = autobatch::compile_file("/nonexistent/x.ab");
  CHECK_FALSE(missing);

  auto p = autobatch::compile(kGcd, named("gcd.ab"));
  REQUIRE(p);
  int64_t a[] = {12, 7, 9, 4};
  int64_t b[] = {8, 0, 0, 2};
  // Wrong dtype against the annotation, wrong count, batch mismatch.
  double f[] = {1, 2};
  CHECK_FALSE(p->run({autobatch::ArrayView::of(f, 2), autobatch::ArrayView::of(b, 2)}).ok());
  CHECK_FALSE(p->run({autobatch::ArrayView::of(a, 4)}).ok());
  CHECK_FALSE(p->run({autobatch::ArrayView::of(a, 4), autobatch::ArrayView::of(b, 3)}).ok());
  autobatch::RunOptions bad_vm;
  bad_vm.vm = "gpu";
  CHECK_FALSE(
      p->run({autobatch::ArrayView::of(a, 4), autobatch::ArrayView::of(b, 4)}, bad_vm).ok());

  // A runtime error: mod by zero in a later call, located, with its thread.
  const char* div = "func d(a: i64, b: i64) -> i64 {\nentry:\n  q = div(a, b)\n  return q\n}\n";
  auto pd = autobatch::compile(div, named("div.ab"));
  REQUIRE(pd);
  for (const char* vm : kVms) {
    autobatch::RunOptions o;
    o.vm = vm;
    auto r = pd->run({autobatch::ArrayView::of(a, 4), autobatch::ArrayView::of(b, 4)}, o);
    REQUIRE(r.runtime_error);
    CHECK(r.runtime_error->file == "div.ab");
    CHECK(r.runtime_error->line == 3);
    CHECK(r.runtime_error->thread == 1);
    CHECK(r.runtime_error->batch == 4);
    CHECK(r.runtime_error->function == "d");
    CHECK(r.rendered().find("div.ab:3:") == 0);
  }
}

TEST_CASE("api: --threads shards give the outputs of one thread, under every VM") {
  auto p = autobatch::compile(kFib);
  REQUIRE(p);
  std::vector<int64_t> n(1001);
  for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<int64_t>((i * 7) % 13);
  std::vector<int64_t> want;
  for (int64_t v : n) want.push_back(fib(v));
  for (const char* vm : kVms) {
    autobatch::Stats one_stats;
    for (int threads : {1, 2, 3, 7}) {
      CAPTURE(vm);
      CAPTURE(threads);
      autobatch::RunOptions o;
      o.vm = vm;
      o.threads = threads;
      o.stats = true;
      auto r = p->run({autobatch::ArrayView::of(n.data(), 1001)}, o);
      REQUIRE_MESSAGE(r.ok(), r.rendered());
      CHECK(ints(r.outputs[0]) == want);
      // lane operations count work, which sharding does not change.
      if (threads == 1) one_stats = *r.stats;
      CHECK(r.stats->lane_operations == one_stats.lane_operations);
      int64_t blocks = 0;
      for (auto& [name, k] : r.stats->block_executions) blocks += k;
      CHECK(blocks == r.stats->steps);
      // With lanes, each shard streams on its share.
      o.lanes = 64;
      auto s = p->run({autobatch::ArrayView::of(n.data(), 1001)}, o);
      REQUIRE_MESSAGE(s.ok(), s.rendered());
      CHECK(ints(s.outputs[0]) == want);
    }
  }
  // A shared (batch 1) input with a batched one, sharded.
  auto g = autobatch::compile(kGcd);
  REQUIRE(g);
  int64_t shared = 360;
  std::vector<int64_t> b(500);
  std::iota(b.begin(), b.end(), 1);
  autobatch::RunOptions o;
  o.threads = 4;
  auto r =
      g->run({autobatch::ArrayView::of(&shared, 1), autobatch::ArrayView::of(b.data(), 500)}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  auto got = ints(r.outputs[0]);
  for (size_t i = 0; i < b.size(); ++i) CHECK(got[i] == std::gcd(int64_t{360}, b[i]));
  // A runtime error in a later shard names its thread in the whole batch.
  const char* div = "func d(a: i64) -> i64 {\nentry:\n  q = div(1, a)\n  return q\n}\n";
  auto pd = autobatch::compile(div);
  REQUIRE(pd);
  std::vector<int64_t> a(100, 1);
  a[77] = 0;
  auto e = pd->run({autobatch::ArrayView::of(a.data(), 100)}, o);
  REQUIRE(e.runtime_error);
  CHECK(e.runtime_error->thread == 77);
  CHECK(e.runtime_error->batch == 100);
}

TEST_CASE("api: two std::threads run one Program at once") {
  auto p = autobatch::compile(kFib);
  REQUIRE(p);
  const autobatch::Program program = *p;
  std::atomic<int> failures{0};
  auto worker = [&](int seed) {
    for (int iter = 0; iter < 20; ++iter) {
      std::vector<int64_t> n(64);
      for (size_t i = 0; i < n.size(); ++i) n[i] = static_cast<int64_t>((i + seed + iter) % 15);
      autobatch::RunOptions o;
      o.vm = kVms[(seed + iter) % 3];
      o.threads = 1 + (iter % 2);
      o.stats = true;
      auto r = program.run({autobatch::ArrayView::of(n.data(), 64)}, o);
      if (!r.ok()) {
        ++failures;
        continue;
      }
      auto got = ints(r.outputs[0]);
      for (size_t i = 0; i < n.size(); ++i)
        if (got[i] != fib(n[i])) ++failures;
    }
  };
  std::thread t1(worker, 0), t2(worker, 5);
  t1.join();
  t2.join();
  CHECK(failures.load() == 0);
}

namespace {

// log N(x; mu, 1), elementwise over f64 events, as a batched kernel.
bool logp_kernel(const autobatch::KernelCall& c, autobatch::KernelError* err) {
  const autobatch::KernelArg& x = c.args[0];
  const autobatch::KernelArg& mu = c.args[1];
  autobatch::KernelOut& out = c.outs[0];
  for (int64_t j = 0; j < c.n; ++j) {
    double xv = *x.lane<double>(j), mv = *mu.lane<double>(j);
    if (std::isnan(xv)) {
      err->lane = j;
      err->message = "logp of NaN";
      return false;
    }
    double d = xv - mv;
    *out.lane<double>(j) = -0.5 * d * d - 0.5 * std::log(2 * M_PI);
  }
  return true;
}

const char* kLogpProgram = R"(func walk(x: f64, k: i64) -> f64 {
entry:
  done = le(k, 0)
  branch done, base, recur
base:
  lp = logp(x, 0.5)
  return lp
recur:
  k1 = sub(k, 1)
  y = mul(x, 0.5)
  r = call walk(y, k1)
  here = logp(x, 1.0)
  s = add(r, here)
  return s
}
)";

}  // namespace

TEST_CASE("api: a custom primitive runs in every VM and in a lowered program") {
  autobatch::Primitives prims;
  autobatch::Status s = prims.add(prim("logp", 2, "f64", logp_kernel, "log N(x; mu, 1)"));
  REQUIRE_MESSAGE(s, s.rendered());
  // Bad registrations are errors, not crashes.
  CHECK_FALSE(prims.add(prim("logp", 2, "f64", logp_kernel)));
  CHECK_FALSE(prims.add(prim("add", 2, "f64", logp_kernel)));
  CHECK_FALSE(prims.add(prim("call", 2, "f64", logp_kernel)));
  CHECK_FALSE(prims.add(prim("q", 1, "f99", logp_kernel)));
  CHECK_FALSE(prims.add(prim("q", 1, "f64", nullptr)));

  // Without the registry the name is unknown.
  CHECK_FALSE(autobatch::compile(kLogpProgram));

  autobatch::CompileOptions co;
  co.primitives = prims;
  auto p = autobatch::compile(kLogpProgram, co);
  REQUIRE_MESSAGE(p, p.rendered());
  std::vector<double> x = {0.0, 1.0, -2.0, 3.5, 0.25};
  std::vector<int64_t> k = {0, 1, 2, 3, 4};
  auto expect = [](double x, int64_t k) {
    auto lp = [](double v, double m) {
      return -0.5 * (v - m) * (v - m) - 0.5 * std::log(2 * M_PI);
    };
    double s = 0;
    for (; k > 0; --k, x *= 0.5) s += lp(x, 1.0);
    return s + lp(x, 0.5);
  };
  std::vector<std::vector<double>> outs;
  for (const char* vm : kVms) {
    autobatch::RunOptions o;
    o.vm = vm;
    auto r =
        p->run({autobatch::ArrayView::of(x.data(), 5), autobatch::ArrayView::of(k.data(), 5)}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    outs.push_back(doubles(r.outputs[0]));
  }
  CHECK(outs[0] == outs[1]);
  CHECK(outs[0] == outs[2]);
  for (size_t i = 0; i < x.size(); ++i) CHECK(outs[0][i] == doctest::Approx(expect(x[i], k[i])));
  // The stack VM's compiled code calls the kernel: no block with an
  // instruction is interpreted, and the results are those without the JIT.
  for (bool jit : {true, false}) {
    autobatch::RunOptions o;
    o.jit = jit;
    o.threads = 1;
    auto r =
        p->run({autobatch::ArrayView::of(x.data(), 5), autobatch::ArrayView::of(k.data(), 5)}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    CHECK(doubles(r.outputs[0]) == outs[0]);
    if (jit && ab::jit::available())
      for (const auto& e : r.execution) {
        CAPTURE(e.block);
        CAPTURE(e.reason);
        if (e.mode == "interpreted") CHECK(e.reason.find("no instructions") != std::string::npos);
      }
  }

  // The printed lowered program compiles again (with the registry) and runs.
  auto text = p->lower();
  REQUIRE(text);
  CHECK(text->find("logp(") != std::string::npos);
  auto lowered = autobatch::compile(*text, co);
  REQUIRE_MESSAGE(lowered, lowered.rendered());
  for (const char* vm : {"stack", "reference"}) {
    autobatch::RunOptions o;
    o.vm = vm;
    auto r = lowered->run(
        {autobatch::ArrayView::of(x.data(), 5), autobatch::ArrayView::of(k.data(), 5)}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    CHECK(doubles(r.outputs[0]) == outs[0]);
  }

  // The kernel's error is a located runtime error.
  x[3] = NAN;
  auto r = p->run({autobatch::ArrayView::of(x.data(), 5), autobatch::ArrayView::of(k.data(), 5)});
  REQUIRE(r.runtime_error);
  CHECK(r.runtime_error->thread == 3);
  CHECK(r.runtime_error->message.find("logp of NaN") != std::string::npos);

  // Listed with the built-ins for this registry only.
  auto has = [](const std::vector<autobatch::OpInfo>& ops, const std::string& name) {
    for (const auto& o : ops)
      if (o.name == name) return o.custom;
    return false;
  };
  CHECK(has(autobatch::ops(&prims), "logp"));
  CHECK_FALSE(has(autobatch::ops(), "logp"));
}

TEST_CASE("api: a type rule as a function, and a global registration") {
  // scale3(v) : f64[3] -> f64[3], rejecting anything else.
  autobatch::Primitive p;
  p.name = "api_test_double3";
  p.arity = 1;
  p.rule = [](const std::vector<autobatch::TensorType>& args) -> autobatch::TypeRuleResult {
    if (args[0] != autobatch::TensorType{autobatch::DType::F64, {3}})
      return {std::nullopt, "wants f64[3], got " + args[0].str()};
    return {args[0], ""};
  };
  p.kernel = [](const autobatch::KernelCall& c, autobatch::KernelError*) {
    for (int64_t j = 0; j < c.n; ++j)
      for (int e = 0; e < 3; ++e) c.outs[0].lane<double>(j)[e] = 2 * c.args[0].lane<double>(j)[e];
    return true;
  };
  REQUIRE(autobatch::register_primitive(p));
  CHECK_FALSE(autobatch::register_primitive(p));  // the name is taken

  auto ok = autobatch::compile(
      "func f(v: f64[3]) -> f64[3] {\nentry:\n  w = api_test_double3(v)\n  return w\n}\n");
  REQUIRE_MESSAGE(ok, ok.rendered());
  double v[] = {1, 2, 3, 4, 5, 6};
  for (const char* vm : kVms) {
    autobatch::RunOptions o;
    o.vm = vm;
    auto r = ok->run({autobatch::ArrayView::of(v, 2, {3})}, o);
    REQUIRE_MESSAGE(r.ok(), r.rendered());
    CHECK(doubles(r.outputs[0]) == std::vector<double>{2, 4, 6, 8, 10, 12});
  }
  auto bad = autobatch::compile(
      "func f(v: f64[2]) -> f64[2] {\nentry:\n  w = api_test_double3(v)\n  return w\n}\n");
  REQUIRE(bad);
  double u[] = {1, 2};
  auto r = bad->run({autobatch::ArrayView::of(u, 1, {2})});
  REQUIRE_FALSE(r.diagnostics.empty());
  CHECK(r.rendered().find("wants f64[3], got f64[2]") != std::string::npos);
}

TEST_CASE("api: trace callback, inputs from the CLI's forms, format") {
  auto p = autobatch::compile(kFib);
  REQUIRE(p);
  auto in = p->load_inputs({R"({"n": [6, 7, 8, 7]})"});
  REQUIRE_MESSAGE(in, in.rendered());
  CHECK(in->batch == 4);
  std::vector<std::string> lines;
  autobatch::RunOptions o;
  o.trace_callback = [&](std::string_view line) { lines.emplace_back(line); };
  o.threads = 4;  // a trace forces one thread
  auto r = p->run(*in, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  REQUIRE(lines.size() > 2);
  CHECK(lines[0].find(R"("trace": "autobatch")") != std::string::npos);
  CHECK(lines[1].find(R"("step": 0)") != std::string::npos);

  auto bad_inputs = p->load_inputs({R"({"m": [1]})"});
  CHECK_FALSE(bad_inputs);

  auto f = autobatch::format("func g(a)->i64{\nentry:\n return a\n}\n");
  REQUIRE_MESSAGE(f, f.rendered());
  CHECK(f->find("func g(a) -> i64 {") == 0);
  CHECK(autobatch::check_pass_name("types"));
  CHECK_FALSE(autobatch::check_pass_name("typez"));
  CHECK(std::string(autobatch::version()).size() > 0);
}

TEST_CASE("api: a borrowed Buffer is never written through and copies own their bytes") {
  double user[3] = {1, 2, 3};
  ab::Buffer b = ab::Buffer::borrow(user, sizeof user);
  CHECK(b.data() == reinterpret_cast<std::byte*>(user));
  ab::Buffer copy = b;  // owns a copy
  CHECK(copy.data() != b.data());
  CHECK(std::memcmp(copy.data(), user, sizeof user) == 0);
  double other[3] = {7, 8, 9};
  ab::Buffer src(sizeof other);
  std::memcpy(src.data(), other, sizeof other);
  b = src;  // same size: must not write into the user's memory
  CHECK(user[0] == 1);
  CHECK(b.data() != reinterpret_cast<std::byte*>(user));
  CHECK(reinterpret_cast<const double*>(b.data())[2] == 9);
  ab::Buffer c = ab::Buffer::borrow(user, sizeof user);
  c.resize(8);  // lets go of the borrowed bytes (freeing them would crash)
  CHECK(c.size() == 8);
}
