// The internal architecture: the pass registry (its rows, --passes, the
// order checks, names and aliases), the sharing pass, the slot compiler, the
// one list of terminators and ops.def's columns, and -v logging.
#include <doctest/doctest.h>

#include "cli_harness.h"
#include "ir/ops.h"
#include "ir/prim_types.h"
#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/pipeline.h"
#include "passes/sharing.h"
#include "vm/slots.h"

using namespace ab;
using ab_test::Proc;
using ab_test::run_binary;

namespace {

Module parse_ok(const std::string& text) {
  Result<Module> m = parse_text("t.ab", text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  return m.take();
}

std::vector<const PassInfo*> select_ok(const std::string& list) {
  std::vector<const PassInfo*> rows;
  auto e = select_passes(split_pass_list(list), rows);
  INFO(e.value_or(""));
  REQUIRE(!e);
  return rows;
}

std::string select_error(const std::string& list) {
  std::vector<const PassInfo*> rows;
  auto e = select_passes(split_pass_list(list), rows);
  REQUIRE(e);
  return *e;
}

const char* kFib =
    "func fib(n: i64) -> i64 {\nentry:\n  small = le(n, 1)\n  branch small, base, rec\nbase:\n"
    "  return n\nrec:\n  a = sub(n, 1)\n  b = sub(n, 2)\n  x = call fib(a)\n  y = call fib(b)\n"
    "  r = add(x, y)\n  return r\n}\n";

Proc cli(const std::vector<std::string>& args) {
  return run_binary(AUTOBATCH_SOURCE_DIR, args, std::nullopt, 60);
}

}  // namespace

TEST_CASE(
    "pass registry: every row but the front end's (parse, blocks) runs; names are unique; the "
    "alias finds its row") {
  std::set<std::string> names;
  for (const auto& p : all_passes()) {
    CHECK(names.insert(p.name).second);
    std::string n = p.name;
    CHECK((p.run != nullptr) == (n != "parse" && n != "blocks"));
  }
  REQUIRE(find_pass("types"));
  CHECK(std::string(find_pass("types")->name) == "infer_types");
  CHECK(find_pass("infer_types") == find_pass("types"));
  CHECK(find_pass("nope") == nullptr);
}

TEST_CASE("pass registry: --passes lists are checked for names and order") {
  CHECK(select_ok("infer_types,lower_function_calls,allocation_strategy,fuse_pop_push").size() ==
        4);
  CHECK(select_ok("parse, verify, infer_types").size() == 1);  // the front end's rows are implicit
  CHECK(select_error("infer_typs").find("did you mean 'infer_types'") != std::string::npos);
  CHECK(select_error("lower_function_calls").find("needs infer_types") != std::string::npos);
  CHECK(select_error("infer_types,fuse_pop_push").find("needs lower_function_calls") !=
        std::string::npos);
  CHECK(select_error("infer_types,lower_function_calls,fuse_pop_push")
            .find("needs allocation_strategy") != std::string::npos);
  CHECK(select_error("infer_types,lower_function_calls,liveness").find("source program") !=
        std::string::npos);
  CHECK(select_error("infer_types,infer_types").find("twice") != std::string::npos);
}

TEST_CASE("pass registry: compile() stops where --print-after says, in a chosen pipeline too") {
  Module m = parse_ok(kFib);
  CompileOptions opt;
  opt.entry = "fib";
  opt.entry_types = {Type::scalar(DType::I64)};
  opt.passes = {"infer_types", "lower_function_calls"};
  Result<Compiled> c = compile(m, opt);
  REQUIRE(c.ok());
  CHECK(c->printed.find("push_goto") != std::string::npos);  // lowered
  CHECK(c->printed.find(" full") != std::string::npos);      // no allocation_strategy: all full
  opt.passes.clear();
  opt.print_after = "types";  // the old name
  Result<Compiled> t = compile(m, opt);
  REQUIRE(t.ok());
  CHECK(t->printed.find("func fib(n: i64) -> i64") != std::string::npos);
  CHECK(t->printed.find("push_goto") == std::string::npos);
  opt.print_after = "block_order";
  opt.passes = {"infer_types"};
  CHECK(!compile(m, opt).ok());  // not in the pipeline
}

TEST_CASE("sharing: one write of shared operands, copies of one source, and retraction") {
  Module m = parse_ok(
      "func f(a: i64, b: i64) -> i64 {\nentry:\n  c = add(a, 1)\n  d = a\n  e = add(a, b)\n"
      "  k = c\n  q = lt(a, b)\n  branch q, one, two\none:\n  k = c\n  u = b\n  goto out\n"
      "two:\n  g = 3\n  goto out\nout:\n  t, u = tuple(c, 1)\n  return k\n}\n");
  const Function& f = m.funcs[0];
  SharingInfo s = sharing(f.blocks, {"a", "b"}, {true, false});
  CHECK(s.shared("a"));
  CHECK(!s.shared("b"));
  CHECK(s.shared("c"));
  CHECK(s.source.at("d") == "a");  // a copy shares its source
  CHECK(!s.shared("e"));           // b is per thread
  CHECK(s.source.at("k") == "c");  // two copies of the same source
  CHECK(s.shared("g"));            // a literal
  CHECK(!s.shared("q"));
  CHECK(!s.shared("u"));  // written at two places
  CHECK(!s.shared("t"));  // its one write also writes u: retracted
}

TEST_CASE("slots: typed variables first, then untyped names; tuple variables have several leaves") {
  Module m =
      parse_ok("func f(a: i64) -> i64 {\nentry:\n  p = tuple(a, 2.0)\n  x, y = p\n  return x\n}\n");
  FunctionTypes ft;
  ft.vars["a"] = Type::scalar(DType::I64);
  ft.vars["p"] = Type::tuple({Type::scalar(DType::I64), Type::scalar(DType::F64)});
  Slots s = compile_slots(m.funcs[0].blocks, {"a"}, ft);
  REQUIRE(s.size() == 4);  // a, p (typed), then x, y
  CHECK(s.at("a") == 0);
  CHECK(s.at("p") == 1);
  CHECK(s.leaf_count[s.at("p")] == 2);
  CHECK(s.leaf_types[s.first_leaf[s.at("p")] + 1].dtype == DType::F64);
  CHECK(s.types[s.at("y")] == Type::scalar(DType::I64));  // untyped: the default
}

TEST_CASE("terminators and primitives: one table each") {
  CHECK(std::string(term_keyword(TermKind::PushGoto)) == "push_goto");
  CHECK(term_lowered_only(TermKind::Halt));
  CHECK(!term_lowered_only(TermKind::Return));
  Terminator t;
  t.kind = TermKind::IndirectGoto;
  CHECK(print_terminator(t) == "indirect_goto");
  CHECK(prim_kind(PrimId::Add) == PrimKind::Arith2);
  CHECK(prim_info(PrimId::Mean).kind == PrimKind::Reduce);
  CHECK(prim_info(PrimId::Mean).dtypes == DtypeGroups::FloatDest0);
  CHECK(prim_info(PrimId::Select).dtypes == DtypeGroups::Select);
  CHECK(prim_info(PrimId::Matmul).kind == PrimKind::Other);
}

TEST_CASE("cli: --passes and -v/--log-level") {
  Proc bad = cli({"lower", "programs/collatz.ab", "--passes", "lower_function_calls"});
  CHECK(bad.code == 2);
  CHECK(bad.err.find("needs infer_types") != std::string::npos);
  Proc unknown = cli({"lower", "programs/collatz.ab", "--passes", "infer_types,nope"});
  CHECK(unknown.code == 2);
  CHECK(unknown.err.find("unknown pass 'nope'") != std::string::npos);
  Proc quiet = cli({"lower", "programs/collatz.ab"});
  CHECK(quiet.code == 0);
  CHECK(quiet.err.empty());
  Proc v = cli({"lower", "-v", "programs/collatz.ab"});
  CHECK(v.code == 0);
  CHECK(v.out == quiet.out);
  CHECK(v.err.find("pass block_order: ") != std::string::npos);
  CHECK(v.err.find(" blocks, ") != std::string::npos);
  Proc run = cli(
      {"run", "programs/collatz.ab", "--inputs", "programs/collatz.json", "--log-level", "info"});
  CHECK(run.code == 0);
  for (const char* phase : {"inputs", "compile", "run", "merge", "outputs"})
    CHECK(run.err.find(std::string("phase ") + phase + ": ") != std::string::npos);
  CHECK(run.err.find("pass infer_types: ") != std::string::npos);
  Proc help = cli({"lower", "--help"});
  CHECK(help.out.find("allocation_strategy") != std::string::npos);
}

TEST_CASE("pass registry: --print-after every row prints that stage, not the final program") {
  Module m = parse_ok(kFib);
  CompileOptions opt;
  opt.entry = "fib";
  opt.entry_types = {Type::scalar(DType::I64)};
  bool lowered = false;
  std::string previous;
  for (const auto& p : all_passes()) {
    lowered = lowered || std::string(p.name) == "lower_function_calls";
    opt.print_after = p.name;
    Result<Compiled> c = compile(m, opt);
    INFO(p.name);
    REQUIRE(c.ok());
    CHECK((c->printed.find("push_goto") != std::string::npos) == lowered);
    if (std::string(p.name) == "liveness") CHECK(c->printed.find("# live-") != std::string::npos);
    if (std::string(p.name) == "lower_function_calls")
      CHECK(c->printed.find("pop ") != std::string::npos);
    if (std::string(p.name) == "allocation_strategy") {
      CHECK(c->printed != previous);  // storage classes assigned
    }
    previous = c->printed;
  }
}
