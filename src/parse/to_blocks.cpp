// The front end (docs/language.md, "The structured form"): statements and nested expressions become
// labelled blocks and three-address instructions. Intermediate values go to fresh
// temporaries `t.N` and new blocks get labels `KIND.N`; a function's own
// names never take that shape unless written so, and the counter skips any
// name the function already uses.
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "ir/ops.h"
#include "parse/prepare.h"
#include "parse/syntax.h"
#include "support/strings.h"

namespace ab::syntax {

bool is_frontend_name(const std::string& s) {
  size_t dot = s.find('.');
  if (dot == std::string::npos || dot == 0 || dot + 1 == s.size()) return false;
  for (size_t i = dot + 1; i < s.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  return s.find('.', dot + 1) == std::string::npos;
}

namespace {

using EK = Expr::Kind;
using SK = Stmt::Kind;

const char* binary_prim(const std::string& op) {
  static const std::pair<const char*, const char*> kOps[] = {
      {"+", "add"}, {"-", "sub"}, {"*", "mul"}, {"/", "div"}, {"%", "mod"}, {"**", "pow"},
      {"==", "eq"}, {"!=", "ne"}, {"<", "lt"},  {"<=", "le"}, {">", "gt"},  {">=", "ge"},
  };
  for (const auto& [o, p] : kOps)
    if (op == o) return p;
  return nullptr;
}

void collect_names(const Expr& e, std::set<std::string>& out) {
  if (e.kind == EK::Var) out.insert(e.name);
  for (const auto& a : e.args) collect_names(a, out);
}

void collect_names(const Body& body, std::set<std::string>& out);
void collect_names(const Stmt& s, std::set<std::string>& out) {
  std::vector<const Pattern*> leaves;
  s.pat.names(leaves);
  for (const Pattern* l : leaves) out.insert(l->name);
  out.insert(s.target.name);
  for (const auto& e : s.exprs) collect_names(e, out);
  for (const auto& arm : s.arms) {
    collect_names(arm.cond, out);
    collect_names(arm.body, out);
  }
  collect_names(s.else_body, out);
  collect_names(s.body, out);
}
void collect_names(const Body& body, std::set<std::string>& out) {
  for (const auto& s : body) collect_names(s, out);
}

class FuncLowering {
 public:
  FuncLowering(const Module& m, Diagnostics& d, const std::map<std::string, size_t>& arities)
      : m_(m), d_(d), arities_(arities) {}

  // Blocks of a function (or lowered program) body.
  std::vector<Block> run(const Body& body, bool block_form, const std::string& owner,
                         SourceLoc body_loc, SourceLoc close_loc) {
    collect_names(body, used_);
    if (block_form) {
      block_lines(body, owner, body_loc);
    } else {
      start("entry", body_loc);
      stmts(body);
      if (open_) {
        Terminator t;
        t.kind = TermKind::Return;
        t.loc = close_loc;
        close(std::move(t));
      }
    }
    return std::move(blocks_);
  }

 private:
  const Module& m_;
  Diagnostics& d_;
  const std::map<std::string, size_t>& arities_;
  std::set<std::string> used_;
  int counter_ = 0;
  std::vector<Block> blocks_;
  bool open_ = false;
  struct Loop {
    std::string next, done;  // where continue and break go
  };
  std::vector<Loop> loops_;

  std::string fresh(const std::string& base) {
    for (;;) {
      std::string n = base + "." + std::to_string(++counter_);
      if (used_.insert(n).second) return n;
    }
  }

  void start(const std::string& label, SourceLoc loc) {
    Block b;
    b.label = {label, loc};
    blocks_.push_back(std::move(b));
    open_ = true;
  }
  void close(Terminator t) {
    blocks_.back().term = std::move(t);
    open_ = false;
  }
  void jump(const std::string& label, SourceLoc loc) {
    Terminator t;
    t.kind = TermKind::Goto;
    t.target = {label, loc};
    t.loc = loc;
    close(std::move(t));
  }
  void branch(const std::string& cond, const std::string& yes, const std::string& no,
              SourceLoc loc) {
    Terminator t;
    t.kind = TermKind::Branch;
    t.cond = {cond, loc};
    t.target = {yes, loc};
    t.target2 = {no, loc};
    t.loc = loc;
    close(std::move(t));
  }
  void emit(Instr in) { blocks_.back().instrs.push_back(std::move(in)); }

  static Pattern name_pattern(const std::string& n, SourceLoc loc) {
    Pattern p;
    p.name = n;
    p.loc = loc;
    return p;
  }
  static Operand var(const std::string& n, SourceLoc loc) {
    Operand o;
    o.name = n;
    o.loc = loc;
    return o;
  }
  void copy(const Pattern& out, Operand v, SourceLoc loc) {
    Instr in;
    in.kind = InstrKind::Copy;
    in.out = out;
    in.args.push_back(std::move(v));
    in.loc = loc;
    emit(std::move(in));
  }
  void prim(const Pattern& out, const std::string& op, std::vector<Operand> args,
            std::vector<Attr> attrs, SourceLoc loc, SourceLoc op_loc) {
    Instr in;
    in.kind = InstrKind::Prim;
    in.out = out;
    in.callee = {op, op_loc};
    if (const PrimInfo* info = find_prim(op)) in.prim = info->id;
    in.args = std::move(args);
    in.attrs = std::move(attrs);
    in.loc = loc;
    emit(std::move(in));
  }

  // The value of e as an operand; intermediate results go to temporaries.
  Operand value(const Expr& e) {
    std::pair<SourceLoc, std::string> bad;
    if (auto lit = fold_literal(e, &bad)) {
      Operand o;
      o.is_var = false;
      o.lit = std::move(*lit);
      o.loc = e.loc;
      return o;
    }
    if (!bad.second.empty()) {
      d_.error(bad.first, bad.second);
      Operand o;
      o.is_var = false;
      o.lit.elems = {Scalar::of_int(0)};
      o.loc = e.loc;
      return o;
    }
    if (e.kind == EK::Var) return var(e.name, e.loc);
    std::string t = fresh("t");
    assign(name_pattern(t, e.loc), e);
    return var(t, e.loc);
  }

  // A variable holding e (a branch condition must be a variable).
  std::string cond_var(const Expr& e) {
    Operand o = value(e);
    if (o.is_var) return o.name;
    std::string t = fresh("t");
    copy(name_pattern(t, e.loc), o, e.loc);
    return t;
  }

  // out = e, with e's outermost operation writing out directly. The
  // instruction that writes `out` takes `at` as its location when given (a
  // whole statement), else e's.
  void assign(const Pattern& out, const Expr& e, std::optional<SourceLoc> at = std::nullopt) {
    if (!open_) return;
    const SourceLoc loc = at ? *at : e.loc;
    std::pair<SourceLoc, std::string> bad;
    if (e.kind == EK::Var || fold_literal(e, &bad) || !bad.second.empty()) {
      copy(out, value(e), loc);
      return;
    }
    switch (e.kind) {
      case EK::Call: {
        if (e.name == "value_and_grad" && !e.explicit_call) {
          value_and_grad(out, e, loc);
          return;
        }
        std::vector<Operand> args;
        for (const auto& a : e.args) args.push_back(value(a));
        const PrimInfo* info = e.explicit_call ? nullptr : find_prim(e.name);
        if (info || (!e.explicit_call && !m_.find_func(e.name) && !near_function(e.name))) {
          prim(out, e.name, std::move(args), e.attrs, loc, e.name_loc);
          return;
        }
        // Attributes on a call are kept for verify to report, so that the
        // printed module parses back to the same instruction.
        Instr in;
        in.kind = InstrKind::Call;
        in.out = out;
        in.callee = {e.name, e.name_loc};
        in.args = std::move(args);
        in.attrs = e.attrs;
        in.loc = loc;
        emit(std::move(in));
        return;
      }
      case EK::Unary: {
        Operand a = value(e.args[0]);
        prim(out, e.op == "-" ? "neg" : "not", {a}, {}, loc, e.name_loc);
        return;
      }
      case EK::Binary: {
        if (e.op == "and" || e.op == "or") {
          short_circuit(out, e, loc);
          return;
        }
        Operand a = value(e.args[0]);
        Operand b = value(e.args[1]);
        prim(out, binary_prim(e.op), {a, b}, {}, loc, e.loc);
        return;
      }
      case EK::Index: {
        // x[i][j] (and x[i, j]): one get with an index per dimension,
        // get(x, i, j), the operands evaluated left to right.
        std::vector<const Expr*> chain{&e};
        while (chain.back()->args[0].kind == EK::Index) chain.push_back(&chain.back()->args[0]);
        std::vector<Operand> ops{value(chain.back()->args[0])};
        for (size_t k = chain.size(); k-- > 0;) ops.push_back(value(chain[k]->args[1]));
        // (several indices: an error points at the whole x[i, j])
        prim(out, "get", std::move(ops), {}, loc, chain.size() > 1 ? e.loc : e.name_loc);
        return;
      }
      case EK::Tensor: {
        // [e0, e1, ...]: scalars make a vector, equal-shaped tensors stack.
        if (e.args.empty()) {
          d_.error(e.loc, "an empty tensor needs a type: write zeros(shape=[0], dtype=...)");
          return;
        }
        std::vector<Operand> elems;
        for (const auto& a : e.args) elems.push_back(value(a));
        prim(out, "stack", std::move(elems), {}, loc, e.loc);
        return;
      }
      case EK::Var:
      case EK::Lit:
        break;
    }
  }

  // `value_and_grad(F, x, ...)`: a call of F marked `grad`, whose first
  // operand names the function instead of a value.
  void value_and_grad(const Pattern& out, const Expr& e, SourceLoc loc) {
    if (e.args.empty() || e.args[0].kind != EK::Var || e.args[0].parens ||
        !m_.find_func(e.args[0].name)) {
      d_.error(e.args.empty() ? e.loc : e.args[0].loc,
               "value_and_grad(F, x, ...) takes first the name of a function of the module, "
               "then F's arguments; the gradient is with respect to x");
      return;
    }
    if (!e.attrs.empty()) {
      d_.error(e.attrs.front().loc, "value_and_grad takes no key=value attributes");
      return;
    }
    Instr in;
    in.kind = InstrKind::Call;
    in.grad = true;
    in.out = out;
    in.callee = {e.args[0].name, e.args[0].loc};
    for (size_t i = 1; i < e.args.size(); ++i) in.args.push_back(value(e.args[i]));
    in.loc = loc;
    emit(std::move(in));
  }

  // An unknown callee that looks like a typo of a function of the module
  // becomes a call, so that verify suggests the function rather than an
  // operation.
  bool near_function(const std::string& name) const {
    std::vector<std::string> names;
    for (const auto& f : m_.funcs) names.push_back(f.name.name);
    std::vector<std::string> ops;
    for (const auto& p : all_prims()) ops.push_back(p.name);
    std::string f = closest_match(name, names);
    return !f.empty() && (closest_match(name, ops).empty() ||
                          edit_distance(name, f) < edit_distance(name, closest_match(name, ops)));
  }

  // `a and b`, `a or b`: b runs only where a does not decide.
  void short_circuit(const Pattern& out, const Expr& e, SourceLoc loc) {
    bool is_and = e.op == "and";
    std::string c = cond_var(e.args[0]);
    if (!open_) return;
    std::string r = fresh("t");
    std::string rhs = fresh("rhs");
    std::string shortcut = fresh("short");
    std::string join = fresh("join");
    if (is_and)
      branch(c, rhs, shortcut, e.name_loc);
    else
      branch(c, shortcut, rhs, e.name_loc);
    start(rhs, e.args[1].loc);
    Operand b = value(e.args[1]);
    copy(name_pattern(r, e.loc), b, e.args[1].loc);
    jump(join, e.loc);
    start(shortcut, e.loc);
    Operand k;
    k.is_var = false;
    k.lit.kind = Scalar::Kind::Bool;
    k.lit.elems = {Scalar::of_bool(!is_and)};
    k.loc = e.args[0].loc;
    copy(name_pattern(r, e.loc), k, e.loc);
    jump(join, e.loc);
    start(join, e.loc);
    copy(out, var(r, e.loc), loc);
  }

  // ---- structured statements ----

  static SourceLoc close_loc(const Stmt& s) { return {s.close_lines.first, 1, 1}; }

  void stmts(const Body& body) {
    for (const auto& s : body) {
      if (!open_) {
        d_.error(s.loc, "this statement can never run: it follows a return, break or continue");
        return;
      }
      stmt(s);
    }
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case SK::If: {
        std::string end = fresh("endif");
        bool reaches_end = false;
        for (size_t i = 0; i < s.arms.size(); ++i) {
          const IfArm& arm = s.arms[i];
          std::string c = cond_var(arm.cond);
          std::string then = fresh("then");
          bool last = i + 1 == s.arms.size();
          std::string next = last && !s.has_else ? end : fresh(last ? "otherwise" : "elif");
          if (last && !s.has_else) reaches_end = true;
          branch(c, then, next, arm.cond.loc);
          start(then, arm.cond.loc);
          stmts(arm.body);
          if (open_) {
            jump(end, close_loc(s));
            reaches_end = true;
          }
          if (next != end) start(next, arm.cond.loc);
        }
        if (s.has_else) {
          stmts(s.else_body);
          if (open_) {
            jump(end, close_loc(s));
            reaches_end = true;
          }
        }
        // The block after the `if` is labelled with the `if` itself: what a
        // report or a stopped run shows for it.
        if (reaches_end) start(end, s.loc);
        return;
      }
      case SK::For:
        for_range(s);
        return;
      case SK::While: {
        std::string head = fresh("loop");
        std::string body = fresh("body");
        std::string done = fresh("done");
        jump(head, s.loc);
        start(head, s.exprs[0].loc);
        std::string c = cond_var(s.exprs[0]);
        branch(c, body, done, s.exprs[0].loc);
        start(body, s.loc);
        loops_.push_back({head, done});
        stmts(s.body);
        loops_.pop_back();
        if (open_) jump(head, close_loc(s));
        start(done, s.loc);
        return;
      }
      case SK::Break:
      case SK::Continue:
        if (loops_.empty()) {
          d_.error(s.loc, std::string("'") + (s.kind == SK::Break ? "break" : "continue") +
                              "' outside a loop");
          return;
        }
        jump(s.kind == SK::Break ? loops_.back().done : loops_.back().next, s.loc);
        return;
      case SK::Label:
      case SK::Branch:
      case SK::Goto:
      case SK::PushGoto:
      case SK::IndirectGoto:
      case SK::Halt:
        d_.error(s.loc,
                 "a function written in statements has no labels or jumps; use if and while, "
                 "or start the body with a label to write it in blocks");
        return;
      default:
        simple(s);
    }
  }

  // for i in range(a, b) { body }: a hidden counter runs from a up to the
  // bound b, both evaluated once before the loop; each iteration first sets
  // i to the counter, so assigning i in the body does not change the
  // iterations, and after the loop i holds the last value it took.
  //     count = a; stop = b; goto range
  //   range: branch count < stop, body, done
  //   body: i = count; ...; goto step        (continue: goto step)
  //   step: count = count + 1; goto range
  //   done:
  void for_range(const Stmt& s) {
    const Expr& r = s.exprs[0];
    if (r.kind != EK::Call || r.name != "range" || r.explicit_call || r.args.empty() ||
        r.args.size() > 2 || !r.attrs.empty()) {
      d_.error(r.loc,
               "a for loop runs over range(n) or range(a, b) (integers a <= i < b); write a while "
               "loop for anything else");
      return;
    }
    Operand first;
    if (r.args.size() == 2) {
      first = value(r.args[0]);
    } else {
      first.is_var = false;
      first.lit.elems = {Scalar::of_int(0)};
      first.loc = r.loc;
    }
    std::string count = fresh("count");
    copy(name_pattern(count, r.loc), first, r.loc);
    Operand stop = value(r.args.back());
    if (stop.is_var) {  // a copy: the body may assign the variable
      std::string t = fresh("stop");
      copy(name_pattern(t, r.args.back().loc), stop, r.args.back().loc);
      stop = var(t, r.args.back().loc);
    }
    if (!open_) return;
    std::string head = fresh("range");  // not "for": a reserved word cannot start a label
    std::string body = fresh("body");
    std::string step = fresh("step");
    std::string done = fresh("done");
    jump(head, s.loc);
    start(head, r.loc);
    std::string c = fresh("t");
    prim(name_pattern(c, r.loc), "lt", {var(count, r.loc), stop}, {}, r.loc, r.loc);
    branch(c, body, done, r.loc);
    start(body, s.loc);
    copy(name_pattern(s.target.name, s.target.loc), var(count, s.target.loc), s.target.loc);
    loops_.push_back({step, done});
    stmts(s.body);
    loops_.pop_back();
    if (open_) jump(step, close_loc(s));
    start(step, r.loc);
    Operand one;
    one.is_var = false;
    one.lit.elems = {Scalar::of_int(1)};
    one.loc = r.loc;
    prim(name_pattern(count, r.loc), "add", {var(count, r.loc), one}, {}, r.loc, r.loc);
    jump(head, r.loc);
    start(done, s.loc);
  }

  // x op= e: x = x op e, the whole of e one operand.
  static Expr compound(const std::string& op, Expr target, const Expr& rhs) {
    Expr b;
    b.kind = EK::Binary;
    b.op = op;
    b.loc = rhs.loc;
    b.name_loc = rhs.loc;
    b.args.push_back(std::move(target));
    b.args.push_back(rhs);
    return b;
  }

  // Statements both forms share.
  void simple(const Stmt& s) {
    switch (s.kind) {
      case SK::Assign:
        if (!s.op.empty()) {
          Expr x;
          x.kind = EK::Var;
          x.name = s.pat.name;
          x.loc = x.name_loc = s.pat.loc;
          assign(s.pat, compound(s.op, std::move(x), s.exprs[0]), s.loc);
          return;
        }
        assign(s.pat, s.exprs[0], s.loc);
        return;
      case SK::IndexAssign: {
        // x[i][j] = v (or x[i, j] = v): x = set(x, i, j, v). x[i, j] op= v
        // reads the element once, t = get(x, i, j), the indices evaluated once.
        std::vector<Operand> idx;
        for (size_t k = 0; k + 1 < s.exprs.size(); ++k) idx.push_back(value(s.exprs[k]));
        const Operand x = var(s.target.name, s.target.loc);
        Operand v;
        if (s.op.empty()) {
          v = value(s.exprs.back());
        } else {
          std::vector<Operand> at{x};
          at.insert(at.end(), idx.begin(), idx.end());
          std::string t = fresh("t");
          prim(name_pattern(t, s.target.loc), "get", std::move(at), {}, s.target.loc,
               s.target.loc);
          Expr old;
          old.kind = EK::Var;
          old.name = t;
          old.loc = old.name_loc = s.target.loc;
          v = value(compound(s.op, std::move(old), s.exprs.back()));
        }
        std::vector<Operand> put{x};
        put.insert(put.end(), idx.begin(), idx.end());
        put.push_back(v);
        prim(name_pattern(s.target.name, s.target.loc), "set", std::move(put), {}, s.loc,
             s.target.loc);
        return;
      }
      case SK::Eval: {
        const Expr& e = s.exprs[0];
        // A primitive that reports to the host (progress) is called for
        // that alone: its result goes to a temporary nothing reads.
        if (e.kind == EK::Call && !e.explicit_call)
          if (const PrimInfo* info = find_prim(e.name); info && prim_reports(info->id)) {
            assign(name_pattern(fresh("r"), e.loc), e, s.loc);
            return;
          }
        if (e.kind != EK::Call || (!e.explicit_call && find_prim(e.name))) {
          d_.error(e.loc,
                   e.kind == EK::Call
                       ? "the result of '" + e.name + "' is discarded; assign it to a variable"
                       : std::string("an expression alone must be a call of a function"));
          return;
        }
        Pattern none;
        none.is_tuple = true;
        assign(none, e, s.loc);
        return;
      }
      case SK::Pop: {
        Instr in;
        in.kind = InstrKind::Pop;
        in.out.is_tuple = true;
        in.popped = s.names;
        in.loc = s.loc;
        emit(std::move(in));
        return;
      }
      case SK::Return: {
        Terminator t;
        t.kind = TermKind::Return;
        t.loc = s.loc;
        if (auto k = call_arity(s); k && *k != 1) {
          // return g(x) with g of k results: t1, ..., tk = g(x); return t1, ..., tk
          Pattern p;
          p.is_tuple = true;
          p.loc = s.exprs[0].loc;
          for (size_t i = 0; i < *k; ++i) p.elems.push_back(name_pattern(fresh("t"), p.loc));
          assign(p, s.exprs[0], s.loc);
          for (const auto& l : p.elems) t.values.push_back(var(l.name, l.loc));
          if (open_) close(std::move(t));
          return;
        }
        for (const auto& e : s.exprs) t.values.push_back(value(e));
        if (open_) close(std::move(t));
        return;
      }
      default:
        return;
    }
  }

  // The result count of g in `return g(x)` (g a function of the module).
  std::optional<size_t> call_arity(const Stmt& ret) const {
    if (ret.exprs.size() != 1) return std::nullopt;
    const Expr& e = ret.exprs[0];
    if (e.kind != EK::Call || (!e.explicit_call && find_prim(e.name))) return std::nullopt;
    auto it = arities_.find(e.name);
    if (it == arities_.end()) return std::nullopt;
    return it->second;
  }

  // ---- labelled blocks ----

  static bool is_terminator(SK k) {
    return k == SK::Branch || k == SK::Goto || k == SK::Return || k == SK::PushGoto ||
           k == SK::IndirectGoto || k == SK::Halt;
  }

  Terminator terminator(const Stmt& s) {
    Terminator t;
    t.loc = s.loc;
    switch (s.kind) {
      case SK::Branch:
        t.kind = TermKind::Branch;
        t.cond = s.target;
        t.target = s.t1;
        t.target2 = s.t2;
        break;
      case SK::Goto:
        t.kind = TermKind::Goto;
        t.target = s.t1;
        break;
      case SK::PushGoto:
        t.kind = TermKind::PushGoto;
        t.target = s.t1;
        t.target2 = s.t2;
        break;
      case SK::IndirectGoto:
        t.kind = TermKind::IndirectGoto;
        break;
      default:
        t.kind = TermKind::Halt;
    }
    return t;
  }

  // Groups the body's lines into blocks: a label opens a block, a terminator
  // closes it.
  void block_lines(const Body& body, const std::string& owner, SourceLoc body_loc) {
    bool in_block = false;  // a label was seen and no terminator yet
    for (const auto& s : body) {
      if (s.kind == SK::Label) {
        if (in_block && blocks_.back().label.name != "<unlabelled>")
          d_.error(s.loc,
                   "block '" + blocks_.back().label.name +
                       "' does not end with a terminator (branch, goto or return) before label '" +
                       s.target.name + "'");
        start(s.target.name, s.target.loc);
        blocks_.back().label = s.target;
        in_block = true;
        continue;
      }
      if (s.kind == SK::If || s.kind == SK::While || s.kind == SK::Break ||
          s.kind == SK::Continue) {
        d_.error(s.loc,
                 "if, while, break and continue belong to functions written in statements; this "
                 "function is written in labelled blocks (use branch and goto)");
        continue;
      }
      if (!in_block) {
        if (blocks_.empty())
          d_.error(s.loc, "expected a label to start the first block of '" + owner + "'");
        else
          d_.error(s.loc, "this follows the terminator of block '" + blocks_.back().label.name +
                              "'; start a new block with a label");
        // Keep going so later errors are reported too; the block made up
        // here to hold the stray line reports nothing of its own.
        start("<unlabelled>", s.loc);
        in_block = true;
      }
      if (s.kind == SK::Return) {
        simple(s);
        open_ = false;
        in_block = false;
      } else if (is_terminator(s.kind)) {
        close(terminator(s));
        in_block = false;
      } else {
        simple(s);
      }
    }
    if (in_block && blocks_.back().label.name != "<unlabelled>")
      d_.error(blocks_.back().label.loc,
               "block '" + blocks_.back().label.name +
                   "' does not end with a terminator (branch, goto or return)");
    if (blocks_.empty()) d_.error(body_loc, "'" + owner + "' has no blocks");
  }
};

}  // namespace

Module to_blocks(const File& file, Diagnostics& d) {
  Module m;
  // Function names first: a call in an expression needs to know them.
  for (const auto& item : file.items)
    if (item.kind == Item::Kind::Func) {
      Function f = item.func.header;
      m.funcs.push_back(std::move(f));
    }
  std::vector<VarDecl> vars;
  const std::map<std::string, size_t> arities = result_arities(file);
  size_t fi = 0;
  for (const auto& item : file.items) {
    switch (item.kind) {
      case Item::Kind::Func: {
        const Func& sf = item.func;
        Function& f = m.funcs[fi++];
        if (find_prim(f.name.name))
          d.error(f.name.loc, "function '" + f.name.name +
                                  "' has the name of a primitive operation; choose another name");
        else if (f.name.name == "value_and_grad")
          d.error(f.name.loc, "'value_and_grad' is the language's gradient operation; choose "
                              "another name");
        SourceLoc close{sf.close_lines.first, 1, 1};
        std::set<std::string> shadowed;
        for (const auto& p : f.params) shadowed.insert(p.name.name);
        assigned_names(sf.body, shadowed);
        Body body = sf.body;
        substitute_constants(body, shadowed);
        FuncLowering low(m, d, arities);
        f.blocks = low.run(body, sf.block_form, f.name.name, f.loc, close);
        break;
      }
      case Item::Kind::Var:
        vars.push_back(item.var.decl);
        break;
      case Item::Kind::Import:  // parse_module added the imported functions
        break;
      case Item::Kind::Program: {
        if (m.program) {
          d.error(item.program.header.loc, "a file holds at most one lowered program");
          break;
        }
        m.program = item.program.header;
        FuncLowering low(m, d, arities);
        m.program->blocks =
            low.run(item.program.body, true, m.program->entry.name, m.program->loc, m.program->loc);
        break;
      }
    }
  }
  if (!vars.empty()) {
    if (m.program) {
      m.program->vars = std::move(vars);
    } else {
      d.error(vars.front().loc,
              "'var' declarations belong to a lowered program, and this file has no 'program'");
    }
  }
  if (m.program && !m.funcs.empty())
    d.error(m.funcs.front().loc,
            "a lowered program cannot be mixed with 'func' definitions in one file");
  return m;
}

}  // namespace ab::syntax
