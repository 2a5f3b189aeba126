// The canonical printer: one spelling for every IR, so that `fmt` is
// idempotent and parse(print(m)) == m for every module and lowered program.
#pragma once
#include <string>

#include "ir/ir.h"

namespace ab {

std::string print_module(const Module& m);
std::string print_function(const Function& f);
std::string print_program(const Program& p);
std::string print_block(const Block& b);
std::string print_instr(const Instr& in);
std::string print_terminator(const Terminator& t);
std::string print_literal(const Literal& lit);
std::string print_scalar(const Scalar& s);
std::string print_pattern(const Pattern& p, bool top = true);
std::string print_operand(const Operand& o);
// The header line of a function without its body: `func f(n: i64) -> i64`.
// A declared constraint as written after a parameter's type: "positive",
// "bounded(0.0, hi)".
std::string print_constraint(const Constraint& c);
std::string print_signature(const Function& f);
// `-> T`, `-> (A, B)`, `-> ((A, B))`, `-> ()`, or "" when not declared.
std::string print_results(const std::vector<Type>& results,
                          const std::vector<std::string>& names = {});

}  // namespace ab
