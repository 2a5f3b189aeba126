#include "passes/pipeline.h"

#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/allocation_strategy.h"
#include "passes/block_order.h"
#include "passes/fuse_pop_push.h"
#include "passes/liveness.h"
#include "passes/verify.h"

namespace ab {

static const PassInfo kPasses[] = {
    {"parse", "read the .ab text into a syntax tree (PEGTL grammar in grammar/)"},
    {"blocks", "the front end: statements and nested expressions become blocks and temporaries"},
    {"verify", "labels, callees, arities, attributes, definedness on every path"},
    {"types", "whole-program type inference from the entry's inputs"},
    {"liveness", "live variables into and out of every instruction (printed as comments)"},
    {"lower_function_calls", "calls become pushes, pops and push_goto; returns indirect_goto"},
    {"allocation_strategy", "storage class per variable: null, temporary, register, full"},
    {"fuse_pop_push", "pop x followed by a write of x becomes an in-place update x!"},
    {"block_order", "scheduling priority of blocks for the min-pc policy"},
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

// The module with every signature written out as inference found it.
static std::string print_typed(const Module& m, const TypeInfo& types) {
  Module copy = m;
  for (auto& f : copy.funcs) {
    const FunctionTypes& ft = types.funcs.at(f.name.name);
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

Result<Compiled> compile(const Module& m, const CompileOptions& opt) {
  Compiled c;
  c.source = m;
  Diagnostics d(m.source);
  const std::string& stop = opt.print_after;
  if (stop == "parse" || stop == "blocks" || stop == "verify") {
    c.printed = print_module(m);
    return c;
  }
  c.types = infer_types(m, opt.entry, opt.entry_types, d);
  if (d.has_errors()) return d;
  if (stop == "types") {
    c.printed = print_typed(m, c.types);
    return c;
  }
  if (stop == "liveness") {
    c.printed = print_liveness(m);
    return c;
  }
  Lowered low = lower_function_calls(m, opt.entry, &c.types);
  c.lowered = std::move(low.module);
  c.info = std::move(low.info);
  Program& p = *c.lowered.program;
  // After each transformation of the lowered program: re-check the stack
  // discipline (treating only `full` variables as stacks once classes are
  // assigned), and stop there if that pass was asked for.
  auto after = [&](const char* pass, bool classes) {
    check_stack_discipline(p, c.info, classes, d);
    if (d.has_errors())
      d.error({}, std::string("internal error: ") + pass +
                      " broke the stack discipline (please report)");
    if (stop == pass) c.printed = print_module(c.lowered);
    return d.has_errors() || stop == pass;
  };
  if (after("lower_function_calls", false))
    return d.has_errors() ? Result<Compiled>(d) : Result<Compiled>(std::move(c));
  allocate_storage(p, c.info);
  if (after("allocation_strategy", true))
    return d.has_errors() ? Result<Compiled>(d) : Result<Compiled>(std::move(c));
  fuse_pop_push(p);
  if (after("fuse_pop_push", true))
    return d.has_errors() ? Result<Compiled>(d) : Result<Compiled>(std::move(c));
  order_blocks(p);
  c.printed = print_module(c.lowered);
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
