// The gradient rules as data (ops.def's Grad column, src/passes/grad/rules.cpp):
// every primitive declares what value_and_grad does with it, every one that
// says Rule has its rule, and the declarations agree with the other columns.
#include <doctest/doctest.h>

#include <string>

#include "ir/ops.h"
#include "passes/grad/internal.h"

namespace {

const char* grad_kind_name(ab::GradKind k) {
  switch (k) {
    case ab::GradKind::Rule:
      return "Rule";
    case ab::GradKind::Zero:
      return "Zero";
    case ab::GradKind::Leaves:
      return "Leaves";
    case ab::GradKind::Random:
      return "Random";
    case ab::GradKind::None:
      return "None";
  }
  return "?";
}

}  // namespace

TEST_CASE("grad rules: every primitive of ops.def declares its gradient, and each Rule has one") {
  using ab::GradKind;
  size_t rules = 0;
  for (const ab::PrimInfo& p : ab::all_prims()) {
    const std::string name = p.name;
    const std::string kind = grad_kind_name(p.grad);
    CAPTURE(name);
    CAPTURE(kind);
    CHECK(ab::prim_grad(p.id) == p.grad);
    // A rule exactly where the column says Rule.
    CHECK((ab::gradient::rule_of(p.id) != nullptr) == (p.grad == GradKind::Rule));
    rules += p.grad == GradKind::Rule;
    // Built-ins are all declared: None is what custom primitives get.
    CHECK(p.grad != GradKind::None);
    // Random numbers, and only they, are an error in a differentiated function.
    CHECK(ab::prim_random(p.id) == (p.grad == GradKind::Random));
    // A bool result carries no gradient.
    if (p.kind == ab::PrimKind::Compare || p.kind == ab::PrimKind::FloatPred ||
        p.kind == ab::PrimKind::Logic1 || p.kind == ab::PrimKind::Logic2)
      CHECK(p.grad == GradKind::Zero);
    // Float to float: a rule, or declared piecewise constant (floor, ceil, round).
    if (p.kind == ab::PrimKind::Float1 || p.kind == ab::PrimKind::Float2 ||
        p.kind == ab::PrimKind::Arith1 || p.kind == ab::PrimKind::Arith2)
      CHECK((p.grad == GradKind::Rule || p.id == ab::PrimId::Floor || p.id == ab::PrimId::Ceil ||
             p.id == ab::PrimId::Round));
    // The tuple's cotangent is routed by the block transform, leaf by leaf.
    CHECK((p.grad == GradKind::Leaves) == (p.id == ab::PrimId::Tuple));
  }
  CHECK(rules > 50);
  // Past the built-ins (custom primitives' ids): no rule.
  const bool rule_past_builtins =
      ab::gradient::rule_of(static_cast<ab::PrimId>(ab::kBuiltinPrimCount)) != nullptr;
  CHECK_FALSE(rule_past_builtins);
}

TEST_CASE("grad rules: a custom primitive has no gradient") {
  ab::CustomPrimDef def;
  def.name = "grad_rules_test_square";
  def.min_args = def.max_args = 1;
  def.type_rule = [](const std::vector<ab::Type>& args, std::string&) {
    return std::optional<ab::Type>(args[0]);
  };
  auto id = ab::register_custom_prim(def);
  REQUIRE(id);
  CHECK(ab::prim_grad(*id) == ab::GradKind::None);
  const bool has_rule = ab::gradient::rule_of(*id) != nullptr;
  CHECK_FALSE(has_rule);
}
