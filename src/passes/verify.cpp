#include "passes/verify.h"

#include <map>
#include <set>
#include <unordered_map>

#include "parse/shipped.h"
#include "parse/syntax.h"
#include "support/strings.h"

namespace ab {
namespace {

// Stan's `target += ...` read as this language's `x += e` on a variable
// never set: what to write instead.
std::string stan_target(const std::string& n) {
  if (n != "target") return "";
  return " (Stan's 'target +=' has no counterpart here: a model's log density is its function's "
         "result; set 'lp = 0.0', add each term with 'lp += ...', and return lp)";
}

// Dotted names belong to lowered programs, except the front end's own
// temporaries and labels (`t.3`, parse/syntax.h).
bool dotted(const std::string& s) {
  return s.find('.') != std::string::npos && !syntax::is_frontend_name(s);
}

std::string where(const SourceLoc& l) { return "line " + std::to_string(local_line(l.line)); }

// The shipped module (lib/) that defines function `name`, or "".
std::string shipped_module_of(const std::string& name) {
  for (const std::string& mod : shipped_module_names()) {
    const std::string_view text = *shipped_module(mod);
    for (const char* kw : {"\nfunc ", "\ninline func "}) {
      const std::string head = kw + name + "(";
      if (text.find(head) != std::string_view::npos) return mod;
    }
  }
  return "";
}

// What to write instead of a name other languages use ("" if none).
std::string foreign_call_advice(const std::string& name) {
  if (name == "len" || name == "length" || name == "numel" || name == "num_elements")
    return "'" + name + "' is not an operation here: size(x) is the number of elements of x " +
           "(all of them: for x: f64[R, C], size(x) is R * C and size(x[0]) is C)";
  if (name == "rows" || name == "cols" || name == "nrow" || name == "ncol" || name == "dims" ||
      name == "shape")
    return "'" + name + "' is not an operation here: a tensor's dimensions are in its type " +
           "(f64[R, C]), fixed for every thread; size(x) counts its elements, size(x[0]) a row's";
  return "";
}

// Checks a primitive's name, arity and attributes.
void check_prim(const Instr& in, Diagnostics& d) {
  const PrimInfo* info = find_prim(in.callee.name);
  if (!info) {
    if (std::string mod = shipped_module_of(in.callee.name); !mod.empty()) {
      d.error(in.callee.loc, "'" + in.callee.name + "' is in the shipped library: add `import " +
                                 mod + "` at the top of the file");
      return;
    }
    if (std::string advice = foreign_call_advice(in.callee.name); !advice.empty()) {
      d.error(in.callee.loc, advice);
      return;
    }
    d.error(in.callee.loc, "unknown operation '" + in.callee.name + "'" +
                               did_you_mean(in.callee.name, prim_names()) +
                               "; `autobatch ops` lists them");
    return;
  }
  int n = static_cast<int>(in.args.size());
  if (n < info->min_args || (info->max_args >= 0 && n > info->max_args)) {
    std::string want = info->min_args == info->max_args ? std::to_string(info->min_args)
                       : info->max_args < 0 ? "at least " + std::to_string(info->min_args)
                                            : std::to_string(info->min_args) + " to " +
                                                  std::to_string(info->max_args);
    d.error(in.callee.loc, "'" + in.callee.name + "' takes " + want + " argument" +
                               (want == "1" ? "" : "s") + ", but " + std::to_string(n) +
                               (n == 1 ? " was" : " were") + " given");
  }
  auto specs = info->attr_specs();
  std::vector<std::string> keys;
  for (const auto& s : specs) keys.push_back(s.key);
  std::set<std::string> seen;
  for (const auto& a : in.attrs) {
    if (!seen.insert(a.key).second) d.error(a.loc, "attribute '" + a.key + "' is given twice");
    const AttrSpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.key == a.key) spec = &s;
    if (!spec) {
      std::string msg = "'" + in.callee.name + "' has no attribute '" + a.key + "'";
      std::string dym = did_you_mean(a.key, keys);
      if (!dym.empty())
        msg += dym;
      else if (keys.empty())
        msg += " (it takes none)";
      else
        msg += " (it takes: " + join(keys, ", ") + ")";
      d.error(a.loc, msg);
      continue;
    }
    // Value kinds: dtype for `dtype`, a non-negative integer list for
    // `shape`, an integer for `axis` and `n`.
    if (a.key == "dtype") {
      if (!a.is_dtype)
        d.error(a.loc, "attribute 'dtype' must be a dtype: bool, i32, i64, f32 or f64");
    } else if (a.is_dtype) {
      d.error(a.loc, "attribute '" + a.key + "' must be a literal, not a dtype");
    } else if (a.key == "shape") {
      bool ok = a.lit.is_tensor && a.lit.shape.size() == 1 && a.lit.kind == Scalar::Kind::Int;
      if (a.lit.is_tensor && a.lit.elems.empty() && a.lit.shape.size() == 1) ok = true;
      for (const auto& e : a.lit.elems) ok = ok && e.kind == Scalar::Kind::Int && e.i >= 0;
      if (!ok)
        d.error(a.loc,
                "attribute 'shape' must be a list of non-negative integers, such as [3] or [2,2] "
                "(or [] for a scalar)");
    } else if (a.lit.is_tensor || a.lit.kind != Scalar::Kind::Int) {
      d.error(a.loc, "attribute '" + a.key + "' must be an integer");
    } else if (a.key == "n" && a.lit.elems[0].i < 0) {
      d.error(a.loc, "attribute 'n' must not be negative");
    }
  }
  for (const auto& s : specs)
    if (s.required && !seen.count(s.key))
      d.error(in.callee.loc, "'" + in.callee.name + "' needs the attribute '" + s.key + "=...'");
}

void check_pattern_names(const Pattern& p, Diagnostics& d, bool lowered) {
  std::vector<const Pattern*> leaves;
  p.names(leaves);
  std::set<std::string> seen;
  for (const Pattern* l : leaves) {
    if (!seen.insert(l->name).second)
      d.error(l->loc, "'" + l->name + "' is bound twice in one pattern");
    if (!lowered && l->in_place)
      d.error(l->loc, "in-place update '" + l->name + "!' only appears in lowered programs");
    if (!lowered && dotted(l->name))
      d.error(l->loc, "'" + l->name + "': names with '.' only appear in lowered programs");
  }
}

// ---- functions -----------------------------------------------------------

class FunctionVerifier {
 public:
  FunctionVerifier(const Module& m, const Function& f, Diagnostics& d) : m_(m), f_(f), d_(d) {}

