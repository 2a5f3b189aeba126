// The one reader of the environment (env_options.h): every variable
// autobatch looks at is read here.
#include "support/env_options.h"

#include <algorithm>
#include <cstdlib>

namespace ab {

EnvOptions read_env_options(const char* (*get)(const char* name)) {
  EnvOptions o;
  auto is = [&](const char* name, char c) {
    const char* v = get(name);
    return v && v[0] == c && v[1] == '\0';
  };
  auto text = [&](const char* name) {
    const char* v = get(name);
    return std::string(v ? v : "");
  };
  o.coalesce = !is("AUTOBATCH_COALESCE", '0');
  o.jit_blocks = !is("AUTOBATCH_JIT_BLOCKS", '0');
  o.jit_chain = !is("AUTOBATCH_JIT_CHAIN", '0');
  o.jit_dump = is("AUTOBATCH_JIT_DUMP", '1');
  if (std::string cg = text("AUTOBATCH_JIT_LIGHT_CG"); !cg.empty()) o.jit_light_cg = cg;
  o.jit_light_pipeline = text("AUTOBATCH_JIT_LIGHT_PIPELINE");
  if (std::string d = text("AUTOBATCH_JIT_DELAY_MS"); !d.empty())
    o.jit_delay_ms = std::max<int64_t>(0, std::strtoll(d.c_str(), nullptr, 10));
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"})
    o.mpi_launcher = o.mpi_launcher || get(v) != nullptr;
  return o;
}

const EnvOptions& env_options() {
  static const EnvOptions o =
      read_env_options([](const char* n) -> const char* { return std::getenv(n); });
  return o;
}

}  // namespace ab
