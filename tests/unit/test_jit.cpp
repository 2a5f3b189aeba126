// The stack VM's compiled paths (src/vm/jit) and the persistent schedule:
// every mode (JIT on/off x persistent/min-pc) gives the reference's outputs
// bit for bit, and the same runtime errors; steps, trace and --max-steps
// stay consistent when a loop block keeps its chunk.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "io/inputs.h"
#include "parse/parser.h"
#include "passes/pipeline.h"
#include "passes/verify.h"
#include "vm/jit/jit.h"
#include "vm/reference/reference.h"
#include "vm/stack/stack_vm.h"
#include "stack_harness.h"

using namespace ab;
namespace fs = std::filesystem;

namespace {

using stack_harness::load;
using stack_harness::Prog;
using stack_harness::same_bits;
using stack_harness::stack;

// The plan's mode of block `block` ("" if there is no such block).
std::string mode_of(const RunResult& r, const std::string& block) {
  for (const auto& e : r.execution)
    if (e.block == block) return e.mode;
  return "";
}

// How many blocks run in `mode`.
int blocks_in(const RunResult& r, const std::string& mode) {
  int n = 0;
  for (const auto& e : r.execution) n += e.mode == mode;
  return n;
}

RunResult reference(const Prog& p) {
  Diagnostics d;
  const std::string& entry = p.entry;
  TypeInfo t = infer_types(p.m, entry, p.types, d);
  REQUIRE_FALSE(d.has_errors());
  return run_reference(p.m, t, entry, p.inputs.values, p.inputs.batch, RunOptions{});
}

struct Mode {
  bool jit, persistent;
};
const Mode kModes[] = {{true, true}, {true, false}, {false, true}, {false, false}};

RunOptions options(Mode m) {
  RunOptions o;
  o.jit = m.jit;
  o.persistent = m.persistent;
  return o;
}

// Every mode stops with the reference's runtime error: the same thread and
// message. Returns the reference's error thread.
int64_t same_error_in_every_mode(const Prog& p, const RunResult& ref) {
  REQUIRE(ref.error);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult got = stack(p, options(m));
    REQUIRE(got.error);
    CHECK(got.error->thread == ref.error->thread);
    CHECK(got.error->message == ref.error->message);
  }
  return ref.error->thread;
}

// With --on-error record, compiled: the failing threads are dropped and the
// outputs are those of the interpreter. Returns the compiled run.
RunResult recorded_as_interpreted(const Prog& bad) {
  RunOptions o;
  o.record_errors = true;
  RunResult r = stack(bad, o);
  o.jit = false;
  same_bits(r, stack(bad, o));
  return r;
}

// A loop block of float and integer arithmetic that branches to itself: the
// dense (SIMD) form; and straight-line blocks: the gather form.
const char* kFloatLoop = R"(func main(x: f64, k: i64) -> (f64, i64, bool, f32) {
entry:
  y = 0.0
  i = 0
  done = le(k, 0)
  branch done, finish, loop
loop:
  a = mul(x, 1.5)
  b = sub(a, y)
  c = max(b, -3.0)
  d = min(c, 7.25)
  e = abs(d)
  f = sqrt(e)
  g = sin(f)
  h = exp(g)
  fl = floor(h)
  ce = ceil(h)
  ro = round(h)
  s = sigmoid(b)
  m = mod(a, 2.5)
  q = div(a, 3.0)
  isn = isnan(b)
  fin = isfinite(b)
  z = select(isn, 0.0, s)
  y1 = add(y, z)
  y2 = add(y1, fl)
  y3 = sub(y2, ce)
  y4 = add(y3, ro)
  y5 = add(y4, m)
  y = add(y5, q)
  w = neg(y)
  t = tanh(w)
  x = add(x, t)
  ii = cast(fin, dtype=i64)
  i = add(i, ii)
  k = sub(k, 1)
  done = le(k, 0)
  branch done, finish, loop
finish:
  p = gt(y, x)
  r = cast(y, dtype=f32)
  return y, i, p, r
}
)";

// Inline JSON with two integer inputs of `count` threads: a[i] = fa(i), b[i] = fb(i).
std::string two_inputs(const char* a, const char* b, int count,
                       const std::function<int64_t(int)>& fa,
                       const std::function<int64_t(int)>& fb) {
  std::string x, y;
  for (int i = 0; i < count; ++i) {
    const char* sep = i ? ", " : "";
    x += sep + std::to_string(fa(i));
    y += sep + std::to_string(fb(i));
  }
  return std::string("{\"") + a + "\": [" + x + "], \"" + b + "\": [" + y + "]}";
}

}  // namespace

TEST_CASE("jit: every mode gives the reference's outputs bit for bit on a float loop block") {
  Prog p = load(kFloatLoop,
                R"({"x": [0.5, -2.0, 3.25, "NaN", "Infinity", -0.0, 100.0, 1e-300, 7.0],
                    "k": [3, 10, 0, 4, 2, 5, 50, 1, 20]})");
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    // The loop block is compiled whole under the persistent schedule only.
    const bool dense = m.jit && m.persistent && jit::available();
    CHECK(blocks_in(r, "dense_loop") + blocks_in(r, "dense_chunks") == (dense ? 1 : 0));
  }
}

TEST_CASE("jit: integer loop blocks (div/mod floor, wrapping, casts) match the reference") {
  const char* prog = R"(func main(n: i64, d: i32) -> (i64, i32) {
entry:
  acc = 0
  small = 0
  done = le(n, 0)
  branch done, finish, loop
loop:
  q = div(n, 7)
  r = mod(n, -3)
  h = div(n, 4)
  w = mul(acc, 6364136223846793005)
  acc = add(w, q)
  acc = add(acc, r)
  acc = add(acc, h)
  n2 = div(n, 2)
  n = sub(n2, 1)
  dd = cast(n, dtype=i32)
  e = mod(dd, d)
  f = div(dd, d)
  g = add(e, f)
  small = max(small, g)
  done = le(n, 0)
  branch done, finish, loop
finish:
  return acc, small
}
)";
  Prog p = load(prog, R"({"n": [0, 1, 17, 100, -5, 1000, 9223372036854775807],
                          "d": [3, -2, 5, 7, 1, -9, 4]})");
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    same_bits(stack(p, options(m)), ref);
  }
}

TEST_CASE("jit: a division by zero in a fused segment is reported as the kernels report it") {
  Prog p = load(R"(func main(a: i64, b: i64) -> i64 {
entry:
  a2 = add(a, 1)
  b2 = sub(b, 1)
  q = div(a2, b2)
  r = add(q, 1)
  return r
}
)",
                R"({"a": [5, 6, 7, 8, 9], "b": [2, 3, 1, 1, 4]})");
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    RunResult r = stack(p, options(m));
    REQUIRE(r.error);
    CHECK(r.error->message == "integer division by zero");
    CHECK(r.error->thread == 2);
    CHECK(r.error->block == "entry");
  }
}

// A loop body that reads tensors by index (get on a per-thread tensor with
// a negative or an i32 index, on a shared one, on a literal; size) runs in
// the dense form, reading each lane's event in place; 700 threads of
// different trip counts make the window compact and refill. Bit for bit the
// reference's outputs in every mode, and an index out of range is reported
// for the same thread with the same message.
const char* kIndexLoop = R"(func main(w: f64[6], c: f64[4], idx: i32[4], k: i64) -> (f64, i64) {
entry:
  acc = 0.0
  cnt = 0
  goto loop
