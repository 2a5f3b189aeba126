// The type rule of every primitive: given one thread's operand types (event
// shapes only; the batch dimension never appears) and the resolved
// attributes, the result type or an error message. Type inference, the
// verifier, `autobatch ops` and the kernels' callers all ask this one
// function, so a primitive's typing lives in exactly one place.
//
// Choices made here (docs/language.md, "Design choices"):
// - Reductions take `axis=k` with -rank <= k < rank; a negative k counts from
//   the last dimension (NumPy). Without `axis` they reduce every event
//   dimension to a scalar. reduce_max/reduce_min over zero elements have no
//   identity and are a type error.
// - get/set index the first event dimension; i may be i32 or i64.
// - set(x, i, v): v has x's dtype and a shape that broadcasts to x[i]'s.
// - reshape's shape may hold one -1, inferred from the element count.
// - dot/matvec/matmul/outer accept integer operands too (docs/language.md, "Integer and float
//   semantics", says an integer dot wraps); transpose accepts any dtype.
// - Compare ops accept any dtype, bool included (false < true).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/type.h"

namespace ab {

// The attributes of one primitive instruction, already resolved by the
// parser (`KEY=value` in the source). Unused keys are ignored here; the
// parser checks keys against ops.def.
struct PrimAttrs {
  std::optional<DType> dtype;
  std::optional<Shape> shape;
  std::optional<int64_t> axis;
  std::optional<int64_t> n;
  std::optional<int64_t> start, stop;  // slice
};

// slice's rows [first, last) of a first dimension of `rows`, from its start=
// and stop= (Python's meaning for negative values); nullopt when out of range.
std::optional<std::pair<int64_t, int64_t>> slice_bounds(const PrimAttrs& a, int64_t rows);

// The result type, or an error message without location (the caller adds
// it). Exactly one of the two is set.
struct PrimTypeResult {
  std::optional<Type> type;
  std::string error;
  bool ok() const { return type.has_value(); }
};

struct Instr;

// The attributes of a primitive instruction (its `KEY=value` list), as its
// kernel and type rule take them.
PrimAttrs resolve_attrs(const Instr& in);

PrimTypeResult prim_result_type(PrimId op, const std::vector<Type>& args, const PrimAttrs& attrs);

// How a primitive types its operands: ops.def's Kind column.
PrimKind prim_kind(PrimId op);

// NumPy broadcasting of two event shapes; nullopt if incompatible.
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

// A reduction's axis resolved against an operand's rank: 0 <= k < rank, or
// nullopt when out of range.
std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank);

}  // namespace ab
