// `autobatch run` split over MPI processes (mpirun -np K, srun): the only
// code of the project that calls MPI. Compiled into the CLI when the build
// found MPI (AUTOBATCH_MPI); without mpirun the CLI never calls it, so the
// same binary runs alone as before. It takes the public API's options (the
// CLI converts its flags) and uses only the public API (autobatch.h) and
// the shard planning and merging it shares with Program::run (api/shards.h).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace ab::mpi {

// True when this process was started by an MPI launcher (Open MPI's mpirun,
// or a PMI/PMIx launcher such as Slurm's srun), from the environment only:
// no MPI call.
bool launched();

// A program and its inputs made by the caller (Request::make).
struct Made {
  autobatch::Program program;
  autobatch::Inputs inputs;
};

// One run of a program over every process.
struct Request {
  std::string program;  // a file, or "-": standard input (mpirun gives it to rank 0)
  // When set, called on every process instead of compiling `program` and
  // loading `inputs` (autobatch sample's driver and its chains); only rank
  // 0's inputs are used. Its failure is reported as a compile error's.
  std::function<autobatch::Result<Made>()> make;
  autobatch::CompileOptions compile;
  // RunOptions::threads: OS threads per process (0: the node's cores shared
  // by the processes on it). A trace (trace_path) needs a single process.
  autobatch::RunOptions run;
  std::vector<std::string> inputs;  // Program::load_inputs's forms
  std::optional<int64_t> batch;
  std::string output;            // checked before the run (check_output_target)
  std::string split = "static";  // "static": one contiguous share per process; "dynamic": chunks
  int64_t chunk = 0;             // dynamic: threads per chunk (0: about 16 chunks per process)
  // Rank 0, after a run that did not fail: writes the result (its stats
  // include the "parse" and "inputs" phases) and returns the exit status,
  // which every process then returns.
  std::function<int(autobatch::RunResult&)> finish;
  // Rank 0 prints the compiled program's warnings (Program::warnings) on
  // stderr, once (the CLI's --no-warnings clears it).
  bool warnings = true;
};

// The run over every process of MPI_COMM_WORLD: the same outputs, --stats
// totals and exit status as one process; rank 0 reports errors (once).
// Initializes and finalizes MPI.
int run(const Request& request);

}  // namespace ab::mpi
