// Every elementwise primitive the JIT compiles (ops.def's Jit column other
// than None): for each of its dtype signatures, a block of three of its
// instructions over many operand pairs (NaN, infinities, -0, edge integers,
// bad parameters) gives the same bits and the same error with the JIT on as
// with it off, and is really compiled (jit::supported, and the VM's log
// counts every instruction fused). Also the derivations from ops.def's
// columns: if_convert's safety rule, the per-thread wiring and the JIT's
// support list.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "io/inputs.h"
#include "ir/ops.h"
#include "parse/parser.h"
#include "passes/if_convert.h"
#include "passes/pipeline.h"
#include "passes/verify.h"
#include "vm/jit/jit.h"
#include "vm/kernels/scalar.h"
#include "vm/stack/stack_vm.h"
#include "stack_harness.h"

namespace {

using namespace ab;
using nlohmann::json;

using Loaded = stack_harness::Prog;

Loaded load_prog(const std::string& text, const json& inputs, const std::string& entry = "main") {
  return stack_harness::load(text, inputs.dump(), entry);
}

// The program's entry was given to load_prog.
RunResult run_prog(const Loaded& p, bool jit, bool persistent) {
  RunOptions o;
  o.jit = jit;
  o.persistent = persistent;
  return stack_harness::stack(p, o);
}

// Same bits (any NaN equals any NaN: the sign of a NaN the hardware makes
// depends on operand order) and the same error.
void same_results(const RunResult& a, const RunResult& b) {
  REQUIRE(bool(a.error) == bool(b.error));
  if (a.error) {
    CHECK(a.error->message == b.error->message);
    CHECK(a.error->thread == b.error->thread);
    return;
  }
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const Array& x = a.outputs[i];
    const Array& y = b.outputs[i];
    REQUIRE(x.type.dtype == y.type.dtype);
    REQUIRE(x.byte_size() == y.byte_size());
    size_t bad = 0;
    if (is_float(x.type.dtype)) {
      const size_t w = dtype_size(x.type.dtype), n = x.byte_size() / w;
      for (size_t k = 0; k < n; ++k) {
        const std::byte* u = x.data.data() + k * w;
        const std::byte* v = y.data.data() + k * w;
        double du = w == 8 ? x.as<double>()[k] : x.as<float>()[k];
        double dv = w == 8 ? y.as<double>()[k] : y.as<float>()[k];
        if (std::isnan(du) && std::isnan(dv)) continue;
        if (std::memcmp(u, v, w) != 0) ++bad;
      }
    } else {
      bad = std::memcmp(x.data.data(), y.data.data(), x.byte_size()) != 0;
    }
    CAPTURE(i);
    CHECK(bad == 0);
  }
}

const char* dname(DType d) { return dtype_name(d); }

// Operand values by dtype: every awkward case; `tame`: positive, finite,
// moderate (no op fails on them).
json values(DType d, bool tame) {
  const double inf = std::numeric_limits<double>::infinity();
  switch (d) {
    case DType::Bool:
      return json::array({true, false});
    case DType::I32:
      if (tame) return json::array({1, 2, 3, 7, 63, 100});
      return json::array(
          {0, 1, -1, 2, -2, 7, -7, 31, 32, 63, 100, -100, 2147483647, -2147483647 - 1});
    case DType::I64:
      if (tame) return json::array({1, 2, 3, 7, 63, 100, 12345678901LL});
      return json::array({0, 1, -1, 2, -2, 7, -7, 63, 64, 100, -100, 4294967296LL,
                          9223372036854775807LL, -9223372036854775807LL - 1});
    case DType::F32:
      if (tame) return json::array({0.5, 1.0, 2.5, 3.0, 10.0, 100.25});
      return json::array({0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e30, -1e-30, 1e-40, 16777217.0,
                          3e9, "Infinity", "-Infinity", "NaN"});
    case DType::F64:
      if (tame) return json::array({0.5, 1.0, 2.5, 3.0, 10.0, 100.25, 1e6});
      return json::array({0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, 1e300, -1e-300, 5e-324,
                          9007199254740993.0, 1e19, "Infinity", "-Infinity", "NaN"});
  }
  (void)inf;
  return json::array();
}

