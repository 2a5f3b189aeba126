#include "passes/infer_types.h"

#include <cmath>
#include <functional>
#include <set>

#include "parse/syntax.h"
#include "passes/verify.h"
#include "support/strings.h"

namespace ab {

const Function* find_entry(const Module& m, const std::string& name, Diagnostics& diags) {
  std::vector<std::string> names;
  for (const auto& f : m.funcs) names.push_back(f.name.name);
  if (!name.empty()) {
    if (const Function* f = m.find_func(name)) return f;
    diags.error({}, "no function '" + name + "' to use as the entry" + did_you_mean(name, names) +
                        "; functions: " + join(names, ", "));
    return nullptr;
  }
  if (const Function* f = m.find_func("main")) return f;
  if (m.funcs.size() == 1) return &m.funcs[0];
  diags.error({}, "which function is the entry? name it with --entry (functions: " +
                      join(names, ", ") + ")");
  return nullptr;
}

namespace {

enum class Strength : uint8_t { Weak, Strong };

// One point of the lattice. A weak leaf stores its default dtype: i64 for an
// integer literal, f64 for a float literal, bool for a boolean literal.
struct IType {
  enum class State : uint8_t { Unknown, Known, Error };
  State state = State::Unknown;
  bool is_tuple = false;
  DType dtype = DType::I64;
  Strength strength = Strength::Weak;
  Shape shape;
  std::vector<IType> elems;
  bool tainted = false;  // follows from a reported conflict: further conflicts stay quiet
  bool known() const { return state == State::Known; }
  bool is_leaf() const { return known() && !is_tuple; }
  bool operator==(const IType&) const = default;
};

IType leaf(DType d, Strength s, Shape shape = {}) {
  IType t;
  t.state = IType::State::Known;
  t.dtype = d;
  t.strength = s;
  t.shape = std::move(shape);
  return t;
}

IType from_type(const Type& t, Strength s) {
  if (!t.is_tuple) return leaf(t.tensor.dtype, s, t.tensor.shape);
  IType out;
  out.state = IType::State::Known;
  out.is_tuple = true;
  for (const auto& e : t.elems) out.elems.push_back(from_type(e, s));
  return out;
}

IType from_literal(const Literal& lit) {
  DType d = lit.kind == Scalar::Kind::Bool    ? DType::Bool
            : lit.kind == Scalar::Kind::Float ? DType::F64
                                              : DType::I64;
  return leaf(d, Strength::Weak, lit.is_tensor ? lit.shape : Shape{});
}

// Elements of one thread's value of this type, or -1 if absurdly many (an
// overflow-safe product of the dimensions).
constexpr int64_t kMaxElements = int64_t{1} << 28;

bool too_large(const IType& t) {
  if (!t.known()) return false;
  if (t.is_tuple) {
    for (const auto& e : t.elems)
      if (too_large(e)) return true;
    return false;
  }
  int64_t n = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return true;
    if (d != 0 && n > kMaxElements / d) return true;
    n *= d;
  }
  return n > kMaxElements;
}

bool complete(const IType& t) {
  if (!t.known()) return false;
  for (const auto& e : t.elems)
    if (!complete(e)) return false;
  return true;
}

Type to_type(const IType& t) {
  if (!t.is_tuple) return Type::tensor_of(t.dtype, t.shape);
  std::vector<Type> elems;
  for (const auto& e : t.elems) elems.push_back(to_type(e));
  return Type::tuple(std::move(elems));
}

std::string describe(const IType& t) {
  if (t.state == IType::State::Unknown) return "unknown";
  if (t.state == IType::State::Error) return "invalid";
  if (t.is_tuple) {
    std::string out = "(";
    for (size_t i = 0; i < t.elems.size(); ++i) out += (i ? ", " : "") + describe(t.elems[i]);
    return out + ")";
  }
  std::string shape = shape_str(t.shape);
  if (t.strength == Strength::Weak) {
    const char* kind = t.dtype == DType::Bool  ? "bool"
                       : t.dtype == DType::F64 ? "float"
                                               : "integer";
    return std::string(kind) + " literal" + (shape.empty() ? "" : " " + shape);
  }
  return dtype_name(t.dtype) + shape;
}

// May a weak leaf of default dtype `w` become the strong dtype `s`?
bool weak_fits(DType w, DType s) {
  if (w == DType::Bool) return s == DType::Bool;
  if (w == DType::F64) return is_float(s);
  return s != DType::Bool;
}

bool join_dtype(DType& ad, Strength& as, DType bd, Strength bs) {
  if (as == Strength::Strong && bs == Strength::Strong) return ad == bd;
  if (as == Strength::Strong) return weak_fits(bd, ad);
  if (bs == Strength::Strong) {
    if (!weak_fits(ad, bd)) return false;
    ad = bd;
    as = Strength::Strong;
    return true;
  }
  if ((ad == DType::Bool) != (bd == DType::Bool)) return false;
  if (bd == DType::F64) ad = DType::F64;  // an integer literal can be a float
  return true;
}

bool any_taint(const IType& t) {
  if (t.tainted) return true;
  for (const auto& e : t.elems)
    if (any_taint(e)) return true;
  return false;
}

// a := a ⊔ b; false on a conflict (a is then unspecified).
bool join(IType& a, const IType& b) {
  a.tainted = a.tainted || b.tainted;
  if (b.state == IType::State::Unknown || a.state == IType::State::Error) return true;
  if (b.state == IType::State::Error) {
    a = b;
    return true;
  }
  if (a.state == IType::State::Unknown) {
    a = b;
    return true;
  }
  if (a.is_tuple != b.is_tuple) return false;
  if (a.is_tuple) {
    if (a.elems.size() != b.elems.size()) return false;
    for (size_t i = 0; i < a.elems.size(); ++i)
      if (!join(a.elems[i], b.elems[i])) return false;
    return true;
  }
  if (a.shape != b.shape) return false;
  return join_dtype(a.dtype, a.strength, b.dtype, b.strength);
}

// A place types are read from and written to: a node, or a tuple of places
// (a tuple pattern, or the results of a call).
struct Slot {
  int node = -1;
  bool is_tuple = false;
  std::vector<Slot> elems;
};

// Which operands of a primitive must share a dtype, and with what.
struct Group {
  std::vector<int> operands;
  bool with_dest = false;  // the result's dtype is the group's
  std::optional<std::pair<DType, Strength>> extra;
  const char* needs = nullptr;  // what `extra` means, for messages
};

// ops.def's Dtypes column of the primitive, as groups (nargs: the operands
// of this use, for the groups over every operand).
std::vector<Group> groups_of(PrimId op, size_t nargs) {
  const auto weak_float = std::make_pair(DType::F64, Strength::Weak);
  const auto weak_int = std::make_pair(DType::I64, Strength::Weak);
  const auto strong_bool = std::make_pair(DType::Bool, Strength::Strong);
  const auto strong_i64 = std::make_pair(DType::I64, Strength::Strong);
  switch (prim_info(op).dtypes) {
    case DtypeGroups::SameDest01:
      return {{{0, 1}, true, std::nullopt, nullptr}};
    case DtypeGroups::SameDest0:
      return {{{0}, true, std::nullopt, nullptr}};
    case DtypeGroups::FloatDest0:
      return {{{0}, true, weak_float, "a float operand"}};
    case DtypeGroups::Float0:
      return {{{0}, false, weak_float, "a float operand"}};
    case DtypeGroups::Same01:
      return {{{0, 1}, false, std::nullopt, nullptr}};
    case DtypeGroups::Bool01:
      return {{{0, 1}, false, strong_bool, "bool operands"}};
    case DtypeGroups::Bool0:
      return {{{0}, false, strong_bool, "a bool operand"}};
    case DtypeGroups::AllDest: {
      Group g{{}, true, std::nullopt, nullptr};
      for (size_t i = 0; i < nargs; ++i) g.operands.push_back(static_cast<int>(i));
      return {g};
    }
    case DtypeGroups::Select:
      return {{{0}, false, strong_bool, "a bool condition"}, {{1, 2}, true, std::nullopt, nullptr}};
    case DtypeGroups::Get:
      return {{{0}, true, std::nullopt, nullptr}, {{1}, false, weak_int, "an integer index"}};
    case DtypeGroups::Set:
      return {{{0, 2}, true, std::nullopt, nullptr}, {{1}, false, weak_int, "an integer index"}};
    case DtypeGroups::Key0:
      return {{{0}, false, strong_i64, "an i64 key"}};
    case DtypeGroups::KeyFloat1:
      return {{{0}, false, strong_i64, "an i64 key"}, {{1}, false, weak_float, "a float operand"}};
    case DtypeGroups::KeyFloatDest1:
      return {{{0}, false, strong_i64, "an i64 key"}, {{1}, true, weak_float, "a float operand"}};
    case DtypeGroups::KeyInt1:
      return {{{0}, false, strong_i64, "an i64 key"}, {{1}, false, weak_int, "an integer"}};
    case DtypeGroups::FloatDest01:
      return {{{0, 1}, true, weak_float, "float operands"}};
    case DtypeGroups::None:
      return {};
  }
  return {};
}

class Inference {
 public:
  Inference(const Module& m, Diagnostics& d) : m_(m), d_(d) {}

