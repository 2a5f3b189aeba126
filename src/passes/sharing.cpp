#include "passes/sharing.h"

#include <optional>
#include <set>

#include "ir/printer.h"

namespace ab {

SharingInfo sharing(const std::vector<Block>& blocks, const std::vector<std::string>& params,
                    const std::vector<bool>& roots) {
  std::map<std::string, std::vector<const Instr*>> writes;
  for (const auto& b : blocks)
    for (const auto& in : b.instrs) {
      if (in.kind == InstrKind::Pop) continue;
      std::vector<const Pattern*> leaves;
      in.out.names(leaves);
      for (const Pattern* l : leaves) writes[l->name].push_back(&in);
    }
  std::set<std::string> is_param(params.begin(), params.end());
  std::map<std::string, std::string> source;
  for (size_t i = 0; i < params.size() && i < roots.size(); ++i) {
    const std::string& n = params[i];
    auto w = writes.find(n);
    if (roots[i] && (w == writes.end() || w->second.empty())) source[n] = n;
  }
  // Which variables to look at again when one becomes shared or stops being
  // shared: those written by an instruction that reads it or also writes it.
  // (Worklists: a fixpoint over the whole map, pass after pass, took time
  // quadratic in a long block's temporaries.)
  std::map<std::string, std::vector<const std::string*>> dependents;
  for (const auto& [v, sites] : writes)
    for (const Instr* in : sites) {
      for (const auto& a : in->args)
        if (a.is_var && a.name != v) dependents[a.name].push_back(&v);
      std::vector<const Pattern*> leaves;
      in->out.names(leaves);
      for (const Pattern* l : leaves)
        if (l->name != v) dependents[l->name].push_back(&v);
    }
  auto push_dependents = [&](const std::string& u, std::vector<const std::string*>& work) {
    auto d = dependents.find(u);
    if (d != dependents.end()) work.insert(work.end(), d->second.begin(), d->second.end());
  };
  // Grows `source`: a variable is shared once every write gives it the same
  // shared value. Each variable's source, once found, never changes, so the
  // order of the work does not change the result.
  std::vector<const std::string*> work;
  for (auto it = writes.rbegin(); it != writes.rend(); ++it) work.push_back(&it->first);
  while (!work.empty()) {
    const std::string& v = *work.back();
    work.pop_back();
    const auto& sites = writes.at(v);
    if (source.count(v) || is_param.count(v) || sites.empty()) continue;
    std::optional<std::string> src;
    bool ok = true;
    for (const Instr* in : sites) {
      bool plain_copy = in->kind == InstrKind::Copy && !in->out.is_tuple && in->out.name == v;
      std::string id;
      if (plain_copy && in->args[0].is_var) {
        const std::string& u = in->args[0].name;
        if (u == v) continue;  // a push of its own value
        auto it = source.find(u);
        if (it == source.end()) {
          ok = false;
          break;
        }
        id = it->second;
      } else if (plain_copy) {
        id = "literal " + print_literal(in->args[0].lit);
      } else {
        // Computed here: shared only as the one write, of shared operands.
        // thread_index() has no operands but differs from thread to thread.
        bool shared_args = sites.size() == 1 && in->kind != InstrKind::Call &&
                           !(in->kind == InstrKind::Prim && prim_per_thread(in->prim));
        for (const auto& a : in->args)
          shared_args = shared_args && (!a.is_var || source.count(a.name));
        if (!shared_args) {
          ok = false;
          break;
        }
        id = v;
      }
      if (src && *src != id) {
        ok = false;
        break;
      }
      src = id;
    }
    if (ok && src) {
      source[v] = *src;
      push_dependents(v, work);
    }
  }
  // An instruction runs once only if all its results are shared; one that
  // also writes a per-thread variable runs per thread, so none of its results
  // can be shared, nor what was shared through them. Retract to a fixpoint.
  for (auto it = source.rbegin(); it != source.rend(); ++it) {
    auto w = writes.find(it->first);
    if (w != writes.end()) work.push_back(&w->first);
  }
  while (!work.empty()) {
    const std::string& v = *work.back();
    work.pop_back();
    if (!source.count(v)) continue;
    bool ok = true;
    for (const Instr* in : writes.at(v)) {
      std::vector<const Pattern*> leaves;
      in->out.names(leaves);
      for (const Pattern* l : leaves) ok = ok && source.count(l->name);
      for (const auto& a : in->args)
        ok = ok && (!a.is_var || a.name == v || source.count(a.name));
    }
    if (!ok) {
      source.erase(v);
      push_dependents(v, work);
    }
  }
  SharingInfo info;
  info.source = std::move(source);
  return info;
}

}  // namespace ab