// A key per thread: small, negative and large.
json keys() {
  return json::array(
      {0, 1, -1, 42, 12345, -7, 4294967296LL, 9223372036854775807LL, -9223372036854775807LL - 1});
}

struct Case {
  std::string text;  // func main(...)
  std::vector<std::string> params;
  std::vector<DType> ptypes;
  std::vector<DType> op_args;  // one instruction's operand dtypes (for jit::supported)
  DType out = DType::F64;
};

// Inputs: every combination of the parameters' values (the first two);
// further parameters cycle.
json cross(const Case& c, bool tame) {
  std::vector<json> vals;
  for (size_t i = 0; i < c.params.size(); ++i)
    vals.push_back(c.params[i] == "k" || c.params[i] == "k2" ? keys() : values(c.ptypes[i], tame));
  json out = json::object();
  for (const auto& p : c.params) out[p] = json::array();
  const size_t n0 = vals[0].size(), n1 = vals.size() > 1 ? vals[1].size() : 1;
  for (size_t i = 0; i < n0; ++i)
    for (size_t j = 0; j < n1; ++j)
      for (size_t k = 0; k < c.params.size(); ++k) {
        const size_t at = k == 0 ? i : k == 1 ? j : (i + j) % vals[k].size();
        out[c.params[k]].push_back(vals[k][at]);
      }
  return out;
}

std::string sig(const Case& c) {
  std::string s = "func main(";
  for (size_t i = 0; i < c.params.size(); ++i)
    s += (i ? ", " : "") + c.params[i] + ": " + dname(c.ptypes[i]);
  return s + ")";
}

