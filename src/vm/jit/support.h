// Small dtype and operand rules the JIT's support list (support.cpp) and its
// code generator (prims.cpp) share; no LLVM here.
#pragma once
#include <cstdint>

#include "ir/type.h"
#include "vm/jit/jit.h"

namespace ab::jit {

inline bool is_int(DType d) { return d == DType::I32 || d == DType::I64; }

// The divisor of a div/mod when it is a constant: its value.
inline bool constant_divisor(const Arg& a, int64_t* v) {
  if (a.slot >= 0) return false;
  if (a.dtype == DType::I64)
    *v = static_cast<int64_t>(a.bits);
  else if (a.dtype == DType::I32)
    *v = static_cast<int32_t>(static_cast<uint32_t>(a.bits));
  else
    return false;
  return true;
}

}  // namespace ab::jit
