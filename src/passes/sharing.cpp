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
  bool changed = true;
  while (changed) {
    changed = false;
    for (const auto& [v, sites] : writes) {
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
        changed = true;
      }
    }
  }
  // An instruction runs once only if all its results are shared; one that
  // also writes a per-thread variable runs per thread, so none of its results
  // can be shared, nor what was shared through them. Retract to a fixpoint.
  bool retracted = true;
  while (retracted) {
    retracted = false;
    for (const auto& [v, sites] : writes) {
      if (!source.count(v)) continue;
      bool ok = true;
      for (const Instr* in : sites) {
        std::vector<const Pattern*> leaves;
        in->out.names(leaves);
        for (const Pattern* l : leaves) ok = ok && source.count(l->name);
        for (const auto& a : in->args)
          ok = ok && (!a.is_var || a.name == v || source.count(a.name));
      }
      if (!ok) {
        source.erase(v);
        retracted = true;
      }
    }
  }
  SharingInfo info;
  info.source = std::move(source);
  return info;
}

}  // namespace ab
