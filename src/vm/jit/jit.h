// Block compilation for the stack VM (issue 10): a run of a block's scalar
// elementwise instructions (a "segment") becomes one native loop over a
// chunk of lanes, compiled at run time with LLVM 15's ORC JIT. Values stay
// in registers from one instruction to the next; only what outlives the
// segment is stored.
//
// Two forms of a segment:
// - gather: lane j of a Thread slot lives at base[s][idx[j]] (the VM's
//   per-thread `top` arrays, through the chunk's lane list), a Scratch slot
//   at base[s][j], a Shared slot at base[s][0] (loaded once). Used for any
//   block; the loop stays scalar (AVX2 has no scatter) but fused.
// - dense: every Thread slot is a dense per-chunk array base[s][j]; lanes
//   with active[j] == 0 are frozen (their stores write the old value back),
//   and after the body active[j] keeps only the lanes whose branch condition
//   stays in the block. This is the body of a persistent loop (a block that
//   branches back to itself); with masks instead of branches and no
//   aliasing between slots, LLVM vectorises it (AVX2 where the host has it).
//
// Arithmetic is exactly that of the kernels (src/vm/kernels_*.cpp): integers
// wrap, div/mod floor as Python does, float math calls the same C library
// functions, float min/max propagate NaN the same way. A check that fails
// (integer division or mod by zero, a cast of NaN or an out-of-range float
// to an integer) only raises a flag: the VM then restores the segment's
// outputs and runs the same instructions through the kernels, which report
// the exact error (lane and message) the interpreter gives.
//
// One LLJIT per process, created on first use (std::call_once) and safe to
// use from several threads (one VM run per thread); each program's code is
// one module with its own resource tracker, freed with its Code object.
// Without LLVM (AUTOBATCH_JIT off) available() is false and compile() fails.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/type.h"

namespace ab::jit {

// Whether this build has the JIT (and LLVM initialised on this host).
bool available();

enum class SlotKind : uint8_t {
  Thread,   // a per-thread variable (gather: through idx; dense: a chunk array)
  Scratch,  // a temporary of the chunk, lane j at j
  Shared,   // one value for every lane; read only
};

struct Slot {
  DType dtype = DType::I64;
  SlotKind kind = SlotKind::Thread;
  bool keep = true;  // a Scratch slot written here that is read after the segment
};

struct Arg {
  int32_t slot = -1;  // a slot, or (slot < 0) a constant:
  DType dtype = DType::I64;
  uint64_t bits = 0;  // the constant's bytes, little-endian
};

struct FOp {
  bool copy = false;  // out[0] = args[0]
  PrimId prim = PrimId::Add;
  DType cast_to = DType::I64;  // Cast only
  std::vector<Arg> args;
  std::vector<int32_t> outs;
};

struct Segment {
  std::vector<Slot> slots;
  std::vector<FOp> ops;
  // Dense form only: the branch condition's slot and the value that stays.
  int32_t cond = -1;
  bool stay_on_true = true;
  // Dense form only: > 1 also compiles a DenseMultiFn running the body this
  // many times per lane (values in registers between iterations). Only for
  // bodies where no op may fail.
  int32_t copies = 1;
};

// Whether `op` with these operand dtypes (all scalar) can be compiled.
bool supported(PrimId op, const std::vector<DType>& args, DType out);
// Whether an op may fail at run time (and so needs the restore path).
bool may_fail(const FOp& op, const std::vector<Slot>& slots);

// Returns 0, or 1 if some lane's check failed.
using GatherFn = int64_t (*)(void* const* base, const uint32_t* idx, int64_t n);
// The active mask of a dense body: one word per lane, 1 (active) or 0. A
// word as wide as the values keeps the mask in the vector registers the
// values use (a byte mask costs a pack and an unpack per operation on AVX2).
using ActiveWord = int64_t;
// Returns the number of lanes still active; *failed = 1 if an active lane's
// check failed (then the outputs are unspecified).
using DenseFn = int64_t (*)(void* const* base, int64_t n, ActiveWord* active, int64_t* failed);

// Runs `copies` iterations of a dense body (the Segment's) on every lane:
// a lane whose branch condition leaves the block in iteration k is frozen
// from then on. counts[k] (k < copies) = the lanes active entering iteration
// k. Returns the number of lanes still active. No op may fail.
using DenseMultiFn = int64_t (*)(void* const* base, int64_t n, ActiveWord* active, int64_t* counts);

// A window of one lane (lane 0 of the dense arrays): up to `limit` (>= 1)
// iterations of the body, stopping after the one whose branch condition
// leaves the block; its values stay in registers throughout (no mask, no
// select), as in code written for one thread. Returns the iterations run;
// active[0] = 0 if the lane left. No op may fail.
using DenseSoloFn = int64_t (*)(void* const* base, int64_t limit, ActiveWord* active);

class Code {
 public:
  virtual ~Code() = default;
  std::vector<GatherFn> gather;           // one per requested gather segment
  std::vector<DenseFn> dense;             // one per requested dense segment
  std::vector<DenseMultiFn> dense_multi;  // per dense segment: null unless copies > 1
  std::vector<DenseSoloFn> dense_solo;    // per dense segment: null unless copies > 1
  double seconds = 0;                     // wall time of code generation and compilation
  std::string detail;                     // where that time went
};

// Compiles every segment into one module at O2 for the host CPU (so with
// AVX2 where the host has it). Null and *error set if LLVM fails (the VM then
// interprets). The code is cached for the process, keyed by the segments: a
// program run again (benchmarks, a batch sharded over threads) compiles once
// (*cached tells; `seconds` is then the first compilation's).
std::shared_ptr<const Code> compile(const std::vector<Segment>& gather,
                                    const std::vector<Segment>& dense, std::string* error,
                                    bool* cached);

}  // namespace ab::jit
