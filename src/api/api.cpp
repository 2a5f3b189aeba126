// The public API (include/autobatch/autobatch.h): compiling, the program's
// static queries (signature, lower, inputs), formatting, outputs. Running is
// in run.cpp, custom primitives in primitives.cpp.
#include <chrono>

#include <exception>
#include <mutex>
#include <new>
#include <set>

#include "api/internal.h"
#include "io/inputs.h"
#include "io/json_write.h"
#include "io/outputs.h"
#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/grad.h"
#include "passes/result_names.h"
#include "passes/verify.h"
#include "support/large_stack.h"
#include "support/log.h"
#include "support/strings.h"
#include "vm/jit/jit.h"
#include "vm/trace.h"

namespace autobatch {

const char* version() { return AUTOBATCH_VERSION; }

bool compiling_in_background() { return ab::jit::compiling(); }
void wait_for_background_compiles() { ab::jit::wait_idle(); }

const char* dtype_name(DType d) { return ab::dtype_name(to_internal(d)); }
size_t dtype_size(DType d) { return ab::dtype_size(to_internal(d)); }

std::string TensorType::str() const {
  return std::string(dtype_name(dtype)) + ab::shape_str(shape);
}

std::optional<TensorType> parse_tensor_type(std::string_view s) {
  size_t open = s.find('[');
  std::optional<ab::DType> d = ab::parse_dtype(s.substr(0, open));
  if (!d) return std::nullopt;
  TensorType t{to_public(*d), {}};
  if (open == std::string_view::npos) return t;
  if (s.back() != ']') return std::nullopt;
  std::string_view dims = s.substr(open + 1, s.size() - open - 2);
  while (!dims.empty()) {
    size_t comma = dims.find(',');
    std::string_view item = dims.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (item.empty()) return std::nullopt;
    int64_t v = 0;
    for (char ch : item) {
      if (ch < '0' || ch > '9' || v > (int64_t{1} << 40)) return std::nullopt;
      v = v * 10 + (ch - '0');
    }
    t.shape.push_back(v);
    if (comma == std::string_view::npos) break;
    dims.remove_prefix(comma + 1);
    if (dims.empty()) return std::nullopt;  // trailing comma
  }
  return t;
}

std::vector<Diagnostic> to_public(const ab::Diagnostics& d) {
  std::vector<Diagnostic> out;
  const ab::SourceFile* src = d.source().get();
  for (const auto& item : d.items()) {
    Diagnostic p;
    p.file = src ? src->name_of(item.loc.line) : "";  // an imported file's own name and line
    p.line = static_cast<int>(ab::local_line(item.loc.line));
    p.column = static_cast<int>(item.loc.col);
    p.severity = static_cast<Severity>(item.severity);
    p.message = item.message;
    p.rendered = ab::render_diagnostic(src, item);
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Diagnostic> module_warnings(const ab::Module& m, const std::string& entry) {
  ab::Diagnostics d(m.source);
  for (const auto& w : m.warnings)
    if (w.entry_only.empty() || w.entry_only == entry) d.warning(w.diag.loc, w.diag.message);
  return to_public(d);
}

bool known_schedule(const std::string& s) { return s == "persistent" || s == "min-pc"; }

std::string schedule_error(const std::string& s) {
  return "unknown --schedule '" + s + "' (available: persistent, min-pc)";
}

Diagnostic option_error(const std::string& message) {
  ab::Diagnostics d;
  d.error({}, message);
  return to_public(d).front();
}

void log_phase(const char* name, double seconds) {
  if (!ab::log_enabled(ab::LogLevel::Info)) return;
  char buf[64];
  std::snprintf(buf, sizeof buf, "phase %s: %.3f ms", name, seconds * 1e3);
  ab::log_info(buf);
}

// ---------------------------------------------------------------- arrays

Array ArrayAccess::wrap(ab::Array a) {
  auto holder = std::make_shared<ab::Array>(std::move(a));
  Array out;
  out.dtype_ = to_public(holder->type.dtype);
  out.shape_ = {holder->batch};
  out.shape_.insert(out.shape_.end(), holder->type.shape.begin(), holder->type.shape.end());
  out.data_ = holder->data.data();
  out.holder_ = std::shared_ptr<const void>(holder, holder.get());
  return out;
}

Array Array::copy_of(const ArrayView& v) {
  ab::Array a;
  a.type.dtype = to_internal(v.dtype);
  a.type.shape.assign(v.shape.begin() + (v.shape.empty() ? 0 : 1), v.shape.end());
  a.batch = v.batch();
  a.data.resize(static_cast<size_t>(v.num_elements()) * dtype_size(v.dtype));
  if (a.data.size()) std::memcpy(a.data.data(), v.data, a.data.size());
  return ArrayAccess::wrap(std::move(a));
}

ab::Array ArrayAccess::borrow(const Array& a) {
  ab::Array out;
  out.type.dtype = to_internal(a.dtype_);
  out.type.shape.assign(a.shape_.begin() + (a.shape_.empty() ? 0 : 1), a.shape_.end());
  out.batch = a.batch();
  out.data = ab::Buffer::borrow(a.data_, a.byte_size());
  return out;
}

// ---------------------------------------------------------------- passes, format

std::vector<std::string> pass_names() {
  std::vector<std::string> out;
  for (const auto& p : ab::all_passes()) out.push_back(p.name);
  return out;
}

std::vector<std::string> split_pass_list(const std::string& list) {
  if (list.find_first_not_of(' ') == std::string::npos) return {};
  return ab::split_pass_list(list);
}

std::vector<std::string> log_level_names() {
  return {"trace", "debug", "info", "warn", "error", "off"};
}

bool set_log_level(const std::string& level) {
  std::optional<ab::LogLevel> l = ab::parse_log_level(level);
  if (!l) return false;
  ab::set_log_level(*l);
  return true;
}

Status check_pass_name(const std::string& name) {
  if (ab::find_pass(name)) return {};
  return Status{{option_error("unknown pass '" + name + "'" + ab::did_you_mean(name, pass_names()) +
                              "; passes: " + ab::pass_names())}};
}

namespace {

// The formatter recurses as deep as the program nests: run on a large
// stack (support/large_stack.h).
Result<std::string> formatted(const std::function<ab::Result<std::string>()>& format) {
  std::optional<ab::Result<std::string>> text;
  ab::with_large_stack([&] { text.emplace(format()); });
  if (!*text) return to_public(text->diags());
  return std::move(**text);
}

}  // namespace

Result<std::string> format(const std::string& text, const std::string& name) {
  return formatted([&] { return ab::format_text(name, text); });
}

Result<std::string> format_file(const std::string& path) {
  return formatted([&] { return ab::format_file(path); });
}

// ---------------------------------------------------------------- compile

namespace {

Result<Program> compile_module(ab::Result<ab::Module> parsed, const CompileOptions& opt,
                               std::vector<ab::PrimId> prims);

Result<Program> compile_with(const CompileOptions& opt,
                             const std::function<ab::Result<ab::Module>()>& parse) {
  try {
    if (!known_schedule(opt.schedule))
      return std::vector<Diagnostic>{option_error(schedule_error(opt.schedule))};
    if (!opt.passes.empty()) {
      std::vector<const ab::PassInfo*> rows;
      if (auto e = ab::select_passes(opt.passes, rows))
        return std::vector<Diagnostic>{option_error("--passes: " + *e)};
    }
    std::vector<ab::PrimId> prims = PrimitivesAccess::snapshot(opt.primitives);
    // Parsing and verifying recurse as deep as the program's expressions
    // nest (support/large_stack.h); the primitives' scope is per thread.
    std::optional<Result<Program>> r;
    ab::with_large_stack([&] {
      ab::PrimScope scope(&prims);
      r.emplace(compile_module(parse(), opt, prims));
    });
    return std::move(*r);
  } catch (const std::bad_alloc&) {
    return std::vector<Diagnostic>{option_error("out of memory while compiling")};
  } catch (const std::exception& e) {
    return std::vector<Diagnostic>{option_error(std::string("internal error: ") + e.what())};
  }
}

}  // namespace

struct ProgramAccess {
  static Program make(std::shared_ptr<const Program::Impl> impl) {
    Program p;
    p.impl_ = std::move(impl);
    return p;
  }
  static const Program::Impl& impl(const Program& p) { return *p.impl_; }
};

namespace {

Result<Program> compile_module(ab::Result<ab::Module> parsed, const CompileOptions& opt,
                               std::vector<ab::PrimId> prims) {
  if (!parsed) return to_public(parsed.diags());
  auto impl = std::make_shared<Program::Impl>();
  impl->passes = opt.passes;
  impl->module = parsed.take();
  impl->prims = std::move(prims);
  ab::Module& m = impl->module;
  ab::Diagnostics d(m.source);
  ab::verify(m, d);
  if (d.has_errors()) return to_public(d);
  if (m.program) {
    const ab::Program& p = *m.program;
    // A mismatch matters only to running it (fmt, check and lower ignore it).
    if (!opt.entry.empty() && opt.entry != p.entry.name) {
      d.error(p.entry.loc, "--entry " + opt.entry +
                               " does not match this lowered program, whose entry is '" +
                               p.entry.name + "'");
      impl->entry_error = d;
    } else {
      impl->entry = p.entry.name;
    }
    impl->result_names = p.output_names;
  } else {
    const ab::Function* f = ab::find_entry(m, opt.entry, d);
    if (f) {
      impl->entry = f->name.name;
      impl->result_names = ab::result_names(m, *f);
    } else if (!opt.entry.empty()) {
      return to_public(d);
    } else {
      impl->entry_error = d;  // reported when an entry is needed
    }
  }
  impl->warnings = module_warnings(m, impl->entry);
  return ProgramAccess::make(std::move(impl));
}

}  // namespace

Result<Program> compile(const std::string& text, const CompileOptions& options) {
  return compile_with(options, [&] { return ab::parse_text(options.name, text); });
}

Result<Program> compile_file(const std::string& path, const CompileOptions& options) {
  return compile_with(options, [&] { return ab::parse_file(path); });
}

// ---------------------------------------------------------------- program

std::vector<std::pair<std::string, std::optional<ab::Type>>> Program::Impl::params() const {
  std::vector<std::pair<std::string, std::optional<ab::Type>>> out;
  if (module.program) {
    // A lowered program's inputs are named as in the source function
    // (`fib.n` is given as "n"), so the source's inputs work unchanged.
    const ab::Program& p = *module.program;
    std::map<std::string, const ab::VarDecl*> decls;
    for (const auto& v : p.vars) decls[v.name.name] = &v;
    std::string prefix = p.entry.name + ".";
    for (const auto& in : p.inputs) {
      std::string name = in.name.rfind(prefix, 0) == 0 ? in.name.substr(prefix.size()) : in.name;
      auto it = decls.find(in.name);
      out.emplace_back(name, it != decls.end() ? it->second->type : std::nullopt);
    }
    return out;
  }
  const ab::Function* f = module.find_func(entry);
  for (const auto& p : f->params) out.emplace_back(p.name.name, p.type);
  return out;
}

std::shared_ptr<const Prepared> Program::Impl::prepare(
    bool lowered_vm, const std::vector<std::optional<ab::Type>>& types) const {
  std::string key = lowered_vm ? "L" : "S";
  for (const auto& t : types) key += "|" + (t ? t->str() : std::string("?"));
  {
    std::lock_guard lock(mu);
    if (auto it = cache.find(key); it != cache.end()) return it->second;
  }
  // Made outside the lock: two threads may both make it; the first stored wins.
  auto p = std::make_shared<Prepared>();
  p->diags = ab::Diagnostics(module.source);
  if (module.program) {
    p->program_types = ab::infer_program_types(*module.program, types, p->diags, module.source);
  } else if (lowered_vm) {
    ab::CompileOptions co;
    co.entry = entry;
    co.entry_types = types;
    co.passes = passes;
    co.print = false;
    ab::Result<ab::Compiled> c = ab::compile(module, co);
    if (!c) {
      p->diags = c.diags();
    } else {
      p->compiled = c.take();
      if (!(p->compiled->facts & ab::kClassed)) {
        p->diags.error({},
                       "--passes: the stack VM runs a fully lowered program; this pipeline "
                       "leaves out lower_function_calls or allocation_strategy");
        p->compiled.reset();
      } else
        p->program_types =
            ab::infer_program_types(*p->compiled->lowered.program, types, p->diags, module.source);
    }
  } else {
    p->types = ab::infer_types(module, entry, types, p->diags);
    if (!p->diags.has_errors() && ab::has_grad_calls(module)) {
      p->expanded = module;
      ab::expand_grad(*p->expanded, p->types, entry, types, p->diags);
    }
  }
  std::lock_guard lock(mu);
  auto [it, fresh] = cache.emplace(key, std::move(p));
  return it->second;
}

const std::string& Program::entry() const { return impl_->entry; }
const std::vector<Diagnostic>& Program::warnings() const { return impl_->warnings; }
bool Program::is_lowered() const { return impl_->module.program.has_value(); }
std::vector<std::string> Program::result_names() const { return impl_->result_names; }

bool Program::reads_thread_index() const {
  const ab::Module& m = impl_->module;
  auto reads = [](const std::vector<ab::Block>& blocks) {
    for (const auto& b : blocks)
      for (const auto& in : b.instrs)
        if (in.kind == ab::InstrKind::Prim && in.callee.name == "thread_index") return true;
    return false;
  };
  if (m.program) return reads(m.program->blocks);
  if (impl_->entry.empty()) return false;
  // The functions the entry reaches.
  std::vector<const ab::Function*> todo{m.find_func(impl_->entry)};
  std::set<std::string> seen{impl_->entry};
  while (!todo.empty()) {
    const ab::Function* f = todo.back();
    todo.pop_back();
    if (!f) continue;
    if (reads(f->blocks)) return true;
    for (const auto& b : f->blocks)
      for (const auto& in : b.instrs)
        if (in.kind == ab::InstrKind::Call && seen.insert(in.callee.name).second)
          todo.push_back(m.find_func(in.callee.name));
  }
  return false;
}

std::vector<Program::Parameter> Program::parameters() const {
  std::vector<Parameter> out;
  if (impl_->entry.empty()) return out;
  for (auto& [name, type] : impl_->params()) {
    Parameter p{name, std::nullopt};
    if (type && !type->is_tuple)
      p.type = TensorType{to_public(type->tensor.dtype), type->tensor.shape};
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

std::string type_or_unknown(const std::optional<ab::Type>& t) {
  return t ? t->str() : std::string("?");
}

std::string signature_line(const ab::Function& f, const ab::FunctionTypes& ft) {
  std::string line = "func " + f.name.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    line += (i ? ", " : "") + f.params[i].name.name + ": " + type_or_unknown(ft.params[i]);
    if (f.params[i].constraint) line += " " + ab::print_constraint(*f.params[i].constraint);
  }
  line += ") -> ";
  if (ft.results.size() == 1 && !(ft.results[0] && ft.results[0]->is_tuple))
    return line + type_or_unknown(ft.results[0]);
  if (ft.results.size() == 1) {
    std::string inner = ft.results[0]->str();
    return line + "((" + inner.substr(1, inner.size() - 2) + "))";
  }
  line += "(";
  for (size_t i = 0; i < ft.results.size(); ++i)
    line += (i ? ", " : "") + type_or_unknown(ft.results[i]);
  return line + ")";
}

// The entry's parameter types from input views: each view's dtype and event
// shape (the batch dimension left out). Only the count is checked here.
Result<std::vector<std::optional<ab::Type>>> view_types(const Program::Impl& impl,
                                                        const std::vector<ArrayView>& views) {
  size_t want = impl.params().size();
  if (views.size() != want)
    return std::vector<Diagnostic>{option_error(
        "the entry '" + impl.entry + "' takes " + std::to_string(want) + " input" +
        (want == 1 ? "" : "s") + ", but " + std::to_string(views.size()) + " were given")};
  std::vector<std::optional<ab::Type>> out;
  for (const auto& v : views) {
    ab::Shape event(v.shape.begin() + (v.shape.empty() ? 0 : 1), v.shape.end());
    out.push_back(ab::Type::tensor_of(to_internal(v.dtype), std::move(event)));
  }
  return out;
}

template <typename F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return std::vector<Diagnostic>{option_error("out of memory")};
  } catch (const std::exception& e) {
    return std::vector<Diagnostic>{option_error(std::string("internal error: ") + e.what())};
  }
}

}  // namespace

Result<std::vector<std::string>> Program::signature(const std::vector<ArrayView>* inputs) const {
  return guarded([&]() -> Result<std::vector<std::string>> {
    const Impl& impl = *impl_;
    ab::PrimScope scope(&impl.prims);
    const ab::Module& m = impl.module;
    if (m.program) {
      const ab::Program& p = *m.program;
      return std::vector<std::string>{"program " + p.entry.name + ": " +
                                      std::to_string(p.vars.size()) + " variables, " +
                                      std::to_string(p.blocks.size()) + " blocks"};
    }
    std::string entry = impl.entry;
    std::vector<std::optional<ab::Type>> params;
    if (inputs) {
      if (entry.empty()) return to_public(impl.entry_error);
      auto t = view_types(impl, *inputs);
      if (!t) return t.diagnostics();
      params = *t;
    } else {
      // Without inputs any function may be the entry; annotations decide.
      if (entry.empty()) entry = m.funcs.front().name.name;
      params.resize(m.find_func(entry)->params.size());
    }
    ab::Diagnostics d(m.source);
    ab::TypeInfo types = ab::infer_types(m, entry, params, d);
    if (d.has_errors()) return to_public(d);
    std::vector<std::string> lines;
    for (const auto& f : m.funcs)  // the file's own functions, not those it imports
      if (ab::file_index(f.loc.line) == 0)
        lines.push_back(signature_line(f, types.funcs.at(f.name.name)));
    return lines;
  });
}

Result<std::string> Program::lower(const std::string& print_after,
                                   const std::vector<ArrayView>* inputs) const {
  return guarded([&]() -> Result<std::string> {
    if (!print_after.empty())
      if (Status s = check_pass_name(print_after); !s) return s.diagnostics;
    const Impl& impl = *impl_;
    ab::PrimScope scope(&impl.prims);
    if (impl.module.program) return ab::print_module(impl.module);  // already lowered
    if (impl.entry.empty()) return to_public(impl.entry_error);
    ab::CompileOptions co;
    co.entry = impl.entry;
    co.print_after = print_after;
    co.passes = impl.passes;
    co.entry_types.resize(impl.params().size());
    if (inputs) {
      auto t = view_types(impl, *inputs);
      if (!t) return t.diagnostics();
      co.entry_types = *t;
    }
    ab::Result<ab::Compiled> c = ab::compile(impl.module, co);
    if (!c) return to_public(c.diags());
    return c->printed;
  });
}

Result<Inputs> Program::load_inputs(const std::vector<std::string>& args,
                                    std::optional<int64_t> batch, bool defer_npy) const {
  return guarded([&]() -> Result<Inputs> {
    const Impl& impl = *impl_;
    if (impl.entry.empty()) return to_public(impl.entry_error);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<ab::ParamSpec> specs;
    for (auto& [name, type] : impl.params()) specs.push_back({name, type});
    ab::Result<ab::InputSet> loaded = ab::load_inputs(args, specs, batch, defer_npy);
    if (!loaded) return to_public(loaded.diags());
    Inputs out;
    out.batch = loaded->batch;
    for (auto& a : loaded->values) out.arrays.push_back(ArrayAccess::wrap(std::move(a)));
    for (const auto& d : loaded->on_disk) {
      if (!d) {
        out.on_disk.emplace_back();
        continue;
      }
      NpyInput n;
      n.path = d->path;
      n.parameter = d->param;
      n.file_dtype = to_public(d->header.dtype);
      n.dtype = to_public(d->dtype);
      n.shape = d->header.shape;
      n.data_offset = d->header.data_offset;
      out.on_disk.push_back(std::move(n));
    }
    log_phase("inputs",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return out;
  });
}

Result<Array> read_rows(const NpyInput& input, int64_t first, int64_t count) {
  try {
    ab::NpySource src{input.path, input.parameter,
                      ab::NpyHeader{to_internal(input.file_dtype), input.shape, input.data_offset},
                      to_internal(input.dtype)};
    auto rows = ab::read_input_rows(src, first, count);
    if (!rows.ok()) return to_public(rows.diags());
    return ArrayAccess::wrap(rows.take());
  } catch (const std::bad_alloc&) {
    return std::vector<Diagnostic>{option_error("out of memory reading rows of " + input.path)};
  }
}

Status Program::check(const RunOptions& o) const {
  std::vector<Diagnostic> out;
  if (o.vm != "stack" && o.vm != "stackless" && o.vm != "reference")
    out.push_back(
        option_error("unknown VM '" + o.vm + "' (available: stack, stackless, reference)"));
  if (!known_schedule(o.schedule)) out.push_back(option_error(schedule_error(o.schedule)));
  if (o.trace_format != "auto" && !ab::parse_trace_format(o.trace_format))
    out.push_back(option_error("unknown trace format '" + o.trace_format +
                               "' (available: auto, jsonl, compact, chrome)"));
  if (o.trace_mask != "bits" && o.trace_mask != "ranges" && o.trace_mask != "none")
    out.push_back(
        option_error("unknown trace mask '" + o.trace_mask + "' (available: none, bits, ranges)"));
  if (o.lanes < 0 || o.threads < 0 || o.max_steps < 0 || o.max_stack_depth < 1 || o.batch < 0 ||
      o.first_thread < 0 || o.total_batch < 0)
    out.push_back(option_error(
        "lanes, threads, max_steps, batch, first_thread and total_batch must not be negative, "
        "max_stack_depth at least 1"));
  if (!(o.time_limit >= 0) || o.time_limit > 1e9)  // NaN fails the first test
    out.push_back(option_error("time_limit must be a number of seconds, at least 0 (0: no limit)"));
  if (!out.empty()) return {out};
  if (impl_->entry.empty()) return {to_public(impl_->entry_error)};
  const ab::Module& m = impl_->module;
  if (m.program && o.vm == "stackless") {
    ab::Diagnostics d(m.source);
    d.error(m.program->entry.loc,
            "the stackless VM runs unlowered programs: give it the source program (or use --vm "
            "stack or --vm reference)");
    return {to_public(d)};
  }
  return {};
}

// ---------------------------------------------------------------- outputs

namespace {

ab::Stats to_internal(const Stats& s) {
  ab::Stats out;
  out.steps = s.steps;
  for (const auto& [name, n] : s.block_executions) {
    out.block_names.push_back(name);
    out.block_executions.push_back(n);
  }
  out.primitive_executions = s.primitive_executions;
  out.lane_operations = s.lane_operations;
  out.utilization_sum = s.utilization_sum;
  out.batched = s.utilization_applicable;
  out.peak_stack_depth = s.peak_stack_depth;
  out.seconds = s.seconds;
  for (const auto& e : s.execution)
    out.execution.push_back(
        {e.block, e.mode, e.reason, ab::SourceLoc{static_cast<uint32_t>(e.line), 0, 1}, e.statement});
  return out;
}

std::vector<ab::Array> borrowed_outputs(const RunResult& r) {
  std::vector<ab::Array> out;
  for (const auto& a : r.outputs) out.push_back(ArrayAccess::borrow(a));
  return out;
}

nlohmann::ordered_json errors_json(const RunResult& r) {
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& e : r.errors) {
    nlohmann::ordered_json item = nlohmann::ordered_json::object();
    item["thread"] = e.thread;
    item["message"] = e.message;
    list.push_back(std::move(item));
  }
  return list;
}

nlohmann::ordered_json extra_of(const RunResult& r, bool with_stats) {
  bool stats = with_stats && r.stats;
  if (!stats && !r.recorded) return nullptr;
  nlohmann::ordered_json extra = nlohmann::ordered_json::object();
  if (r.recorded) extra["errors"] = errors_json(r);
  if (stats) extra["stats"] = to_internal(*r.stats).to_json();
  return extra;
}

}  // namespace

std::string Stats::json() const { return to_internal(*this).to_json().dump(); }

std::string RunResult::rendered() const {
  std::string out;
  for (const auto& d : diagnostics) out += d.rendered;
  if (runtime_error) out += runtime_error->rendered;
  for (const auto& e : errors) out += e.error.rendered;
  return out;
}

std::string RunResult::json(bool with_stats) const {
  return ab::render_outputs_json(borrowed_outputs(*this), batch, extra_of(*this, with_stats),
                                 names);
}

Status check_output_target(const std::string& target) {
  ab::Result<ab::OutputTarget> t = ab::parse_output_target(target);
  if (!t) return {to_public(t.diags())};
  return {};
}

Status write_outputs(const RunResult& r, const std::string& target, bool with_stats) {
  try {
    const auto t0 = std::chrono::steady_clock::now();
    ab::Result<ab::OutputTarget> t = ab::parse_output_target(target);
    if (!t) return {to_public(t.diags())};
    std::vector<ab::PendingFile> beside;
    if (r.recorded) {  // errors.json beside file outputs (ignored for stdout)
      nlohmann::ordered_json doc = nlohmann::ordered_json::object();
      doc["errors"] = errors_json(r);
      std::string text;
      ab::append_json_value(text, doc);
      beside.push_back({"errors.json", text + "\n"});
    }
    auto written = ab::write_outputs(borrowed_outputs(r), r.batch, *t, extra_of(r, with_stats),
                                     std::cout, beside, r.names);
    if (!written) return {to_public(written.diags())};
    log_phase("outputs",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    return {};
  } catch (const std::bad_alloc&) {
    return {{option_error("out of memory while writing the outputs")}};
  }
}

}  // namespace autobatch
