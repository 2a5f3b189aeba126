#include "passes/pipeline.h"

#include "parse/parser.h"
#include "passes/verify.h"

namespace ab {

static const PassInfo kPasses[] = {
    {"parse", "read the .ab text into the IR (PEGTL grammar in grammar/)", true},
    {"verify", "labels, callees, arities, attributes, definedness on every path", true},
    {"types", "whole-program type inference from the entry's inputs", false},
    {"liveness", "live variables into and out of every instruction", false},
    {"lower_function_calls", "calls become push/pop and push_goto; returns indirect_goto", false},
    {"allocation_strategy", "storage class per variable: null, temporary, register, full", false},
    {"fuse_pop_push", "pop x followed by a write of x becomes an in-place update x!", false},
    {"block_order", "scheduling priority of blocks for the min-pc policy", false},
};

std::span<const PassInfo> all_passes() { return kPasses; }

const PassInfo* find_pass(const std::string& name) {
  for (const auto& p : kPasses)
    if (name == p.name) return &p;
  return nullptr;
}

std::string pass_names() {
  std::string out;
  for (const auto& p : kPasses) {
    if (!out.empty()) out += ", ";
    out += p.name;
  }
  return out;
}

Result<Module> load_and_verify(const std::string& path) {
  Result<Module> m = parse_file(path);
  if (!m) return m;
  Diagnostics d(m->source);
  verify_module(*m, d);
  if (d.has_errors()) return d;
  return m;
}

}  // namespace ab