// The three-instruction cases of one primitive, per dtype signature.
std::vector<Case> cases_of(const PrimInfo& p) {
  std::vector<Case> out;
  const std::string n = p.name;
  auto binary = [&](DType d, DType r) {
    Case c{"", {"a", "b"}, {d, d}, {d, d}, r};
    c.text = sig(c) + " -> (" + dname(r) + ", " + dname(r) + ", " + dname(r) +
             ") {\nentry:\n  r1 = " + n + "(a, b)\n  r2 = " + n + "(b, a)\n  r3 = " + n +
             "(a, a)\n  return r1, r2, r3\n}\n";
    out.push_back(c);
  };
  auto unary = [&](DType d, DType r) {
    Case c{"", {"a", "b"}, {d, d}, {d}, r};
    c.text = sig(c) + " -> (" + dname(r) + ", " + dname(r) + ", " + dname(r) +
             ") {\nentry:\n  r1 = " + n + "(a)\n  r2 = " + n + "(b)\n  r3 = " + n +
             "(a)\n  return r1, r2, r3\n}\n";
    out.push_back(c);
  };
  const DType nums[] = {DType::I32, DType::I64, DType::F32, DType::F64};
  const DType floats[] = {DType::F32, DType::F64};
  const DType all[] = {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64};
  switch (p.kind) {
    case PrimKind::Arith2:
      for (DType d : nums) binary(d, d);
      return out;
    case PrimKind::Arith1:
      for (DType d : nums) unary(d, d);
      return out;
    case PrimKind::Float1:
      for (DType d : floats) unary(d, d);
      return out;
    case PrimKind::FloatPred:
      for (DType d : floats) unary(d, DType::Bool);
      return out;
    case PrimKind::Float2:
      for (DType d : floats) binary(d, d);
      return out;
    case PrimKind::Compare:
      for (DType d : all) binary(d, DType::Bool);
      return out;
    case PrimKind::Logic2:
      binary(DType::Bool, DType::Bool);
      return out;
    case PrimKind::Logic1:
      unary(DType::Bool, DType::Bool);
      return out;
    default:
      break;
  }
  auto three = [&](std::vector<std::string> params, std::vector<DType> types,
                   std::vector<DType> op_args, DType r, const std::string& e1,
                   const std::string& e2, const std::string& e3) {
    Case c{"", params, types, op_args, r};
    c.text = sig(c) + " -> (" + dname(r) + ", " + dname(r) + ", " + dname(r) +
             ") {\nentry:\n  r1 = " + e1 + "\n  r2 = " + e2 + "\n  r3 = " + e3 +
             "\n  return r1, r2, r3\n}\n";
    out.push_back(c);
  };
  const DType i64 = DType::I64, f64 = DType::F64;
  switch (p.id) {
    case PrimId::Select:
      for (DType d : all)
        three({"a", "b", "c"}, {d, d, DType::Bool}, {DType::Bool, d, d}, d, "select(c, a, b)",
              "select(c, b, a)", "select(c, a, a)");
      break;
    case PrimId::Cast:
      for (DType from : all)
        for (DType to : all) {
          const std::string t = std::string("dtype=") + dname(to);
          three({"a", "b"}, {from, from}, {from}, to, "cast(a, " + t + ")", "cast(b, " + t + ")",
                "cast(r1, " + t + ")");
        }
      break;
    case PrimId::Uniform:
    case PrimId::Normal:
    case PrimId::Exponential:
      three({"k", "k2"}, {i64, i64}, {i64}, f64, n + "(k)", n + "(k2)", n + "(k, r1)");
      break;
    case PrimId::Bernoulli:
    case PrimId::Gamma:
    case PrimId::Poisson:
      for (DType d : floats) {
        const DType r = p.id == PrimId::Bernoulli ? DType::Bool : p.id == PrimId::Gamma ? d : i64;
        three({"k", "a", "k2"}, {i64, d, i64}, {i64, d}, r, n + "(k, a)", n + "(k2, a)",
              n + "(k, a)");
      }
      break;
    case PrimId::FoldIn:
      for (DType d : {DType::I32, DType::I64})
        three({"k", "a", "k2"}, {i64, d, i64}, {i64, d}, i64, n + "(k, a)", n + "(k2, a)",
              n + "(k, a)");
      break;
    case PrimId::Split: {
      Case c{"", {"k", "k2"}, {i64, i64}, {i64}, i64};
      c.text = sig(c) +
               " -> (i64, i64, i64, i64, i64, i64) {\nentry:\n  a, b = split(k)\n  c, d = "
               "split(a)\n  e, f = split(k2)\n  return a, b, c, d, e, f\n}\n";
      out.push_back(c);
      break;
    }
    case PrimId::Size:
      three({"a", "b"}, {f64, f64}, {f64}, i64, "size(a)", "size(b)", "size(r1)");
      break;
    case PrimId::ThreadIndex: {
      Case c{"", {"k", "k2"}, {i64, i64}, {i64, i64}, i64};  // the VM's row operands
      c.text = sig(c) +
               " -> (i64, i64, i64) {\nentry:\n  t = thread_index()\n  u = add(t, k)\n  v = "
               "mul(u, t)\n  return t, u, v\n}\n";
      out.push_back(c);
      break;
    }
    default:
      break;
  }
  return out;
}

// Whether the log's "jit: F of N instructions fused" has F = N.
bool all_fused(const std::string& log) {
  long f = -1, n = -2;
  return std::sscanf(log.c_str(), "jit: %ld of %ld instructions fused", &f, &n) == 2 && f == n;
}

}  // namespace