  TypeInfo run(const Function& entry, const std::vector<std::optional<Type>>& entry_params) {
    build_nodes();
    size_t ei = index_of(entry);
    bool entry_known = true;
    for (size_t i = 0; i < entry.params.size(); ++i) {
      int node = var_node(ei, entry.params[i].name.name);
      if (i < entry_params.size() && entry_params[i]) {
        IType t = from_type(*entry_params[i], Strength::Strong);
        IType j = nodes_[node];
        if (!join(j, t)) {
          d_.error(entry.params[i].name.loc, "parameter '" + entry.params[i].name.name +
                                                 "' is declared " + describe(nodes_[node]) +
                                                 " but the input is " + describe(t));
          j.state = IType::State::Error;
        }
        nodes_[node] = j;
        origin_[node] = "by the inputs";
      } else if (!entry.params[i].type) {
        entry_known = false;
      }
    }
    // Iterate to the fixpoint, then once more to report what the final
    // types make wrong.
    size_t limit = 64 + 8 * nodes_.size();
    for (size_t iter = 0; iter < limit; ++iter) {
      changed_ = false;
      sweep();
      if (!changed_) break;
    }
    reporting_ = true;
    sweep();
    for (const auto& report : pending_) report();
    for (size_t fi = 0; fi < m_.funcs.size(); ++fi)
      for (const auto& p : m_.funcs[fi].params)
        if (too_large(nodes_[var_node(fi, p.name.name)]))
          error(p.name.loc, "parameter '" + p.name.name +
                                "' has a type larger than the limit of 2^28 elements per thread");
    std::vector<std::string> reachable = reachable_from(entry);
    check_literals();
    if (entry_known) report_unknown(reachable);
    return collect(reachable);
  }

