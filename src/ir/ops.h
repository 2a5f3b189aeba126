// The primitive table (ops.def) as C++ data.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/type.h"

namespace ab {

enum class PrimId : uint16_t {
#define AB_PRIM(id, ...) id,
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
  Float2,     // float, same dtype, broadcast
  Compare,    // same dtype, broadcast -> bool
  Logic2,     // bool, broadcast
  Logic1,     // bool
  Reduce,     // over event dimensions
  Other,      // its own rule
};

// Which operands must share a dtype, with each other, with the result, or
// with a fixed dtype (ops.def's Dtypes column); type inference reads it.
enum class DtypeGroups : uint8_t {
  SameDest01,     // operands 0 and 1 and the result
  SameDest0,      // operand 0 and the result
  FloatDest0,     // operand 0 (a float) and the result
  Float0,         // operand 0 is a float
  Same01,         // operands 0 and 1
  Bool01,         // operands 0 and 1 are bool
  Bool0,          // operand 0 is bool
  Select,         // a bool condition; operands 1, 2 and the result
  Get,            // operand 0 and the result; an integer index
  Set,            // operands 0, 2 and the result; an integer index
  Key0,           // operand 0 is an i64 key
  KeyFloat1,      // operand 0 is an i64 key, operand 1 a float
  KeyFloatDest1,  // operand 0 is an i64 key, operand 1 a float and the result
  KeyInt1,        // operand 0 is an i64 key, operand 1 an integer
  FloatDest01,    // operands 0 and 1 (floats) and the result
  AllDest,        // every operand and the result
  None,           // nothing must agree
};

// What running a primitive may do besides computing its result (ops.def's
// Effects column): bits, Pure when none.
namespace prim_effect {
constexpr uint8_t Pure = 0;
constexpr uint8_t Fails = 1;   // may report an error at run time
constexpr uint8_t Random = 2;  // draws numbers from its key operand
constexpr uint8_t Thread = 4;  // reads which thread runs it
// Reports to the host (progress: RunOptions::thread_progress): never
// removed, moved or speculated, even when its result is not read.
constexpr uint8_t Progress = 8;
}  // namespace prim_effect

// Whether a primitive may run for a thread that would not have run it
// (ops.def's Speculate column; if_convert).
enum class Speculate : uint8_t {
  Always,
  Never,
  IfCannotFail,  // when its operands show it cannot fail (a rule per primitive)
};

// How the JIT compiles a primitive (ops.def's Jit column).
enum class JitKind : uint8_t {
  Inline,     // an instruction sequence of its own
  Intrinsic,  // the LLVM intrinsic named by its symbol
  Libm,       // the C library function named by its symbol ("f" appended for f32)
  Kernel,     // the exported scalar function named by its symbol (vm/kernels/scalar.h)
  Batched,    // its batched kernel, called from compiled code for a segment's lanes
  None,       // not compiled
};

// What value_and_grad does with a primitive (ops.def's Grad column; the grad
// pass, src/passes/grad/).
enum class GradKind : uint8_t {
  Rule,    // a reverse-mode rule: rule_<Id> in src/passes/grad/rules.cpp
  Zero,    // the result carries no gradient (comparisons, rounding, integers)
  Leaves,  // the cotangent goes to the operands leaf by leaf (tuple)
  Random,  // draws random numbers: an error in a function being differentiated
  None,    // no gradient: an error when an operand depends on the argument
           // differentiated (custom primitives)
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
  uint8_t effects;  // prim_effect bits
  Speculate speculate;
  JitKind jit;
  const char* symbol;  // Intrinsic, Libm, Kernel: what it compiles to
  GradKind grad;
  const char* doc;
  std::vector<AttrSpec> attr_specs() const;
};

std::span<const PrimInfo> all_prims();  // the built-ins (ops.def) only
const PrimInfo* find_prim(std::string_view name);
const PrimInfo& prim_info(PrimId id);
std::vector<std::string> prim_names();

// The effect columns of a primitive (custom ones: may fail, see
// register_custom_prim).
inline bool prim_may_fail(PrimId id) { return prim_info(id).effects & prim_effect::Fails; }
inline bool prim_random(PrimId id) { return prim_info(id).effects & prim_effect::Random; }
// A primitive whose value differs between threads even when its operands are
// shared (thread_index): never computed once for all threads.
inline bool prim_per_thread(PrimId id) { return prim_info(id).effects & prim_effect::Thread; }
inline bool prim_reports(PrimId id) { return prim_info(id).effects & prim_effect::Progress; }
inline Speculate prim_speculate(PrimId id) { return prim_info(id).speculate; }
inline JitKind prim_jit(PrimId id) { return prim_info(id).jit; }
inline GradKind prim_grad(PrimId id) { return prim_info(id).grad; }
// Names of the columns' values, for `autobatch ops` and messages.
std::string prim_effects_name(uint8_t effects);  // "pure", "fails", "random,fails", ...
const char* speculate_name(Speculate s);
const char* jit_kind_name(JitKind k);

// Custom primitives: registered at run time (by an embedder, through the
// public API), with ids after the built-ins. A registration lives for the
// process and its id is never reused. find_prim and prim_names see the
// custom primitives registered globally and those of the PrimScope active
// on the calling thread (a per-compile registry); prim_info, the type rule
// and kernel_for work for any registered id on any thread.
constexpr size_t kMaxCustomPrims = 1024;
constexpr size_t kBuiltinPrimCount = 0
#define AB_PRIM(...) +1
#include "ir/ops.def"
#undef AB_PRIM
    ;

struct CustomPrimDef {
  std::string name;
  int min_args = 0;
  int max_args = 0;
  std::string doc;
  // One thread's operand types (tensors) to the result type, or nullopt with
  // `error` set. May be called from several threads at once.
  std::function<std::optional<Type>(const std::vector<Type>& args, std::string& error)> type_rule;
};

// The new primitive's id; nullopt if kMaxCustomPrims are registered already.
// The caller checks the name (prim_name_error) first.
std::optional<PrimId> register_custom_prim(CustomPrimDef def);
bool is_custom_prim(PrimId id);
const CustomPrimDef* custom_prim(PrimId id);  // null for a built-in
// Why `name` cannot name a new primitive ("" if it can): not an identifier,
// a keyword, or a built-in's name.
std::string prim_name_error(const std::string& name);
// Makes `id` visible to find_prim on every thread.
void make_prim_global(PrimId id);
// While alive, find_prim on this thread also sees `ids` (later ones shadow
// earlier ones and the global registrations). Scopes nest.
class PrimScope {
 public:
  explicit PrimScope(const std::vector<PrimId>* ids);
  ~PrimScope();
  PrimScope(const PrimScope&) = delete;
  PrimScope& operator=(const PrimScope&) = delete;

 private:
  const std::vector<PrimId>* prev_;
};

}  // namespace ab