TEST_CASE("jit prims: every compiled primitive gives the kernels' bits and errors, compiled") {
  std::set<std::string> covered;
  for (const PrimInfo& p : all_prims()) {
    // Batched rows, and the rows that take tensors only: the tensor test below.
    if (p.jit == JitKind::None || p.jit == JitKind::Batched) continue;
    if (p.id == PrimId::Get || p.id == PrimId::Set || p.id == PrimId::Reshape) continue;
    std::vector<Case> cs = cases_of(p);
    CAPTURE(std::string(p.name));
    CHECK_FALSE(cs.empty());  // a compiled row without a test case here
    for (const Case& c : cs) {
      CAPTURE(c.text);
      CHECK(jit::supported(p.id, c.op_args, c.out));
      for (bool tame : {false, true}) {
        if (tame && !(p.effects & prim_effect::Fails)) continue;
        CAPTURE(tame);
        Loaded l = load_prog(c.text, cross(c, tame));
        RunResult off = run_prog(l, false, false);
        for (bool persistent : {false, true}) {
          CAPTURE(persistent);
          RunResult on = run_prog(l, true, persistent);
          same_results(off, on);
          if (jit::available()) {
            CAPTURE(on.log);
            CHECK(all_fused(on.log));
          }
        }
      }
      covered.insert(p.name);
    }
  }
  // The float math the JIT calls the C library for, and the samplers.
  for (const char* n : {"erf", "lgamma", "atan2", "hypot", "pow", "split", "uniform", "normal",
                        "gamma", "poisson", "bernoulli", "fold_in", "exponential"})
    CHECK(covered.count(n));
}

namespace {

// n threads' values of one parameter of `shape`, cycling through vals from
// an offset per thread.
json batch_of(const json& vals, const std::vector<int64_t>& shape, size_t n, size_t seed) {
  int64_t elems = 1;
  for (int64_t d : shape) elems *= d;
  json out = json::array();
  for (size_t t = 0; t < n; ++t) {
    json flat = json::array();
    for (int64_t e = 0; e < elems; ++e)
      flat.push_back(vals[(t * seed + static_cast<size_t>(e) * 5 + t) % vals.size()]);
    // Nest C order.
    json cur = flat;
    for (size_t r = shape.size(); r-- > 1;) {
      json next = json::array();
      for (size_t i = 0; i < cur.size(); i += static_cast<size_t>(shape[r])) {
        json row = json::array();
        for (int64_t k = 0; k < shape[r]; ++k) row.push_back(cur[i + static_cast<size_t>(k)]);
        next.push_back(row);
      }
      cur = next;
    }
    out.push_back(shape.empty() ? flat[0] : cur);
  }
  return out;
}

// The program with the JIT off and on (both schedules): the same bits and
// errors, and every instruction in a compiled segment.
void same_on_and_off(const std::string& text, const json& inputs, bool fused = true) {
  CAPTURE(text);
  Loaded l = load_prog(text, inputs);
  RunResult off = run_prog(l, false, false);
  for (bool persistent : {false, true}) {
    CAPTURE(persistent);
    RunResult on = run_prog(l, true, persistent);
    same_results(off, on);
    if (jit::available() && fused) {
      CAPTURE(on.log);
      CHECK(all_fused(on.log));
    }
  }
}

}  // namespace