loop:
  a = get(w, k)
  j = mod(k, 4)
  ii = get(idx, j)
  b = get(c, ii)
  j3 = mod(k, 3)
  t = get([1.5, 2.5, -1.0], j3)
  n = size(w)
  ab = mul(a, b)
  s = add(ab, t)
  acc = add(acc, s)
  cnt = add(cnt, n)
  k = sub(k, 1)
  done = lt(k, -6)
  branch done, finish, loop
finish:
  return acc, cnt
}
)";

std::string index_loop_inputs(int threads, int bad_thread) {
  std::string w, idx, k;
  for (int t = 0; t < threads; ++t) {
    const char* sep = t ? ", " : "";
    w += sep + std::string("[");
    for (int e = 0; e < 6; ++e)
      w += (e ? ", " : "") + std::to_string(0.5 * ((t * 7 + e * 3) % 23) - 4.0);
    w += "]";
    idx += sep + std::string("[") + std::to_string(t % 4) + ", " + std::to_string(-(t % 3) - 1) +
           ", " + std::to_string((t / 3) % 4) + ", 0]";
    k += sep + std::to_string(t == bad_thread ? 6 : (t * 5) % 12 - 6);
  }
  return "{\"w\": [" + w + "], \"c\": [[0.25, -3.0, 8.0, 1e-3]], \"idx\": [" + idx + "], \"k\": [" +
         k + "]}";
}

TEST_CASE("jit: a loop body reading tensors by index runs dense and matches the reference") {
  Prog p = load(kIndexLoop, index_loop_inputs(700, -1));
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    const bool dense = m.jit && m.persistent && jit::available();
    CHECK((mode_of(r, "main.loop") == "dense_chunks") == dense);
  }
  Prog bad = load(kIndexLoop, index_loop_inputs(700, 431));
  CHECK(same_error_in_every_mode(bad, reference(bad)) == 431);
}

// kIndexLoop inside an outer loop (the inner loop runs again from k0 three
// times), with a tensor literal, an integer division that can fail and a
// join block: a loop nest of four blocks.
const char* kIndexNest = R"(func main(w: f64[6], c: f64[4], idx: i32[4], k: i64) -> (f64, i64) {
entry:
  acc = 0.0
  cnt = 0
  rep = 0
  k0 = k
  goto outer
outer:
  k = k0
  goto loop
loop:
  a = get(w, k)
  j = mod(k, 4)
  ii = get(idx, j)
  b = get(c, ii)
  j3 = mod(k, 3)
  t = get([1.5, 2.5, -1.0], j3)
  n = size(w)
  ab = mul(a, b)
  s = add(ab, t)
  acc = add(acc, s)
  cnt = add(cnt, n)
  k = sub(k, 1)
  done = lt(k, -6)
  branch done, after, loop
after:
  q = div(cnt, 3)
  cnt = add(cnt, q)
  rep = add(rep, 1)
  more = lt(rep, 3)
  branch more, outer, finish
finish:
  return acc, cnt
}
)";

TEST_CASE("jit: a loop nest reading tensors by index is chained whole and matches the reference") {
  Prog p = load(kIndexNest, index_loop_inputs(700, -1));
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    const bool chained = m.jit && m.persistent && jit::available();
    for (const char* b : {"main.outer", "main.loop", "main.after"}) {
      CAPTURE(b);
      CHECK((mode_of(r, b) == "chained") == chained);
    }
  }
  // A bad index in the inner loop (thread 431's k starts at 6, past w's
  // end): the chain leaves that thread to the interpreter, which reports it.
  Prog bad = load(kIndexNest, index_loop_inputs(700, 431));
  CHECK(same_error_in_every_mode(bad, reference(bad)) == 431);
  // With --on-error record, thread 431 alone fails, as in the interpreter.
  RunResult r = recorded_as_interpreted(bad);
  REQUIRE(r.failed.size() == 1);
  CHECK(r.failed[0].thread == 431);
}

// In-place sets in a loop, and reads by index in a recursion whose blocks
// push and pop: compiled whole (chained, or whole blocks). A bad index in
// either leaves the thread to the interpreter as it was before the block
// (its stacks' depths put back, no element written), which reports it.
const char* kIndexRecursion = R"(func twice_sum(v: f64[5], i: i64, n: i64) -> f64 {
  if i >= n {
    return 0.0
  }
  x = v[i] * 2.0
  r = twice_sum(v, i + 1, n)
  return x + r
}

func main(v: f64[5], m: i64, n: i64) -> (f64, f64[5]) {
  w = v
  for i in range(m) {
    w[i] = w[i] + cast(i, dtype=f64)
  }
  return twice_sum(w, 0, n), w
}
)";

std::string index_recursion_inputs(int threads, int bad_set, int bad_get) {
  std::string v, m, n;
  for (int t = 0; t < threads; ++t) {
    const char* sep = t ? ", " : "";
    v += sep + std::string("[");
    for (int e = 0; e < 5; ++e) v += (e ? ", " : "") + std::to_string(0.25 * ((t * 3 + e) % 11));
    v += "]";
    m += sep + std::to_string(t == bad_set ? 6 : t % 6);
    n += sep + std::to_string(t == bad_get ? 7 : (t * 7) % 6);
  }
  return "{\"v\": [" + v + "], \"m\": [" + m + "], \"n\": [" + n + "]}";
}

// Every mode gives the reference's outputs bit for bit; compiled under the
// persistent schedule, no block leaves compiled code because it indexes,
// and `chained_block` runs in the chain.
void indexing_compiled_in_every_mode(const Prog& p, const std::string& chained_block) {
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    if (m.jit && m.persistent && jit::available()) {
      for (const auto& e : r.execution) {
        CAPTURE(e.block);
        CAPTURE(e.reason);
        if (e.mode == "segments" || e.mode == "interpreted")
          CHECK((e.reason.find("'get'") == std::string::npos &&
                 e.reason.find("'set'") == std::string::npos));
      }
      CHECK(mode_of(r, chained_block) == "chained");
    }
  }
}

TEST_CASE("jit: sets in a loop and reads in a recursion compile whole; a bad index is undone") {
  Prog p = load(kIndexRecursion, index_recursion_inputs(600, -1, -1), "main");
  indexing_compiled_in_every_mode(p, "main.body.4");
  for (auto bad_pair : {std::pair{317, -1}, std::pair{-1, 412}, std::pair{90, 91}}) {
    const int bad_set = bad_pair.first;  // (clang 15 cannot capture a structured binding)
    const int bad_get = bad_pair.second;
    CAPTURE(bad_set);
    CAPTURE(bad_get);
    Prog bad = load(kIndexRecursion, index_recursion_inputs(600, bad_set, bad_get), "main");
    RunResult want = reference(bad);
    same_error_in_every_mode(bad, want);
    CHECK(recorded_as_interpreted(bad).failed.size() == (bad_set >= 0) + (bad_get >= 0));
  }
}

