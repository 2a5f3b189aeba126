// The subcommands of `autobatch` and the options they share.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace ab::cli {

struct Options {
  std::string program;
  std::vector<std::string> inputs;
  std::string entry;
  std::string vm = "stack";
  std::string schedule = "persistent";
  std::string jit = "on";  // on | off | wait (stack VM)
  int64_t max_stack_depth = 100000;
  int64_t max_steps = 0;           // 0: no bound
  double time_limit = 0;           // seconds; 0: no limit
  std::string on_error = "abort";  // or "record"
  std::optional<int64_t> batch;
  std::optional<int64_t> lanes;
  std::optional<int64_t> threads;  // unset: automatic
  std::string trace;
  std::string trace_mask = "bits";
  std::string trace_format = "auto";
  bool quiet = false;      // run: no progress line
  bool no_warnings = false;  // run, check, lower, sample: no compile-time warnings on stderr
  std::string trace_file;  // report TRACE
  std::string report_out;  // report -o FILE
  bool stats = false;
  std::string output;
  std::string csv;  // sample --csv DIR/: CmdStan's CSV files
  std::string print_after;
  std::string passes;     // lower --passes a,b,c
  int verbose = 0;        // -v: info, -vv: debug
  std::string log_level;  // --log-level; overrides -v
  bool in_place = false;
  // Under mpirun/srun (src/mpi): how the batch is split over the processes.
  std::string mpi_split = "static";  // static | dynamic
  int64_t mpi_chunk = 0;             // dynamic: threads per chunk (0: automatic)
  // sample MODEL --data ... (the model is `program`; --output, --threads and
  // --quiet as for run)
  std::string data;
  int64_t chains = 4, warmup = 1000, samples = 1000;
  std::optional<uint64_t> seed;
  int64_t max_depth = 10;
  double target_accept = 0.8;
  std::string metric = "diag";  // diag | dense
  std::string init;
  bool print_program = false;
  // summary DRAWS...
  std::vector<std::string> draws;
  int64_t skip = 0;
  bool json = false;
  std::string names = "zero";  // summary and sample: element names, zero or stan
};

void register_commands(CLI::App& app, Options& opt);
int dispatch(CLI::App& app, const Options& opt);

// What `run` passes to the library for these flags (also under mpirun, to
// src/mpi, which takes the public API's options only).
autobatch::CompileOptions compile_options(const Options& opt);
autobatch::RunOptions run_options(const Options& opt);
// The program's compile-time warnings on stderr, unless --no-warnings.
void print_warnings(const std::vector<autobatch::Diagnostic>& warnings, const Options& opt);
// --on-error record: the failed threads on stderr (the first ten, then a count).
void print_recorded_errors(const autobatch::RunResult& r);

}  // namespace ab::cli
