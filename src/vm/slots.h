// The one function-to-slots compiler every VM uses: the variables of a
// function (or of a lowered program) get slot indices with their types, each
// slot its run of tensor leaves (a tuple variable has several), and literal
// operands their constant values, typed as type inference found them.
// Anything left untyped (only in unreachable code) is an i64 scalar, here
// and nowhere else.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/type_info.h"
#include "vm/value.h"

namespace ab {

struct Slots {
  std::map<std::string, uint32_t> index;  // variable -> slot
  std::vector<std::string> names;         // slot -> variable
  std::vector<Type> types;                // slot -> type
  std::vector<uint32_t> first_leaf;       // slot -> its first tensor leaf
  std::vector<uint32_t> leaf_count;       // slot -> how many leaves
  std::vector<TensorType> leaf_types;     // leaf -> type (slot order)
  size_t size() const { return types.size(); }
  uint32_t at(const std::string& var) const { return index.at(var); }
};

// Slots, in this order: the `declared` variables (a lowered program's
// `var` lines: typed by `types`, else by the declaration), or else every
// variable `types` knows; then the parameters and any other name the blocks
// use, untyped.
Slots compile_slots(const std::vector<Block>& blocks, const std::vector<std::string>& params,
                    const FunctionTypes& types, const std::vector<VarDecl>* declared = nullptr);

// A type inference left unknown (unreachable code): an i64 scalar.
Type known_or_default(const std::optional<Type>& t);

// The constant of a literal operand, typed by inference (`types`).
Value literal_constant(const Literal& lit, const std::optional<Type>& type);

// The type inference gave operand `a` of instruction `i` of block `b`, if
// any (literals included).
std::optional<Type> operand_type(const FunctionTypes& types, size_t b, size_t i, size_t a);
// The type of a return's `v`th value in block `b`, if known.
std::optional<Type> return_type(const FunctionTypes& types, size_t b, size_t v);

}  // namespace ab