// Reductions of a scalar and a scalar zeros (a transform's log-Jacobian is
// sum(x) of a scalar parameter) compile per lane, bit for bit as the
// kernels: a float sum is 0 + x (-0.0 gives 0.0), max and min keep NaN.
const char* kScalarReduce = R"(func main(x: f64, k: i64, b: bool) -> (f64, f64, f64, f64, f64, i64, i64, bool, bool, f64) {
  s = 0.0
  p = 0.0
  m = 0.0
  hi = 0.0
  lo = 0.0
  si = 0
  pi2 = 0
  z = zeros()
  for i in range(3) {
    v = x * cast(i - 1, dtype=f64)
    s = sum(v)
    p = prod(v)
    m = mean(v)
    hi = reduce_max(v)
    lo = reduce_min(v)
    si += sum(k * i)
    pi2 += prod(k + i)
    z += zeros() + sum(v) * 0.5
  }
  return s, p, m, hi, lo, si, pi2, any(b), all(b), z
}
)";

TEST_CASE("jit: reductions of a scalar and a scalar zeros compile, bit for bit") {
  std::string x, k, b;
  const char* xv[] = {"-0.0", "0.0", "1.5", "-2.25", "\"NaN\"", "\"Infinity\"", "\"-Infinity\"",
                      "1e-310"};
  for (int t = 0; t < 300; ++t) {
    const char* sep = t ? ", " : "";
    x += sep + std::string(xv[t % 8]);
    k += sep + std::to_string(t % 7 - 3);
    b += sep + std::string(t % 3 ? "true" : "false");
  }
  Prog p = load(kScalarReduce, "{\"x\": [" + x + "], \"k\": [" + k + "], \"b\": [" + b + "]}",
                "main");
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    if (m.jit && m.persistent && jit::available())
      for (const auto& e : r.execution) {
        CAPTURE(e.block);
        CAPTURE(e.reason);
        CHECK(e.reason.find("is not compiled") == std::string::npos);
      }
  }
  // -0.0 stays -0.0 in neither the kernel nor the code: the sum of -0.0 is 0.0.
  const double s0 = ref.outputs[0].as<double>()[0];
  CHECK_FALSE(std::signbit(s0));
}

// Small tensors in a recursion (f64[3]: zeros, sets of constant elements,
// elementwise arithmetic, copies into the callee's parameters, reads by
// index) compile whole, per lane with the events in memory, and the whole
// recursion runs in the chain. With a set at a per-thread index (which can
// fail) the block that copies tensors into the callee's parameters cannot
// be compiled whole: its rerun would find them written; it runs as segments,
// and a bad index fails in every mode as in the reference.
std::string small_vectors(bool checked) {
  return std::string(R"(func walk(v: f64[3], w: f64[3], k: i64, bad: i64) -> f64 {
  if k == 0 {
    return v[0] * w[0] + v[1] * w[1] - v[2] * w[2]
  }
  z = zeros(shape=[3])
  z[2] = cast(k, dtype=f64)
)") + (checked ? "  z[bad] += 0.5\n" : "  z[-3] += 0.5\n") +
         R"(  u = v * 0.5 + w * z - 1.0
  s = u[0] + u[-1]
  return walk(u, v + z, k - 1, bad) + s
}

func main(v: f64[3], k: i64, bad: i64) -> f64 {
  return walk(v, v * 2.0, k, bad)
}
)";
}

std::string small_vector_inputs(int threads, int bad_thread) {
  std::string v, k, bad;
  for (int t = 0; t < threads; ++t) {
    const char* sep = t ? ", " : "";
    v += sep + std::string("[") + std::to_string(0.1 * t) + ", " + std::to_string(1.0 - 0.01 * t) +
         ", 0.5]";
    k += sep + std::to_string(1 + t % 9);
    bad += sep + std::to_string(t == bad_thread ? 3 : t % 3);
  }
  return "{\"v\": [" + v + "], \"k\": [" + k + "], \"bad\": [" + bad + "]}";
}

TEST_CASE("jit: small tensors compile whole in a recursion; a block that may fail writes none") {
  Prog p = load(small_vectors(false).c_str(), small_vector_inputs(300, -1), "main");
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    if (m.jit && m.persistent && jit::available())
      for (const char* b : {"walk.entry", "walk.then.3", "walk.endif.1", "walk.endif.1.1"}) {
        CAPTURE(b);
        CHECK(mode_of(r, b) == "chained");
      }
  }
  Prog checked = load(small_vectors(true).c_str(), small_vector_inputs(300, -1), "main");
  RunResult want = reference(checked);
  RunOptions o;
  const RunResult r = stack(checked, o);
  same_bits(r, want);
  if (jit::available())
    for (const auto& e : r.execution)
      if (e.block == "walk.endif.1") {
        CHECK(e.mode == "segments");
        CHECK(e.reason.find("can fail in a block that writes the tensor 'walk.w' whole") !=
              std::string::npos);
      }
  Prog bad = load(small_vectors(true).c_str(), small_vector_inputs(300, 137), "main");
  CHECK(same_error_in_every_mode(bad, reference(bad)) == 137);
}

// The adjoint of theta[k + 1] read in a loop adds into the adjoint of theta
// at k + 1: a new version of the adjoint (`d = set(theta.a, i, ...)`) that
// goes back into its variable (`theta.a = d`). The stack VM makes that one
// set in place, so the block, whose get and set may fail, still compiles
// whole (it sets the element where it lies), and the gradient's recursion
// stays chained.
const char* kGradIndexLoop = R"(func lp(theta: f64[4], y: f64[12]) -> f64 {
  s = 0.0
  for t in range(3, 12) {
    mu = theta[0]
    for k in range(3) {
      mu = mu + theta[k + 1] * y[t - k - 1]
    }
    r = y[t] - mu
    s = s - 0.5 * r * r
  }
  return s
}

func main(theta: f64[4], y: f64[12]) -> (f64, f64[4]) {
  v, g = value_and_grad(lp, theta, y)
  return v, g
}
)";

TEST_CASE("jit: a gradient's accumulation into an indexed tensor's adjoint is set in place") {
  std::string theta, y;
  for (int t = 0; t < 70; ++t) {
    const char* sep = t ? ", " : "";
    theta += sep + std::string("[") + std::to_string(0.01 * t) + ", 0.5, -0.25, " +
             std::to_string(0.1 - 0.003 * t) + "]";
    std::string row;
    for (int i = 0; i < 12; ++i)
      row += (i ? ", " : "") + std::to_string(std::sin(0.7 * i + 0.1 * t));
    y += sep + ("[" + row + "]");
  }
  Prog p = load(kGradIndexLoop, "{\"theta\": [" + theta + "], \"y\": [" + y + "]}", "main");
  // (The reference interpreter of the module differentiates on its own,
  // rounding differently: the program interpreted is the yardstick.)
  RunResult ref = stack(p, options({false, false}));
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    if (m.jit && m.persistent && jit::available()) {
      size_t chained = 0;
      for (const auto& e : r.execution) {
        CAPTURE(e.block);
        CAPTURE(e.reason);
        CHECK(e.reason.find("writes the tensor") == std::string::npos);
        if (e.block.find("_vjp") != std::string::npos) CHECK(e.mode == "chained");
        chained += e.mode == "chained";
      }
      CHECK(chained >= 10);
    }
  }
}

