// The table of passes: one entry per pass, in pipeline order, with its
// command-line name and a one-line description. `--print-after`, the
// pipeline and `--help` all read this table.
#pragma once
#include <span>
#include <string>

#include "ir/ir.h"
#include "support/result.h"

namespace ab {

struct PassInfo {
  const char* name;
  const char* summary;
  bool available;  // false until the issue that builds it lands
};

std::span<const PassInfo> all_passes();
const PassInfo* find_pass(const std::string& name);
std::string pass_names();  // "parse, verify, ..." for messages

// parse + verify: the front end every command starts with.
Result<Module> load_and_verify(const std::string& path);

}  // namespace ab