// On tensors, the elementwise rows compile inline (a loop over the event,
// NumPy broadcasting: a matrix with a row, a scalar with a matrix; events of
// at most Tuning::inline_elements, 4, so the matrices here are 2x2), as do
// get, set, size and reshape; the same bits as the kernels, and the same
// errors (integer division by zero, a bad cast, an index out of range).
TEST_CASE("jit prims: ops on tensors compile inline with the kernels' bits and errors") {
  const DType nums[] = {DType::I32, DType::I64, DType::F32, DType::F64};
  const DType all[] = {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64};
  size_t checked = 0;
  for (const PrimInfo& p : all_prims()) {
    std::vector<DType> ds;
    bool binary = false;
    switch (p.kind) {
      case PrimKind::Arith2:
        binary = true;
        ds.assign(std::begin(nums), std::end(nums));
        break;
      case PrimKind::Arith1:
        ds.assign(std::begin(nums), std::end(nums));
        break;
      case PrimKind::Float1:
      case PrimKind::FloatPred:
        ds = {DType::F32, DType::F64};
        break;
      case PrimKind::Float2:
        binary = true;
        ds = {DType::F32, DType::F64};
        break;
      case PrimKind::Compare:
        binary = true;
        ds.assign(std::begin(all), std::end(all));
        break;
      case PrimKind::Logic2:
        binary = true;
        ds = {DType::Bool};
        break;
      case PrimKind::Logic1:
        ds = {DType::Bool};
        break;
      default:
        continue;
    }
    const std::string n = p.name;
    CAPTURE(n);
    for (DType d : ds) {
      const std::string dn = dname(d);
      if (p.kind == PrimKind::Arith2)
        CHECK(jit::supported_tensor(p.id, {{d, {2, 3}}, {d, {3}}}, {d, {2, 3}}));
      std::string body;
      if (binary)
        body = "  r1 = " + n + "(a, b)\n  r2 = " + n + "(s, a)\n  r3 = " + n + "(b, b)\n";
      else
        body = "  r1 = " + n + "(a)\n  r2 = " + n + "(b)\n  r3 = " + n + "(a)\n";
      const std::string text = "func main(a: " + dn + "[2,2], b: " + dn + "[2], s: " + dn +
                               ") {\nentry:\n" + body + "  return r1, r2, r3\n}\n";
      for (bool tame : {false, true}) {
        if (tame && !(p.effects & prim_effect::Fails)) continue;
        const json v = values(d, tame);
        const size_t threads = 2 * v.size();
        json in = {{"a", batch_of(v, {2, 2}, threads, 3)},
                   {"b", batch_of(v, {2}, threads, 7)},
                   {"s", batch_of(v, {}, threads, 1)}};
        same_on_and_off(text, in);
        ++checked;
      }
    }
  }
  CHECK(checked > 40);
  // select and cast on tensors.
  const json f = values(DType::F64, false);
  const json bools = values(DType::Bool, false);
  json in = {{"a", batch_of(f, {2, 2}, 30, 3)},
             {"b", batch_of(f, {2}, 30, 7)},
             {"c", batch_of(bools, {2}, 30, 1)}};
  same_on_and_off(R"(func main(a: f64[2,2], b: f64[2], c: bool[2]) {
entry:
  r1 = select(c, a, b)
  r2 = cast(b, dtype=f32)
  r3 = cast(c, dtype=f64)
  r4 = cast(a, dtype=i64)
  return r1, r2, r3, r4
}
)",
                  in);
  // get, set, size and reshape, indices in and out of range, i64 and i32.
  const json idx = json::array({0, 1, 2, -1, -3, 4, 5, -6, 3, -5, 100});
  for (const char* it : {"i64", "i32"}) {
    json gin = {{"v", batch_of(values(DType::I64, false), {5}, 22, 3)},
                {"m", batch_of(f, {3, 2}, 22, 5)},
                {"i", batch_of(idx, {}, 22, 1)},
                {"x", batch_of(f, {}, 22, 2)},
                {"r", batch_of(f, {2}, 22, 4)}};
    const std::string good = std::string("func main(v: i64[5], m: f64[3,2], i: ") + it +
                             R"(, x: f64, r: f64[2]) {
entry:
  g = get(v, i)
  row = get(m, i)
  m2 = set(m, i, x)
  m3 = set(m2, i, r)
  n = size(m)
  flat = reshape(m3, shape=[6])
  v2 = set(v, i, 7)
  g2 = cast(g, dtype=f64)
  t = add(row, g2)
  return g, row, m2, m3, n, flat, v2, t
}
)";
    same_on_and_off(good, gin);
    // Only the threads whose index is in range: no error.
    json ok = gin;
    for (auto& v : ok["i"]) v = v.get<int64_t>() % 3;
    same_on_and_off(good, ok);
  }
}