// A hot recursion that cannot be chained (a draw of a shape is a batched
// kernel, a tensor lives across its call) calls a recursion whose blocks
// all compile whole: that one stays chained (a thread enters the chain once
// per call and runs the whole recursion there), the other blocks are
// compiled whole a chunk per call, and the outputs are the reference's.
const char* kMixedChain = R"(func sumto(x: f64, n: i64) -> f64 {
  if n <= 0 {
    return 0.0
  }
  return x * cast(n, dtype=f64) + sumto(x * 0.5, n - 1)
}

func tree(x: f64, d: i64, key: i64) -> f64 {
  if d == 0 {
    return sumto(x, 6)
  }
  key, k = split(key)
  u = uniform(k, shape=[2])
  a = tree(x + u[0], d - 1, key)
  return a + sumto(u[1], d + 2)
}

func main(x: f64, d: i64, key: i64) -> f64 {
  return tree(x, d, key)
}
)";

TEST_CASE("jit: a recursion compiled whole stays chained when its hot caller is not") {
  std::string x, d, key;
  for (int t = 0; t < 300; ++t) {
    const char* sep = t ? ", " : "";
    x += sep + std::to_string(0.01 * t);
    d += sep + std::to_string(t % 6);
    key += sep + std::to_string(t);
  }
  Prog p = load(kMixedChain, "{\"x\": [" + x + "], \"d\": [" + d + "], \"key\": [" + key + "]}",
                "main");
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    if (m.jit && m.persistent && jit::available()) {
      for (const char* b : {"sumto.entry", "sumto.then.3", "sumto.endif.1", "sumto.endif.1.1"}) {
        CAPTURE(b);
        CHECK(mode_of(r, b) == "chained");
      }
      CHECK(mode_of(r, "tree.entry") == "whole_block");
      CHECK(mode_of(r, "tree.endif.1") == "segments");
    }
  }
}

// Two sets of one tensor in one block whose later op can fail: a loop
// whose second set takes its index from the element the first one wrote,
// and a bubble sort's swap. The blocks compile whole (chained); a lane whose
// second set fails gets the first one's element back before the interpreter
// reruns the block, which then reports the index the reference reports
// (without the undo it reports the index 3 higher).
const char* kTwoSets = R"(func bump(x0: f64, n: i64) -> (f64[8], i64) {
  x = zeros(shape=[8])
  x[0] = x0
  for r in range(n) {
    x[0] = x[0] + 3.0
    k = cast(x[0], dtype=i64)
    x[k] = 1.0
  }
  swaps = 0
  for i in range(7) {
    j = 7 - i
    if x[j - 1] > x[j] {
      t = x[j - 1]
      x[j - 1] = x[j]
      x[j] = t
      swaps += 1
    }
  }
  return x, swaps
}
)";

std::string two_sets_inputs(int threads, int trips) {
  std::string x0, n;
  for (int t = 0; t < threads; ++t) {
    const char* sep = t ? ", " : "";
    x0 += sep + std::to_string(t % 3 - 1) + ".0";
    n += sep + std::to_string(t % trips);
  }
  return "{\"x0\": [" + x0 + "], \"n\": [" + n + "]}";
}

TEST_CASE("jit: two sets of a tensor in a block compile whole; a later failure undoes the first") {
  Prog p = load(kTwoSets, two_sets_inputs(300, 3), "bump");
  indexing_compiled_in_every_mode(p, "bump.body.4");
  // n = 3: the third iteration's index is 8, 9 or 10.
  Prog bad = load(kTwoSets, two_sets_inputs(300, 4), "bump");
  RunResult want = reference(bad);
  same_error_in_every_mode(bad, want);
  CHECK(want.error->message.find("index 8 is out of range") != std::string::npos);
  RunResult rec = recorded_as_interpreted(bad);
  REQUIRE(rec.failed.size() == 75);
  for (const auto& e : rec.failed) {
    CAPTURE(e.thread);
    CHECK(e.message.find("index " + std::to_string(8 + e.thread % 3) + " is out of range") !=
          std::string::npos);
  }
}

// Elements of a matrix read and written as A[i, j] in a loop nest (one get
// or set with two indices each, mixed i32 and i64 indices, a negative one):
// elimination below the diagonal, then `A[i][j] += v` written with two
// brackets. The nest compiles whole and runs in the chain; a thread whose
// column index is past the end fails in every mode with the reference's
// message, its row index being in range.
const char* kMatrixNest = R"(func elim(A: f64[4, 4], c: i32, bad: i64) -> (f64[4, 4], f64) {
  for k in range(3) {
    for i in range(k + 1, 4) {
      f = A[i, k] / A[k, k]
      for j in range(k, 4) {
        A[i, j] -= f * A[k, j]
      }
    }
  }
  for i in range(4) {
    A[i][c] += A[-1, i]
  }
  A[0, bad] = 1.0
  return A, A[3, -1] * A[c, 2]
}
)";

std::string matrix_nest_inputs(int threads, int bad_thread) {
  std::string a, c, bad;
  for (int t = 0; t < threads; ++t) {
    const char* sep = t ? ", " : "";
    a += sep + std::string("[");
    for (int i = 0; i < 4; ++i) {
      a += i ? ", [" : "[";
      for (int j = 0; j < 4; ++j)
        a += (j ? ", " : "") + std::to_string(i == j ? 5 + (t % 7) : (i * 3 + j + t) % 5 - 2) + ".0";
      a += "]";
    }
    a += "]";
    c += sep + std::to_string(t % 4);
    bad += sep + std::to_string(t == bad_thread ? 4 : t % 4);
  }
  return "{\"A\": [" + a + "], \"c\": [" + c + "], \"bad\": [" + bad + "]}";
}

TEST_CASE("jit: A[i, j] in a loop nest is one get or set, compiled whole in the chain") {
  Prog p = load(kMatrixNest, matrix_nest_inputs(300, -1), "elim");
  indexing_compiled_in_every_mode(p, "elim.body.18");
  Prog bad = load(kMatrixNest, matrix_nest_inputs(300, 211), "elim");
  RunResult want = reference(bad);
  CHECK(same_error_in_every_mode(bad, want) == 211);
  CHECK(want.error->message.find("index 4 is out of range for 'set' on a dimension of size 4") !=
        std::string::npos);
  RunResult rec = recorded_as_interpreted(bad);
  REQUIRE(rec.failed.size() == 1);
  CHECK(rec.failed[0].thread == 211);
}

// A recursion reading a per-thread 3-d tensor as g[a][b][c] (rows of rows,
// read in place), a negative index and the size of a row; `bad` threads
// index past the end at some depth.
const char* kRowRecursion = R"(func walk(g: i64[4, 3, 5], a: i64, b: i64, k: i64) -> i64 {
  if k == 0 {
    return g[a][b][-1] + size(g[a])
  }
  c = g[a][b][k % 5]
  n = walk(g, (a + c) % 4, (b + k) % 3, k - 1)
  return n + c * g[a][-1][k % 5]
}

func main(g: i64[4, 3, 5], k: i64, bad: i64) -> i64 {
  return walk(g, bad, 0, k)
}
)";

