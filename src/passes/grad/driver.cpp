// The grad pass (passes/grad.h): every value_and_grad call rewritten to a
// call of the generated G_vjpM, and the generated functions of one straight
// block expanded into their callers.
#include <algorithm>

#include "parse/inline.h"
#include "passes/grad.h"
#include "passes/grad/internal.h"

namespace ab {

bool has_grad_calls(const Module& m) {
  for (const auto& f : m.funcs)
    for (const auto& b : f.blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call && in.grad) return true;
  return false;
}

std::set<std::string> grad_reached(const Module& m) {
  std::set<std::string> out;
  std::vector<std::string> work;
  for (const auto& f : m.funcs)
    for (const auto& b : f.blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call && in.grad && out.insert(in.callee.name).second)
          work.push_back(in.callee.name);
  while (!work.empty()) {
    const Function* f = m.find_func(work.back());
    work.pop_back();
    if (!f) continue;
    for (const auto& b : f->blocks)
      for (const auto& in : b.instrs)
        if (in.kind == InstrKind::Call && !in.grad && out.insert(in.callee.name).second)
          work.push_back(in.callee.name);
  }
  return out;
}

bool grad(Module& m, const TypeInfo& types, Diagnostics& diags) {
  using gradient::VjpInfo;
  if (!has_grad_calls(m)) return false;
  gradient::Grad g(m, types, diags);
  struct Edit {
    Instr* in;
    const VjpInfo* info;
  };
  std::vector<Edit> edits;
  for (auto& f : m.funcs) {
    auto ft = types.funcs.find(f.name.name);
    if (ft == types.funcs.end()) continue;  // not reachable from the entry
    for (size_t bi = 0; bi < f.blocks.size(); ++bi)
      for (size_t ii = 0; ii < f.blocks[bi].instrs.size(); ++ii) {
        Instr& in = f.blocks[bi].instrs[ii];
        if (in.kind != InstrKind::Call || !in.grad) continue;
        const Function* callee = m.find_func(in.callee.name);
        if (!gradient::check_grad_call(in, *callee, ft->second.operand_types[bi][ii][0],
                                       types.funcs.at(callee->name.name), diags))
          continue;
        std::vector<bool> mask(callee->params.size(), false);
        mask[0] = true;
        if (const VjpInfo* info = g.vjp(*callee, mask, in.loc)) edits.push_back({&in, info});
      }
  }
  if (diags.has_errors()) return true;
  for (const Edit& e : edits) {
    e.in->grad = false;
    e.in->callee.name = e.info->name;
    if (e.info->active_results[0]) e.in->args.push_back(gradient::flit(1.0));
  }
  // A generated function of one block without calls (a straight-line
  // function's whole gradient, or the last block's part of a longer one) is
  // expanded where it is called, as an inline function is: a leapfrog step
  // then computes its gradient in its own block, without a call.
  // Expanding one may leave its caller (another generated function) straight
  // in turn, hence the rounds.
  std::set<std::string> generated;
  for (auto& fn : g.made()) {
    generated.insert(fn.name.name);
    m.funcs.push_back(std::move(fn));
  }
  for (;;) {
    std::set<std::string> expanded;
    for (auto& fn : m.funcs) {
      if (!generated.count(fn.name.name) || fn.blocks.size() != 1) continue;
      const auto& body = fn.blocks[0].instrs;
      if (std::any_of(body.begin(), body.end(),
                      [](const Instr& in) { return in.kind == InstrKind::Call; }))
        continue;
      fn.is_inline = true;
      expanded.insert(fn.name.name);
    }
    if (expanded.empty()) break;
    inline_calls(m, diags);
    m.funcs.erase(std::remove_if(m.funcs.begin(), m.funcs.end(),
                                 [&](const Function& f) { return expanded.count(f.name.name); }),
                  m.funcs.end());
    for (const auto& n : expanded) generated.erase(n);
  }
  return true;
}

}  // namespace ab