  void run() {
    if (dotted(f_.name.name))
      d_.error(f_.name.loc, "function name '" + f_.name.name +
                                "' contains '.', which only lowered programs use");
    std::set<std::string> params;
    for (const auto& p : f_.params) {
      if (!params.insert(p.name.name).second)
        d_.error(p.name.loc,
                 "parameter '" + p.name.name + "' is declared twice in '" + f_.name.name + "'");
      if (dotted(p.name.name))
        d_.error(p.name.loc,
                 "'" + p.name.name + "': names with '.' only appear in lowered programs");
    }
    std::set<std::string> result_names;
    for (const auto& r : f_.result_names)
      if (!r.empty() && !result_names.insert(r).second)
        d_.error(f_.results_loc, "result name '" + r + "' is given twice in '" + f_.name.name + "'");
    std::map<std::string, const Block*>& labels = labels_;
    for (const auto& b : f_.blocks) {
      if (dotted(b.label.name))
        d_.error(b.label.loc,
                 "label '" + b.label.name + "' contains '.', which only lowered programs use");
      auto [it, fresh] = labels.emplace(b.label.name, &b);
      if (!fresh)
        d_.error(b.label.loc, "label '" + b.label.name + "' is defined twice in '" + f_.name.name +
                                  "' (first at " + where(it->second->label.loc) + ")");
      label_names_.push_back(b.label.name);
    }
    for (const auto& b : f_.blocks) {
      for (const auto& in : b.instrs) instr(in);
      terminator(b.term);
    }
    definedness();
  }

