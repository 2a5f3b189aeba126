#include "cli/commands.h"

#include <unistd.h>

#include <atomic>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <deque>
#include <functional>
#include <iomanip>
#include <iostream>
#include <optional>

#include "autobatch/autobatch.h"
#ifdef AUTOBATCH_MPI
#include "mpi/mpi_run.h"
#endif

namespace ab::cli {
namespace {

constexpr int kOk = 0;
constexpr int kRuntimeError = 1;
constexpr int kUsageError = 2;
constexpr int kInterrupted = 130;  // 128 + SIGINT, as shells report it

int report(const std::string& rendered) {
  std::cerr << rendered;
  return kUsageError;
}
template <typename T>
int report(const autobatch::Result<T>& r) {
  return report(r.rendered());
}
int report(const autobatch::Status& s) { return report(s.rendered()); }

int cmd_fmt(const Options& opt) {
  auto text = autobatch::format_file(opt.program);
  if (!text) return report(text);
  std::cout << *text;
  return kOk;
}

// The --inputs of check and lower, when there are any (a lowered program
// takes none): the loaded arrays and views borrowing them.
struct GivenInputs {
  std::optional<autobatch::Inputs> inputs;
  std::vector<autobatch::ArrayView> views;
  const std::vector<autobatch::ArrayView>* views_or_null() const {
    return inputs ? &views : nullptr;
  }
};

// Loads them into `out`; an exit status if they are wrong.
std::optional<int> load_given_inputs(const autobatch::Program& p, const Options& opt,
                                     GivenInputs& out) {
  if (p.is_lowered() || opt.inputs.empty()) return std::nullopt;
  auto loaded = p.load_inputs(opt.inputs, opt.batch);
  if (!loaded) return report(loaded);
  out.inputs = std::move(*loaded);
  out.views = out.inputs->views();
  return std::nullopt;
}

int cmd_check(const Options& opt) {
  auto p = autobatch::compile_file(opt.program, compile_options(opt));
  if (!p) return report(p);
  print_warnings(p->warnings(), opt);
  GivenInputs given;
  if (auto e = load_given_inputs(*p, opt, given)) return *e;
  auto lines = p->signature(given.views_or_null());
  if (!lines) return report(lines);
  for (const auto& line : *lines) std::cout << line << "\n";
  return kOk;
}

int cmd_ops() {
  std::string group;
  auto ops = autobatch::ops();
  for (const auto& p : ops) {
    if (group != p.group) {
      std::printf("%s# %s\n", group.empty() ? "" : "\n", p.group.c_str());
      group = p.group;
    }
    std::string arity = p.min_args == p.max_args ? std::to_string(p.min_args)
                        : p.max_args < 0
                            ? std::to_string(p.min_args) + "+"
                            : std::to_string(p.min_args) + "-" + std::to_string(p.max_args);
    std::string attrs = p.attrs.empty() ? "-" : p.attrs;
    std::printf("%-11s args %-3s attrs %-12s %-13s %-17s %-26s %s\n", p.name.c_str(),
                arity.c_str(), attrs.c_str(), p.effects.c_str(), p.speculate.c_str(),
                p.compiles.c_str(), p.doc.c_str());
  }
  std::printf(
      "\n(attributes marked ! are required; then what running it may do besides computing, "
      "whether a branch may run it for threads that would not have, how compiled code computes "
      "it on scalars)\n");
  return kOk;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Ctrl-C during a run: the VMs see the flag within a few steps and stop. The
// handler is reset by the first signal, so a second Ctrl-C ends the process.
std::atomic<bool> g_interrupted{false};
extern "C" void on_sigint(int) { g_interrupted.store(true, std::memory_order_relaxed); }

struct SigintScope {
  struct sigaction old {};
  SigintScope() {
    g_interrupted.store(false);
    struct sigaction sa {};
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &old);
  }
  ~SigintScope() { sigaction(SIGINT, &old, nullptr); }
};

// How far a long run got, on stderr. On a terminal, one line redrawn at
// most four times a second after the first second, erased at the end;
// otherwise (a log file, a batch job) a line of its own at 10 s and then once
// a minute, so that a run that seems stuck says what it is doing.
class ProgressLine {
 public:
  explicit ProgressLine(bool terminal) : terminal_(terminal) {}
  void update(const autobatch::Progress& p) {
    if (terminal_ ? p.seconds < 1.0 || p.seconds - last_ < 0.25 : p.seconds < next_) return;
    last_ = p.seconds;
    next_ = (next_ < 60 ? 0 : next_) + 60;
    char buf[200];
    double rate = p.seconds > 0 ? static_cast<double>(p.steps) / p.seconds : 0.0;
    std::snprintf(buf, sizeof buf,
                  "%sautobatch: step %lld, %lld of %lld threads finished, %.3g steps/s, %.1f s%s",
                  terminal_ ? "\r\x1b[K" : "", static_cast<long long>(p.steps),
                  static_cast<long long>(p.finished), static_cast<long long>(p.threads), rate,
                  p.seconds, terminal_ ? "" : "\n");
    std::fputs(buf, stderr);
    std::fflush(stderr);
    shown_ = terminal_;
  }
  ~ProgressLine() {
    if (shown_) std::fputs("\r\x1b[K", stderr);
  }