std::string row_recursion_inputs(int threads, int bad_thread) {
  std::string g, k, bad;
  for (int t = 0; t < threads; ++t) {
    const char* sep = t ? ", " : "";
    g += sep + std::string("[");
    for (int a = 0; a < 4; ++a) {
      g += a ? ", [" : "[";
      for (int b = 0; b < 3; ++b) {
        g += b ? ", [" : "[";
        for (int c = 0; c < 5; ++c)
          g += (c ? ", " : "") + std::to_string((t * 7 + (a * 15 + b * 5 + c) * 3) % 13);
        g += "]";
      }
      g += "]";
    }
    g += "]";
    k += sep + std::to_string(t % 9);
    bad += sep + std::to_string(t == bad_thread ? 4 : t % 4);
  }
  return "{\"g\": [" + g + "], \"k\": [" + k + "], \"bad\": [" + bad + "]}";
}

TEST_CASE("jit: rows of a tensor read in place (g[a][b][c]) compile whole; a bad index is undone") {
  std::string text = kRowRecursion;
  Prog p = load(text, row_recursion_inputs(500, -1), "main");
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    if (m.jit && m.persistent && jit::available())
      for (const auto& e : r.execution) {  // every block of walk chained
        CAPTURE(e.block);
        CAPTURE(e.reason);
        if (e.block.rfind("walk.", 0) == 0) CHECK(e.mode == "chained");
      }
  }
  Prog bad = load(text, row_recursion_inputs(500, 333), "main");
  RunResult want = reference(bad);
  same_error_in_every_mode(bad, want);
  CHECK(recorded_as_interpreted(bad).failed.size() == 1);
}

TEST_CASE("jit: a loop nest paused inside its inner loop resumes there and matches") {
  // Inner loops of up to 9000 iterations: a thread uses up the chain's
  // budget inside the inner loop and starts there again at a later step
  // (a copy of the loop's blocks takes it back to the outer loop's header).
  Prog p = load(R"(func main(n: i64, m: i64) -> (i64, i64) {
entry:
  s = 0
  i = 0
  goto outer
outer:
  j = 0
  goto inner
inner:
  t = mul(i, j)
  s = add(s, t)
  s = mod(s, 1000003)
  j = add(j, 1)
  d = lt(j, m)
  branch d, inner, after
after:
  i = add(i, 1)
  e = lt(i, n)
  branch e, outer, finish
finish:
  return s, i
}
)",
                two_inputs("n", "m", 300, [](int t) { return 1 + t % 4; },
                           [](int t) { return t % 7 == 0 ? 9000 : 1 + (t * 13) % 50; }));
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    same_bits(r, ref);
    if (m.jit && m.persistent && jit::available()) {
      CHECK(mode_of(r, "main.inner") == "chained");
      CAPTURE(r.log);
      CHECK(r.log.find(", 0 threads paused") == std::string::npos);
    }
  }
}

TEST_CASE("jit: errors inside a persistent loop: the same thread and message in every mode") {
  // Thread 1 divides by zero in its 3rd iteration, thread 3 casts NaN in its 2nd.
  Prog p = load(R"(func main(d: i64, x: f64) -> i64 {
entry:
  acc = 0
  goto loop
loop:
  d = sub(d, 1)
  q = div(100, d)
  acc = add(acc, q)
  x = mul(x, x)
  c = cast(x, dtype=i64)
  acc = add(acc, c)
  done = le(d, -2)
  branch done, finish, loop
finish:
  return acc
}
)",
                R"({"d": [10, 3, 9, 8], "x": [0.5, 0.25, 1.0, "Infinity"]})");
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p, options(m));
    REQUIRE(r.error);
    // Iteration 1: every thread's division is fine and thread 3 casts inf.
    CHECK(r.error->message == "cannot cast inf to i64: out of range");
    CHECK(r.error->thread == 3);
  }
  Prog p2 = load(R"(func main(d: i64) -> i64 {
entry:
  acc = 0
  goto loop
loop:
  d = sub(d, 1)
  q = div(100, d)
  acc = add(acc, q)
  done = le(d, -2)
  branch done, finish, loop
finish:
  return acc
}
)",
                 R"({"d": [10, 3, 9, 8]})");
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult r = stack(p2, options(m));
    REQUIRE(r.error);
    CHECK(r.error->message == "integer division by zero");
    CHECK(r.error->thread == 1);
    CHECK(r.error->block == "loop");
  }
}

TEST_CASE("persistent schedule: --max-steps stops a loop block; steps, stats and trace agree") {
  Prog p = load(R"(func main(n: i64) -> i64 {
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
)",
                R"({"n": [3, 0, 1000000000, 5]})");
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunOptions o = options(m);
    o.max_steps = 100;
    RunResult r = stack(p, o);
    REQUIRE(r.error);
    CHECK(r.error->message == "--max-steps 100 exceeded");
    CHECK(r.error->thread == 2);
  }
  Prog q = load(R"(func main(n: i64) -> i64 {
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
)",
                R"({"n": [3, 0, 40, 5, 17, 1]})");
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    fs::path path = fs::temp_directory_path() / ("ab_jit_trace_" + std::to_string(::getpid()));
    Stats stats;
    RunResult r;
    {
      TraceWriter trace(path.string(), MaskFormat::Bits);
      RunOptions o = options(m);
      o.trace = &trace;
      o.stats = &stats;
      r = stack(q, o);
      trace.close();
    }
    REQUIRE_FALSE(r.error);
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);  // header
    int64_t steps = 0, loop_steps = 0, lane_ops = 0;
    while (std::getline(in, line)) {
      auto j = nlohmann::json::parse(line);
      CHECK(j["step"] == steps);
      const std::string mask = j["mask"];
      CHECK(std::count(mask.begin(), mask.end(), '1') == j["active"]);
      if (j["block"] == "main.loop") {
        ++loop_steps;
        lane_ops += j["active"].get<int64_t>();
      }
      ++steps;
    }
    fs::remove(path);
    CHECK(steps == r.steps);
    CHECK(stats.steps == r.steps);
    // The loop block runs once per iteration of its longest thread (40)
    // whatever the schedule, on the threads still in it: 3+40+5+17+1 lanes.
    CHECK(loop_steps == 40);
    CHECK(lane_ops == 66);
  }
}