 private:
  const Module& m_;
  const Function& f_;
  Diagnostics& d_;
  std::vector<std::string> label_names_;
  std::map<std::string, const Block*> labels_;  // by label: lookups stay O(log n)
  std::optional<size_t> first_return_count_;
  SourceLoc first_return_loc_;

  void label(const NameRef& l) {
    if (!labels_.count(l.name))
      d_.error(l.loc, "unknown label '" + l.name + "'" + did_you_mean(l.name, label_names_));
  }

  void instr(const Instr& in) {
    switch (in.kind) {
      case InstrKind::Pop:
        d_.error(in.loc, "'pop' only appears in lowered programs");
        return;
      case InstrKind::Prim:
        check_prim(in, d_);
        break;
      case InstrKind::Call:
        call(in);
        break;
      case InstrKind::Copy:
        break;
    }
    check_pattern_names(in.out, d_, false);
  }

  void call(const Instr& in) {
    const Function* callee = m_.find_func(in.callee.name);
    if (!callee) {
      std::vector<std::string> names;
      for (const auto& f : m_.funcs) names.push_back(f.name.name);
      d_.error(in.callee.loc,
               "unknown function '" + in.callee.name + "'" + did_you_mean(in.callee.name, names));
      return;
    }
    if (!in.attrs.empty())
      d_.error(in.attrs.front().loc, "'" + in.callee.name +
                                         "' is a function of the module; only primitives "
                                         "take key=value attributes");
    if (in.args.size() != callee->params.size())
      d_.error(in.callee.loc, "'" + callee->name.name + "' takes " +
                                  std::to_string(callee->params.size()) + " argument" +
                                  (callee->params.size() == 1 ? "" : "s") + ", but " +
                                  std::to_string(in.args.size()) +
                                  (in.args.size() == 1 ? " was" : " were") + " given");
    std::optional<size_t> k = result_count(*callee);
    if (!k) return;
    if (in.grad) {
      if (*k != 1)
        d_.error(in.callee.loc, "value_and_grad needs '" + callee->name.name +
                                    "' to return one f64 scalar, but it returns " +
                                    std::to_string(*k) + " values");
      if (in.args.empty())
        d_.error(in.callee.loc, "value_and_grad needs an argument to differentiate with respect "
                                "to: '" + callee->name.name + "' takes none");
      k = 2;  // the value and the gradient
    }
    bool discarded = in.out.is_tuple && in.out.elems.empty();
    if (discarded) return;
    if (*k == 0) {
      d_.error(in.out.loc, "'" + callee->name.name +
                               "' returns no values, so its call cannot be assigned; write 'call " +
                               callee->name.name + "(...)' alone");
    } else if (*k >= 2 && in.out.is_tuple && in.out.elems.size() != *k) {
      d_.error(in.out.loc, "the pattern binds " + std::to_string(in.out.elems.size()) +
                               " values, but '" + callee->name.name + "' returns " +
                               std::to_string(*k));
    }
  }