 private:
  const Module& m_;
  Diagnostics& d_;
  std::vector<IType> nodes_;
  std::vector<std::string> origin_;               // how each node first got a type
  std::vector<SourceLoc> origin_loc_;             // the instruction that gave it, if one did
  std::vector<std::function<void()>> pending_;    // conflicts to report after the fixpoint
  std::vector<std::map<std::string, int>> vars_;  // [func] name -> node
  std::vector<std::vector<int>> results_;         // [func][slot] -> node
  std::vector<std::vector<std::vector<std::vector<int>>>> operands_;  // [f][b][i][arg]
  std::vector<std::vector<std::vector<int>>> returns_;                // [f][b][value]
  std::vector<std::pair<const Literal*, int>> literals_;              // literal -> node
  std::vector<SourceLoc> literal_locs_;
  bool changed_ = false;
  bool reporting_ = false;
  std::set<std::string> said_;

  size_t index_of(const Function& f) const { return static_cast<size_t>(&f - m_.funcs.data()); }
  int var_node(size_t f, const std::string& name) const { return vars_[f].at(name); }

  int new_node(IType t = {}) {
    nodes_.push_back(std::move(t));
    origin_.emplace_back();
    origin_loc_.emplace_back();
    return static_cast<int>(nodes_.size()) - 1;
  }

  void error(const SourceLoc& loc, const std::string& msg) {
    std::string key = std::to_string(loc.line) + ":" + std::to_string(loc.col) + msg;
    if (said_.insert(key).second) d_.error(loc, msg);
  }

  void build_nodes() {
    size_t nf = m_.funcs.size();
    vars_.resize(nf);
    results_.resize(nf);
    operands_.resize(nf);
    returns_.resize(nf);
    for (size_t fi = 0; fi < nf; ++fi) {
      const Function& f = m_.funcs[fi];
      auto var = [&](const std::string& n) {
        auto it = vars_[fi].find(n);
        if (it != vars_[fi].end()) return it->second;
        int id = new_node();
        vars_[fi].emplace(n, id);
        return id;
      };
      for (const auto& p : f.params) {
        int id = var(p.name.name);
        if (p.type) {
          nodes_[id] = from_type(*p.type, Strength::Strong);
          origin_[id] = "by its annotation";
        }
      }
      size_t k = result_count(f).value_or(0);
      for (size_t r = 0; r < k; ++r) {
        int id = new_node();
        if (f.results_declared) {
          nodes_[id] = from_type(f.results[r], Strength::Strong);
          origin_[id] = "by the function's '->'";
        }
        results_[fi].push_back(id);
      }
      auto operand = [&](const Operand& o) {
        if (o.is_var) return var(o.name);
        int id = new_node(from_literal(o.lit));
        literals_.emplace_back(&o.lit, id);
        literal_locs_.push_back(o.loc);
        return id;
      };
      operands_[fi].resize(f.blocks.size());
      returns_[fi].resize(f.blocks.size());
      for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
        const Block& b = f.blocks[bi];
        for (const auto& in : b.instrs) {
          std::vector<int> ids;
          for (const auto& a : in.args) ids.push_back(operand(a));
          operands_[fi][bi].push_back(ids);
          std::vector<const Pattern*> leaves;
          in.out.names(leaves);
          for (const Pattern* l : leaves) var(l->name);
        }
        if (b.term.kind == TermKind::Branch) var(b.term.cond.name);
        for (const auto& v : b.term.values) returns_[fi][bi].push_back(operand(v));
      }
    }
  }