 private:
  bool terminal_;
  double last_ = 0;
  double next_ = 10;  // not a terminal: when the next line is due
  bool shown_ = false;
};

// How far `sample` got, on stderr, drawn when ProgressLine would draw (on a
// terminal one line redrawn, erased at the end; otherwise a line at 10 s and
// then once a minute): the chains' phase and iterations, iterations per
// second (all chains') over the last ten seconds or so, and the time left
// at that rate.
class SampleProgressLine {
 public:
  explicit SampleProgressLine(bool terminal) : terminal_(terminal) {}
  void update(const autobatch::SampleProgress& p) {
    if (window_.empty() || p.seconds - window_.back().first >= 0.25)
      window_.emplace_back(p.seconds, p.done);
    while (window_.size() > 2 && window_[1].first <= p.seconds - 10) window_.pop_front();
    if (p.finished()) return;  // the end: the line is erased
    if (terminal_ ? p.seconds < 1.0 || p.seconds - last_ < 0.25 : p.seconds < next_) return;
    last_ = p.seconds;
    next_ = (next_ < 60 ? 0 : next_) + 60;
    const auto& [t0, d0] = window_.front();
    const double span = p.seconds - t0;
    const double rate = span >= 1.0 ? static_cast<double>(p.done - d0) / span
                        : p.seconds > 0 ? static_cast<double>(p.done) / p.seconds
                                        : 0.0;
    std::string text = "autobatch: " + phase(p);
    char buf[64];
    std::snprintf(buf, sizeof buf, rate >= 100 ? ", %.0f it/s" : ", %.3g it/s", rate);
    text += buf;
    const double remaining =
        static_cast<double>(p.chains * (p.warmup + p.samples) - p.done);
    if (rate > 0) text += ", ~" + duration(remaining / rate) + " left";
    std::fputs(((terminal_ ? "\r\x1b[K" : "") + text + (terminal_ ? "" : "\n")).c_str(), stderr);
    std::fflush(stderr);
    shown_ = terminal_;
  }
  ~SampleProgressLine() {
    if (shown_) std::fputs("\r\x1b[K", stderr);
  }

 private:
  // "warm-up 350/1000 (chains at 341-362)", "sampling 20/1000 (chains at
  // 12-31)", or, while some chains warm up and others sample, "chains from
  // warm-up 998/1000 to sampling 3/1000". (The mean chain's iteration, and
  // the slowest and the fastest chain's, when they differ.)
  static std::string phase(const autobatch::SampleProgress& p) {
    auto n = [](int64_t v) { return std::to_string(v); };
    const int64_t w = p.warmup, s = p.samples;
    const int64_t mean = p.chains > 0 ? p.done / p.chains : 0;
    auto range = [&](int64_t lo, int64_t hi) {
      return lo == hi ? std::string() : " (chains at " + n(lo) + "-" + n(hi) + ")";
    };
    if (p.fastest <= w && p.slowest < w)
      return "warm-up " + n(mean) + "/" + n(w) + range(p.slowest, p.fastest);
    if (p.slowest >= w)
      return "sampling " + n(mean - w) + "/" + n(s) + range(p.slowest - w, p.fastest - w);
    return "chains from warm-up " + n(p.slowest) + "/" + n(w) + " to sampling " +
           n(p.fastest - w) + "/" + n(s);
  }
  static std::string duration(double seconds) {
    char buf[64];
    if (seconds < 90)
      std::snprintf(buf, sizeof buf, "%.0f s", std::ceil(seconds));
    else if (seconds < 5400)
      std::snprintf(buf, sizeof buf, "%.0f min", std::ceil(seconds / 60));
    else
      std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600);
    return buf;
  }

