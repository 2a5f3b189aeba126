// The environment variables autobatch reads, all of them read here, once per
// process (the first call of env_options()). They are developer switches for
// experiments, never needed to run a program; README lists them:
//   AUTOBATCH_COALESCE=0          every variable its own storage (no copy coalescing)
//   AUTOBATCH_JIT_BLOCKS=0        no block compiled whole (segments instead)
//   AUTOBATCH_JIT_CHAIN=0         blocks compiled whole are not chained
//   AUTOBATCH_JIT_DUMP=1          print the optimised LLVM modules to stderr
//   AUTOBATCH_JIT_LIGHT_CG=none|less|default   code generation level of the
//                                 modules without dense loops (default none)
//   AUTOBATCH_JIT_LIGHT_PIPELINE=<pass pipeline>  their optimisation passes
//   AUTOBATCH_JIT_DELAY_MS=N      each compilation in the background takes N ms
//                                 longer (tests: a slow compiler, which no run waits for)
// and, not ours, the variables an MPI launcher sets (mpi_launcher()).
#pragma once
#include <cstdint>
#include <string>

namespace ab {

struct EnvOptions {
  bool coalesce = true;               // AUTOBATCH_COALESCE (0: off)
  bool jit_blocks = true;             // AUTOBATCH_JIT_BLOCKS (0: off)
  bool jit_chain = true;              // AUTOBATCH_JIT_CHAIN (0: off)
  bool jit_dump = false;              // AUTOBATCH_JIT_DUMP (1: on)
  std::string jit_light_cg = "none";  // AUTOBATCH_JIT_LIGHT_CG
  std::string jit_light_pipeline;     // AUTOBATCH_JIT_LIGHT_PIPELINE ("" : the JIT's own)
  int64_t jit_delay_ms = 0;           // AUTOBATCH_JIT_DELAY_MS
  // An MPI launcher started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK,
  // PMI_RANK or PMI_SIZE is set).
  bool mpi_launcher = false;
};

// The process's environment options, read on first use.
const EnvOptions& env_options();

// Reads them from `get` (a getenv), for tests.
EnvOptions read_env_options(const char* (*get)(const char* name));

}  // namespace ab
