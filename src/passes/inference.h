// The internals of type inference (passes/infer_types.h describes the
// pass): the lattice of one value's type (IType, join), the places types
// flow between (Slot), and the Inference class, whose whole-program driver
// is in infer_types.cpp and whose per-instruction rules are in
// infer_rules.cpp. Included by those two files only.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "parse/shipped.h"
#include "passes/infer_types.h"

namespace ab::infer {

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

inline IType leaf(DType d, Strength s, Shape shape = {}) {
  IType t;
  t.state = IType::State::Known;
  t.dtype = d;
  t.strength = s;
  t.shape = std::move(shape);
  return t;
}

inline IType from_type(const Type& t, Strength s) {
  if (!t.is_tuple) return leaf(t.tensor.dtype, s, t.tensor.shape);
  IType out;
  out.state = IType::State::Known;
  out.is_tuple = true;
  for (const auto& e : t.elems) out.elems.push_back(from_type(e, s));
  return out;
}

inline IType from_literal(const Literal& lit) {
  DType d = lit.kind == Scalar::Kind::Bool    ? DType::Bool
            : lit.kind == Scalar::Kind::Float ? DType::F64
                                              : DType::I64;
  return leaf(d, Strength::Weak, lit.is_tensor ? lit.shape : Shape{});
}

// Elements of one thread's value of this type, or -1 if absurdly many (an
// overflow-safe product of the dimensions).
constexpr int64_t kMaxElements = int64_t{1} << 28;

inline bool too_large(const IType& t) {
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

inline bool complete(const IType& t) {
  if (!t.known()) return false;
  for (const auto& e : t.elems)
    if (!complete(e)) return false;
  return true;
}

inline Type to_type(const IType& t) {
  if (!t.is_tuple) return Type::tensor_of(t.dtype, t.shape);
  std::vector<Type> elems;
  for (const auto& e : t.elems) elems.push_back(to_type(e));
  return Type::tuple(std::move(elems));
}

inline std::string describe(const IType& t) {
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
inline bool weak_fits(DType w, DType s) {
  if (w == DType::Bool) return s == DType::Bool;
  if (w == DType::F64) return is_float(s);
  return s != DType::Bool;
}

inline bool join_dtype(DType& ad, Strength& as, DType bd, Strength bs) {
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

inline bool any_taint(const IType& t) {
  if (t.tainted) return true;
  for (const auto& e : t.elems)
    if (any_taint(e)) return true;
  return false;
}

// a := a ⊔ b; false on a conflict (a is then unspecified).
inline bool join(IType& a, const IType& b) {
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

// A reference to a callable, not a copy: how equate and assign take the
// maker of their conflict message, which runs only on a conflict (a
// std::function would copy the lambda, and allocate for its captures, on
// every call).
template <class Sig>
class FnRef;
template <class R, class... A>
class FnRef<R(A...)> {
 public:
  template <class F>
  FnRef(const F& f)  // NOLINT: converts from any callable, as std::function does
      : obj_(&f),
        call_([](const void* o, A... a) -> R { return (*static_cast<const F*>(o))(a...); }) {}
  R operator()(A... a) const { return call_(obj_, a...); }

 private:
  const void* obj_;
  R (*call_)(const void*, A...);
};
using MessageFn = FnRef<std::string(const IType&, const IType&)>;

// Which operands of a primitive must share a dtype, and with what.
struct Group {
  std::vector<int> operands;
  bool with_dest = false;  // the result's dtype is the group's
  std::optional<std::pair<DType, Strength>> extra;
  const char* needs = nullptr;  // what `extra` means, for messages
};

// The fixpoint over the whole program: one node (an IType) per variable,
// function result and literal.
class Inference {
 public:
  Inference(const Module& m, Diagnostics& d) : m_(m), d_(d) {}

  // The types of every function, from the entry's parameter types; errors go
  // to the Diagnostics.
  TypeInfo run(const Function& entry, const std::vector<std::optional<Type>>& entry_params);

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
  // The sweeps skip a constraint (an instruction or terminator, numbered in
  // sweep order) when no node it reads or writes changed since it last ran:
  // it would compute what it computed then, and change nothing. version_ is
  // the clock at a node's last change, started_ the clock when each
  // constraint last began (-1: never ran). The reporting sweep also runs the
  // constraints whose last run reached an error that only it reports
  // (reports_; reports_here_ while one runs): for the others, reporting
  // changes nothing.
  std::vector<int64_t> version_;            // [node]
  int64_t clock_ = 0;
  std::vector<std::vector<int>> deps_;      // [constraint]: the nodes it touches
  std::vector<int64_t> started_;            // [constraint]
  std::vector<bool> reports_;               // [constraint]
  bool reports_here_ = false;
  std::vector<const PrimInfo*> prim_info_;  // [constraint]: a primitive's entry, found once

  size_t index_of(const Function& f) const { return static_cast<size_t>(&f - m_.funcs.data()); }
  int var_node(size_t f, const std::string& name) const { return vars_[f].at(name); }

  int new_node(IType t = {}) {
    nodes_.push_back(std::move(t));
    version_.push_back(0);
    origin_.emplace_back();
    origin_loc_.emplace_back();
    return static_cast<int>(nodes_.size()) - 1;
  }

  // An error in a shipped library's code that inlining copied into the
  // user's (inlined_at_: the instruction's user call) is reported at that
  // call, naming the library line: the user's mistake is in the call.
  void error(const SourceLoc& loc, const std::string& msg) {
    SourceLoc at = loc;
    std::string m = msg;
    if (inlined_at_.known() && in_library(loc) && !in_library(inlined_at_)) {
      at = inlined_at_;
      m = "in the library code this call runs (" + m_.source->where(loc.line) + ": `" +
          m_.source->statement(loc.line) + "`): " + msg;
    }
    std::string key = std::to_string(at.line) + ":" + std::to_string(at.col) + m;
    if (said_.insert(key).second) d_.error(at, m);
  }
  bool in_library(const SourceLoc& loc) const { return in_shipped_file(m_.source, loc); }
  SourceLoc inlined_at_;  // the instruction being checked: Instr::inlined_at

  Slot node_slot(int n) const { return Slot{n, false, {}}; }

  // The whole-program driver (infer_types.cpp): nodes for every variable,
  // result and literal; places read, written and joined; the fixpoint sweep;
  // the checks and the answer after it.
  void build_nodes();
  void build_deps();
  bool due(size_t constraint);  // whether the sweep must run it (and marks it begun)
  void touched(int node) { version_[static_cast<size_t>(node)] = ++clock_; }
  IType read(const Slot& s) const;
  void write(const Slot& s, const IType& t, const SourceLoc& loc);
  void taint(const Slot& s);
  // Both places get the join of their types; `what` explains a conflict.
  void equate(const Slot& a, const Slot& b, const SourceLoc& loc,
              MessageFn what);
  // A computed value flows into a place (one way).
  void assign(const Slot& dest, const IType& value, const SourceLoc& loc,
              MessageFn what);
  Slot pattern_slot(size_t fi, const Pattern& p) const;
  Slot results_slot(size_t callee) const;
  void sweep();
  std::vector<std::string> reachable_from(const Function& entry) const;
  void check_literals();
  void report_unknown(const std::vector<std::string>& reachable);
  TypeInfo collect(const std::vector<std::string>& reachable) const;

  // The rules of each instruction and terminator, and their messages
  // (infer_rules.cpp).
  std::string var_or_value(const Operand& o) const;
  void cause(int node, const Operand* o);
  static std::string convert_hint(const std::string& quoted, const IType& t, DType want);
  void instr(size_t fi, const Instr& in, const std::vector<int>& ops, const PrimInfo* info);
  static std::string print_target(const Pattern& p);
  void prim(size_t fi, const Instr& in, const std::vector<int>& ops, const PrimInfo* info);
  void terminator(size_t fi, const Terminator& t, const std::vector<int>& values);
};

}  // namespace ab::infer
