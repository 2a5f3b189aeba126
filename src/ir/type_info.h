// What type inference (passes/infer_types) finds: one type per variable,
// parameter, result and operand of every function. The VMs and the later
// passes read these records; only infer_types writes them.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/type.h"

namespace ab {

struct FunctionTypes {
  std::vector<std::optional<Type>> params;
  std::vector<std::optional<Type>> results;
  std::map<std::string, Type> vars;  // every variable whose type is known
  // [block][instr][arg]: the type of each operand, literals included.
  std::vector<std::vector<std::vector<std::optional<Type>>>> operand_types;
  // [block][value]: the types of a return's operands.
  std::vector<std::vector<std::optional<Type>>> return_types;
  bool complete() const {
    for (const auto& p : params)
      if (!p) return false;
    for (const auto& r : results)
      if (!r) return false;
    return true;
  }
};

struct TypeInfo {
  std::map<std::string, FunctionTypes> funcs;
  std::vector<std::string> reachable;  // from the entry, entry first
};

}  // namespace ab