  bool terminal_;
  double last_ = 0;
  double next_ = 10;  // not a terminal: when the next line is due
  bool shown_ = false;
  std::deque<std::pair<double, int64_t>> window_;  // (seconds, iterations done)
};

// A finished run's outputs (as --output says) and, under --on-error record,
// its failed threads on stderr: the exit status. Shared with the MPI run.
int write_result(const autobatch::RunResult& r, const Options& opt) {
  if (auto s = autobatch::write_outputs(r, opt.output, opt.stats); !s) return report(s);
  if (!r.errors.empty()) {  // --on-error record: the outputs are out, with the errors
    print_recorded_errors(r);
    return kRuntimeError;
  }
  return kOk;
}

// A run that did not finish: its message on stderr and the exit status
// (interrupted, timed out, an input or option error, a runtime error).
std::optional<int> run_failure(const autobatch::RunResult& r) {
  if (r.cancelled) {
    std::cerr << r.runtime_error->rendered;
    return r.timed_out ? kRuntimeError : kInterrupted;
  }
  if (!r.diagnostics.empty()) return report(r.rendered());
  if (r.runtime_error) {
    std::cerr << r.runtime_error->rendered;
    return kRuntimeError;
  }
  return std::nullopt;
}

#ifdef AUTOBATCH_MPI
// `run` under mpirun/srun (src/mpi), with the public API's options.
int run_over_mpi(const Options& opt) {
  ab::mpi::Request req;
  req.program = opt.program;
  req.compile = compile_options(opt);
  req.run = run_options(opt);
  req.inputs = opt.inputs;
  req.batch = opt.batch;
  req.output = opt.output;
  req.split = opt.mpi_split;
  req.chunk = opt.mpi_chunk;
  req.warnings = !opt.no_warnings;
  req.finish = [&opt](autobatch::RunResult& r) { return write_result(r, opt); };
  return ab::mpi::run(req);
}
#endif

int cmd_run(const Options& opt) {
#ifdef AUTOBATCH_MPI
  if (ab::mpi::launched()) return run_over_mpi(opt);  // under mpirun/srun: src/mpi
#endif
  auto t0 = Clock::now();
  if (auto s = autobatch::check_output_target(opt.output); !s) return report(s);
  auto p = autobatch::compile_file(opt.program, compile_options(opt));
  if (!p) return report(p);
  print_warnings(p->warnings(), opt);
  double parse_seconds = seconds_since(t0);
  autobatch::RunOptions ro = run_options(opt);
  if (auto s = p->check(ro); !s) return report(s);
  auto t1 = Clock::now();
  auto inputs = p->load_inputs(opt.inputs, opt.batch);
  if (!inputs) return report(inputs);
  double input_seconds = seconds_since(t1);
  if (!opt.batch && inputs->batch == 1 && p->reads_thread_index())
    std::cerr << "autobatch: warning: one thread runs (" +
                     std::string(opt.inputs.empty() ? "no inputs" : "every input has batch 1") +
                     "), but the program reads thread_index(); add --batch N to run N threads\n";
  autobatch::RunResult r;
  {
    SigintScope sigint;
    ro.cancel = &g_interrupted;
    ProgressLine line(isatty(STDERR_FILENO));
    if (!opt.quiet) ro.progress = [&line](const autobatch::Progress& p) { line.update(p); };
    r = p->run(*inputs, ro);
  }
  if (auto failed = run_failure(r)) return *failed;
  if (r.stats) {
    r.stats->seconds["parse"] = parse_seconds;
    r.stats->seconds["inputs"] = input_seconds;
  }
  return write_result(r, opt);
}

autobatch::ElementNames element_names(const Options& opt) {
  return opt.names == "stan" ? autobatch::ElementNames::Stan : autobatch::ElementNames::Zero;
}

int cmd_summary(const Options& opt) {
  auto s = autobatch::summarize_files(opt.draws, opt.skip, element_names(opt));
  if (!s) return report(s);
  std::cout << (opt.json ? s->json() + "\n" : s->table());
  for (const std::string& w : s->warnings) std::cerr << "autobatch: warning: " << w << "\n";
  return kOk;
}

// A finished sample: the files of --output DIR/, then the summary table,
// the seed, step sizes and divergences on stdout and warnings on stderr.
// The sampler's settings as the flags give them.
autobatch::SampleOptions sample_options(const Options& opt) {
  autobatch::SampleOptions so;
  so.model = opt.program;
  so.data = opt.data;
  so.chains = opt.chains;
  so.warmup = opt.warmup;
  so.samples = opt.samples;
  so.seed = opt.seed;
  so.max_depth = opt.max_depth;
  so.run.max_stack_depth = opt.max_stack_depth;
  so.run.time_limit = opt.time_limit;
  so.target_accept = opt.target_accept;
  so.metric =
      opt.metric == "dense" ? autobatch::SampleMetric::Dense : autobatch::SampleMetric::Diag;
  so.names = element_names(opt);
  so.init = opt.init;
  return so;
}

int print_sample(const autobatch::SampleResult& s, const Options& opt) {
  if (!opt.output.empty()) {
    autobatch::RunResult files;
    files.batch = s.step_size.batch();
    for (const auto& group : {s.draws, s.stats})
      for (const auto& [name, a] : group) {
        files.outputs.push_back(a);
        files.names.push_back(name);
      }
    // The adaptation's results ([chains] and [chains, D], not draws): in one
    // JSON file with the rest, but beside the draws in a folder of their own,
    // so that `autobatch summary DIR/` reads every file of DIR/ as draws.
    autobatch::RunResult adapted;
    adapted.batch = files.batch;
    adapted.outputs = {s.step_size, s.inv_metric};
    adapted.names = {"step_size", "inv_metric"};
    const bool dir = opt.output.back() == '/';
    if (!dir)
      for (size_t k = 0; k < adapted.outputs.size(); ++k) {
        files.outputs.push_back(adapted.outputs[k]);
        files.names.push_back(adapted.names[k]);
      }
    if (auto w = autobatch::write_outputs(files, opt.output, false); !w) return report(w);
    if (dir)
      if (auto w = autobatch::write_outputs(adapted, opt.output + "adaptation/", false); !w)
        return report(w);
  }
  if (!opt.csv.empty())
    if (auto w = autobatch::write_cmdstan_csv(s, sample_options(opt), opt.csv); !w)
      return report(w);
  std::cout << s.summary.table();
  const double* step = s.step_size.as<double>();
  std::cout << "\nseed " << s.seed << "; " << s.summary.chains << " chains, " << opt.warmup
            << " warm-up and " << opt.samples << " draws each, " << std::fixed
            << std::setprecision(2) << s.seconds << " s\nstep sizes:" << std::defaultfloat
            << std::setprecision(4);
  for (int64_t c = 0; c < s.step_size.batch(); ++c) std::cout << " " << step[c];
  std::cout << "\ndivergent transitions: " << s.divergent << " (and " << s.warmup_divergent
            << " during warm-up); at the maximum tree depth: " << s.max_depth_hits << "\n";
  if (s.nonfinite_total + s.warmup_nonfinite_total > 0)
    std::cout << "transitions that met a log density not finite: " << s.nonfinite_total
              << " (and " << s.warmup_nonfinite_total << " during warm-up)\n";
  for (const std::string& w : s.warnings) std::cerr << "autobatch: warning: " << w << "\n";
  return kOk;
}

// After a run of the driver that did not fail: a chain with no finite start
// is a runtime error (exit 1); else the draws, summarized and printed.
int finish_and_print(const autobatch::SampleJob& job, const autobatch::RunResult& r,
                     double seconds, const Options& opt) {
  if (auto e = autobatch::sample_start_error(job, r)) {
    std::cerr << e->rendered;
    return kRuntimeError;
  }
  auto s = autobatch::finish_sample(job, r, seconds);
  if (!s) return report(s);
  return print_sample(*s, opt);
}

#ifdef AUTOBATCH_MPI
// `sample` under mpirun/srun: every process prepares the driver (reading the
// model and the data itself); the chains are split over the processes as
// `run` splits threads, and rank 0 summarizes and prints.
int sample_over_mpi(const Options& opt, const autobatch::SampleOptions& so) {
  ab::mpi::Request req;
  req.program = opt.program;
  req.run = so.run;
  req.output = opt.output;
  req.split = opt.mpi_split;
  req.chunk = opt.mpi_chunk;
  std::optional<autobatch::SampleJob> job;
  Clock::time_point made;
  req.make = [&]() -> autobatch::Result<ab::mpi::Made> {
    auto j = autobatch::prepare_sample(so);
    if (!j) return j.diagnostics();
    job = std::move(*j);
    made = Clock::now();
    return ab::mpi::Made{*job->program, job->inputs};
  };
  req.finish = [&](autobatch::RunResult& r) {
    print_warnings(job->warnings, opt);  // rank 0 only, once
    return finish_and_print(*job, r, seconds_since(made), opt);
  };
  return ab::mpi::run(req);
}
#endif

int cmd_sample(const Options& opt) {
  autobatch::SampleOptions so = sample_options(opt);
  so.program_only = opt.print_program;
  if (opt.threads) so.run.threads = static_cast<int>(*opt.threads);
  if (!opt.print_program) {
    if (auto s = autobatch::check_output_target(opt.output); !s) return report(s);
    if (!opt.csv.empty() && opt.csv.back() != '/') {
      std::cerr << "autobatch: error: --csv '" << opt.csv
                << "': give a folder, ending in '/' (say out/csv/): it gets one output_N.csv "
                   "per chain\n";
      return kUsageError;
    }
    const std::string& out = opt.output;
    if (out.size() >= 4 && out.compare(out.size() - 4, 4, ".npy") == 0) {
      std::cerr << "autobatch: error: --output '" << out
                << "': sample writes several arrays (theta, each quantity, the statistics); "
                   "give DIR/ for one .npy file each, or FILE.json\n";
      return kUsageError;
    }
  }
#ifdef AUTOBATCH_MPI
  if (ab::mpi::launched() && !opt.print_program) return sample_over_mpi(opt, so);
#endif
  auto job = autobatch::prepare_sample(so);
  if (!job) return report(job);
  print_warnings(job->warnings, opt);
  if (opt.print_program) {
    std::cout << job->driver;
    return kOk;
  }
  auto t0 = Clock::now();
  autobatch::RunResult r;
  {
    SigintScope sigint;
    autobatch::RunOptions ro = so.run;
    ro.cancel = &g_interrupted;
    SampleProgressLine line(isatty(STDERR_FILENO));
    std::function<void(const autobatch::SampleProgress&)> show;
    if (!opt.quiet) show = [&line](const autobatch::SampleProgress& p) { line.update(p); };
    r = autobatch::run_sample(*job, ro, show);
  }
  if (auto failed = run_failure(r)) return *failed;
  return finish_and_print(*job, r, seconds_since(t0), opt);
}

int cmd_report(const Options& opt) {
  if (auto s = autobatch::write_report(opt.trace_file, opt.report_out); !s) return report(s);
  return kOk;
}

int cmd_lower(const Options& opt) {
  if (!opt.print_after.empty())
    if (auto s = autobatch::check_pass_name(opt.print_after); !s) return report(s);
  auto p = autobatch::compile_file(opt.program, compile_options(opt));
  if (!p) return report(p);
  print_warnings(p->warnings(), opt);
  GivenInputs given;
  if (auto e = load_given_inputs(*p, opt, given)) return *e;
  auto text = p->lower(opt.print_after, given.views_or_null());
  if (!text) return report(text);
  std::cout << *text;
  return kOk;
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

}  // namespace

void print_warnings(const std::vector<autobatch::Diagnostic>& warnings, const Options& opt) {
  if (opt.no_warnings) return;
  for (const auto& w : warnings) std::cerr << w.rendered;
}

void print_recorded_errors(const autobatch::RunResult& r) {
  constexpr size_t kShown = 10;
  for (size_t i = 0; i < r.errors.size() && i < kShown; ++i)
    std::cerr << r.errors[i].error.rendered;
  if (r.errors.size() > kShown)
    std::cerr << "autobatch: " << r.errors.size() - kShown
              << " more threads failed (every one is in the output's \"errors\")\n";
}

autobatch::CompileOptions compile_options(const Options& opt) {
  autobatch::CompileOptions co;
  co.entry = opt.entry;
  co.schedule = opt.schedule;
  co.passes = autobatch::split_pass_list(opt.passes);
  return co;
}

autobatch::RunOptions run_options(const Options& opt) {
  autobatch::RunOptions ro;
  ro.vm = opt.vm;
  ro.schedule = opt.schedule;
  ro.jit = opt.jit != "off";
  ro.jit_wait = opt.jit == "wait";
  ro.max_stack_depth = opt.max_stack_depth;
  ro.max_steps = opt.max_steps;
  ro.time_limit = opt.time_limit;
  ro.on_error = opt.on_error == "record" ? autobatch::OnError::Record : autobatch::OnError::Abort;
  ro.lanes = opt.lanes.value_or(0);
  ro.threads = static_cast<int>(opt.threads.value_or(0));
  ro.trace_path = opt.trace;
  ro.trace_mask = opt.trace_mask;
  ro.trace_format = opt.trace_format;
  ro.stats = opt.stats;
  return ro;
}

// An integer flag with a lower bound, with a message a person can read
// (CLI11's own range validators print DBL_MAX in full).
CLI::Validator at_least(int64_t min) {
  return CLI::Validator(
      [min](std::string& value) -> std::string {
        int64_t v = 0;
        auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
        if (ec != std::errc() || ptr != value.data() + value.size())
          return "'" + value + "' is not an integer";
        if (v < min) return "must be at least " + std::to_string(min) + ", not " + value;
        return "";
      },
      "INT>=" + std::to_string(min));
}

void register_commands(CLI::App& app, Options& opt) {
  auto add_program = [&](CLI::App* sub) {
    sub->add_option("PROG", opt.program, "the .ab program ('-' reads standard input)")->required();
  };
  auto add_inputs = [&](CLI::App* sub) {
    // allow_extra_args(false): otherwise CLI11 reads '[...]' as its own list
    // syntax and splits inline JSON arrays at their commas.
    sub->add_option(
           "--inputs", opt.inputs,
           "inputs: a JSON file, inline JSON ('{...}' or '[...]'), or NAME=FILE.npy; repeatable")
        ->allow_extra_args(false);
    sub->add_option("--entry", opt.entry,
                    "the entry function (default: main, or the only function)");
  };

  CLI::App* run = app.add_subcommand("run", "run a program on a batch of inputs");
  add_program(run);
  add_inputs(run);
  run->add_option("--vm", opt.vm, "stack (default), stackless or reference")
      ->check(CLI::IsMember({"stack", "stackless", "reference"}));
  run->add_option("--schedule", opt.schedule,
                  "block scheduling: persistent (default: a self-looping block keeps its chunk "
                  "until its threads leave) or min-pc (the seed's exact order)");
  run->add_option("--jit", opt.jit,
                  "stack VM: compile blocks to native code (on, default: the run starts "
                  "interpreted and switches to the code when it is ready), wait (compile, "
                  "then run) or off")
      ->check(CLI::IsMember({"on", "off", "wait"}));
  run->add_option("--max-stack-depth", opt.max_stack_depth,
                  "bound on stack depth per thread (default 100000)")
      ->check(at_least(1));
  run->add_option("--max-steps", opt.max_steps,
                  "bound on the blocks each thread runs: a thread that starts more is a "
                  "runtime error (0: no bound)")
      ->check(at_least(0));
  run->add_option("--time-limit", opt.time_limit,
                  "seconds the run may take: past them it stops, saying how many threads "
                  "finished and where the first ones still running are (exit status 1; 0: no "
                  "limit)")
      ->check(CLI::Range(0.0, 1e9));
  run->add_option("--on-error", opt.on_error,
                  "abort (default): a runtime error stops the run; record: only the failing "
                  "thread stops, the outputs get an \"errors\" list, exit status 1")
      ->check(CLI::IsMember({"abort", "record"}));
  run->add_option("--batch", opt.batch, "number of threads when the entry takes no inputs")
      ->check(at_least(1));
  run->add_option("--lanes", opt.lanes, "streaming mode: run the inputs on this many lanes")
      ->check(at_least(1));
  run->add_option("--trace", opt.trace, "write a trace of every step to FILE (see --trace-format)");
  run->add_option("--trace-format", opt.trace_format,
                  "auto (default: jsonl up to 64 threads, else compact), jsonl (a JSON line per "
                  "step), compact (steps in columns, sampled masks, a summary) or chrome (Chrome "
                  "Trace Event JSON for Perfetto)")
      ->check(CLI::IsMember({"auto", "jsonl", "compact", "chrome"}));
  run->add_option("--trace-mask", opt.trace_mask,
                  "mask format in the trace: none, bits or ranges (compact: none, or sampled)")
      ->check(CLI::IsMember({"none", "bits", "ranges"}));
  run->add_flag("-q,--quiet", opt.quiet, "no progress line on stderr");
  run->add_option("--threads", opt.threads,
                  "split the batch over N OS threads (default: the machine's cores)")
      ->check(at_least(1));
  run->add_flag("--stats", opt.stats, "add execution statistics to the output JSON");
  run->add_option("--output", opt.output,
                  "write outputs to FILE.json, FILE.npy or DIR/ instead of stdout");

  CLI::App* lower = app.add_subcommand("lower", "print the program after the compiler passes");
  add_program(lower);
  add_inputs(lower);
  std::string pass_help =
      "print the program after this pass instead: " + join(autobatch::pass_names());
  lower->add_option("--print-after", opt.print_after, pass_help);
  lower->add_option("--passes", opt.passes,
                    "run only these passes, in this order (comma list; default every pass): " +
                        join(autobatch::pass_names()));

  CLI::App* check = app.add_subcommand("check", "parse, verify and infer types; print signatures");
  add_program(check);
  add_inputs(check);

  CLI::App* fmt = app.add_subcommand("fmt", "print the program in canonical formatting");
  add_program(fmt);

  app.add_subcommand("ops", "list the primitive operations");

  CLI::App* rep = app.add_subcommand(
      "report", "write a self-contained HTML page about a trace: where threads diverge");
  rep->add_option("TRACE", opt.trace_file, "a trace written by run --trace (any format)")
      ->required();
  rep->add_option("-o,--output", opt.report_out, "the HTML file to write")->required();

  CLI::App* sum = app.add_subcommand(
      "summary", "summarize Markov chains' draws: mean, MCSE, sd, quantiles, ESS, R-hat");
  sum->add_option("DRAWS", opt.draws,
                  "FILE.npy shaped [chains, draws, ...], or a directory of them (DIR/)")
      ->required();
  sum->add_option("--skip", opt.skip, "leave out the first N draws of every chain (warm-up)");
  sum->add_flag("--json", opt.json, "print JSON instead of the table");
  sum->add_option("--names", opt.names,
                  "elements named from 0 as the language indexes, theta[0, 1] (zero, default), "
                  "or as Stan prints them, theta[1,2] (stan)")
      ->check(CLI::IsMember({"zero", "stan"}));

  CLI::App* smp = app.add_subcommand(
      "sample", "Bayesian inference: NUTS with warm-up on a model's log density, one chain per "
                "thread, and the summary of the draws");
  smp->add_option("MODEL", opt.program,
                  "a .ab file defining log_density(theta: f64[D], DATA...) and optionally "
                  "constrain(theta, DATA...)")
      ->required();
  smp->add_option("--data", opt.data,
                  "DATA.json in CmdStan's JSON data format (one whole value per key, shared by "
                  "every chain)");
  smp->add_option("--chains", opt.chains, "chains (default 4)")->check(at_least(1));
  smp->add_option("--warmup", opt.warmup, "warm-up iterations per chain (default 1000)")
      ->check(at_least(0));
  smp->add_option("--samples", opt.samples, "draws per chain after warm-up (default 1000)")
      ->check(at_least(1));
  smp->add_option("--seed", opt.seed, "random seed (default: from the clock, printed)");
  smp->add_option("--max-depth", opt.max_depth, "maximum tree depth (default 10)")
      ->check(CLI::Range(1, 30));
  smp->add_option("--max-stack-depth", opt.max_stack_depth,
                  "bound on call depth per chain (default 100000): the sampler's tree and the "
                  "gradient's loops, one frame per iteration, count")
      ->check(at_least(1));
  smp->add_option("--time-limit", opt.time_limit,
                  "seconds sampling may take: past them it stops, saying where the chains still "
                  "running are (exit status 1, no output written; 0: no limit)")
      ->check(CLI::Range(0.0, 1e9));
  smp->add_option("--target-accept", opt.target_accept,
                  "the mean acceptance statistic warm-up aims at (default 0.8)")
      ->check(CLI::Range(0.0, 1.0));
  smp->add_option("--metric", opt.metric,
                  "the inverse metric warm-up adapts: diag (default; the draws' variances, "
                  "Stan's diag_e) or dense (their covariance, Stan's dense_e: for strongly "
                  "correlated parameters)")
      ->check(CLI::IsMember({"diag", "dense"}));
  smp->add_option("--init", opt.init,
                  "R: start uniformly in (-R, R) (default 2); or a JSON file {\"theta\": [...]}");
  smp->add_option("--names", opt.names,
                  "the summary's elements named from 0, theta[0] (zero, default), or as Stan "
                  "prints them, theta[1] (stan)")
      ->check(CLI::IsMember({"zero", "stan"}));
  smp->add_option("-o,--output", opt.output,
                  "DIR/: write theta.npy and one NAME.npy per quantity ([chains, draws, ...]), "
                  "the sampler's statistics (lp__.npy, ...); the adaptation's step_size.npy and "
                  "inv_metric.npy ([chains, D], or [chains, D, D] with --metric dense) in "
                  "DIR/adaptation/");
  smp->add_option("--csv", opt.csv,
                  "DIR/: also write the draws as CmdStan does, DIR/output_N.csv for chain N "
                  "(from 1), which ArviZ's from_cmdstan, R's posterior and stansummary read");
  smp->add_option("--threads", opt.threads, "OS threads (default: automatic)")->check(at_least(1));
  smp->add_flag("-q,--quiet", opt.quiet, "no progress line on stderr");
  smp->add_flag("--print-program", opt.print_program,
                "print the program that would run (the model, `import nuts` and the generated "
                "entry) instead of sampling; `autobatch run` runs it");
  // Under mpirun/srun only (README "Running on a cluster"); ignored otherwise.
  for (CLI::App* sub : {run, smp}) {
    const char* unit = sub == run ? "threads" : "chains";
    sub->add_option("--mpi-split", opt.mpi_split,
                    std::string("under mpirun: static (default: one contiguous share of the ") +
                        unit + " per process) or dynamic (chunks handed out as processes finish)")
        ->check(CLI::IsMember({"static", "dynamic"}));
    sub->add_option("--mpi-chunk", opt.mpi_chunk,
                    std::string("under mpirun with --mpi-split dynamic: ") + unit +
                        " per chunk (default: about 16 chunks per process)")
        ->check(at_least(1));
  }

  // Warnings are on by default; -q (the progress line) leaves them on.
  for (CLI::App* sub : {run, lower, check, smp})
    sub->add_flag("--no-warnings", opt.no_warnings,
                  "do not print compile-time warnings (variables assigned and never used, "
                  "unused parameters of the entry) on stderr");

  for (CLI::App* sub : {run, lower, check, fmt}) {
    sub->add_flag("-v,--verbose", opt.verbose,
                  "log each pass (time, size) and run phase on stderr; -vv: more");
    sub->add_option("--log-level", opt.log_level,
                    "log level on stderr: " + join(autobatch::log_level_names()) + " (default off)")
        ->check(CLI::IsMember(autobatch::log_level_names()));
  }
}

int dispatch(CLI::App& app, const Options& opt) {
  if (!opt.log_level.empty())
    autobatch::set_log_level(opt.log_level);
  else if (opt.verbose > 0)
    autobatch::set_log_level(opt.verbose > 1 ? "debug" : "info");
  if (app.got_subcommand("fmt")) return cmd_fmt(opt);
  if (app.got_subcommand("check")) return cmd_check(opt);
  if (app.got_subcommand("ops")) return cmd_ops();
  if (app.got_subcommand("run")) return cmd_run(opt);
  if (app.got_subcommand("lower")) return cmd_lower(opt);
  if (app.got_subcommand("report")) return cmd_report(opt);
  if (app.got_subcommand("summary")) return cmd_summary(opt);
  if (app.got_subcommand("sample")) return cmd_sample(opt);
  return kUsageError;
}

}  // namespace ab::cli
