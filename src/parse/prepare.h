// What the front end works out from a syntax tree before it lowers a body
// (to_blocks.cpp): literal folding, the constants `pi` and `e`, and how many
// results each function gives.
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "parse/syntax.h"

namespace ab::syntax {

// A literal expression, folded: `-3`, `[1, -2.5]`; nullopt when not literal.
// A bracket of literals that is no tensor (ragged, or booleans mixed with
// numbers) sets *bad to the place and the reason.
std::optional<Literal> fold_literal(const Expr& e,
                                    std::pair<SourceLoc, std::string>* bad = nullptr);

// The names a body assigns (patterns, indexed targets, loop variables).
void assigned_names(const Body& body, std::set<std::string>& out);

// `pi` and `e` become float literals wherever they are not in `shadowed`
// (the function's parameters and assigned names: a variable of the function
// shadows the constant in the whole function).
void substitute_constants(Body& body, const std::set<std::string>& shadowed);

// `e` calls a function of the file (not a primitive).
bool is_module_call(const Expr& e, const File& f);

// How many results each function gives, where that is known: the declared
// count, or that of its returns, where `return g(x)` gives as many as g.
std::map<std::string, size_t> result_arities(const File& f);

}  // namespace ab::syntax
