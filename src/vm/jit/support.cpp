// Which primitives the JIT compiles (supported) and which of them may fail
// at run time (may_fail), derived from ops.def's columns: the Jit column
// says whether a primitive compiles at all, its Kind column the operand
// dtypes, and for the primitives with a type rule of their own (Kind
// Other) a rule per primitive below. The same answers with or without
// LLVM, so that the VM's planning does not depend on the build.
#include "vm/jit/support.h"

#include "ir/ops.h"
#include "vm/jit/jit.h"

namespace ab::jit {

namespace {

bool all_same(const std::vector<DType>& args) {
  for (DType a : args)
    if (a != args[0]) return false;
  return true;
}

// Kind Other: each compiled primitive's operands and result.
bool other_supported(PrimId op, const std::vector<DType>& args, DType out) {
  const size_t n = args.size();
  switch (op) {
    case PrimId::Select:
      return n == 3 && args[0] == DType::Bool && args[1] == args[2] && out == args[1];
    case PrimId::Cast:
      return n == 1;
    case PrimId::Uniform:
    case PrimId::Normal:
    case PrimId::Exponential:
      // A second operand gives only its (scalar) shape.
      return (n == 1 || n == 2) && args[0] == DType::I64 && out == DType::F64;
    case PrimId::Bernoulli:
      return n == 2 && args[0] == DType::I64 && is_float(args[1]) && out == DType::Bool;
    case PrimId::Gamma:
      return n == 2 && args[0] == DType::I64 && is_float(args[1]) && out == args[1];
    case PrimId::Poisson:
      return n == 2 && args[0] == DType::I64 && is_float(args[1]) && out == DType::I64;
    case PrimId::Split:
      return n == 1 && args[0] == DType::I64 && out == DType::I64;
    case PrimId::FoldIn:
      return n == 2 && args[0] == DType::I64 && is_int(args[1]) && out == DType::I64;
    case PrimId::ThreadIndex:
      // The VM passes the thread's input row and the batch's first thread.
      return n == 2 && args[0] == DType::I64 && args[1] == DType::I64 && out == DType::I64;
    default:
      return false;  // a primitive of Kind Other needs its rule here to compile
  }
}

}  // namespace

bool supported(PrimId op, const std::vector<DType>& args, DType out) {
  if (is_custom_prim(op) || prim_jit(op) == JitKind::None) return false;
  const PrimInfo& info = prim_info(op);
  const size_t n = args.size();
  // The operand count of ops.def (Kind Other: checked by its own rule, as
  // thread_index gets its row as an operand).
  const bool arity = static_cast<int>(n) >= info.min_args &&
                     (info.max_args < 0 || static_cast<int>(n) <= info.max_args);
  if (!arity && info.kind != PrimKind::Other) return false;
  const DType d = n ? args[0] : out;
  switch (info.kind) {
    case PrimKind::Arith2:
    case PrimKind::Arith1:
      return all_same(args) && d != DType::Bool && out == d;
    case PrimKind::Float1:
    case PrimKind::Float2:
      return all_same(args) && is_float(d) && out == d;
    case PrimKind::FloatPred:
      return is_float(d) && out == DType::Bool;
    case PrimKind::Compare:
      return all_same(args) && out == DType::Bool;
    case PrimKind::Logic2:
    case PrimKind::Logic1:
      return all_same(args) && d == DType::Bool && out == DType::Bool;
    case PrimKind::Reduce:
      return false;
    case PrimKind::Other:
      return other_supported(op, args, out);
  }
  return false;
}

bool may_fail(const FOp& op, const std::vector<Slot>& slots) {
  if (op.copy || op.kind != FOp::Kind::Compute) return false;
  if (!prim_may_fail(op.prim)) return false;
  auto dtype = [&](size_t i) {
    const Arg& a = op.args[i];
    return a.slot >= 0 ? slots[a.slot].dtype : a.dtype;
  };
  int64_t v = 0;
  switch (op.prim) {
    case PrimId::Div:
    case PrimId::Mod:
      return is_int(dtype(0)) && (!constant_divisor(op.args[1], &v) || v == 0);
    case PrimId::Pow:
      return is_int(dtype(0)) && (!constant_divisor(op.args[1], &v) || v < 0);
    case PrimId::Cast:
      return is_float(dtype(0)) && is_int(op.cast_to);
    default:
      return true;  // ops.def says it may fail
  }
}

}  // namespace ab::jit
