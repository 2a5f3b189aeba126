// The primitive table (ops.def) as C++ data.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ab {

enum class PrimId : uint16_t {
#define AB_PRIM(id, name, lo, hi, attrs, group, kind, dtypes, doc) id,
#include "ir/ops.def"
#undef AB_PRIM
};

// How a primitive's type rule treats its operands (ops.def's Kind column):
// the one classification the type rules and the kernels' callers share.
enum class PrimKind : uint8_t {
  Arith2,     // numeric, same dtype, broadcast
  Arith1,     // numeric
  Float1,     // float -> same
  FloatPred,  // float -> bool
  Compare,    // same dtype, broadcast -> bool
  Logic2,     // bool, broadcast
  Logic1,     // bool
  Reduce,     // over event dimensions
  Other,      // its own rule
};

// Which operands must share a dtype, with each other, with the result, or
// with a fixed dtype (ops.def's Dtypes column); type inference reads it.
enum class DtypeGroups : uint8_t {
  SameDest01,  // operands 0 and 1 and the result
  SameDest0,   // operand 0 and the result
  FloatDest0,  // operand 0 (a float) and the result
  Float0,      // operand 0 is a float
  Same01,      // operands 0 and 1
  Bool01,      // operands 0 and 1 are bool
  Bool0,       // operand 0 is bool
  Select,      // a bool condition; operands 1, 2 and the result
  Get,         // operand 0 and the result; an integer index
  Set,         // operands 0, 2 and the result; an integer index
  Key0,        // operand 0 is an i64 key
  None,        // nothing must agree
};

struct AttrSpec {
  std::string key;
  bool required = false;
};

struct PrimInfo {
  PrimId id;
  const char* name;
  int min_args;
  int max_args;  // -1: any number
  const char* attrs;
  const char* group;
  PrimKind kind;
  DtypeGroups dtypes;
  const char* doc;
  std::vector<AttrSpec> attr_specs() const;
};

std::span<const PrimInfo> all_prims();
const PrimInfo* find_prim(std::string_view name);
const PrimInfo& prim_info(PrimId id);
std::vector<std::string> prim_names();

}  // namespace ab