  void terminator(const Terminator& t) {
    switch (t.kind) {
      case TermKind::Branch:
        label(t.target);
        label(t.target2);
        break;
      case TermKind::Goto:
        label(t.target);
        break;
      case TermKind::Return:
        if (f_.results_declared && t.values.size() != f_.results.size()) {
          d_.error(t.loc, "'" + f_.name.name + "' declares " + std::to_string(f_.results.size()) +
                              " result" + (f_.results.size() == 1 ? "" : "s") +
                              " but this return gives " + std::to_string(t.values.size()));
        } else if (!f_.results_declared) {
          if (!first_return_count_) {
            first_return_count_ = t.values.size();
            first_return_loc_ = t.loc;
          } else if (*first_return_count_ != t.values.size()) {
            d_.error(t.loc, "this return gives " + std::to_string(t.values.size()) + " value" +
                                (t.values.size() == 1 ? "" : "s") + " but the return at " +
                                where(first_return_loc_) + " gives " +
                                std::to_string(*first_return_count_));
          }
        }
        break;
      case TermKind::PushGoto:
      case TermKind::IndirectGoto:
      case TermKind::Halt:  // term_lowered_only
        d_.error(t.loc, std::string("'") + term_keyword(t.kind) +
                            "' only appears in lowered programs; functions end with 'return'");
        break;
    }
  }

  // ---- definedness: a forward "must be defined" dataflow ----
  void definedness() {
    std::unordered_map<std::string, size_t> index;
    std::vector<std::string> names;
    auto id = [&](const std::string& n) {
      auto [it, fresh] = index.emplace(n, names.size());
      if (fresh) names.push_back(n);
      return it->second;
    };
    for (const auto& p : f_.params) id(p.name.name);
    std::vector<std::vector<const Pattern*>> defs(f_.blocks.size());
    for (size_t bi = 0; bi < f_.blocks.size(); ++bi)
      for (const auto& in : f_.blocks[bi].instrs) {
        std::vector<const Pattern*> leaves;
        in.out.names(leaves);
        for (const Pattern* l : leaves) id(l->name);
      }
    size_t nv = names.size(), nb = f_.blocks.size();
    if (nb == 0) return;
    std::map<std::string, size_t> block_index;
    for (size_t bi = 0; bi < nb; ++bi) block_index.emplace(f_.blocks[bi].label.name, bi);
    auto succs = [&](size_t bi) {
      std::vector<size_t> out;
      const Terminator& t = f_.blocks[bi].term;
      auto add = [&](const NameRef& l) {
        auto it = block_index.find(l.name);
        if (it != block_index.end()) out.push_back(it->second);
      };
      if (t.kind == TermKind::Branch) add(t.target), add(t.target2);
      if (t.kind == TermKind::Goto) add(t.target);
      return out;
    };
    // Reachability from the entry; unreachable blocks are not checked.
    std::vector<char> reach(nb, 0);
    std::vector<size_t> work{0};
    reach[0] = 1;
    while (!work.empty()) {
      size_t b = work.back();
      work.pop_back();
      for (size_t s : succs(b))
        if (!reach[s]) reach[s] = 1, work.push_back(s);
    }
    std::vector<std::vector<size_t>> preds(nb);
    for (size_t b = 0; b < nb; ++b)
      if (reach[b])
        for (size_t s : succs(b)) preds[s].push_back(b);
    // Calls `visit(name, loc, defined_here)` for each read of block b in
    // order, defined_here telling whether b itself wrote the name before.
    std::vector<size_t> written_in(nv, 0);  // the visit that last saw a write
    size_t visit_no = 0;
    auto reads_of = [&](size_t b, auto&& visit) {
      const size_t me = ++visit_no;
      struct Here {
        std::vector<size_t>& w;
        size_t me;
        bool operator[](size_t v) const { return w[v] == me; }
      } here{written_in, me};
      for (const auto& ins : f_.blocks[b].instrs) {
        for (const auto& a : ins.args)
          if (a.is_var) {
            auto it = index.find(a.name);
            visit(a.name, a.loc, it != index.end() && here[it->second]);
          }
        std::vector<const Pattern*> leaves;
        ins.out.names(leaves);
        for (const Pattern* l : leaves) written_in[index[l->name]] = me;
      }
      const Terminator& t = f_.blocks[b].term;
      auto term_read = [&](const NameRef& n) {
        auto it = index.find(n.name);
        visit(n.name, n.loc, it != index.end() && here[it->second]);
      };
      if (t.kind == TermKind::Branch) term_read(t.cond);
      for (const auto& v : t.values)
        if (v.is_var) term_read(NameRef{v.name, v.loc});
    };
    // Only a variable read before its block writes it needs the dataflow;
    // the others (temporaries, mostly) are checked within their block. So
    // the bit sets stay small however long the function is.
    std::vector<int> tracked(nv, -1);
    size_t nt = 0;
    for (size_t b = 0; b < nb; ++b)
      if (reach[b])
        reads_of(b, [&](const std::string& n, const SourceLoc&, bool here) {
          auto it = index.find(n);
          if (!here && it != index.end() && tracked[it->second] < 0)
            tracked[it->second] = static_cast<int>(nt++);
        });
    std::vector<std::vector<size_t>> gen(nb);
    for (size_t b = 0; b < nb; ++b)
      for (const auto& ins : f_.blocks[b].instrs) {
        std::vector<const Pattern*> leaves;
        ins.out.names(leaves);
        for (const Pattern* l : leaves)
          if (int t = tracked[index[l->name]]; t >= 0) gen[b].push_back(static_cast<size_t>(t));
      }
    // in[b] = (params, for the entry) ∩ out[p] over reachable predecessors;
    // out starts at "everything" and shrinks to the greatest fixpoint.
    using Bits = std::vector<char>;
    Bits params(nt, 0), all(nt, 1);
    for (const auto& p : f_.params)
      if (int t = tracked[index[p.name.name]]; t >= 0) params[static_cast<size_t>(t)] = 1;
    std::vector<Bits> in(nb, all), out(nb, all);
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t b = 0; b < nb; ++b) {
        if (!reach[b]) continue;
        Bits i = b == 0 ? params : all;
        for (size_t p : preds[b])
          for (size_t v = 0; v < nt; ++v) i[v] = i[v] && out[p][v];
        Bits o = i;
        for (size_t t : gen[b]) o[t] = 1;
        in[b] = std::move(i);
        if (o != out[b]) out[b] = std::move(o), changed = true;
      }
    }
    // Report the first bad read of each variable.
    std::set<std::string> reported;
    for (size_t b = 0; b < nb; ++b) {
      if (!reach[b]) continue;
      reads_of(b, [&](const std::string& n, const SourceLoc& loc, bool here) {
        if (here || reported.count(n)) return;
        auto it = index.find(n);
        if (it == index.end()) {
          reported.insert(n);
          d_.error(loc, "unknown variable '" + n + "'" + did_you_mean(n, names) + stan_target(n));
        } else if (!in[b][static_cast<size_t>(tracked[it->second])]) {
          reported.insert(n);
          d_.error(loc, "variable '" + n + "' is not defined on every path to this use" +
                            stan_target(n));
        }
      });
    }
  }
};