  // ---- reading and writing places ----
  IType read(const Slot& s) const {
    if (!s.is_tuple) return nodes_[s.node];
    IType t;
    t.state = IType::State::Known;
    t.is_tuple = true;
    for (const auto& e : s.elems) t.elems.push_back(read(e));
    return t;
  }

  void write(const Slot& s, const IType& t, const SourceLoc& loc) {
    if (!s.is_tuple) {
      if (t.state == IType::State::Unknown) return;
      IType before = nodes_[s.node];
      IType j = before;
      if (!join(j, t)) {
        j = before;
        j.tainted = true;
      }
      if (j != before) {
        nodes_[s.node] = j;
        changed_ = true;
        // Where its type came from: the first write, or the one that
        // changed what literals alone had made it (t = 0, then t = t + 1.0).
        bool retyped = before.is_leaf() && j.is_leaf() && before.strength == Strength::Weak &&
                       (j.dtype != before.dtype || j.strength != before.strength);
        if (origin_[s.node].empty() || (retyped && origin_loc_[s.node].known())) {
          origin_[s.node] = "at line " + std::to_string(loc.line);
          origin_loc_[s.node] = loc;
        }
      }
      return;
    }
    if (!t.known() || !t.is_tuple || t.elems.size() != s.elems.size()) {
      if (t.tainted)
        for (const auto& e : s.elems) taint(e);
      return;
    }
    for (size_t i = 0; i < s.elems.size(); ++i) write(s.elems[i], t.elems[i], loc);
  }

  void taint(const Slot& s) {
    if (s.is_tuple) {
      for (const auto& e : s.elems) taint(e);
    } else if (!nodes_[s.node].tainted) {
      nodes_[s.node].tainted = true;
      changed_ = true;
    }
  }

  // Both places get the join of their types; `what` explains a conflict.
  void equate(const Slot& a, const Slot& b, const SourceLoc& loc,
              const std::function<std::string(const IType&, const IType&)>& what) {
    IType ta = read(a), tb = read(b);
    IType j = ta;
    if (!join(j, tb)) {
      if (!any_taint(ta) && !any_taint(tb)) error(loc, what(ta, tb));
      taint(a);
      taint(b);
      return;
    }
    write(a, j, loc);
    write(b, j, loc);
  }

  // A computed value flows into a place (one way).
  void assign(const Slot& dest, const IType& value, const SourceLoc& loc,
              const std::function<std::string(const IType&, const IType&)>& what) {
    IType td = read(dest);
    IType j = td;
    if (!join(j, value)) {
      if (!any_taint(td) && !any_taint(value)) error(loc, what(td, value));
      taint(dest);
      return;
    }
    write(dest, j, loc);
  }

  Slot node_slot(int n) const { return Slot{n, false, {}}; }

  Slot pattern_slot(size_t fi, const Pattern& p) const {
    if (!p.is_tuple) return node_slot(var_node(fi, p.name));
    Slot s;
    s.is_tuple = true;
    for (const auto& e : p.elems) s.elems.push_back(pattern_slot(fi, e));
    return s;
  }

  Slot results_slot(size_t callee) const {
    const auto& r = results_[callee];
    if (r.size() == 1) return node_slot(r[0]);
    Slot s;
    s.is_tuple = true;
    for (int n : r) s.elems.push_back(node_slot(n));
    return s;
  }