// Reductions, linear algebra, categorical, random numbers of a shape and
// stack are called from compiled code as their batched kernels (a shared
// matrix is still one GEMM for the chunk): the same bits as without the JIT.
TEST_CASE("jit prims: the batched rows are called from compiled code, same bits") {
  const json f = values(DType::F64, true);
  json in = {{"m", batch_of(f, {3, 3}, 20, 3)},
             {"v", batch_of(f, {3}, 20, 7)},
             {"k", batch_of(keys(), {}, 20, 1)}};
  same_on_and_off(R"(func main(m: f64[3,3], v: f64[3], k: i64) {
entry:
  s = sum(m)
  mv = matvec(m, v)
  mm = matmul(m, m)
  cs = sum(m, axis=0)
  w = add(mv, cs)
  c = categorical(k, v)
  u = uniform(k, shape=[3])
  x = add(w, u)
  d = dot(v, x)
  e = mul(d, s)
  z = zeros(shape=[2], dtype=f64)
  st = stack(x, v)
  o = outer(v, x)
  tr = transpose(o)
  p = prod(v)
  q = reduce_max(tr, axis=1)
  return e, mm, c, z, st, tr, p, q
}
)",
                  in);
  for (const PrimInfo& p : all_prims())
    if (p.jit == JitKind::Batched) {
      CAPTURE(std::string(p.name));
      CHECK_FALSE(jit::supported_tensor(p.id, {{DType::F64, {3, 3}}}, {DType::F64, {3}}));
    }
}

// Example programs with tensors, loops, recursion and pops in segments:
// the same bits with the JIT on and off.
TEST_CASE("jit prims: the example programs on tensors give the same bits with the JIT") {
  for (const char* name : {"vectors", "mergesort", "tree_eval", "nuts", "leapfrog_matrix",
                           "power_iteration", "birth_death", "reductions", "nqueens"}) {
    CAPTURE(name);
    const std::string dir = std::string(AUTOBATCH_SOURCE_DIR) + "/programs/";
    std::ifstream fa(dir + name + ".ab"), fj(dir + name + ".json");
    std::stringstream ta, tj;
    ta << fa.rdbuf();
    tj << fj.rdbuf();
    const std::string text = ta.str();
    const size_t at = text.find("# entry: ");
    REQUIRE(at != std::string::npos);
    const std::string entry = text.substr(at + 9, text.find('\n', at) - at - 9);
    Loaded l = stack_harness::load(text, tj.str(), entry);
    RunResult off = run_prog(l, false, false);
    for (bool persistent : {false, true}) {
      RunResult on = run_prog(l, true, persistent);
      same_results(off, on);
    }
  }
}

