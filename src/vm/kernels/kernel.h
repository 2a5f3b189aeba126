// Batched kernels: the one implementation of every primitive's arithmetic.
// The batched VMs call a kernel once per instruction for a chunk of active
// lanes; the reference interpreter calls the same kernels with n = 1. So
// every VM computes bit-identical values (except where a kernel itself
// chooses a blocked algorithm by operand layout, such as one GEMM for a
// shared matrix; docs/language.md, "Reference semantics" allows that rounding difference).
//
// A kernel sees n lanes of each operand through a view that says where lane
// j's event lives (see Access). Operands and results are tensor leaves
// (tuples never reach a kernel: the VM handles them as their leaves; `split`
// has two i64 results). Events are C order; bool is one byte, 0 or 1.
//
// Contract:
// - n >= 0; a view's data may be null only if its events have no elements
//   or n == 0.
// - A result may alias an operand exactly (same data pointer, access and
//   index list, hence the same type): `n = sub(n, 1)` in place. Any other
//   overlap between results and operands is forbidden. Gather index lists
//   hold distinct lanes.
// - Operand and result types are those prim_result_type accepted; kernels
//   do not re-check them.
// - On a runtime error (integer division or mod by zero, integer pow with a
//   negative exponent, cast of NaN or an out-of-range float to an integer,
//   get/set index out of range) a kernel returns false and fills *err with
//   the smallest failing lane and a message without location. Lanes before
//   it are computed; the failing lane's results are unspecified; later lanes
//   are not written (--on-error record reruns the instruction on them, and
//   a result may alias an operand).
// - Kernels do not allocate per call on their hot paths: non-elementwise
//   kernels use thread-local scratch that only grows. They are safe to call
//   from several threads at once.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "ir/ops.h"
#include "ir/prim_types.h"
#include "ir/type.h"

namespace ab {

// How one operand's n lanes are laid out, for an event of E elements:
enum class Access : uint8_t {
  Dense,   // lane j's event at elements [j*E, (j+1)*E): a temporary of the chunk
  Shared,  // every lane's event at elements [0, E): a value stored once for all
  Gather,  // lane j's event at elements [index[j]*E, ...): a per-thread variable
           // read (or, for a result, written) through the active-lane list
};

struct ArgView {
  const void* data = nullptr;
  Access access = Access::Dense;
  const uint32_t* index = nullptr;  // Gather only
  const TensorType* type = nullptr;
};

struct OutView {
  void* data = nullptr;
  Access access = Access::Dense;  // Dense, or Gather (scatter through index)
  const uint32_t* index = nullptr;
  const TensorType* type = nullptr;
};

struct KernelError {
  int64_t lane = -1;  // the smallest failing lane j (0 <= j < n)
  std::string message;
};

// progress(n)'s side table (a run's RunOptions::thread_progress): thread t
// of the whole batch stores n into slots[t - first] when 0 <= t - first <
// count. Slots are written relaxed; a reader on another OS thread sees each
// slot's latest value or an earlier one.
struct ProgressTable {
  std::atomic<int64_t>* slots = nullptr;
  int64_t first = 0;
  int64_t count = 0;
};

struct KernelCall {
  int64_t n = 0;
  const ArgView* args = nullptr;
  int nargs = 0;
  OutView* outs = nullptr;
  int nouts = 0;
  const PrimAttrs* attrs = nullptr;  // never null
  // thread_index and progress only (null for the others): lane j's thread,
  // the index of its input row in the whole batch (docs/language.md,
  // "Primitives"), for j < n. progress stores lane j's n in `progress` at
  // that thread (null: the run has no table, and progress only returns n).
  const int64_t* threads = nullptr;
  const ProgressTable* progress = nullptr;
};

using KernelFn = bool (*)(const KernelCall& call, KernelError* err);

// The kernel of `op`; nullptr for `tuple` (the VM handles tuples as leaves).
// A custom primitive's kernel is a trampoline to what set_custom_kernel gave.
KernelFn kernel_for(PrimId op);

// The kernel of custom primitive `id` (ir/ops.h), same contract as above
// (it must be safe to call from several threads at once). Set once, right
// after registering the primitive and before any program uses it.
using CustomKernel = std::function<bool(const KernelCall& call, KernelError* err)>;
void set_custom_kernel(PrimId id, CustomKernel kernel);

// Where lane j's event starts, counted in events from the view's data.
inline int64_t lane_slot(Access a, const uint32_t* index, int64_t j) {
  return a == Access::Dense ? j : a == Access::Gather ? static_cast<int64_t>(index[j]) : 0;
}

}  // namespace ab