// ---- lowered programs -------------------------------------------------------

void verify_program(const Program& p, Diagnostics& d) {
  std::map<std::string, const VarDecl*> vars;
  std::vector<std::string> var_names;
  for (const auto& v : p.vars) {
    auto [it, fresh] = vars.emplace(v.name.name, &v);
    if (!fresh)
      d.error(v.name.loc, "variable '" + v.name.name + "' is declared twice (first at " +
                              where(it->second->loc) + ")");
    var_names.push_back(v.name.name);
  }
  auto use = [&](const std::string& n, const SourceLoc& loc) {
    if (!vars.count(n))
      d.error(loc, "undeclared variable '" + n + "'" + did_you_mean(n, var_names) +
                       "; lowered programs declare every variable with 'var'");
  };
  for (const auto& v : p.inputs) use(v.name, v.loc);
  for (const auto& v : p.outputs) use(v.name, v.loc);
  std::set<std::string> output_names;
  for (size_t i = 0; i < p.output_names.size() && i < p.outputs.size(); ++i)
    if (!p.output_names[i].empty() && !output_names.insert(p.output_names[i]).second)
      d.error(p.outputs[i].loc, "output name '" + p.output_names[i] + "' is given twice");
  std::map<std::string, const Block*> labels;
  std::vector<std::string> label_names;
  for (const auto& b : p.blocks) {
    auto [it, fresh] = labels.emplace(b.label.name, &b);
    if (!fresh)
      d.error(b.label.loc, "label '" + b.label.name + "' is defined twice (first at " +
                               where(it->second->label.loc) + ")");
    label_names.push_back(b.label.name);
  }
  auto label = [&](const NameRef& l) {
    if (!labels.count(l.name))
      d.error(l.loc, "unknown label '" + l.name + "'" + did_you_mean(l.name, label_names));
  };
  for (const auto& b : p.blocks) {
    for (const auto& in : b.instrs) {
      switch (in.kind) {
        case InstrKind::Pop:
          for (const auto& n : in.popped) use(n.name, n.loc);
          continue;
        case InstrKind::Call:
          d.error(in.loc, "'call' does not appear in lowered programs; they call with push_goto");
          continue;
        case InstrKind::Prim:
          check_prim(in, d);
          break;
        case InstrKind::Copy:
          break;
      }
      for (const auto& a : in.args)
        if (a.is_var) use(a.name, a.loc);
      check_pattern_names(in.out, d, true);
      std::vector<const Pattern*> leaves;
      in.out.names(leaves);
      for (const Pattern* l : leaves) use(l->name, l->loc);
    }
    const Terminator& t = b.term;
    switch (t.kind) {
      case TermKind::Branch:
        use(t.cond.name, t.cond.loc);
        label(t.target);
        label(t.target2);
        break;
      case TermKind::Goto:
        label(t.target);
        break;
      case TermKind::PushGoto:
        label(t.target);
        label(t.target2);
        break;
      case TermKind::Return:
        d.error(t.loc,
                "'return' does not appear in lowered programs; they return with indirect_goto");
        break;
      case TermKind::IndirectGoto:
      case TermKind::Halt:
        break;
    }
  }
}

}  // namespace