TEST_CASE("jit: a loop body that cannot fail, several iterations per call, window refilled") {
  // Collatz with a float accumulator: trip counts 0 to a few hundred, 1500
  // threads (the 256-lane window is refilled many times); the compiled body
  // runs several iterations per call (jit::Segment::copies).
  const char* prog = R"(func main(n: i64, x: f64) -> (i64, f64, i64) {
entry:
  steps = 0
  done = le(n, 1)
  branch done, finish, loop
loop:
  odd = mod(n, 2)
  up = mul(n, 3)
  up1 = add(up, 1)
  down = div(n, 2)
  isodd = eq(odd, 1)
  n = select(isodd, up1, down)
  x = mul(x, 0.999)
  steps = add(steps, 1)
  done = le(n, 1)
  branch done, finish, loop
finish:
  return steps, x, n
}
)";
  std::string ns = "[", xs = "[";
  uint64_t g = 12345;
  for (int i = 0; i < 1500; ++i) {
    g = g * 6364136223846793005ULL + 1442695040888963407ULL;
    int64_t v = i % 97 == 0 ? 1 : static_cast<int64_t>((g >> 33) % 100000);
    ns += (i ? "," : "") + std::to_string(v);
    xs += (i ? "," : "") + std::to_string(1.0 + static_cast<double>(i % 7));
  }
  Prog p = load(prog, R"({"n": )" + ns + R"(], "x": )" + xs + "]}");
  RunResult ref = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    same_bits(stack(p, options(m)), ref);
    RunOptions o = options(m);
    o.lanes = 300;  // streaming: lanes take new inputs as threads halt
    same_bits(stack(p, o), ref);
    Stats stats;
    o = options(m);
    o.stats = &stats;
    RunResult r = stack(p, o);
    same_bits(r, ref);
    CHECK(stats.steps == r.steps);
  }
  // One window (six threads): the loop block runs once per iteration of the
  // longest thread (n = 27: 111 iterations, not a multiple of the copies),
  // each thread's iterations counted once, whatever the path.
  Prog q = load(prog, R"({"n": [27, 1, 6, 7, 0, 9], "x": [1, 2, 3, 4, 5, 6]})");
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    Stats stats;
    RunOptions o = options(m);
    o.stats = &stats;
    RunResult r = stack(q, o);
    REQUIRE_FALSE(r.error);
    size_t loop = 0;
    while (loop < stats.block_names.size() && stats.block_names[loop] != "main.loop") ++loop;
    REQUIRE(loop < stats.block_names.size());
    CHECK(stats.block_executions[loop] == 111);
    CHECK(r.outputs[0].as<int64_t>()[0] == 111);
    if (m.jit && m.persistent && jit::available()) {
      CHECK(mode_of(r, "main.loop") == "dense_loop");
      CHECK(r.log.find("1 loop blocks run several iterations per call") != std::string::npos);
    } else {
      CHECK(mode_of(r, "main.loop") != "dense_loop");
    }
  }
}

TEST_CASE("jit: the last thread in a loop runs on alone; outputs and steps as in every mode") {
  // One thread loops 2,000 times, 300 stop at once: once the window holds
  // the long thread only, its compiled body runs without masks
  // (jit::DenseSoloFn), up to each checkpoint when progress is polled.
  const char* prog = R"(func main(n: i64, seed: i64) -> (i64, i64) {
entry:
  i = 0
  x = seed
  goto loop
loop:
  more = lt(i, n)
  branch more, body, done
body:
  y = mul(x, 6364136223846793005)
  x = add(y, 1442695040888963407)
  i = add(i, 1)
  goto loop
done:
  return x, i
}
)";
  std::string ns = "[2000", seeds = "[7";
  for (int i = 1; i <= 300; ++i) {
    ns += i % 50 == 0 ? ",3" : ",0";
    seeds += "," + std::to_string(i);
  }
  Prog p = load(prog, R"({"n": )" + ns + R"(], "seed": )" + seeds + "]}");
  RunResult ref = reference(p);
  std::optional<int64_t> steps;
  for (bool polled : {false, true}) {
    for (Mode m : kModes) {
      if (!m.persistent) continue;  // min-pc counts steps differently
      CAPTURE(polled);
      CAPTURE(m.jit);
      RunOptions o = options(m);
      int64_t calls = 0, last = -1;
      bool monotone = true;
      if (polled)
        o.progress = [&](int64_t s, int64_t) {
          monotone = monotone && s > last;
          last = s;
          ++calls;
        };
      RunResult r = stack(p, o);
      same_bits(r, ref);
      CHECK(r.outputs[1].as<int64_t>()[0] == 2000);
      if (!steps) steps = r.steps;
      CHECK(r.steps == *steps);
      if (polled) {
        CHECK(monotone);
        CHECK(calls >= *steps / kPollSteps - 1);
      }
    }
  }
}

TEST_CASE("jit: every example program compiles (no internal error, no fallback)") {
  const fs::path dir = fs::path(AUTOBATCH_SOURCE_DIR) / "programs";
  int checked = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".ab") continue;
    fs::path inputs = e.path();
    inputs.replace_extension(".json");
    if (!fs::exists(inputs)) continue;
    std::ifstream f(e.path());
    std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    std::string entry;
    const std::string tag = "# entry: ";
    if (auto at = text.find(tag); at != std::string::npos)
      entry = text.substr(at + tag.size(), text.find('\n', at) - at - tag.size());
    CAPTURE(e.path().filename().string());
    std::ifstream fi(inputs);
    std::string in((std::istreambuf_iterator<char>(fi)), std::istreambuf_iterator<char>());
    Prog p = load(text, in, entry);
    RunOptions o;
    o.jit = true;
    RunResult r = stack(p, o);
    CHECK_FALSE(r.error);
    if (jit::available()) {
      CHECK(r.log.find("internal error") == std::string::npos);
      for (const auto& e : r.execution) CHECK(e.reason.find("the JIT failed") == std::string::npos);
    }
    ++checked;
  }
  CHECK(checked >= 20);
}

// Recursion: its four blocks compile whole (jit::BlockFn),
// its frames' f64, i32 and bool variables pushed and popped by the compiled
// code. Threads go 0 to jit::kFlatLevels + 12 calls deep: past the stacks'
// first kFlatLevels levels the compiled code stops and the interpreter runs
// the rest of the chunk (and makes the rows), in chunks of 256 and of less.
TEST_CASE("jit: recursive blocks compiled whole, past the rows and back, match the reference") {
  const char* text = R"(func walk(n: i64, x: f64, k: i32, f: bool) -> (f64, i32, bool) {
entry:
  z = le(n, 0)
  branch z, base, recur
base:
  return x, k, f
recur:
  m = sub(n, 1)
  x2 = mul(x, 1.5)
  y = add(x2, 0.25)
  k2 = add(k, 3)
  g = eq(f, false)
  a, b, c = call walk(m, y, k2, g)
  s = add(a, x)
  t = sub(b, k)
  u = eq(c, f)
  return s, t, u
}
)";
  std::string n, x, k, f;
  for (int i = 0; i < 300; ++i) {
    const char* sep = i ? ", " : "";
    n += sep + std::to_string((i * 7) % (jit::kFlatLevels + 13));
    x += sep + std::to_string(0.5 * i - 20);
    k += sep + std::to_string(i % 11 - 5);
    f += sep + std::string(i % 3 ? "true" : "false");
  }
  Prog p = load(text,
                "{\"n\": [" + n + "], \"x\": [" + x + "], \"k\": [" + k + "], \"f\": [" + f + "]}");
  RunResult want = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult got = stack(p, options(m));
    same_bits(want, got);
    if (m.jit && jit::available())
      CHECK(blocks_in(got, "whole_block") + blocks_in(got, "chained") == 4);
  }
  // Streaming lanes: stacks cleared and refilled per lane.
  RunOptions o = options(kModes[0]);
  o.lanes = 5;
  same_bits(want, stack(p, o));
}

// The chain (jit::ChainFn): under the persistent schedule, a thread runs on
// alone through the blocks compiled whole. Here `half` divides by a
// per-thread value, so its first block is interpreted: its call to `inc`
// comes from outside the chain and `inc` returns there. The loop of `main`
// runs up to 12000 iterations of about six blocks, calling `half` every
// 5000: past a chain call's budget of blocks per thread, so a thread
// pauses and comes back.
// Every mode, the lanes mode and the runs that do not chain (--stats,
// --max-steps, min-pc) give the reference's outputs; one thread dividing
// by zero is named as the reference names it.
TEST_CASE("jit: the chain of blocks compiled whole: budget, returns in and out of it, errors") {
  const char* text = R"(func inc(a: i64) -> i64 {
  return a + 1
}

