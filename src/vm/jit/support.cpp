// Which primitives the JIT compiles per lane (supported on scalars,
// supported_tensor on tensors) and which of them may fail at run time
// (may_fail), derived from ops.def's columns: the Jit column says whether a
// primitive compiles at all (Batched and custom primitives: called as their
// batched kernel instead), its Kind column the operand dtypes, and for the
// primitives with a type rule of their own (Kind Other) a rule per
// primitive below. The same answers with or without
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
    case PrimId::Size:  // of a scalar: 1
      return n == 1 && out == DType::I64;
    case PrimId::Reshape:  // a scalar to a scalar: the value
      return n == 1 && out == args[0];
    case PrimId::Zeros:  // a scalar zero (the gradient's adjoints start from them)
      return n == 0;
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
      // Of a scalar (per lane, the only operand compiled code reduces): the
      // kernel's one-element result (sum(x) of a transform's log-Jacobian,
      // a scalar normal_lpdf's sum).
      return n == 1 && out == d;
    case PrimKind::Other:
      return other_supported(op, args, out);
  }
  return false;
}

namespace {

// `a` broadcasts to `out` (NumPy: aligned from the last dimension, each of
// a's dimensions 1 or out's).
bool broadcasts(const Shape& a, const Shape& out) {
  if (a.size() > out.size()) return false;
  const size_t off = out.size() - a.size();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != 1 && a[i] != out[off + i]) return false;
  return true;
}

bool elementwise(const PrimInfo& info) {
  switch (info.kind) {
    case PrimKind::Arith2:
    case PrimKind::Arith1:
    case PrimKind::Float1:
    case PrimKind::FloatPred:
    case PrimKind::Float2:
    case PrimKind::Compare:
    case PrimKind::Logic2:
    case PrimKind::Logic1:
      return true;
    default:
      return info.id == PrimId::Select || info.id == PrimId::Cast;
  }
}

}  // namespace

bool supported_tensor(PrimId op, const std::vector<TensorType>& args, const TensorType& out) {
  if (is_custom_prim(op) || prim_jit(op) == JitKind::None ||
      (prim_jit(op) == JitKind::Batched && op != PrimId::Zeros))
    return false;
  const PrimInfo& info = prim_info(op);
  const size_t n = args.size();
  auto scalar_int = [](const TensorType& t) { return t.shape.empty() && is_int(t.dtype); };
  switch (op) {
    case PrimId::Size:
      return n == 1 && out.dtype == DType::I64 && out.shape.empty();
    case PrimId::Zeros:  // the lane's event cleared
      return n == 0;
    case PrimId::Reshape:
      return n == 1 && args[0].dtype == out.dtype &&
             args[0].num_elements() == out.num_elements();
    case PrimId::Get:
    case PrimId::Set: {  // get(x, i1, ..., ik), set(x, i1, ..., ik, v)
      const bool set = op == PrimId::Set;
      if (n < (set ? 3u : 2u)) return false;
      const size_t k = n - (set ? 2 : 1);
      if (args[0].shape.size() < k) return false;
      for (size_t a = 1; a <= k; ++a)
        if (!scalar_int(args[a])) return false;
      const Shape row(args[0].shape.begin() + static_cast<long>(k), args[0].shape.end());
      if (!set) return out.dtype == args[0].dtype && out.shape == row;
      return out == args[0] && args[n - 1].dtype == out.dtype && broadcasts(args[n - 1].shape, row);
    }
    default:
      break;
  }
  if (!elementwise(info)) return false;  // random numbers of a shape: the batched kernel
  std::vector<DType> ds;
  for (const TensorType& a : args) {
    if (!broadcasts(a.shape, out.shape)) return false;
    ds.push_back(a.dtype);
  }
  return supported(op, ds, out.dtype);
}

bool may_fail(const FOp& op, const std::vector<Slot>& slots) {
  if (op.kind == FOp::Kind::Call) return op.fails;
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
    case PrimId::Get:
    case PrimId::Set: {
      // Only an index that is not a constant inside its dimension may be out
      // of range (an adjoint's accumulation into q[0], q[1], ...).
      if (op.args.empty() || op.args[0].slot < 0) return true;
      const std::vector<int64_t>& shape = slots[op.args[0].slot].shape;
      const size_t last = op.prim == PrimId::Set ? op.args.size() - 1 : op.args.size();
      if (last < 2 || last - 1 > shape.size()) return true;
      for (size_t a = 1; a < last; ++a) {
        int64_t i = 0;
        const int64_t d = shape[a - 1];
        if (!constant_divisor(op.args[a], &i) || i < -d || i >= d) return true;
      }
      return false;
    }
    default:
      return true;  // ops.def says it may fail
  }
}

bool calls_c(const FOp& op, const std::vector<Slot>& slots) {
  if (op.kind == FOp::Kind::Call) return true;
  if (op.copy || op.kind != FOp::Kind::Compute) return false;
  const bool f = !op.args.empty() &&
                 is_float(op.args[0].slot >= 0 ? slots[op.args[0].slot].dtype : op.args[0].dtype);
  if (op.prim == PrimId::Zeros) return false;  // a constant, or a memset of the event
  switch (prim_jit(op.prim)) {
    case JitKind::Libm:
    case JitKind::Batched:
    case JitKind::None:
      return true;
    default:
      break;
  }
  switch (op.prim) {
    case PrimId::Mod:
    case PrimId::Pow:
      return f;
    case PrimId::Lgamma:
    case PrimId::Sigmoid:
    case PrimId::Exponential:
    case PrimId::Normal:
    case PrimId::Gamma:
    case PrimId::Poisson:
      return true;
    default:
      return false;
  }
}

// Tarjan's strongly connected components, iteratively.
std::vector<int64_t> cycle_components(const std::vector<std::vector<uint32_t>>& next) {
  const size_t n = next.size();
  std::vector<int64_t> index(n, -1), low(n, 0), comp(n, -1);
  std::vector<bool> on(n, false);
  std::vector<uint32_t> stack;
  int64_t counter = 0, comps = 0;
  for (uint32_t root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    std::vector<std::pair<uint32_t, size_t>> work{{root, 0}};  // (block, next edge)
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on[root] = true;
    while (!work.empty()) {
      auto& [v, e] = work.back();
      if (e < next[v].size()) {
        const uint32_t w = next[v][e++];
        if (w >= n || w == v) continue;
        if (index[w] < 0) {
          index[w] = low[w] = counter++;
          stack.push_back(w);
          on[w] = true;
          work.push_back({w, 0});
        } else if (on[w]) {
          low[v] = std::min(low[v], index[w]);
        }
        continue;
      }
      const uint32_t done = v;
      work.pop_back();
      if (!work.empty()) low[work.back().first] = std::min(low[work.back().first], low[done]);
      if (low[done] != index[done]) continue;
      std::vector<uint32_t> members;
      uint32_t w;
      do {
        w = stack.back();
        stack.pop_back();
        on[w] = false;
        members.push_back(w);
      } while (w != done);
      if (members.size() < 2) continue;
      for (uint32_t m : members) comp[m] = comps;
      ++comps;
    }
  }
  return comp;
}

}  // namespace ab::jit
