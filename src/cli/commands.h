// The subcommands of `autobatch` and the options they share.
#pragma once
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ab::cli {

struct Options {
  std::string program;
  std::vector<std::string> inputs;
  std::string entry;
  std::string vm = "stack";
  std::string schedule = "persistent";
  std::string jit = "on";  // on | off (stack VM)
  int64_t max_stack_depth = 100000;
  int64_t max_steps = 0;           // 0: no bound
  std::string on_error = "abort";  // or "record"
  std::optional<int64_t> batch;
  std::optional<int64_t> lanes;
  std::optional<int64_t> threads;  // unset: automatic
  std::string trace;
  std::string trace_mask = "bits";
  bool stats = false;
  std::string output;
  std::string print_after;
  std::string passes;     // lower --passes a,b,c
  int verbose = 0;        // -v: info, -vv: debug
  std::string log_level;  // --log-level; overrides -v
  bool in_place = false;
};

void register_commands(CLI::App& app, Options& opt);
int dispatch(CLI::App& app, const Options& opt);

}  // namespace ab::cli
