// The pass registry: one row per pass, in pipeline order, with its name (the
// same as its file and its function: `allocation_strategy` is
// passes/allocation_strategy.cpp's `allocation_strategy()`), a one-line
// summary, what it needs done before it, and the function that runs it.
// compile() is a loop over the rows; `--passes`, `--print-after` and
// `--help` all read this table.
#pragma once
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/infer_types.h"
#include "passes/liveness.h"
#include "passes/lower_function_calls.h"
#include "support/result.h"

namespace ab {

struct Compiled;
struct CompileOptions;

// What a pass needs to hold before it runs, and what it makes hold.
enum PassFacts : unsigned {
  kSourceForm = 1,  // the program is still the source module (not lowered)
  kTyped = 2,       // infer_types has run
  kLowered = 4,     // the program is the flat lowered program
  kClassed = 8,     // storage classes are assigned
};

struct PassInfo {
  const char* name;
  const char* summary;
  unsigned needs;    // PassFacts that must hold before it
  unsigned adds;     // PassFacts it makes hold
  unsigned removes;  // PassFacts it ends
  // Runs the pass on the compilation; null for `parse`, which only the
  // front end (load_and_verify) can run. Errors go to the diagnostics.
  void (*run)(Compiled& c, const CompileOptions& opt, Diagnostics& d);
  const char* alias;  // an older name still accepted, or null
};

std::span<const PassInfo> all_passes();
const PassInfo* find_pass(const std::string& name);  // by name or alias
std::string pass_names();                            // "parse, verify, ..." for messages

// The rows a `--passes a,b,c` list names, in its order, checked: every name
// known, and every pass's needs met by the ones before it (parse and verify
// always run first, as the front end, and may be named or not). Returns an
// error message, or nothing with the rows in `out`.
std::optional<std::string> select_passes(const std::vector<std::string>& names,
                                         std::vector<const PassInfo*>& out);
// "a,b,c" split at commas (spaces around names ignored).
std::vector<std::string> split_pass_list(const std::string& list);

// parse + verify: the front end every command starts with.
Result<Module> load_and_verify(const std::string& path);

struct CompileOptions {
  std::string entry;                             // must name a function
  std::vector<std::optional<Type>> entry_types;  // from the inputs; may be empty
  std::string print_after;                       // stop after this pass and print
  std::vector<std::string> passes;               // the pipeline; empty: every pass
  bool print = true;  // make Compiled::printed (a run has no use for the text)
};

struct Compiled {
  Module source;  // the verified module
  TypeInfo types;
  Module lowered;  // lowered.program after every pass run
  LoweringInfo info;
  std::string printed;  // what --print-after asked for (or the final program)
  std::map<std::string, LivenessInfo> liveness;  // per source function, if liveness ran
  unsigned facts = 0;                            // PassFacts that hold now
};

// Runs the passes after verify on a verified module, each row of the
// pipeline in turn (logging each with its time and the program's size). Errors (types, an
// internal stack-discipline failure) come back as diagnostics.
Result<Compiled> compile(const Module& m, const CompileOptions& opt);

// The grad pass on a typed module, in place, as compile() runs it: the
// differentiated functions' blocks shaped first (grad.h, grad_reached),
// then every value_and_grad expanded, then `types` inferred again. The
// unlowered VMs run the module this leaves, so every VM runs the same
// generated functions (a loop's gradient as deep in each). Returns whether
// it succeeded (errors go to `d`).
bool expand_grad(Module& m, TypeInfo& types, const std::string& entry,
                 const std::vector<std::optional<Type>>& entry_types, Diagnostics& d);

// Types of a lowered program's variables: the declared ones, and the rest
// inferred from `input_types` through the program's copies and primitives.
// Indices of operand_types follow p.blocks[b].instrs[i].args[a] exactly.
FunctionTypes infer_program_types(const Program& p,
                                  const std::vector<std::optional<Type>>& input_types,
                                  Diagnostics& diags, const SourceRef& source);

}  // namespace ab