func half(a: i64, d: i64) -> i64 {
  q = a / d
  return inc(q) % 1000003
}

func main(n: i64, d: i64) -> i64 {
  s = 0
  i = 0
  while i < n {
    s = (s + inc(i)) % 1000000007
    if i % 5000 == 4999 {
      s = half(s, d) + i
    }
    i = i + 1
  }
  return s
}
)";
  Prog p = load(text,
                two_inputs("n", "d", 40, [](int i) { return i == 3 ? 12000 : (i * 37) % 300; },
                           [](int i) { return 1 + i % 3; }),
                "main");
  RunResult want = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunResult got = stack(p, options(m));
    same_bits(want, got);
    const bool chained = blocks_in(got, "chained") > 0;
    CHECK(chained == (m.jit && m.persistent && jit::available()));
    if (chained) {
      // Thread 3 runs 5000 iterations of some six blocks in the chain
      // before its first division: more than one call's budget.
      CHECK(got.log.find("chain: ") != std::string::npos);
      CHECK(got.log.find(", 0 threads paused") == std::string::npos);
    }
  }
  RunOptions o = options(kModes[0]);
  o.lanes = 7;
  same_bits(want, stack(p, o));
  Stats stats;
  o = options(kModes[0]);
  o.stats = &stats;
  RunResult r = stack(p, o);
  same_bits(want, r);
  // --stats changes nothing: the same plan and steps as without.
  CHECK(blocks_in(r, "chained") == blocks_in(stack(p, options(kModes[0])), "chained"));
  CHECK(stats.steps == r.steps);
  CHECK(r.steps == stack(p, options(kModes[0])).steps);
  o = options(kModes[0]);
  o.max_steps = 1000000;
  r = stack(p, o);
  same_bits(want, r);
  CHECK(blocks_in(r, "chained") == 0);

  // Thread 5 divides by zero (in the interpreted block, after 4999
  // iterations in the chain).
  Prog q = load(text,
                two_inputs("n", "d", 40, [](int i) { return i == 5 ? 6000 : (i * 37) % 300; },
                           [](int i) { return i == 5 ? 0 : 2; }),
                "main");
  CHECK(same_error_in_every_mode(q, reference(q)) == 5);
}

// The stack bound inside the chain: a call by a thread that already has as
// many frames as the bound allows stops the chain there (its rows exist:
// the bound is below the kFlatLevels levels compiled code addresses), and the
// interpreter reports it, as in every other mode; with --on-error record
// the other threads finish.
TEST_CASE("jit: the stack bound reached inside the chain is reported as in every mode") {
  const char* text = R"(func down(n: i64) -> i64 {
  if n <= 0 {
    return 0
  }
  return down(n - 1) + 2
}
)";
  Prog p = load(text, R"({"n": [5, 12, 30, 19, 40, 3, 18, 25]})");
  RunOptions base = options(kModes[3]);  // interpreted, min-pc
  base.max_stack_depth = 20;
  RunResult want = stack(p, base);
  REQUIRE(want.error);
  base.record_errors = true;
  RunResult want_rec = stack(p, base);
  REQUIRE_FALSE(want_rec.error);
  REQUIRE(want_rec.failed.size() >= 2);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    RunOptions o = options(m);
    o.max_stack_depth = 20;
    RunResult got = stack(p, o);
    REQUIRE(got.error);
    CHECK(got.error->thread == want.error->thread);
    CHECK(got.error->message == want.error->message);
    o.record_errors = true;
    RunResult rec = stack(p, o);
    same_bits(want_rec, rec);
    REQUIRE(rec.failed.size() == want_rec.failed.size());
    for (size_t k = 0; k < rec.failed.size(); ++k) {
      CHECK(rec.failed[k].thread == want_rec.failed[k].thread);
      CHECK(rec.failed[k].message == want_rec.failed[k].message);
    }
  }
}

// A step of the chain can hold whole recursions of many threads: the cancel
// flag and the progress callback are looked at within it (every few million
// blocks), not only every kPollSteps steps, of which such a run has few.
TEST_CASE("jit: the chain looks at the cancel flag and calls progress within a step") {
  if (!jit::available()) return;
  const char* text = R"(func fib(n: i64) -> i64 {
  if n <= 1 {
    return 1
  }
  return fib(n - 1) + fib(n - 2)
}
)";
  std::string n;
  for (int i = 0; i < 512; ++i) n += std::string(i ? ", " : "") + "22";
  Prog p = load(text, "{\"n\": [" + n + "]}");
  std::atomic<bool> stop{true};
  RunOptions o = options(kModes[0]);
  o.cancel = &stop;
  RunResult r = stack(p, o);
  REQUIRE(r.error);
  CHECK(r.cancelled);
  CHECK(r.steps < kPollSteps);
  CHECK(r.error->message.find("interrupted") != std::string::npos);

  // Progress, likewise: heard within the steps, never going back.
  int64_t calls = 0, last_steps = -1, last_finished = -1;
  bool monotone = true;
  o = options(kModes[0]);
  o.progress = [&](int64_t s, int64_t f) {
    monotone = monotone && s >= last_steps && f >= last_finished;
    last_steps = s;
    last_finished = f;
    ++calls;
  };
  r = stack(p, o);
  REQUIRE_FALSE(r.error);
  CHECK(r.steps < kPollSteps);
  CHECK(calls >= 5);  // some 29 million calls, a poll every 2^20: about 28 polls
  CHECK(monotone);
  REQUIRE(r.outputs.size() == 1);
  for (int64_t t = 0; t < 512; ++t) CHECK(r.outputs[0].as<int64_t>()[t] == 28657);
}

// Inputs {"n": [...], "x": [...]} of a recursion's depth and value, thread i
// getting n(i) and x(i).
std::string depth_inputs(int threads, const std::function<int(int)>& n,
                         const std::function<double(int)>& x) {
  std::string ns, xs;
  for (int i = 0; i < threads; ++i) {
    ns += std::string(i ? ", " : "") + std::to_string(n(i));
    xs += std::string(i ? ", " : "") + std::to_string(x(i));
  }
  return "{\"n\": [" + ns + "], \"x\": [" + xs + "]}";
}