TEST_CASE("jit prims: a loop of every random primitive matches: segments alone, chained nested") {
  const char* text = R"(func main(k: i64, n: i64, a: f64) -> (i64, f64, i64, bool, f64) {
entry:
  acc = 0.0
  cnt = 0
  hit = false
  done = le(n, 0)
  branch done, finish, loop
loop:
  k, s = split(k)
  u = uniform(s)
  z = normal(s)
  e = exponential(s)
  g = gamma(s, a)
  p = poisson(s, a)
  b = bernoulli(s, u)
  f = fold_in(s, n)
  acc = add(acc, u)
  acc = add(acc, z)
  acc = add(acc, e)
  acc = add(acc, g)
  cnt = add(cnt, p)
  cnt = add(cnt, f)
  hit = xor(hit, b)
  n = sub(n, 1)
  done = le(n, 0)
  branch done, finish, loop
finish:
  return k, acc, cnt, hit, acc
}
)";
  json in = {{"k", keys()},
             {"n", json::array({0, 1, 3, 10, 50, 2, 7, 100, 5})},
             {"a", json::array({0.5, 1.0, 2.5, 12.0, 0.1, 3.0, 40.0, 1.5, 7.0})}};
  Loaded l = load_prog(text, in);
  RunResult off = run_prog(l, false, true);
  for (bool persistent : {false, true}) {
    RunResult on = run_prog(l, true, persistent);
    same_results(off, on);
    if (jit::available() && persistent) {
      // Its draws and calls of C functions would keep the dense body from
      // being vectorised: segments, the draws through the batched kernels.
      for (const auto& e : on.execution)
        if (e.block == "main.loop") {
          CHECK(e.mode == "segments");
          CHECK(e.reason.find("draws random numbers") != std::string::npos);
        }
    }
  }
  // The same loop inside another loop, in a program with calls: chained,
  // every draw inline per lane. (Without calls a loop that draws is not
  // chained: segments draw for the chunk.)
  std::string nested = text;
  const std::string entry_end = "  branch done, finish, loop\nloop:\n";
  const size_t at = nested.find(entry_end);
  REQUIRE(at != std::string::npos);
  nested.replace(at, entry_end.size(),
                 "  rep = 0\n  n0 = n\n  branch done, finish, outer\nouter:\n  n = n0\n"
                 "  goto loop\nloop:\n");
  const std::string back = "  branch done, finish, loop\nfinish:";
  const size_t at2 = nested.find(back);
  REQUIRE(at2 != std::string::npos);
  nested.replace(at2, back.size(),
                 "  branch done, after, loop\nafter:\n  rep = call inc(rep)\n"
                 "  again = lt(rep, 2)\n  branch again, outer, finish\nfinish:");
  nested += "\nfunc inc(r: i64) -> i64 {\nentry:\n  s = add(r, 1)\n  return s\n}\n";
  Loaded ln = load_prog(nested.c_str(), in);
  RunResult noff = run_prog(ln, false, true);
  RunResult non = run_prog(ln, true, true);
  same_results(noff, non);
  if (jit::available())
    for (const auto& e : non.execution)
      if (e.block == "main.loop") CHECK(e.mode == "chained");
}

// A loop body reading its thread's index is a dense loop too: the window
// carries each thread's input row (with --lanes, not the lane).
TEST_CASE("jit prims: a loop with thread_index compiles whole (dense) and matches") {
  const char* text = R"(func main(n: i64) -> (i64, i64) {
entry:
  s = 0
  done = le(n, 0)
  branch done, finish, loop
loop:
  t = thread_index()
  u = mul(t, n)
  s = add(s, u)
  n = sub(n, 1)
  done = le(n, 0)
  branch done, finish, loop
finish:
  return s, n
}
)";
  json in = {{"n", json::array({0, 1, 3, 10, 50, 2, 7, 100, 5, 1000, 4, 4, 9})}};
  Loaded l = load_prog(text, in);
  RunResult off = run_prog(l, false, true);
  for (bool persistent : {false, true})
    for (int64_t lanes : {0, 3}) {
      RunOptions o;
      o.jit = true;
      o.persistent = persistent;
      o.lanes = lanes;
      RunResult on = stack_harness::stack(l, o);
      same_results(off, on);
      if (jit::available() && persistent) {
        CAPTURE(on.log);
        CHECK(on.log.find("1 loop blocks compiled whole") != std::string::npos);
      }
    }
}

TEST_CASE("jit prims: random_walk's loop compiles whole with the JIT") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(AUTOBATCH_SOURCE_DIR) / "programs";
  std::ifstream f(dir / "random_walk.ab");
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  json in = {{"key", json::array()}, {"bound", json::array({5})}};
  for (int i = 0; i < 300; ++i) in["key"].push_back(i * 7919 - 1000);
  Loaded l = load_prog(text, in, "walk");
  RunResult off = run_prog(l, false, true);
  RunResult on = run_prog(l, true, true);
  same_results(off, on);
  if (jit::available()) {
    CAPTURE(on.log);
    CHECK(on.log.find("1 loop blocks compiled whole") != std::string::npos);
    CHECK(on.log.find("interpreting") == std::string::npos);
  }
}

