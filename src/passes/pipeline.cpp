#include "passes/pipeline.h"

#include <chrono>
#include <cstdio>

#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/allocation_strategy.h"
#include "passes/block_order.h"
#include "passes/fuse_pop_push.h"
#include "passes/grad.h"
#include "passes/if_convert.h"
#include "passes/liveness.h"
#include "passes/verify.h"
#include "support/log.h"
#include "support/strings.h"

namespace ab {

namespace {

// After each transformation of the lowered program: re-check the stack
// discipline (treating only `full` variables as stacks once classes are
// assigned).
void check_lowered(const Compiled& c, const char* pass, Diagnostics& d) {
  check_stack_discipline(*c.lowered.program, c.info, (c.facts & kClassed) != 0, d);
  if (d.has_errors())
    d.error({},
            std::string("internal error: ") + pass + " broke the stack discipline (please report)");
}

void run_verify(Compiled& c, const CompileOptions&, Diagnostics& d) { verify(c.source, d); }

void run_infer_types(Compiled& c, const CompileOptions& opt, Diagnostics& d) {
  c.types = infer_types(c.source, opt.entry, opt.entry_types, d);
}

// grad adds the functions it generates; their types (and the callers' new
// variables) are inferred again.
void run_grad(Compiled& c, const CompileOptions& opt, Diagnostics& d) {
  expand_grad(c.source, c.types, opt.entry, opt.entry_types, d);
}

// if_convert rewrites the source blocks in place; when it changed anything,
// the types are inferred again so the passes after it see the new variables.
void run_if_convert(Compiled& c, const CompileOptions& opt, Diagnostics& d) {
  if (!if_convert(c.source, c.types)) return;
  c.liveness.clear();  // of the blocks before (in a --passes order with liveness first)
  c.types = infer_types(c.source, opt.entry, opt.entry_types, d);
  if (d.has_errors())
    d.error({}, "internal error: if_convert broke type inference (please report)");
}

void run_liveness(Compiled& c, const CompileOptions&, Diagnostics&) {
  // An analysis: what it finds is shown (as comments) by --print-after
  // liveness, and lower_function_calls uses it (computing its own for a
  // pipeline without this pass).
  c.liveness.clear();
  for (const auto& f : c.source.funcs) c.liveness[f.name.name] = compute_liveness(f.blocks);
}

void run_lower_function_calls(Compiled& c, const CompileOptions& opt, Diagnostics& d) {
  if (has_grad_calls(c.source)) {
    d.error({}, "--passes: this program calls value_and_grad, which needs the grad pass before "
                "lower_function_calls");
    return;
  }
  Lowered low = lower_function_calls(c.source, opt.entry, &c.types,
                                     c.liveness.empty() ? nullptr : &c.liveness);
  c.lowered = std::move(low.module);
  c.info = std::move(low.info);
  c.facts |= kLowered;
  check_lowered(c, "lower_function_calls", d);
}

void run_allocation_strategy(Compiled& c, const CompileOptions&, Diagnostics& d) {
  allocation_strategy(*c.lowered.program, c.info);
  c.facts |= kClassed;
  check_lowered(c, "allocation_strategy", d);
}

void run_fuse_pop_push(Compiled& c, const CompileOptions&, Diagnostics& d) {
  fuse_pop_push(*c.lowered.program);
  check_lowered(c, "fuse_pop_push", d);
}

void run_block_order(Compiled& c, const CompileOptions&, Diagnostics&) {
  block_order(*c.lowered.program);
}

const PassInfo kPasses[] = {
    {"parse", "read the .ab text into a syntax tree (PEGTL grammar in grammar/)", 0, 0, 0,
     nullptr, nullptr},
    {"blocks", "the front end: statements and nested expressions become blocks and temporaries",
     0, 0, 0, nullptr, nullptr},
    {"verify", "labels, callees, arities, attributes, definedness on every path", kSourceForm, 0, 0,
     run_verify, nullptr},
    {"infer_types", "whole-program type inference from the entry's inputs", kSourceForm, kTyped, 0,
     run_infer_types, "types"},
    {"grad", "value_and_grad(F, x, ...) becomes a call of generated reverse-mode functions",
     kSourceForm | kTyped, 0, 0, run_grad, nullptr},
    {"if_convert", "small branches become selects, loop headers are rotated into loop bodies",
     kSourceForm | kTyped, 0, 0, run_if_convert, nullptr},
    {"liveness", "live variables into and out of every instruction (printed as comments)",
     kSourceForm, 0, 0, run_liveness, nullptr},
    {"lower_function_calls", "calls become pushes, pops and push_goto; returns indirect_goto",
     kSourceForm | kTyped, kLowered, kSourceForm, run_lower_function_calls, nullptr},
    {"allocation_strategy", "storage class per variable: null, temporary, register, full", kLowered,
     kClassed, 0, run_allocation_strategy, nullptr},
    {"fuse_pop_push", "pop x followed by a write of x becomes an in-place update x!",
     kLowered | kClassed, 0, 0, run_fuse_pop_push, nullptr},
    {"block_order", "scheduling priority of blocks for the min-pc policy", kLowered, 0, 0,
     run_block_order, nullptr},
};

std::string fact_pass(unsigned fact) {
  switch (fact) {
    case kSourceForm:
      return "it runs on the source program, before lower_function_calls";
    case kTyped:
      return "it needs infer_types before it";
    case kLowered:
      return "it needs lower_function_calls before it";
    case kClassed:
      return "it needs allocation_strategy before it";
  }
  return "its needs are not met";
}

// The module with every signature written out as inference found it.
std::string print_typed(const Module& m, const TypeInfo& types) {
  Module copy = m;
  for (auto& f : copy.funcs) {
    auto it = types.funcs.find(f.name.name);
    if (it == types.funcs.end()) continue;
    const FunctionTypes& ft = it->second;
    for (size_t i = 0; i < f.params.size(); ++i)
      if (ft.params[i]) f.params[i].type = ft.params[i];
    bool all = true;
    for (const auto& r : ft.results) all = all && r.has_value();
    if (all) {
      f.results_declared = true;
      f.results.clear();
      for (const auto& r : ft.results) f.results.push_back(*r);
    }
  }
  return print_module(copy);
}

// The program as it stands after `pass`.
std::string print_state(const Compiled& c, const PassInfo& pass) {
  if (pass.run == run_liveness) return print_liveness(c.source);
  if (c.facts & kLowered) return print_module(c.lowered);
  if (c.facts & kTyped) return print_typed(c.source, c.types);
  return print_module(c.source);
}

// "12 blocks, 80 instructions" of the program as it stands.
std::string program_size(const Compiled& c) {
  size_t blocks = 0, instrs = 0;
  auto count = [&](const std::vector<Block>& bs) {
    blocks += bs.size();
    for (const auto& b : bs) instrs += b.instrs.size() + 1;  // the terminator counts
  };
  if (c.facts & kLowered) {
    count(c.lowered.program->blocks);
  } else {
    for (const auto& f : c.source.funcs) count(f.blocks);
  }
  return std::to_string(blocks) + " blocks, " + std::to_string(instrs) + " instructions";
}

}  // namespace

std::span<const PassInfo> all_passes() { return kPasses; }

const PassInfo* find_pass(const std::string& name) {
  for (const auto& p : kPasses)
    if (name == p.name || (p.alias && name == p.alias)) return &p;
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

std::vector<std::string> split_pass_list(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    size_t a = item.find_first_not_of(' '), b = item.find_last_not_of(' ');
    out.push_back(a == std::string::npos ? "" : item.substr(a, b - a + 1));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::optional<std::string> select_passes(const std::vector<std::string>& names,
                                         std::vector<const PassInfo*>& out) {
  out.clear();
  std::vector<std::string> known;
  for (const auto& p : kPasses) known.push_back(p.name);
  unsigned facts = kSourceForm;
  for (const auto& name : names) {
    const PassInfo* p = find_pass(name);
    if (!p)
      return "unknown pass '" + name + "'" + did_you_mean(name, known) +
             "; passes: " + pass_names();
    if (!p->run) continue;                                        // parse: the front end runs it
    if (p->run == run_verify && (facts & kSourceForm)) continue;  // so does verify
    for (unsigned fact : {kSourceForm, kTyped, kLowered, kClassed})
      if ((p->needs & fact) && !(facts & fact))
        return std::string("pass '") + p->name + "' cannot run here: " + fact_pass(fact) +
               " (passes: " + pass_names() + ")";
    for (const PassInfo* q : out)
      if (q == p) return std::string("pass '") + p->name + "' is listed twice";
    facts = (facts | p->adds) & ~p->removes;
    out.push_back(p);
  }
  return std::nullopt;
}

Result<Module> load_and_verify(const std::string& path) {
  Result<Module> m = parse_file(path);
  if (!m) return m;
  Diagnostics d(m->source);
  verify(*m, d);
  if (d.has_errors()) return d;
  return m;
}

bool expand_grad(Module& m, TypeInfo& types, const std::string& entry,
                 const std::vector<std::optional<Type>>& entry_types, Diagnostics& d) {
  if (!has_grad_calls(m)) return true;
  if (shape_blocks(m, types, grad_reached(m))) {
    types = infer_types(m, entry, entry_types, d);
    if (d.has_errors()) {
      d.error({}, "internal error: shaping the blocks for grad broke type inference (please "
                  "report)");
      return false;
    }
  }
  if (!grad(m, types, d) || d.has_errors()) return false;
  types = infer_types(m, entry, entry_types, d);
  if (d.has_errors()) {
    d.error({}, "internal error: grad generated code that type inference rejects (please report)");
    return false;
  }
  return true;
}

Result<Compiled> compile(const Module& m, const CompileOptions& opt) {
  Compiled c;
  c.source = m;
  c.facts = kSourceForm;
  Diagnostics d(m.source);
  std::vector<const PassInfo*> pipeline;
  if (opt.passes.empty()) {
    for (const auto& p : kPasses)
      if (p.run && p.run != run_verify) pipeline.push_back(&p);  // the front end ran those
  } else if (auto e = select_passes(opt.passes, pipeline)) {
    d.error({}, *e);
    return d;
  }
  const PassInfo* stop = opt.print_after.empty() ? nullptr : find_pass(opt.print_after);
  if (!opt.print_after.empty() && !stop) {
    d.error({}, "unknown pass '" + opt.print_after + "'; passes: " + pass_names());
    return d;
  }
  if (stop && (stop->run == nullptr || stop->run == run_verify)) {
    c.printed = print_module(m);  // the front end's output
    return c;
  }
  bool stopped = false;
  for (const PassInfo* p : pipeline) {
    auto start = std::chrono::steady_clock::now();
    p->run(c, opt, d);
    if (d.has_errors()) return d;
    c.facts = (c.facts | p->adds) & ~p->removes;
    if (log_enabled(LogLevel::Info)) {
      double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", ms);
      log_info(std::string("pass ") + p->name + ": " + buf + " ms; " + program_size(c));
    }
    if (p == stop) {
      stopped = true;
      break;
    }
  }
  if (stop && !stopped) {
    d.error({}, std::string("--print-after ") + stop->name + ": that pass is not in the pipeline");
    return d;
  }
  if (stop) {
    c.printed = print_state(c, *stop);
  } else if (!opt.print) {
    // A run: the text would be thrown away.
  } else if (c.facts & kLowered) {
    c.printed = print_module(c.lowered);
  } else if (c.facts & kTyped) {
    c.printed = print_typed(c.source, c.types);
  } else {
    c.printed = print_module(c.source);
  }
  return c;
}

FunctionTypes infer_program_types(const Program& p,
                                  const std::vector<std::optional<Type>>& input_types,
                                  Diagnostics& diags, const SourceRef& source) {
  // Type inference is flow-insensitive, so the program's blocks can stand in
  // for one function's: its inputs are the parameters, `halt` returns its
  // outputs, and every other jump is only a jump.
  Module pseudo;
  pseudo.source = source;
  Function f;
  f.name = {p.entry.name.empty() ? "program" : p.entry.name, p.entry.loc};
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    Param prm;
    prm.name = p.inputs[i];
    f.params.push_back(prm);
  }
  std::map<std::string, const VarDecl*> decls;
  for (const auto& v : p.vars) decls[v.name.name] = &v;
  for (auto& prm : f.params) {
    auto it = decls.find(prm.name.name);
    if (it != decls.end() && it->second->type) prm.type = it->second->type;
  }
  f.blocks = p.blocks;
  for (auto& b : f.blocks) {
    // Pops stay (inference skips them) so instruction indices line up.
    for (auto& in : b.instrs) {
      std::vector<const Pattern*> leaves;
      in.out.names(leaves);
      for (const Pattern* l : leaves) const_cast<Pattern*>(l)->in_place = false;
    }
    if (b.term.kind == TermKind::Halt || b.term.kind == TermKind::IndirectGoto) {
      // Either may end the program (indirect_goto pops the halt at the
      // bottom of the stack): both "return" the outputs.
      b.term.kind = TermKind::Return;
      for (const auto& o : p.outputs) {
        Operand op;
        op.name = o.name;
        op.loc = o.loc;
        b.term.values.push_back(op);
      }
    } else if (b.term.kind == TermKind::PushGoto) {
      b.term.kind = TermKind::Goto;
      b.term.target = b.term.target2;
    }
  }
  // Declared variable types act as annotations: a copy from a typed
  // parameter-like variable pins them. Seed them as extra parameters.
  for (const auto& v : p.vars) {
    if (!v.type) continue;
    bool is_input = false;
    for (const auto& i : p.inputs) is_input = is_input || i.name == v.name.name;
    if (is_input) continue;
    Param prm;
    prm.name = v.name;
    prm.type = v.type;
    f.params.push_back(prm);
  }
  pseudo.funcs.push_back(std::move(f));
  std::vector<std::optional<Type>> seeds = input_types;
  seeds.resize(pseudo.funcs[0].params.size());
  TypeInfo t = infer_types(pseudo, pseudo.funcs[0].name.name, seeds, diags);
  return t.funcs.at(pseudo.funcs[0].name.name);
}

}  // namespace ab
