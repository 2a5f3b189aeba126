// The table of passes: one entry per pass, in pipeline order, with its
// command-line name and a one-line description. `--print-after`, the
// pipeline and `--help` all read this table.
#pragma once
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "passes/lower_function_calls.h"
#include "passes/infer_types.h"
#include "support/result.h"

namespace ab {

struct PassInfo {
  const char* name;
  const char* summary;
};

std::span<const PassInfo> all_passes();
const PassInfo* find_pass(const std::string& name);
std::string pass_names();  // "parse, verify, ..." for messages

// parse + verify: the front end every command starts with.
Result<Module> load_and_verify(const std::string& path);

struct CompileOptions {
  std::string entry;                             // must name a function
  std::vector<std::optional<Type>> entry_types;  // from the inputs; may be empty
  std::string print_after;                       // stop after this pass and print
};

struct Compiled {
  Module source;  // the verified module
  TypeInfo types;
  Module lowered;  // lowered.program after every pass run
  LoweringInfo info;
  std::string printed;  // what --print-after asked for (or the final program)
};

// Runs the passes after verify on a verified module. Errors (types, an
// internal stack-discipline failure) come back as diagnostics.
Result<Compiled> compile(const Module& m, const CompileOptions& opt);

// Types of a lowered program's variables: the declared ones, and the rest
// inferred from `input_types` through the program's copies and primitives.
// Indices of operand_types follow p.blocks[b].instrs[i].args[a] exactly.
FunctionTypes infer_program_types(const Program& p,
                                  const std::vector<std::optional<Type>>& input_types,
                                  Diagnostics& diags, const SourceRef& source);

}  // namespace ab
