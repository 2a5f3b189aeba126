// The parts of the grad pass (passes/grad.h) and what they share. One file
// per job:
//   builder.*     the IR a rule writes, through helpers keyed by PrimId
//   activity.cpp  which variables depend on the differentiated parameters
//   legality.cpp  what cannot be differentiated, and the messages saying so
//   rules.cpp     one reverse-mode rule per primitive whose ops.def row says
//                 Rule in its Grad column (rule_<Id>; the table is complete
//                 by construction)
//   block.cpp     the transform: a function of G becomes one function per
//                 basic block, forward then backward
//   driver.cpp    the pass itself: value_and_grad calls rewritten, the
//                 straight generated functions expanded into their callers
#pragma once
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/ir.h"
#include "ir/type_info.h"
#include "passes/grad/builder.h"
#include "passes/liveness.h"
#include "support/diag.h"

namespace ab::gradient {

// A generated vector-Jacobian function G_vjpM.
struct VjpInfo {
  std::string name;
  size_t results = 0;                  // G's result count
  std::vector<bool> active_results;    // which take a cotangent argument
  std::vector<size_t> adjoint_params;  // the parameters whose adjoints follow the results
};

class Grad;

// Writes one generated function: the instructions of a block of G renamed
// to versions, and the adjoint rules of those instructions.
class Writer : public FnBuilder {
 public:
  Writer(Grad& g, const Function& src, const FunctionTypes& ft, const std::set<std::string>& active,
         std::string name)
      : FnBuilder(std::move(name), src.loc), g_(g), src_(src), ft_(ft), active_(active) {}

  // ---- versions: within a block every write is a version of its own ----
  const Type& type_of_base(const std::string& base) const { return ft_.vars.at(base); }
  const Type& type_of(const std::string& version) const {
    return type_of_base(base_.count(version) ? base_.at(version) : version);
  }
  bool is_active(const Operand& o) const {
    return o.is_var && active_.count(base_.count(o.name) ? base_.at(o.name) : o.name);
  }
  std::string new_version(const std::string& base) {
    std::string v = base + ".v" + std::to_string(++counter_);
    base_[v] = base;
    cur_[base] = v;
    return v;
  }
  std::string version(const std::string& base) const {
    auto it = cur_.find(base);
    return it == cur_.end() ? base : it->second;
  }
  void start_version(const std::string& base) { cur_[base] = base; }

  // ---- adjoints ----
  // adj(v) += c, with c of v's type (summed down from `from` for a tensor).
  void accumulate(const std::string& v, std::string c, const Shape* from = nullptr);
  std::optional<std::string> adjoint(const std::string& v) const {
    auto it = adj_.find(v);
    if (it == adj_.end()) return std::nullopt;
    return it->second;
  }
  std::string adjoint_or_zeros(const std::string& v) {
    if (auto a = adjoint(v)) return *a;
    return zeros(type_of(v));
  }
  void set_adjoint(const std::string& v, const std::string& a) { adj_[v] = a; }
  // The cotangent a pattern of (renamed) leaves holds, of type t: nullopt
  // when no leaf has an adjoint.
  std::optional<std::string> pattern_adjoint(const Pattern& p, const Type& t);

  // The adjoint rules of one (renamed) instruction; `orig` is as written in
  // G. False after an error.
  bool backward(const Instr& orig, const Instr& in);

 private:
  Grad& g_;
  const Function& src_;
  const FunctionTypes& ft_;
  const std::set<std::string>& active_;
  std::map<std::string, std::string> base_;  // version -> variable of G
  std::map<std::string, std::string> cur_;   // variable of G -> its current version
  std::map<std::string, std::string> adj_;   // version -> its adjoint so far
};

// What a rule sees: one primitive instruction y = p(a0, a1, ...) (renamed),
// the adjoint dy of y, and which operands take a gradient. A rule adds each
// active operand's share of dy to its adjoint.
class RuleCtx {
 public:
  RuleCtx(Writer& w, const Instr& orig, const Instr& in, std::string dy)
      : w(w),
        in(in),
        y(in.out.name),
        dy(std::move(dy)),
        ys(w.type_of(y).tensor.shape),
        orig_(orig) {}