  // ---- one pass over every constraint ----
  void sweep() {
    for (size_t fi = 0; fi < m_.funcs.size(); ++fi) {
      const Function& f = m_.funcs[fi];
      for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
        const Block& b = f.blocks[bi];
        for (size_t ii = 0; ii < b.instrs.size(); ++ii)
          instr(fi, b.instrs[ii], operands_[fi][bi][ii]);
        terminator(fi, b.term, returns_[fi][bi]);
      }
    }
  }

  // How a message names an operand: the variable, or for a temporary of the
  // front end the sub-expression it holds, as written.
  std::string var_or_value(const Operand& o) const {
    if (!o.is_var) return "a literal";
    if (syntax::is_frontend_name(o.name) && o.loc.known() && m_.source &&
        o.loc.line <= m_.source->line_count()) {
      std::string_view line = m_.source->line(o.loc.line);
      if (o.loc.col >= 1 && o.loc.col - 1 < line.size())
        return "'" + std::string(line.substr(o.loc.col - 1, o.loc.len)) + "'";
    }
    return "'" + o.name + "'";
  }

  // "'t' is f64 because of line 14: t = t + 1.0", for a variable whose dtype
  // an instruction fixed.
  void cause(int node, const Operand* o) {
    if (node < 0 || !o || !o->is_var || syntax::is_frontend_name(o->name)) return;
    const SourceLoc& at = origin_loc_[static_cast<size_t>(node)];
    if (!at.known() || !m_.source || at.line > m_.source->line_count()) return;
    std::string_view line = m_.source->line(at.line);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    const IType& t = nodes_[static_cast<size_t>(node)];
    std::string what = t.is_leaf() && t.strength == Strength::Weak
                           ? std::string(dtype_name(t.dtype)) + " (from a literal)"
                           : describe(t);
    std::string msg = "'" + o->name + "' is " + what + " because of line " +
                      std::to_string(at.line) + ": " + std::string(line);
    if (said_.insert("note " + msg).second) d_.note({}, msg);
  }

  // "; convert it with cast(n, dtype=f64)" for a variable; for bool, a comparison.
  static std::string convert_hint(const std::string& quoted, const IType& t, DType want) {
    if (t.strength == Strength::Weak || quoted.size() < 3 || quoted.front() != '\'') return "";
    std::string n = quoted.substr(1, quoted.size() - 2);
    if (want == DType::Bool) return "; compare it instead, e.g. ne(" + n + ", 0)";
    return "; convert it with cast(" + n + ", dtype=" + dtype_name(want) + ")";
  }

  void instr(size_t fi, const Instr& in, const std::vector<int>& ops) {
    const Function& f = m_.funcs[fi];
    switch (in.kind) {
      case InstrKind::Pop:
        return;
      case InstrKind::Copy: {
        Slot dest = pattern_slot(fi, in.out);
        equate(dest, node_slot(ops[0]), in.loc, [&](const IType& a, const IType& b) {
          return "cannot assign " + describe(b) + " to " + print_target(in.out) + " of type " +
                 describe(a) + " (a variable has one type in its whole function)";
        });
        return;
      }
      case InstrKind::Call: {
        const Function* callee = m_.find_func(in.callee.name);
        if (!callee) return;
        size_t ci = index_of(*callee);
        for (size_t i = 0; i < ops.size() && i < callee->params.size(); ++i) {
          int param = var_node(ci, callee->params[i].name.name);
          equate(node_slot(ops[i]), node_slot(param), in.args[i].loc,
                 [&](const IType& a, const IType& p) {
                   std::string from = origin_[param].empty() ? "" : " " + origin_[param];
                   return "argument " + std::to_string(i + 1) + " of '" + callee->name.name +
                          "' is " + describe(a) + " here, but parameter '" +
                          callee->params[i].name.name + "' is " + describe(p) + from +
                          "; a function has one type for each parameter";
                 });
        }
        bool discarded = in.out.is_tuple && in.out.elems.empty();
        if (!discarded && !results_[ci].empty()) {
          equate(pattern_slot(fi, in.out), results_slot(ci), in.loc,
                 [&](const IType& a, const IType& r) {
                   if (in.out.is_tuple && r.known() && !r.is_tuple)
                     return "'" + callee->name.name + "' returns one value (" + describe(r) +
                            "), but the pattern " + print_target(in.out) + " takes a tuple of " +
                            std::to_string(in.out.elems.size());
                   return "'" + callee->name.name + "' returns " + describe(r) +
                          ", which does not fit " + print_target(in.out) + " of type " +
                          describe(a);
                 });
        }
        return;
      }
      case InstrKind::Prim:
        prim(fi, in, ops);
        return;
    }
    (void)f;
  }

  static std::string print_target(const Pattern& p) {
    if (!p.is_tuple) return "'" + p.name + "'";
    std::string out = "(";
    for (size_t i = 0; i < p.elems.size(); ++i) out += (i ? ", " : "") + print_target(p.elems[i]);
    return out + ")";
  }

  void prim(size_t fi, const Instr& in, const std::vector<int>& ops) {
    const PrimInfo* info = find_prim(in.callee.name);
    if (!info) return;
    Slot dest = pattern_slot(fi, in.out);
    if (info->id == PrimId::Tuple) {
      Slot packed;
      packed.is_tuple = true;
      for (int n : ops) packed.elems.push_back(node_slot(n));
      equate(dest, packed, in.loc, [&](const IType& a, const IType& b) {
        return "cannot assign " + describe(b) + " to " + print_target(in.out) + " of type " +
               describe(a);
      });
      return;
    }
    Strength result_strength = Strength::Strong;
    bool follows = false;
    for (const Group& g : groups_of(info->id, in.args.size())) {
      std::optional<std::pair<DType, Strength>> acc = g.extra;
      bool conflict = false, quiet = false;
      std::string first_desc = g.extra ? std::string(g.needs) : "";
      std::string first_name;
      IType first_t;
      int first_node = -1;
      const Operand* first_op = nullptr;
      const IType dest_pre = read(dest);
      auto add = [&](const IType& t, const std::string& name, bool is_dest, int node = -1,
                     const Operand* op = nullptr) {
        if (!t.is_leaf() || conflict) return;
        std::string desc = is_dest ? "the result " + name : name;
        if (!acc) {
          acc = {t.dtype, t.strength};
          first_desc = desc + " (" + describe(t) + ")";
          first_name = name;
          first_t = t;
          first_node = node;
          first_op = op;
          return;
        }
        DType d = acc->first;
        Strength s = acc->second;
        if (join_dtype(d, s, t.dtype, t.strength)) {
          acc = {d, s};
          return;
        }
        conflict = true;
        quiet = quiet || t.tainted || first_t.tainted;
        if (quiet) return;
        if (g.extra && first_name.empty()) {
          error(in.callee.loc, "'" + in.callee.name + "' needs " + g.needs + ", but " + desc +
                                   " is " + describe(t) + convert_hint(name, t, g.extra->first));
        } else if (t.strength == Strength::Weak || first_t.strength == Strength::Weak) {
          // A literal, or a variable typed by literals only, next to a
          // variable of a dtype it cannot take. Converting the variable is
          // advice only if the result may then take the literal's dtype:
          // known once inference is done.
          const bool t_weak = t.strength == Strength::Weak;
          auto report = [this, loc = in.callee.loc, op_name = in.callee.name,
                         var = t_weak ? first_t : t, lit = t_weak ? t : first_t,
                         var_name = t_weak ? first_name : name,
                         lit_name = t_weak ? name : first_name,
                         var_node = t_weak ? first_node : node, var_op = t_weak ? first_op : op,
                         lit_node = t_weak ? node : first_node, lit_op = t_weak ? op : first_op,
                         with_dest = g.with_dest, dest, target = print_target(in.out),
                         dest_name = in.out.is_tuple ? std::string() : in.out.name] {
            const char* kind = lit.dtype == DType::F64    ? "float"
                               : lit.dtype == DType::Bool ? "bool"
                                                          : "integer";
            const bool lit_is_var =
                lit_op && lit_op->is_var && !syntax::is_frontend_name(lit_op->name);
            std::string what = lit_is_var
                                   ? lit_name + " (" + (lit.dtype == DType::Bool ? "a " : "") +
                                         kind + " only because of literals)"
                                   : std::string(kind[0] == 'i' ? "an " : "a ") + kind + " literal";
            IType dt = with_dest ? read(dest) : IType{};
            bool contradicted =
                dt.is_leaf() && dt.strength == Strength::Strong && dt.dtype != lit.dtype;
            std::string hint;
            if (!contradicted) {
              hint = convert_hint(var_name, var, lit.dtype);
              if (lit_is_var && !hint.empty() && !(dt.is_leaf() && dt.strength == Strength::Strong))
                hint += ", or make " + lit_name + " " + dtype_name(var.dtype) +
                        " where its literals are";
            } else if (lit_op && !lit_op->is_var && !lit_op->lit.is_tensor &&
                       lit_op->lit.elems.size() == 1 &&
                       lit_op->lit.elems[0].kind == Scalar::Kind::Float && is_integer(var.dtype) &&
                       std::isfinite(lit_op->lit.elems[0].f) &&
                       lit_op->lit.elems[0].f == std::floor(lit_op->lit.elems[0].f) &&
                       std::fabs(lit_op->lit.elems[0].f) < 9e15) {
              hint = "; the result " + target + " is " + describe(dt) +
                     ", so write the literal as " +
                     std::to_string(static_cast<int64_t>(lit_op->lit.elems[0].f));
            } else {
              hint = "; the result " + target + " is " + describe(dt) +
                     ": store the float result in a new variable, or use an integer literal";
            }
            error(loc, "'" + op_name + "' mixes " + var_name + " (" + describe(var) + ") with " +
                           what + hint);
            cause(var_node, var_op);
            if (lit_is_var) cause(lit_node, lit_op);
            if (contradicted && !dest_name.empty()) {
              Operand d;
              d.name = dest_name;
              cause(dest.node, &d);
            }
          };
          if (g.with_dest && !dest_pre.is_leaf())
            pending_.push_back(report);
          else
            report();
          return;
        } else if (is_dest) {
          error(in.callee.loc, "'" + in.callee.name + "' gives " + describe(first_t) +
                                   " here, but the result " + name + " is " + describe(t) +
                                   " elsewhere (a variable has one type in its whole function; use "
                                   "a new name, or cast)");
        } else {
          // Suggest converting the integer side to the float side's dtype,
          // unless the result's dtype is fixed (here or, once inference is
          // done, elsewhere): then convert the side that differs from it,
          // or suggest nothing.
          auto report = [this, loc = in.callee.loc, op_name = in.callee.name, first_desc, desc, t,
                         first_t, name, first_name, first_node, first_op, node, op,
                         with_dest = g.with_dest, dest] {
            IType dt = with_dest ? read(dest) : IType{};
            bool fixed = dt.is_leaf() && dt.strength == Strength::Strong;
            bool first_float = is_float(first_t.dtype) && !is_float(t.dtype);
            if (fixed) first_float = first_t.dtype == dt.dtype;
            const std::string& victim = first_float ? name : first_name;
            DType to = first_float ? first_t.dtype : t.dtype;
            const IType& vt = first_float ? t : first_t;
            bool contradicted = fixed && to != dt.dtype;
            error(loc, "operands of '" + op_name + "' have different dtypes: " + first_desc +
                           " and " + desc + " (" + describe(t) + ")" +
                           (contradicted ? "" : convert_hint(victim, vt, to)));
            cause(first_node, first_op);
            cause(node, op);
          };
          if (g.with_dest && !dest_pre.is_leaf())
            pending_.push_back(report);  // the result's dtype may be fixed later
          else
            report();
          return;
        }
        cause(first_node, first_op);
        cause(node, op);
      };
      for (int o : g.operands)
        if (o < static_cast<int>(ops.size()))
          add(nodes_[ops[o]], var_or_value(in.args[o]), false, ops[o], &in.args[o]);
      IType dest_t = read(dest);
      if (g.with_dest) add(dest_t, print_target(in.out), true);
      if (conflict) {
        taint(dest);
        for (int o : g.operands)
          if (o < static_cast<int>(ops.size())) taint(node_slot(ops[o]));
        return;
      }
      if (!acc) continue;
      // Push the agreed dtype back into the members that have a type.
      for (int o : g.operands) {
        if (o >= static_cast<int>(ops.size()) || !nodes_[ops[o]].is_leaf()) continue;
        IType t = leaf(acc->first, acc->second, nodes_[ops[o]].shape);
        write(node_slot(ops[o]), t, in.loc);
      }
      if (g.with_dest) {
        follows = true;
        result_strength = acc->second;
        if (dest_t.is_leaf()) write(dest, leaf(acc->first, acc->second, dest_t.shape), in.loc);
      }
    }
    // The result, once every operand's type is known. An operand whose type
    // is unknown because of a reported error makes the result quiet too.
    std::vector<Type> arg_types;
    for (int o : ops) {
      if (!complete(nodes_[o])) {
        if (any_taint(nodes_[o])) taint(dest);
        return;
      }
      arg_types.push_back(to_type(nodes_[o]));
    }
    PrimTypeResult r = prim_result_type(info->id, arg_types, resolve_attrs(in));
    if (!r.ok()) {
      if (reporting_) error(in.callee.loc, r.error);
      return;
    }
    IType result = from_type(*r.type, follows ? result_strength : Strength::Strong);
    if (too_large(result)) {
      if (reporting_)
        error(in.callee.loc, "'" + in.callee.name + "' would make a value of type " +
                                 r.type->str() +
                                 ", larger than the limit of 2^28 elements per thread");
      taint(dest);  // what depends on it is not reported again
      return;
    }
    for (int o : ops) result.tainted = result.tainted || any_taint(nodes_[o]);
    assign(dest, result, in.loc, [&](const IType& a, const IType& b) {
      return "'" + in.callee.name + "' gives " + describe(b) + " here, but " +
             print_target(in.out) + " is " + describe(a) +
             " elsewhere (a variable has one type in its whole function)";
    });
  }

  void terminator(size_t fi, const Terminator& t, const std::vector<int>& values) {
    const Function& f = m_.funcs[fi];
    if (t.kind == TermKind::Branch) {
      int c = var_node(fi, t.cond.name);
      assign(node_slot(c), leaf(DType::Bool, Strength::Strong), t.cond.loc,
             [&](const IType& a, const IType&) {
               Operand c;
               c.name = t.cond.name;
               c.loc = t.cond.loc;
               std::string hint =
                   a.is_leaf() && a.dtype == DType::Bool && !a.shape.empty()
                       ? " (if, while and infix and/or need one bool per thread; for tensors "
                         "use any(), all() or the elementwise and(a, b), or(a, b))"
                       : "";
               return "branch condition " + var_or_value(c) + " must be a scalar bool, but it is " +
                      describe(a) + hint;
             });
    }
    if (t.kind != TermKind::Return) return;
    for (size_t i = 0; i < values.size() && i < results_[fi].size(); ++i) {
      int r = results_[fi][i];
      equate(node_slot(values[i]), node_slot(r), t.values[i].loc,
             [&](const IType& a, const IType& b) {
               std::string from = origin_[r].empty() ? "" : " " + origin_[r];
               return "'" + f.name.name + "' returns " + describe(a) + " here, but its result " +
                      (results_[fi].size() > 1 ? std::to_string(i + 1) + " " : "") + "is " +
                      describe(b) + from;
             });
    }
  }

  // ---- after the fixpoint ----
  std::vector<std::string> reachable_from(const Function& entry) const {
    std::vector<std::string> out{entry.name.name};
    std::set<std::string> seen{entry.name.name};
    for (size_t i = 0; i < out.size(); ++i) {
      const Function* f = m_.find_func(out[i]);
      for (const auto& b : f->blocks)
        for (const auto& in : b.instrs)
          if (in.kind == InstrKind::Call && m_.find_func(in.callee.name) &&
              seen.insert(in.callee.name).second)
            out.push_back(in.callee.name);
    }
    return out;
  }

  void check_literals() {
    for (size_t i = 0; i < literals_.size(); ++i) {
      const IType& t = nodes_[literals_[i].second];
      if (!t.is_leaf()) continue;
      for (const Scalar& s : literals_[i].first->elems) {
        if (s.kind != Scalar::Kind::Int) continue;
        if (t.dtype == DType::I32 && (s.i < INT32_MIN || s.i > INT32_MAX)) {
          error(literal_locs_[i], "the literal " + std::to_string(s.i) + " does not fit in i32");
          break;
        }
      }
    }
  }

  void report_unknown(const std::vector<std::string>& reachable) {
    for (const auto& name : reachable) {
      const Function* f = m_.find_func(name);
      size_t fi = index_of(*f);
      // The first place each variable is written, to point at.
      std::map<std::string, std::pair<SourceLoc, const Instr*>> defs;
      for (const auto& p : f->params)
        defs.emplace(p.name.name, std::make_pair(p.name.loc, nullptr));
      for (const auto& b : f->blocks)
        for (const auto& in : b.instrs) {
          std::vector<const Pattern*> leaves;
          in.out.names(leaves);
          for (const Pattern* l : leaves) defs.emplace(l->name, std::make_pair(l->loc, &in));
        }
      for (const auto& [var, def] : defs) {
        const IType& t = nodes_[var_node(fi, var)];
        if (t.state != IType::State::Unknown || t.tainted) continue;
        std::string msg = "cannot determine the type of '" + var + "' in '" + name + "'";
        if (def.second && def.second->kind == InstrKind::Call)
          msg += ": it comes from '" + def.second->callee.name +
                 "', whose results never get a type (does its recursion reach a base case?)";
        error(def.first, msg);
      }
    }
  }

  TypeInfo collect(const std::vector<std::string>& reachable) const {
    TypeInfo info;
    info.reachable = reachable;
    auto opt = [&](int n) -> std::optional<Type> {
      if (!complete(nodes_[n])) return std::nullopt;
      return to_type(nodes_[n]);
    };
    for (size_t fi = 0; fi < m_.funcs.size(); ++fi) {
      const Function& f = m_.funcs[fi];
      FunctionTypes ft;
      for (const auto& p : f.params) ft.params.push_back(opt(var_node(fi, p.name.name)));
      for (int r : results_[fi]) ft.results.push_back(opt(r));
      for (const auto& [name, n] : vars_[fi])
        if (auto t = opt(n)) ft.vars.emplace(name, *t);
      ft.operand_types.resize(f.blocks.size());
      ft.return_types.resize(f.blocks.size());
      for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
        for (const auto& ids : operands_[fi][bi]) {
          std::vector<std::optional<Type>> ts;
          for (int n : ids) ts.push_back(opt(n));
          ft.operand_types[bi].push_back(ts);
        }
        for (int n : returns_[fi][bi]) ft.return_types[bi].push_back(opt(n));
      }
      info.funcs.emplace(f.name.name, std::move(ft));
    }
    return info;
  }
};

}  // namespace

TypeInfo infer_types(const Module& m, const std::string& entry,
                     const std::vector<std::optional<Type>>& entry_params, Diagnostics& diags) {
  const Function* f = m.find_func(entry);
  if (!f) {
    diags.error({}, "no function '" + entry + "'");
    return {};
  }
  return Inference(m, diags).run(*f, entry_params);
}

}  // namespace ab