// The chain keeps a thread's stack entries in local arrays and copies them
// back to the stacks' rows when the thread leaves; the rows of the first
// kFlatLevels levels are made before it runs. A thread within them never stops
// for a row (no block is left to the interpreter), and one that enters
// deeper than that holds a window of its stacks (a block is interpreted
// where a window ends); both give the reference's outputs. (Threads the
// budget pauses mid-recursion, and their copies out and back in: the fib of
// the test above, whose outputs are checked.)
TEST_CASE("jit: the chain's local stacks: rows made up front, threads deeper than the rows") {
  if (!jit::available()) return;
  // (n % 50: a second, shallower recursion now and then, a few hundred
  // calls for n near 256; n % 3 made tens of thousands.)
  const char* text = R"(func depth(n: i64, x: f64) -> f64 {
  if n <= 0 {
    return x
  }
  y = depth(n - 1, x * 0.5 + 1.0)
  if n % 50 == 0 {
    return y + depth(n / 50, y)
  }
  return y - x
}
)";
  auto run = [&](int lo, int span, const char* want_log, bool want) {
    Prog p = load(text, depth_inputs(
                            300, [&](int i) { return lo + (i * 7) % span; },
                            [](int i) { return 0.25 * i - 3; }));
    RunResult ref = reference(p);
    RunResult got = stack(p, options(kModes[0]));
    same_bits(ref, got);
    INFO(got.log);
    CHECK(got.log.find("chain: ") != std::string::npos);
    CHECK((got.log.find(want_log) != std::string::npos) == want);
  };
  const int rows = static_cast<int>(jit::kFlatLevels);
  run(0, rows - 3, ", 0 blocks left to the interpreter", true);
  run(rows - 2, 15, ", 0 blocks left to the interpreter", false);
}

// A chain with many stacks holds fewer levels of each (Tuning::
// chain_stack_words over the number of stacks, at least kChainMinLevels):
// 100 values saved across a recursive call, threads from 0 to 1,500 calls
// deep, past what the chain holds and back, with the reference's outputs.
TEST_CASE("jit: a chain of many stacks holds fewer levels; deeper threads run in windows") {
  if (!jit::available()) return;
  std::string body, sum;
  for (int i = 0; i < 100; ++i) {
    body += "  a" + std::to_string(i) + " = x * " + std::to_string(0.5 + 0.01 * i) + "\n";
    sum += " + a" + std::to_string(i);
  }
  const std::string text = "func deep(n: i64, x: f64) -> f64 {\n  if n <= 0 {\n    return x\n  }\n" +
                           body + "  y = deep(n - 1, x * 0.999 + 0.001)\n  return y * 0.5" + sum +
                           "\n}\n";
  Prog p = load(text, depth_inputs(
                          200, [](int i) { return (i * 37) % 1500; },
                          [](int i) { return 0.01 * i - 1.0; }));
  RunResult ref = reference(p);
  RunResult got = stack(p, options(kModes[0]));
  same_bits(ref, got);
  INFO(got.log);
  const size_t at = got.log.find("stacks held ");
  REQUIRE(at != std::string::npos);
  const long levels = std::stol(got.log.substr(at + 12));
  CHECK(levels >= static_cast<long>(jit::kChainMinLevels));
  CHECK(levels < 1500);
  CHECK(got.log.find(", 0 blocks left to the interpreter") == std::string::npos);
}

// Recursions deeper than the chain's local arrays stay in compiled code: a
// thread holds a window of each stack (the levels below it stay in the VM's
// stacks, past kFlatLevels in its per-thread vectors too), and only the
// block where a window fills or empties is interpreted (the return through
// the pc window's mark goes on with no block interpreted). Two call sites,
// a value saved across each, threads up to 7,000 calls deep and some past
// the stack bound; the outputs and the error are the reference's, and the
// interpreted blocks are a few per window, not one per level.
TEST_CASE("jit: a recursion thousands of calls deep runs in windows of the chain's stacks") {
  if (!jit::available()) return;
  const char* text = R"(func walk(n: i64, acc: f64) -> f64 {
  if n <= 0 {
    return acc
  }
  a = acc * 0.999 + cast(n % 7, dtype=f64)
  if n % 3 == 0 {
    r = walk(n - 1, a)
    return r * 0.5 + a
  }
  r2 = walk(n - 1, a + 1.0)
  return r2 - cast(n % 3, dtype=f64) * a * 0.25
}
)";
  const int threads = 64;
  Prog p = load(text, R"({"n": [)" + [&] {
    std::string ns;
    for (int i = 0; i < threads; ++i)
      ns += std::string(i ? ", " : "") + std::to_string(i % 4 == 0 ? i : (i * 977) % 7000);
    return ns;
  }() + R"(], "acc": [0.5]})");
  RunResult want = reference(p);
  for (Mode m : kModes) {
    CAPTURE(m.jit);
    CAPTURE(m.persistent);
    same_bits(want, stack(p, options(m)));
  }
  RunResult got = stack(p, options(kModes[0]));
  INFO(got.log);
  const size_t at = got.log.find(" blocks left to the interpreter");
  REQUIRE(at != std::string::npos);
  const size_t from = got.log.rfind(", ", at);
  const long left = std::stol(got.log.substr(from + 2, at - from - 2));
  CHECK(left > 0);
  CHECK(left < threads * 20);  // one per level past the arrays: about 150,000
  Stats stats, stats_int;
  RunOptions o = options(kModes[0]);
  o.stats = &stats;
  stack(p, o);
  RunOptions oi = options(kModes[3]);
  oi.stats = &stats_int;
  stack(p, oi);
  CHECK(stats.peak_stack_depth > 6000);
  CHECK(stats.peak_stack_depth == stats_int.peak_stack_depth);
  // The bound: threads 4,000 deep and more fail, as in every other mode.
  o = options(kModes[0]);
  o.max_stack_depth = 4000;
  oi = options(kModes[3]);
  oi.max_stack_depth = 4000;
  RunResult e_jit = stack(p, o), e_int = stack(p, oi);
  REQUIRE(e_jit.error);
  REQUIRE(e_int.error);
  CHECK(e_jit.error->message == e_int.error->message);
}

// Copies of a callee's first blocks (Gen::chain): a call jumps to a copy
// made for its call site, whose returns go straight back to that site. Two
// call sites of one callee return to different blocks; the callee's first
// blocks hold a branch with two returns; threads go past the kFlatLevels
// levels the chain's stacks hold (stuck there, interpreted, and back), and pause on the
// budget inside the recursion. The outputs must be the reference's.
TEST_CASE("jit: the chain's copies of a callee's first blocks return to their call site") {
  const char* text = R"(func leafy(n: i64, m: i64) -> i64 {
  if n <= 1 {
    if m > 0 {
      return n + m
    }
    return 1 - m
  }
  a = leafy(n - 1, m) * 3
  b = leafy(n - 2, m - 1)
  return (a + b) % 1000003
}

func deep(n: i64) -> i64 {
  if n <= 0 {
    return 7
  }
  return deep(n - 1) + n
}

func main(n: i64, m: i64) -> i64 {
  return leafy(n, m) + deep(n * 15)
}
)";
  Prog p = load(text,
                two_inputs("n", "m", 48, [](int i) { return i % 20; },
                           [](int i) { return i % 5 - 2; }),
                "main");
  RunResult want = reference(p);
  for (Mode md : kModes) {
    CAPTURE(md.jit);
    CAPTURE(md.persistent);
    RunResult got = stack(p, options(md));
    same_bits(want, got);
    if (md.jit && md.persistent && jit::available()) {
      // Every call site has its copy: leafy's two recursive calls, deep's,
      // and main's calls of leafy and deep (deep's return block comes
      // before its entry: a copy follows backward jumps too).
      CHECK(blocks_in(got, "chained") > 0);
      CHECK(got.log.find("(5 call sites jump") != std::string::npos);
      CHECK(got.log.find(", 0 threads paused") == std::string::npos);
    }
  }
  RunOptions o = options(kModes[0]);
  o.lanes = 5;
  same_bits(want, stack(p, o));
}
