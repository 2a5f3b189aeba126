#include "passes/result_names.h"

#include <map>
#include <optional>
#include <set>

#include "parse/syntax.h"
#include "passes/verify.h"

namespace ab {
namespace {

// Names are votes: a return gives, per position, a name, "" (no name), or
// nothing (a call back into a function being named: it says nothing about
// the names), and a position is named when every vote cast agrees.
using Vote = std::optional<std::string>;

class Namer {
 public:
  explicit Namer(const Module& m) : m_(m) {}

  std::vector<Vote> names(const Function& f) {
    const size_t n = result_count(f).value_or(0);
    std::vector<Vote> out(n);
    if (!visiting_.insert(f.name.name).second) return out;  // recursion: no votes
    std::vector<bool> agreed(n, true);
    for (const auto& b : f.blocks) {
      if (b.term.kind != TermKind::Return || b.term.values.size() != n) continue;
      for (size_t i = 0; i < n; ++i) {
        Vote v = name_at(b, b.term.values[i]);
        if (!v) continue;
        if (!out[i])
          out[i] = v;
        else if (*out[i] != *v)
          agreed[i] = false;
      }
    }
    for (size_t i = 0; i < n; ++i)
      if (!agreed[i]) out[i] = "";
    for (size_t i = 0; i < n && i < f.result_names.size(); ++i)
      if (!f.result_names[i].empty()) out[i] = f.result_names[i];
    visiting_.erase(f.name.name);
    return out;
  }

 private:
  const Module& m_;
  std::set<std::string> visiting_;

  // A returned operand's name: a variable's own, or, for a temporary the
  // front end made, the callee's name for the result it holds.
  Vote name_at(const Block& b, const Operand& v) {
    if (!v.is_var) return "";
    if (!syntax::is_frontend_name(v.name)) return v.name;
    for (auto it = b.instrs.rbegin(); it != b.instrs.rend(); ++it) {
      std::vector<const Pattern*> leaves;
      it->out.names(leaves);
      for (size_t k = 0; k < leaves.size(); ++k) {
        if (leaves[k]->name != v.name) continue;
        if (it->kind != InstrKind::Call || it->grad) return "";
        // The pattern must bind the callee's results one by one.
        const Function* g = m_.find_func(it->callee.name);
        if (!g) return "";
        for (const auto& e : it->out.elems)
          if (e.is_tuple) return "";
        std::vector<Vote> gn = names(*g);
        if (!it->out.is_tuple && gn.size() != 1) return "";
        return k < gn.size() ? gn[k] : Vote("");
      }
    }
    return "";
  }
};

void leaf_names(const std::string& name, const Type& t, std::vector<std::string>& out) {
  if (!t.is_tuple) {
    out.push_back(name);
    return;
  }
  for (size_t i = 0; i < t.elems.size(); ++i)
    leaf_names(name.empty() ? "" : name + "." + std::to_string(i), t.elems[i], out);
}

}  // namespace

std::vector<std::string> result_names(const Module& m, const Function& f) {
  std::vector<std::string> out;
  for (const Vote& v : Namer(m).names(f)) out.push_back(v.value_or(""));
  // A name two results would share (`return x, x`) names neither.
  std::map<std::string, int> uses;
  for (const auto& n : out) ++uses[n];
  for (auto& n : out)
    if (uses[n] > 1) n.clear();
  return out;
}

std::vector<std::string> default_output_names(size_t leaves) {
  std::vector<std::string> out;
  for (size_t k = 0; k < leaves; ++k) out.push_back("out" + std::to_string(k));
  return out;
}

std::vector<std::string> output_names(const std::vector<std::string>& names,
                                      const std::vector<std::optional<Type>>& types,
                                      size_t leaves) {
  std::vector<std::string> out;
  for (size_t i = 0; i < types.size(); ++i) {
    const std::string name = i < names.size() ? names[i] : "";
    if (types[i])
      leaf_names(name, *types[i], out);
    else
      out.push_back(name);
  }
  const std::vector<std::string> fallback = default_output_names(leaves);
  if (out.size() != leaves) return fallback;
  for (size_t k = 0; k < leaves; ++k)
    if (out[k].empty()) out[k] = fallback[k];
  // A repeated name gives way to the default, until no name repeats (the
  // defaults differ from each other, so this ends).
  for (bool again = true; again;) {
    again = false;
    std::map<std::string, std::vector<size_t>> at;
    for (size_t k = 0; k < leaves; ++k) at[out[k]].push_back(k);
    for (const auto& [name, ks] : at) {
      if (ks.size() < 2) continue;
      for (size_t k : ks)
        if (out[k] != fallback[k]) {
          out[k] = fallback[k];
          again = true;
        }
    }
  }
  return out;
}

}  // namespace ab
