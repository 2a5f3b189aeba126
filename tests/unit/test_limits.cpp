// Limits (README "Limits and errors"): the memory check made before a run
// (src/io/limits), and large programs staying far from quadratic time in the
// front end and the passes (a goto chain of 10^4 blocks took minutes when
// verify and if_convert looked labels up by a linear scan and merged one
// block per round).
#include <doctest/doctest.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "io/limits.h"
#include "parse/parser.h"
#include "passes/pipeline.h"
#include "passes/verify.h"

using namespace ab;

TEST_CASE("limits: thread_bytes sums every leaf and saturates") {
  std::map<std::string, Type> vars;
  vars["a"] = Type{false, TensorType{DType::F64, {3, 4}}, {}};
  vars["b"] = Type{false, TensorType{DType::I32, {}}, {}};
  CHECK(thread_bytes(vars) == 3 * 4 * 8 + 4);
  Type tup;
  tup.is_tuple = true;
  tup.elems = {Type{false, TensorType{DType::Bool, {5}}, {}},
               Type{false, TensorType{DType::I64, {}}, {}}};
  vars["t"] = tup;
  CHECK(thread_bytes(vars) == 3 * 4 * 8 + 4 + 5 + 8);
  vars["huge"] = Type{false, TensorType{DType::F64, {int64_t{1} << 40, int64_t{1} << 40}}, {}};
  CHECK(thread_bytes(vars) == INT64_MAX);
}

TEST_CASE("limits: batch_memory_error") {
  const int64_t gb = int64_t{1} << 30;
  CHECK_FALSE(batch_memory_error(1000, 0, 1000, gb));
  auto e = batch_memory_error(int64_t{1} << 40, 0, 8, gb);
  REQUIRE(e);
  CHECK(e->find("more memory than this machine has (1.0 GB)") != std::string::npos);
  CHECK(e->find("1099511627776 threads at once") != std::string::npos);
  CHECK(e->find("--lanes") != std::string::npos);
  // With --lanes, only that many threads hold their variables at once.
  CHECK_FALSE(batch_memory_error(1000000, 10, 1000000, gb));
  CHECK(batch_memory_error(1000000, 0, 1000000, gb));
  // Overflowing products count as too large, never wrap to small.
  CHECK(batch_memory_error(INT64_MAX, 0, INT64_MAX, INT64_MAX - 1));
  auto s = batch_memory_error(1, 0, INT64_MAX, gb);
  REQUIRE(s);
  CHECK(s->find("a shape too large to allocate") != std::string::npos);
}

TEST_CASE("limits: a goto chain of 10^4 blocks parses, verifies and lowers quickly") {
  const int blocks = 10000;
  std::string text = "func main(x: i64) -> i64 {\nentry:\n  goto b1\n";
  for (int i = 1; i < blocks; ++i)
    text += "b" + std::to_string(i) + ":\n  goto b" + std::to_string(i + 1) + "\n";
  text += "b" + std::to_string(blocks) + ":\n  return x\n}\n";
  const auto start = std::chrono::steady_clock::now();
  Result<Module> m = parse_text("chain.ab", text);
  REQUIRE(m);
  Diagnostics d(m->source);
  verify(*m, d);
  REQUIRE_FALSE(d.has_errors());
  CompileOptions co;
  co.entry = "main";
  co.entry_types = {Type{false, TensorType{DType::I64, {}}, {}}};
  Result<Compiled> c = compile(*m, co);
  REQUIRE(c);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("10^4-block goto chain: parse, verify and compile in " << s << " s");
  CHECK(s < 60);  // linear: well under a second (Release); quadratic took minutes
  // The chain merges into one block.
  CHECK(c->lowered.program->blocks.size() <= 2);
}

TEST_CASE("limits: 500 sequential ifs convert and lower quickly") {
  // Each `if` is a diamond of three blocks with a fresh condition
  // temporary. if_convert once converted one diamond per round and verify
  // tracked every temporary in every block: cubic, 36 s for 200 ifs.
  const int ifs = 500;
  std::string text = "func main(x: i64) -> i64 {\n";
  for (int i = 0; i < ifs; ++i)
    text += "  if x > " + std::to_string(i) + " { x = x + 1 } else { x = x - 1 }\n";
  text += "  return x\n}\n";
  const auto start = std::chrono::steady_clock::now();
  Result<Module> m = parse_text("ifs.ab", text);
  REQUIRE(m);
  CompileOptions co;
  co.entry = "main";
  co.entry_types = {Type{false, TensorType{DType::I64, {}}, {}}};
  Result<Compiled> c = compile(*m, co);
  REQUIRE(c);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("500 sequential ifs: parse and compile in " << s << " s");
  CHECK(s < 60);  // well under a second (Release); the cubic version took minutes
  // Every diamond became selects: one straight-line block.
  CHECK(c->lowered.program->blocks.size() <= 2);
}