  Writer& w;
  const Instr& in;
  const std::string y;
  const std::string dy;
  const Shape ys;  // y's shape

  // Whether operand k depends on the differentiated parameters.
  bool active(size_t k) const { return k < in.args.size() && w.is_active(orig_.args[k]); }
  const Operand& arg(size_t k) const { return in.args[k]; }
  // Operand k, a variable: its name and type.
  const std::string& name(size_t k) const { return in.args[k].name; }
  const Type& type(size_t k) const { return w.type_of(in.args[k].name); }
  // Contributes c (of y's shape) to operand k, summed to its shape.
  void give(size_t k, const std::string& c) {
    if (active(k)) w.accumulate(in.args[k].name, c, &ys);
  }
  // Contributes c (of operand k's shape) to operand k.
  void give_shaped(size_t k, const std::string& c) {
    if (active(k)) w.accumulate(in.args[k].name, c);
  }
  // The axis= attribute, made non-negative for an operand of `rank`.
  std::optional<int64_t> axis(size_t rank) const;
  std::string prim(PrimId id, std::vector<Arg> args, std::vector<Attr> attrs = {}) {
    return w.prim(id, std::move(args), std::move(attrs));
  }

 private:
  const Instr& orig_;
};

using Rule = void (*)(RuleCtx&);
// The rule of a primitive whose Grad column says Rule; null for any other.
Rule rule_of(PrimId id);

// Which variables of g depend on the parameters `mask` marks: those of a
// float type written by an instruction reading one (a fixpoint); the results
// of primitives whose Grad column says Zero carry none.
std::set<std::string> active_variables(const Function& g, const FunctionTypes& ft,
                                       const std::vector<bool>& mask);

// The pass's state: the functions generated so far, by function and mask,
// and the errors.
class Grad {
 public:
  Grad(const Module& m, const TypeInfo& types, Diagnostics& d) : m_(m), types_(types), d_(d) {}

  // G_vjpM for g and `mask`, generated on first use (block.cpp); null after
  // an error. `why`: the call that needs it.
  const VjpInfo* vjp(const Function& g, const std::vector<bool>& mask, SourceLoc why);
  std::vector<Function>& made() { return out_; }
  const Module& module() const { return m_; }
  const FunctionTypes& types_of(const Function& g) const { return types_.funcs.at(g.name.name); }

  // ---- legality (legality.cpp): each reports its errors ----
  void error(SourceLoc loc, const std::string& message) {
    d_.error(loc, "value_and_grad: " + message);
    failed_ = true;
  }
  // What g may not hold whatever is active: types not known, random
  // numbers, value_and_grad itself. False after an error.
  bool check(const Function& g, const FunctionTypes& ft);
  // What the active variables may not reach: a primitive without a
  // gradient, a cast to an integer.
  void check_active(const Function& g, const FunctionTypes& ft,
                    const std::set<std::string>& active);
  void recursion_error(const std::string& callee, SourceLoc why);
  void unknown_types_error(const std::string& callee, SourceLoc why);

 private:
  void block_function(const Function& g, const FunctionTypes& ft, const VjpInfo& info,
                      const std::set<std::string>& active, const std::vector<VarSet>& live_in,
                      const std::vector<std::string>& names, size_t b, bool params_are_g);
  std::string unique_name(std::string base);

  const Module& m_;
  const TypeInfo& types_;
  std::set<std::string> taken_;  // names of the generated functions
  Diagnostics& d_;
  std::map<std::string, VjpInfo> made_;  // by "G|mask"
  std::vector<std::string> chain_;       // functions being differentiated, outermost first
  std::vector<Function> out_;
  bool failed_ = false;
};

// Whether the call `in` (value_and_grad of `callee`, its operand types `x`
// the differentiated argument's) can be differentiated; reports why not
// (legality.cpp).
bool check_grad_call(const Instr& in, const Function& callee, const std::optional<Type>& x,
                     const FunctionTypes& callee_types, Diagnostics& diags);

}  // namespace ab::gradient
