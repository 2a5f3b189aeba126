#include "parse/unused.h"

#include <map>
#include <set>

#include "support/strings.h"

namespace ab::syntax {
namespace {

using EK = Expr::Kind;
using SK = Stmt::Kind;

// What the statements of one function do with each name. A read is "real"
// when the value read goes somewhere other than into the variable itself:
// a condition, a return, a call alone, a loop's bounds, or another
// variable. `x = x + 1` (and `x += 1`, `x[i] = v`) reads x only to make x.
struct Uses {
  std::set<std::string> read;  // names with a real read
  std::set<std::string> self_read;
  // Each variable's assignments, in source order: the place of the name,
  // and whether the language required the name there (one leaf of a
  // pattern of several, whose statement assigns another name that is read).
  struct Site {
    SourceLoc loc;
    std::vector<std::string> siblings;  // the other leaves of its pattern
  };
  std::map<std::string, std::vector<Site>> assigned;
  std::vector<std::string> order;  // assigned names, first assignment first
  std::set<std::string> exempt;    // loop variables, popped names: no warning
};

void reads_of(const Expr& e, std::vector<std::string>& out) {
  if (e.kind == EK::Var) out.push_back(e.name);
  for (const auto& a : e.args) reads_of(a, out);
}

class Collector {
 public:
  explicit Collector(Uses& u) : u_(u) {}

  void body(const Body& b) {
    for (const auto& s : b) stmt(s);
  }

 private:
  // Reads whose value goes into `targets` only.
  void reads_into(const std::vector<std::string>& names, const std::set<std::string>& targets) {
    for (const auto& n : names) {
      if (targets.size() == 1 && targets.count(n))
        u_.self_read.insert(n);
      else
        u_.read.insert(n);
    }
  }
  void root(const Expr& e) {
    std::vector<std::string> names;
    reads_of(e, names);
    for (auto& n : names) u_.read.insert(std::move(n));
  }
  void assign(const std::string& name, SourceLoc loc, std::vector<std::string> siblings = {}) {
    auto [it, fresh] = u_.assigned.try_emplace(name);
    if (fresh) u_.order.push_back(name);
    it->second.push_back({loc, std::move(siblings)});
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case SK::Assign: {
        std::vector<const Pattern*> leaves;
        s.pat.names(leaves);
        std::set<std::string> targets;
        for (const Pattern* l : leaves) targets.insert(l->name);
        std::vector<std::string> names;
        for (const auto& e : s.exprs) reads_of(e, names);
        if (!s.op.empty()) names.push_back(s.pat.name);  // x += e reads x
        reads_into(names, targets);
        for (const Pattern* l : leaves) {
          std::vector<std::string> siblings;
          for (const Pattern* o : leaves)
            if (o->name != l->name) siblings.push_back(o->name);
          assign(l->name, l->loc, std::move(siblings));
        }
        return;
      }
      case SK::IndexAssign: {
        // x[i] = v makes a new x from x, i and v.
        std::vector<std::string> names{s.target.name};
        for (const auto& e : s.exprs) reads_of(e, names);
        reads_into(names, {s.target.name});
        assign(s.target.name, s.target.loc);
        return;
      }
      case SK::Eval:
      case SK::Return:
      case SK::While:
        for (const auto& e : s.exprs) root(e);
        body(s.body);
        return;
      case SK::For:
        // The loop variable is a name the syntax requires: never warned.
        for (const auto& e : s.exprs) root(e);
        u_.exempt.insert(s.target.name);
        body(s.body);
        return;
      case SK::If:
        for (const auto& arm : s.arms) {
          root(arm.cond);
          body(arm.body);
        }
        body(s.else_body);
        return;
      case SK::Branch:
        u_.read.insert(s.target.name);
        return;
      case SK::Pop:
        for (const auto& n : s.names) u_.exempt.insert(n.name);
        return;
      default:
        return;
    }
  }

  Uses& u_;
};

bool intentionally_unused(const std::string& name) { return !name.empty() && name[0] == '_'; }

void check_function(const Func& fn, std::vector<ModuleWarning>& out) {
  Uses u;
  Collector(u).body(fn.body);
  const Function& h = fn.header;
  std::set<std::string> params;
  for (const auto& p : h.params) params.insert(p.name.name);

  // Did-you-mean candidates: the function's other variables, those it
  // reads first (the name a typo missed is one the function uses).
  std::vector<std::string> candidates;
  for (const auto& p : h.params)
    if (u.read.count(p.name.name)) candidates.push_back(p.name.name);
  for (const auto& n : u.order)
    if (u.read.count(n) && !params.count(n)) candidates.push_back(n);
  for (const auto& p : h.params)
    if (!u.read.count(p.name.name)) candidates.push_back(p.name.name);
  for (const auto& n : u.order)
    if (!u.read.count(n) && !params.count(n)) candidates.push_back(n);
  auto suggestion = [&](const std::string& name) {
    std::vector<std::string> others;
    for (const auto& c : candidates)
      if (c != name && !intentionally_unused(c)) others.push_back(c);
    return did_you_mean(name, others);
  };
  // A likely typo, or else how to say that the name is unused on purpose.
  auto advice = [&](const std::string& name) {
    std::string dym = suggestion(name);
    return dym.empty() ? "; name it '_" + name + "' if that is intended" : dym;
  };
  auto only_itself = [&](const std::string& name) {
    return u.self_read.count(name) ? std::string(" (it is read only to compute its own new value)")
                                   : std::string();
  };

  for (const auto& name : u.order) {
    if (u.read.count(name) || u.exempt.count(name) || params.count(name) ||
        intentionally_unused(name) || is_frontend_name(name))
      continue;
    // The first assignment where the name was a choice: a leaf of a pattern
    // of several, beside a leaf that is read, is a name the language needs
    // (`key, k = split(key)` when only k is used).
    const Uses::Site* site = nullptr;
    for (const auto& s : u.assigned[name]) {
      bool sibling_read = false;
      for (const auto& o : s.siblings) sibling_read |= u.read.count(o) != 0;
      if (!sibling_read) {
        site = &s;
        break;
      }
    }
    if (!site) continue;
    Diagnostic d;
    d.severity = Severity::Warning;
    d.loc = site->loc;
    d.message =
        "variable '" + name + "' is assigned but never used" + only_itself(name) + advice(name);
    out.push_back({"", std::move(d)});
  }

  for (const auto& p : h.params) {
    const std::string& name = p.name.name;
    if (u.read.count(name) || intentionally_unused(name)) continue;
    Diagnostic d;
    d.severity = Severity::Warning;
    d.loc = p.name.loc;
    d.message = "parameter '" + name + "' of the entry function '" + h.name.name +
                "' is never used" + only_itself(name) + advice(name);
    out.push_back({h.name.name, std::move(d)});
  }
}

}  // namespace

void unused_variables(const File& f, std::vector<ModuleWarning>& out) {
  for (const auto& item : f.items)
    if (item.kind == Item::Kind::Func) check_function(item.func, out);
}

}  // namespace ab::syntax