std::optional<size_t> result_count(const Function& f) {
  if (f.results_declared) return f.results.size();
  std::optional<size_t> k;
  bool any_return = false;
  for (const auto& b : f.blocks) {
    if (b.term.kind != TermKind::Return) continue;
    any_return = true;
    if (k && *k != b.term.values.size()) return std::nullopt;
    k = b.term.values.size();
  }
  if (!any_return) return 0;  // a function with no return has no results
  return k;
}

void verify(const Module& m, Diagnostics& diags) {
  if (m.program) {
    verify_program(*m.program, diags);
    return;
  }
  if (m.funcs.empty()) {
    // Every command needs an entry; an empty (or all-comment) file has none.
    diags.error({}, "the program defines no function (it needs at least one 'func')");
    return;
  }
  std::map<std::string, const Function*> seen;
  for (const auto& f : m.funcs) {
    auto [it, fresh] = seen.emplace(f.name.name, &f);
    if (!fresh) {
      // With imports the first may be in another file: name it.
      const SourceLoc first = it->second->name.loc;
      const bool elsewhere = file_index(first.line) != file_index(f.name.loc.line);
      const std::string at = m.source && elsewhere ? m.source->where(first.line) : where(first);
      diags.error(f.name.loc,
                  "function '" + f.name.name + "' is defined twice (first at " + at + ")");
    }
  }
  const Function* marked = nullptr;
  for (const auto& f : m.funcs) {
    if (!f.is_entry) continue;
    if (marked)
      diags.error(f.loc, "'" + f.name.name + "' is marked 'entry', but so is '" +
                             marked->name.name + "' (at " + where(marked->loc) +
                             "); a module has one entry");
    else
      marked = &f;
  }
  for (const auto& f : m.funcs) FunctionVerifier(m, f, diags).run();
}

}  // namespace ab