TEST_CASE("ops.def columns: if_convert, the per-thread wiring and the JIT derive from them") {
  for (const PrimInfo& p : all_prims()) {
    CAPTURE(std::string(p.name));
    // A primitive that may not fail is never IfCannotFail, and one that may
    // fail is never speculated unconditionally.
    if (!(p.effects & prim_effect::Fails)) CHECK(p.speculate != Speculate::IfCannotFail);
    if (p.effects & prim_effect::Fails) CHECK(p.speculate != Speculate::Always);
    CHECK(prim_per_thread(p.id) == bool(p.effects & prim_effect::Thread));
    CHECK(prim_may_fail(p.id) == bool(p.effects & prim_effect::Fails));
    // One that reports to the host (progress) knows its thread, is never
    // speculated and calls its kernel (which reads the run's table).
    if (p.effects & prim_effect::Progress) {
      CHECK(prim_reports(p.id));
      CHECK(prim_per_thread(p.id));
      CHECK(p.speculate == Speculate::Never);
      CHECK(p.jit == JitKind::None);
    }
    // A symbol for the kinds that call one; a Kernel symbol is registered.
    if (p.jit == JitKind::Libm || p.jit == JitKind::Intrinsic || p.jit == JitKind::Kernel)
      CHECK(std::strlen(p.symbol) > 0);
    if (p.jit == JitKind::Kernel) {
      bool found = false;
      for (const ScalarFunction& s : scalar_functions())
        found = found || p.symbol == std::string(s.name);
      CHECK(found);
    }
    // Not compiled per lane: no scalar dtype signature is supported, but a
    // reduction of one scalar (the kernel's one-element result).
    if (p.jit == JitKind::None || p.jit == JitKind::Batched)
      for (DType d : {DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64}) {
        CHECK(jit::supported(p.id, {d}, d) == (p.kind == PrimKind::Reduce));
        CHECK_FALSE(jit::supported(p.id, {d, d}, d));
      }
  }
  CHECK(prim_per_thread(PrimId::ThreadIndex));
  CHECK(prim_reports(PrimId::Progress));
  CHECK_FALSE(prim_reports(PrimId::ThreadIndex));
  CHECK_FALSE(prim_per_thread(PrimId::Uniform));
  CHECK(prim_random(PrimId::Split));
  CHECK_FALSE(prim_random(PrimId::Add));

  // if_convert's rule, through speculatable(): Always, Never and the
  // operand rules of IfCannotFail.
  Result<Module> m = parse_text("t.ab", R"(func main(a: i64, b: i64, x: f64, k: i64) -> i64 {
entry:
  r1 = add(a, b)
  r2 = div(a, b)
  r3 = div(a, 3)
  r4 = div(x, x)
  r5 = gamma(k, x)
  r6 = cast(x, dtype=i64)
  r7 = cast(a, dtype=f64)
  r8 = pow(a, 2)
  r9 = pow(a, b)
  r10 = uniform(k)
  return r1
}
)");
  REQUIRE(m.ok());
  std::map<std::string, Type> types;
  const TensorType i64{DType::I64, {}}, f64{DType::F64, {}};
  for (const char* v : {"a", "b", "k"}) types[v] = Type{false, i64, {}};
  types["x"] = Type{false, f64, {}};
  const auto& ins = m->funcs[0].blocks[0].instrs;
  REQUIRE(ins.size() == 10);
  const bool expect[] = {true, false, true, true, false, false, true, true, false, true};
  for (size_t i = 0; i < ins.size(); ++i) {
    CAPTURE(i);
    CHECK(speculatable(ins[i], types) == expect[i]);
  }
}
