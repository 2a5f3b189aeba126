#include "cli/commands.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <iostream>

#include "io/inputs.h"
#include "io/limits.h"
#include "io/outputs.h"
#include "ir/ops.h"
#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/pipeline.h"
#include "passes/type_inference.h"
#include "support/strings.h"
#include "vm/reference.h"
#include "vm/reference_lowered.h"
#include "vm/stack_vm.h"
#include "vm/stackless_vm.h"
#include "vm/trace.h"

namespace ab::cli {
namespace {

constexpr int kOk = 0;
constexpr int kRuntimeError = 1;
constexpr int kUsageError = 2;

int report(const Diagnostics& d) {
  std::cerr << d.render();
  return kUsageError;
}

int report_message(const std::string& message) {
  std::cerr << "autobatch: error: " << message << "\n";
  return kUsageError;
}

int cmd_fmt(const Options& opt) {
  Result<Module> m = parse_file(opt.program);
  if (!m) return report(m.diags());
  std::cout << print_module(*m);
  return kOk;
}

// The entry's inputs from every --inputs (and --batch), typed by the
// entry's annotations where it has them.
Result<InputSet> load_entry_inputs(const Function& entry, const Options& opt) {
  std::vector<ParamSpec> specs;
  for (const auto& p : entry.params) specs.push_back({p.name.name, p.type});
  return load_inputs(opt.inputs, specs, opt.batch);
}

std::string type_or_unknown(const std::optional<Type>& t) {
  return t ? t->str() : std::string("?");
}

// Signatures as inference sees them; '?' marks a type that depends on
// inputs that were not given.
void print_signatures(const Module& m, const TypeInfo& types) {
  for (const auto& f : m.funcs) {
    const FunctionTypes& ft = types.funcs.at(f.name.name);
    std::string line = "func " + f.name.name + "(";
    for (size_t i = 0; i < f.params.size(); ++i)
      line += (i ? ", " : "") + f.params[i].name.name + ": " + type_or_unknown(ft.params[i]);
    line += ") -> ";
    if (ft.results.size() == 1 && !(ft.results[0] && ft.results[0]->is_tuple)) {
      line += type_or_unknown(ft.results[0]);
    } else {
      line += ft.results.size() == 1 ? "((" : "(";
      if (ft.results.size() == 1) {
        std::string inner = ft.results[0]->str();
        line += inner.substr(1, inner.size() - 2) + "))";
      } else {
        for (size_t i = 0; i < ft.results.size(); ++i)
          line += (i ? ", " : "") + type_or_unknown(ft.results[i]);
        line += ")";
      }
    }
    std::cout << line << "\n";
  }
}

int cmd_check(const Options& opt) {
  Result<Module> m = load_and_verify(opt.program);
  if (!m) return report(m.diags());
  if (m->program) {
    const Program& p = *m->program;
    std::cout << "program " << p.entry.name << ": " << p.vars.size() << " variables, "
              << p.blocks.size() << " blocks\n";
    return kOk;
  }
  Diagnostics d(m->source);
  const Function* entry = nullptr;
  if (!opt.entry.empty() || !opt.inputs.empty()) {
    entry = find_entry(*m, opt.entry, d);
    if (!entry) return report(d);
  } else {
    // Without inputs any function may be the entry; annotations decide what
    // is known.
    Diagnostics quiet;
    entry = find_entry(*m, "", quiet);
    if (!entry) entry = &m->funcs.front();
  }
  std::vector<std::optional<Type>> params(entry->params.size());
  if (!opt.inputs.empty()) {
    auto loaded = load_entry_inputs(*entry, opt);
    if (!loaded) return report(loaded.diags());
    for (size_t i = 0; i < params.size(); ++i) params[i] = Type{false, loaded->values[i].type, {}};
  }
  TypeInfo types = infer_types(*m, entry->name.name, params, d);
  if (d.has_errors()) return report(d);
  print_signatures(*m, types);
  return kOk;
}

int cmd_ops() {
  std::string group;
  for (const auto& p : all_prims()) {
    if (group != p.group) {
      group = p.group;
      std::printf("%s# %s\n", group == all_prims().front().group ? "" : "\n", p.group);
    }
    std::string arity = p.min_args == p.max_args ? std::to_string(p.min_args)
                        : p.max_args < 0
                            ? std::to_string(p.min_args) + "+"
                            : std::to_string(p.min_args) + "-" + std::to_string(p.max_args);
    std::string attrs = *p.attrs ? p.attrs : "-";
    std::printf("%-11s args %-3s attrs %-12s %s\n", p.name, arity.c_str(), attrs.c_str(), p.doc);
  }
  std::printf("\n(attributes marked ! are required)\n");
  return kOk;
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// What one `run` carries from phase to phase: options for the VM, the trace
// and statistics, and the phase timings.
struct RunContext {
  const Options& opt;
  OutputTarget target;
  TraceWriter trace;
  Stats stats;
  RunOptions ro;
  Clock::time_point phase = Clock::now();

  explicit RunContext(const Options& o) : opt(o) {
    ro.max_stack_depth = o.max_stack_depth;
    ro.max_steps = o.max_steps;
    ro.lanes = o.lanes.value_or(0);
    ro.stats = o.stats ? &stats : nullptr;
  }
  void lap(const char* name) {
    stats.seconds[name] += seconds_since(phase);
    phase = Clock::now();
  }
};

// Opens the trace file, if one was asked for; an error is a usage error.
std::optional<std::string> open_trace(RunContext& ctx) {
  if (ctx.opt.trace.empty()) return std::nullopt;
  ctx.trace = TraceWriter(ctx.opt.trace, parse_mask_format(ctx.opt.trace_mask));
  if (!ctx.trace.on()) return ctx.trace.error();
  ctx.ro.trace = &ctx.trace;
  return std::nullopt;
}

int finish_run(RunContext& ctx, const RunResult& r, const Module& m, int64_t batch) {
  ctx.trace.close();
  ctx.lap("run");
  if (r.error) {
    std::cerr << render_runtime_error(m.source.get(), *r.error);
    return kRuntimeError;
  }
  nlohmann::ordered_json extra = nullptr;
  if (ctx.opt.stats) {
    extra = nlohmann::ordered_json::object();
    extra["stats"] = ctx.stats.to_json();
  }
  Result<std::vector<std::string>> written = write_outputs(r.outputs, batch, ctx.target, extra);
  if (!written) return report(written.diags());
  return kOk;
}

// A batch (or a shape) too large for memory is an input error before any
// work: checked once the variables' types are known.
std::optional<std::string> memory_error(const Options& opt, int64_t batch, int64_t per_thread) {
  return batch_memory_error(batch, opt.lanes.value_or(0), per_thread);
}

std::vector<std::optional<Type>> types_of(const InputSet& inputs) {
  std::vector<std::optional<Type>> out;
  for (const auto& a : inputs.values) out.push_back(Type{false, a.type, {}});
  return out;
}

// A lowered program: its inputs are named as in the source function
// (`fib.n` is given as "n"), so the source's inputs file works unchanged.
int run_lowered(RunContext& ctx, const Module& m) {
  const Options& opt = ctx.opt;
  const Program& p = *m.program;
  Diagnostics d(m.source);
  if (!opt.entry.empty() && opt.entry != p.entry.name) {
    d.error(p.entry.loc, "--entry " + opt.entry +
                             " does not match this lowered program, whose entry is '" +
                             p.entry.name + "'");
    return report(d);
  }
  if (opt.vm == "stackless") {
    d.error(p.entry.loc,
            "the stackless VM runs unlowered programs: give it the source program (or use --vm "
            "stack or --vm reference)");
    return report(d);
  }
  std::map<std::string, const VarDecl*> decls;
  for (const auto& v : p.vars) decls[v.name.name] = &v;
  std::vector<ParamSpec> specs;
  std::string prefix = p.entry.name + ".";
  for (const auto& in : p.inputs) {
    std::string name = in.name.rfind(prefix, 0) == 0 ? in.name.substr(prefix.size()) : in.name;
    auto it = decls.find(in.name);
    specs.push_back({name, it != decls.end() ? it->second->type : std::nullopt});
  }
  Result<InputSet> inputs = load_inputs(opt.inputs, specs, opt.batch);
  if (!inputs) return report(inputs.diags());
  ctx.lap("inputs");
  FunctionTypes ft = infer_program_types(p, types_of(*inputs), d, m.source);
  if (d.has_errors()) return report(d);
  if (auto e = memory_error(opt, inputs->batch, thread_bytes(ft.vars))) return report_message(*e);
  ctx.lap("compile");
  if (auto e = open_trace(ctx)) return report_message(*e);
  RunResult r = opt.vm == "reference"
                    ? run_reference_program(p, ft, inputs->values, inputs->batch, ctx.ro)
                    : run_stack(p, ft, inputs->values, inputs->batch, ctx.ro);
  return finish_run(ctx, r, m, inputs->batch);
}

int cmd_run(const Options& opt) {
  RunContext ctx(opt);
  Result<OutputTarget> target = parse_output_target(opt.output);
  if (!target) return report(target.diags());
  ctx.target = *target;
  if (opt.schedule != "min-pc")
    return report_message("unknown --schedule '" + opt.schedule + "' (available: min-pc)");
  Result<Module> m = load_and_verify(opt.program);
  if (!m) return report(m.diags());
  ctx.lap("parse");
  if (m->program) return run_lowered(ctx, *m);
  Diagnostics d(m->source);
  const Function* entry = find_entry(*m, opt.entry, d);
  if (!entry) return report(d);
  Result<InputSet> inputs = load_entry_inputs(*entry, opt);
  if (!inputs) return report(inputs.diags());
  ctx.lap("inputs");
  std::vector<std::optional<Type>> params = types_of(*inputs);
  if (opt.vm == "stack") {
    CompileOptions co;
    co.entry = entry->name.name;
    co.entry_types = params;
    Result<Compiled> c = compile(*m, co);
    if (!c) return report(c.diags());
    const Program& p = *c->lowered.program;
    FunctionTypes ft = infer_program_types(p, params, d, m->source);
    if (d.has_errors()) return report(d);
    if (auto e = memory_error(opt, inputs->batch, thread_bytes(ft.vars))) return report_message(*e);
    ctx.lap("compile");
    if (auto e = open_trace(ctx)) return report_message(*e);
    RunResult r = run_stack(p, ft, inputs->values, inputs->batch, ctx.ro);
    return finish_run(ctx, r, *m, inputs->batch);
  }
  TypeInfo types = infer_types(*m, entry->name.name, params, d);
  if (d.has_errors()) return report(d);
  int64_t per_thread = 0;
  for (const auto& [name, ft] : types.funcs)  // every function's variables, saturating
    per_thread += std::min(thread_bytes(ft.vars), INT64_MAX - per_thread);
  if (auto e = memory_error(opt, inputs->batch, per_thread)) return report_message(*e);
  ctx.lap("compile");
  if (auto e = open_trace(ctx)) return report_message(*e);
  RunResult r =
      opt.vm == "stackless"
          ? run_stackless(*m, types, entry->name.name, inputs->values, inputs->batch, ctx.ro)
          : run_reference(*m, types, entry->name.name, inputs->values, inputs->batch, ctx.ro);
  return finish_run(ctx, r, *m, inputs->batch);
}

int cmd_lower(const Options& opt) {
  if (!opt.print_after.empty() && !find_pass(opt.print_after)) {
    std::vector<std::string> names;
    for (const auto& p : all_passes()) names.push_back(p.name);
    std::cerr << "autobatch: error: unknown pass '" << opt.print_after << "'"
              << did_you_mean(opt.print_after, names) << "; passes: " << pass_names() << "\n";
    return kUsageError;
  }
  Result<Module> m = load_and_verify(opt.program);
  if (!m) return report(m.diags());
  if (m->program) {
    // Already lowered: print it as it is.
    std::cout << print_module(*m);
    return kOk;
  }
  Diagnostics d(m->source);
  const Function* entry = find_entry(*m, opt.entry, d);
  if (!entry) return report(d);
  CompileOptions co;
  co.entry = entry->name.name;
  co.print_after = opt.print_after;
  co.entry_types.resize(entry->params.size());
  if (!opt.inputs.empty()) {
    Result<InputSet> inputs = load_entry_inputs(*entry, opt);
    if (!inputs) return report(inputs.diags());
    for (size_t i = 0; i < co.entry_types.size(); ++i)
      co.entry_types[i] = Type{false, inputs->values[i].type, {}};
  }
  Result<Compiled> c = compile(*m, co);
  if (!c) return report(c.diags());
  std::cout << c->printed;
  return kOk;
}

}  // namespace

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
  run->add_option("--schedule", opt.schedule, "block scheduling policy (default min-pc)");
  run->add_option("--max-stack-depth", opt.max_stack_depth,
                  "bound on stack depth per thread (default 100000)")
      ->check(at_least(1));
  run->add_option("--max-steps", opt.max_steps,
                  "stop with an error after this many steps (0: no bound)")
      ->check(at_least(0));
  run->add_option("--batch", opt.batch, "number of threads when the entry takes no inputs")
      ->check(at_least(1));
  run->add_option("--lanes", opt.lanes, "streaming mode: run the inputs on this many lanes")
      ->check(at_least(1));
  run->add_option("--trace", opt.trace, "write a JSON Lines trace of every step to FILE");
  run->add_option("--trace-mask", opt.trace_mask, "mask format in the trace: none, bits or ranges")
      ->check(CLI::IsMember({"none", "bits", "ranges"}));
  run->add_flag("--stats", opt.stats, "add execution statistics to the output JSON");
  run->add_option("--output", opt.output,
                  "write outputs to FILE.json, FILE.npy or DIR/ instead of stdout");

  CLI::App* lower = app.add_subcommand("lower", "print the program after the compiler passes");
  add_program(lower);
  add_inputs(lower);
  std::string pass_help = "print the program after this pass instead: " + pass_names();
  lower->add_option("--print-after", opt.print_after, pass_help);

  CLI::App* check = app.add_subcommand("check", "parse, verify and infer types; print signatures");
  add_program(check);
  add_inputs(check);

  CLI::App* fmt = app.add_subcommand("fmt", "print the program in canonical formatting");
  add_program(fmt);

  app.add_subcommand("ops", "list the primitive operations");
}

int dispatch(CLI::App& app, const Options& opt) {
  if (app.got_subcommand("fmt")) return cmd_fmt(opt);
  if (app.got_subcommand("check")) return cmd_check(opt);
  if (app.got_subcommand("ops")) return cmd_ops();
  if (app.got_subcommand("run")) return cmd_run(opt);
  if (app.got_subcommand("lower")) return cmd_lower(opt);
  return kUsageError;
}

}  // namespace ab::cli
