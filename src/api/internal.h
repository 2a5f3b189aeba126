// Shared pieces of the public API's implementation (src/api/*.cpp): the
// conversions between the public types (namespace autobatch) and the
// internal ones (namespace ab), and the hidden parts of the public classes.
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "ir/ir.h"
#include "ir/ops.h"
#include "passes/pipeline.h"
#include "ir/type_info.h"
#include "support/diag.h"
#include "ir/array.h"

namespace autobatch {

// Public diagnostics from internal ones (each rendered with its source).
std::vector<Diagnostic> to_public(const ab::Diagnostics& d);
// The front end's warnings about a module (ab::Module::warnings): those that
// always apply, and those about `entry`'s parameters ("" for none).
std::vector<Diagnostic> module_warnings(const ab::Module& m, const std::string& entry);
// One diagnostic about an option or a flag (no source): "autobatch: error: MESSAGE".
Diagnostic option_error(const std::string& message);

inline ab::DType to_internal(DType d) { return static_cast<ab::DType>(d); }
inline DType to_public(ab::DType d) { return static_cast<DType>(d); }

struct ArrayAccess {
  // Takes ownership of `a` without copying; the public shape is batch first.
  static Array wrap(ab::Array a);
  // A borrowed internal view of `a` (no copy).
  static ab::Array borrow(const Array& a);
};

struct PrimitivesAccess {
  static std::vector<ab::PrimId> snapshot(const Primitives& p);
};

// What running needs for one set of input types: the types, and for the
// stack VM the lowered program with its variable types. Immutable once made.
struct Prepared {
  ab::Diagnostics diags;  // errors: the run cannot start
  ab::TypeInfo types;
  std::optional<ab::Compiled> compiled;
  // For the stackless VM and the reference interpreter: the module with its
  // value_and_grad calls expanded (passes/grad.h), when it has any.
  std::optional<ab::Module> expanded;
  ab::FunctionTypes program_types;  // of the lowered program (stack VM or a lowered file)
};

struct Program::Impl {
  ab::Module module;  // verified
  std::string entry;  // "" when none could be chosen
  std::vector<std::string> result_names;  // the entry's (passes/result_names.h)
  ab::Diagnostics entry_error;
  std::vector<Diagnostic> warnings;  // module_warnings for the entry
  std::vector<ab::PrimId> prims;  // the per-compile custom primitives
  std::vector<std::string> passes;  // the pipeline chosen (empty: every pass)
  mutable std::mutex mu;
  mutable std::map<std::string, std::shared_ptr<const Prepared>> cache;

  // The entry's parameters as the input loader takes them.
  std::vector<std::pair<std::string, std::optional<ab::Type>>> params() const;
  std::shared_ptr<const Prepared> prepare(bool lowered_vm,
                                          const std::vector<std::optional<ab::Type>>& types) const;
};

// One line per run phase on stderr when logging is on (-v): "phase NAME: X ms".
// The phases of a CLI run, in order: inputs (Program::load_inputs), compile,
// run, merge (the shards' outputs into the batch's), outputs (write_outputs).
void log_phase(const char* name, double seconds);

// The scheduling policies: "persistent" (default) and "min-pc".
bool known_schedule(const std::string& s);
std::string schedule_error(const std::string& s);

}  // namespace autobatch
