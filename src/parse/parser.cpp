#include "parse/parser.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>
#include <tao/pegtl/contrib/parse_tree.hpp>

#include "parse/comments.h"
#include "parse/grammar.h"
#include "parse/inline.h"
#include "parse/shipped.h"
#include "parse/syntax.h"
#include "parse/unused.h"

namespace ab {
namespace {

namespace p = tao::pegtl;
namespace g = grammar;
using Node = p::parse_tree::node;

template <typename Rule>
using selector = p::parse_tree::selector<
    Rule,
    p::parse_tree::store_content::on<
        g::name, g::func_name, g::callee, g::fn_name, g::call_kw, g::label_ref, g::cond_ref,
        g::popped, g::var_name, g::prog_var, g::prog_var_next, g::number, g::special_float,
        g::true_lit, g::false_lit, g::dim, g::dtype, g::storage, g::bang, g::tensor_lit, g::shape,
        g::type_tensor, g::type_tuple, g::constraint, g::constraint_name, g::constraint_arg,
        g::param, g::param_next, g::results, g::result_name,
        g::entry_mark, g::inline_mark, g::prog_out_name, g::op_compound, g::s_compound, g::s_for, g::for_var, g::pat_tuple,
        g::pat_name, g::pattern, g::arg_attr, g::e_call, g::e_paren, g::e_tensor, g::e_var,
        g::e_index, g::e_slice, g::e_multi, g::slice_pos, g::slice_start, g::slice_stop, g::op_pow, g::op_neg, g::op_mul, g::op_add, g::op_cmp, g::op_not, g::op_and,
        g::op_or, g::instr_assign, g::s_index_assign, g::index_target, g::s_eval, g::instr_pop,

#define AB_TERM(kind, rule, text, lowered) g::term_##rule,
#include "ir/terminators.def"
#undef AB_TERM
        g::label_def, g::s_if, g::else_if, g::else_block, g::s_while, g::s_break,
        g::s_continue, g::stmt_block, g::block_close, g::func_def, g::var_decl, g::program_def, g::import_def,
        g::import_name, g::import_path,
        g::prog_inputs, g::prog_outputs, g::body, g::body_close>,
    p::parse_tree::fold_one::on<g::e_postfix, g::e_pow, g::e_unary, g::e_mul, g::e_add, g::e_cmp,
                                g::e_not, g::e_and, g::e_or>>;

// The file index (source.h) the locations of the file being parsed carry: 0
// for the main file, k for its k-th import. Set by parse_syntax for the
// duration of one parse.
thread_local uint32_t t_file_tag = 0;

SourceLoc loc_of(const Node& n) {
  SourceLoc l;
  l.line = static_cast<uint32_t>(n.m_begin.line) | t_file_tag;
  l.col = static_cast<uint32_t>(n.m_begin.column);
  size_t len =
      n.m_end.data && n.m_begin.data ? static_cast<size_t>(n.m_end.data - n.m_begin.data) : 1;
  // Underline at most the first line of a node that spans several.
  std::string_view text(n.m_begin.data, len);
  size_t nl = text.find('\n');
  if (nl != std::string_view::npos) len = nl;
  l.len = static_cast<uint32_t>(len == 0 ? 1 : len);
  return l;
}

class Builder {
 public:
  explicit Builder(Diagnostics& diags) : diags_(diags) {}

  syntax::File build(const Node& root) {
    syntax::File f;
    for (const auto& c : root.children) {
      syntax::Item item;
      if (c->is_type<g::func_def>()) {
        item.kind = syntax::Item::Kind::Func;
        item.func = function(*c);
      } else if (c->is_type<g::var_decl>()) {
        item.kind = syntax::Item::Kind::Var;
        item.var.decl = var_decl(*c);
        item.var.lines = lines_of(*c);
      } else if (c->is_type<g::program_def>()) {
        item.kind = syntax::Item::Kind::Program;
        item.program = program(*c);
      } else if (c->is_type<g::import_def>()) {
        item.kind = syntax::Item::Kind::Import;
        const Node& t = *c->children.front();
        item.import.is_path = t.is_type<g::import_path>();
        item.import.target = t.string();
        item.import.loc = loc_of(t);
        item.import.lines = lines_of(*c);
      } else {
        continue;
      }
      f.items.push_back(std::move(item));
    }
    return f;
  }

 private:
  Diagnostics& diags_;

  static NameRef name_ref(const Node& n) { return {n.string(), loc_of(n)}; }
  static syntax::Lines lines_of(const Node& n) {
    return {static_cast<uint32_t>(n.m_begin.line), static_cast<uint32_t>(n.m_end.line)};
  }

  Type type(const Node& n) {
    if (n.is_type<g::type_tuple>()) {
      std::vector<Type> elems;
      for (const auto& c : n.children) elems.push_back(type(*c));
      return Type::tuple(std::move(elems));
    }
    // type_tensor: dtype [shape]
    Type t = Type::scalar(*parse_dtype(n.children[0]->string_view()));
    if (n.children.size() > 1) {
      for (const auto& d : n.children[1]->children) {
        int64_t v = 0;
        auto sv = d->string_view();
        auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), v);
        if (ec != std::errc() || ptr != sv.data() + sv.size() || v > (int64_t(1) << 40))
          diags_.error(loc_of(*d), "dimension " + std::string(sv) + " is too large");
        t.tensor.shape.push_back(v);
      }
    }
    return t;
  }

  Scalar scalar(const Node& n) {
    if (n.is_type<g::true_lit>()) return Scalar::of_bool(true);
    if (n.is_type<g::false_lit>()) return Scalar::of_bool(false);
    if (n.is_type<g::special_float>()) {
      auto sv = n.string_view();
      bool neg = sv.front() == '-';
      if (neg) sv.remove_prefix(1);
      double v = sv == "inf" ? INFINITY : NAN;
      return Scalar::of_float(neg ? -v : v);
    }
    return scalar_text(n.string(), loc_of(n));
  }

  Scalar scalar_text(const std::string& text, SourceLoc loc) {
    std::string_view sv = text;
    bool is_float = sv.find_first_of(".eE") != std::string_view::npos;
    if (!is_float) {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), v);
      if (ec != std::errc() || ptr != sv.data() + sv.size())
        diags_.error(loc, "integer literal " + std::string(sv) + " is out of range for i64");
      return Scalar::of_int(v);
    }
    double v = 0;
    auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), v);
    if (ec == std::errc::result_out_of_range) {
      diags_.error(loc, "float literal " + std::string(sv) + " is out of range for f64");
    } else if (ec != std::errc() || ptr != sv.data() + sv.size()) {
      diags_.error(loc, "malformed float literal " + std::string(sv));
    }
    return Scalar::of_float(v);
  }

  // Flattens a (nested) tensor literal. The shape is read off the first
  // element at each depth; every other element must then agree with it.
  void tensor(const Node& n, size_t depth, Literal& lit, bool& ok) {
    bool nested = n.is_type<g::tensor_lit>();
    if (nested != (depth < lit.shape.size()) ||
        (nested && static_cast<int64_t>(n.children.size()) != lit.shape[depth])) {
      if (ok)
        diags_.error(loc_of(n),
                     "ragged tensor literal: every row must have the same length and depth");
      ok = false;
      return;
    }
    if (!nested) {
      lit.elems.push_back(scalar(n));
      return;
    }
    for (const auto& c : n.children) tensor(*c, depth + 1, lit, ok);
  }

  Literal literal(const Node& n) {
    Literal lit;
    if (!n.is_type<g::tensor_lit>()) {
      Scalar s = scalar(n);
      lit.kind = s.kind;
      lit.elems.push_back(s);
      return lit;
    }
    lit.is_tensor = true;
    for (const Node* c = &n; c->is_type<g::tensor_lit>(); c = c->children.front().get()) {
      lit.shape.push_back(static_cast<int64_t>(c->children.size()));
      if (c->children.empty()) break;
    }
    bool ok = true;
    tensor(n, 0, lit, ok);
    if (!ok) {
      lit.elems.clear();
      lit.shape = {0};
      return lit;
    }
    bool any_float = false, any_bool = false, any_num = false;
    for (const auto& e : lit.elems) {
      any_float |= e.kind == Scalar::Kind::Float;
      any_bool |= e.kind == Scalar::Kind::Bool;
      any_num |= e.kind != Scalar::Kind::Bool;
    }
    if (any_bool && any_num) diags_.error(loc_of(n), "tensor literal mixes booleans and numbers");
    lit.kind = any_bool ? Scalar::Kind::Bool : any_float ? Scalar::Kind::Float : Scalar::Kind::Int;
    return lit;
  }

  Pattern pattern(const Node& n) {
    Pattern pat;
    pat.loc = loc_of(n);
    if (n.is_type<g::pattern>()) {
      if (n.children.size() == 1) return pattern(*n.children[0]);
      pat.is_tuple = true;
      for (const auto& c : n.children) pat.elems.push_back(pattern(*c));
      return pat;
    }
    if (n.is_type<g::pat_tuple>()) {
      pat.is_tuple = true;
      for (const auto& c : n.children) pat.elems.push_back(pattern(*c));
      return pat;
    }
    // pat_name: name [bang]
    pat.name = n.children[0]->string();
    pat.in_place = n.children.size() > 1;
    pat.loc = loc_of(*n.children[0]);
    return pat;
  }

  // ---- expressions ----

  void call_args(const Node& n, size_t first, syntax::Expr& e) {
    bool seen_attr = false;
    for (size_t i = first; i < n.children.size(); ++i) {
      const Node& c = *n.children[i];
      if (c.is_type<g::arg_attr>()) {
        seen_attr = true;
        Attr a;
        a.key = c.children[0]->string();
        a.loc = loc_of(c);
        const Node& v = *c.children[1];
        if (v.is_type<g::dtype>()) {
          a.is_dtype = true;
          a.dtype = *parse_dtype(v.string_view());
        } else {
          a.lit = literal(v);
        }
        e.attrs.push_back(std::move(a));
      } else {
        if (seen_attr) diags_.error(loc_of(c), "positional argument after a keyword argument");
        e.args.push_back(expr(c));
      }
    }
  }

  // The start= and stop= of x[a:b] (an e_slice or slice_pos node) into e.
  static void slice_attrs(const Node& n, syntax::Expr& e) {
    for (const auto& b : n.children) {
      Attr a;
      a.key = b->is_type<g::slice_start>() ? "start" : "stop";
      a.lit.kind = Scalar::Kind::Int;
      a.lit.elems = {Scalar::of_int(std::stoll(b->string()))};
      a.loc = loc_of(*b);
      e.attrs.push_back(std::move(a));
    }
  }

  // x[p, q, ...] (an e_multi node m): the positions apply to x's dimensions
  // in order. An index takes that dimension away (x[i, j] is x[i][j]); a
  // slice or `:` keeps it, and a position after it applies to the
  // dimension after, that is to the columns of a matrix: x[:, j] is
  // transpose(x)[j], x[a:b, c:d] is transpose(transpose(x[a:b])[c:d]). So
  // after a slice only one position may follow. The result keeps the
  // positions as written, for `autobatch fmt`.
  syntax::Expr multi_index(syntax::Expr x, const Node& m, const SourceLoc& loc) {
    using K = syntax::Expr::Kind;
    std::vector<syntax::Expr> pos;  // an index, or a slice_form call without operand
    for (const auto& c : m.children) {
      syntax::Expr p;
      if (c->is_type<g::slice_pos>()) {
        p.kind = K::Call;
        p.name = "slice";
        p.slice_form = true;
        p.loc = loc_of(*c);
        p.name_loc = p.loc;
        slice_attrs(*c, p);
      } else {
        p = expr(*c);
      }
      pos.push_back(std::move(p));
    }
    std::vector<syntax::Expr> written{x};
    written.insert(written.end(), pos.begin(), pos.end());
    auto wrap = [&](syntax::Expr inner, const syntax::Expr& p) {
      syntax::Expr r;
      r.loc = loc;
      r.name_loc = p.loc;
      if (p.kind == K::Call && p.slice_form) {
        if (p.attrs.empty()) return inner;  // `:`: every row
        r = p;
        r.loc = loc;
        r.args = {std::move(inner)};
        return r;
      }
      r.kind = K::Index;
      r.args = {std::move(inner), p};
      return r;
    };
    auto transpose = [&](syntax::Expr inner) {
      syntax::Expr r;
      r.kind = K::Call;
      r.name = "transpose";
      r.loc = loc;
      r.name_loc = loc;
      r.args = {std::move(inner)};
      return r;
    };
    auto is_slice = [&](const syntax::Expr& p) { return p.kind == K::Call && p.slice_form; };
    syntax::Expr e = std::move(x);
    for (size_t k = 0; k < pos.size(); ++k) {
      e = wrap(std::move(e), pos[k]);
      if (!is_slice(pos[k]) || k + 1 == pos.size()) continue;
      if (k + 2 < pos.size()) {
        diags_.error(pos[k + 2].loc,
                     "after a slice only one more position may follow (the columns of a "
                     "matrix, as in X[:, j] or X[a:b, c:d])");
        break;
      }
      const syntax::Expr& q = pos[k + 1];
      if (is_slice(q) && q.attrs.empty()) break;  // X[a:b, :] is X[a:b]
      e = transpose(std::move(e));
      e = wrap(std::move(e), q);
      if (is_slice(q)) e = transpose(std::move(e));
      break;
    }
    e.written = std::move(written);
    e.parens = false;
    return e;
  }

  syntax::Expr expr(const Node& n) {
    using K = syntax::Expr::Kind;
    syntax::Expr e;
    e.loc = loc_of(n);
    e.name_loc = e.loc;
    if (n.is_type<g::e_paren>()) {
      e = expr(*n.children.front());
      e.parens = true;
      e.loc = loc_of(n);
      return e;
    }
    if (n.is_type<g::e_var>()) {
      e.kind = K::Var;
      e.name = n.string();
      return e;
    }
    if (n.is_type<g::number>() || n.is_type<g::special_float>() || n.is_type<g::true_lit>() ||
        n.is_type<g::false_lit>()) {
      e.kind = K::Lit;
      e.lit = literal(n);
      return e;
    }
    if (n.is_type<g::e_call>()) {
      e.kind = K::Call;
      size_t i = 0;
      if (n.children[0]->is_type<g::call_kw>()) {
        e.explicit_call = true;
        ++i;
      }
      e.name = n.children[i]->string();
      e.name_loc = loc_of(*n.children[i]);
      call_args(n, i + 1, e);
      return e;
    }
    if (n.is_type<g::e_tensor>()) {
      e.kind = K::Tensor;
      for (const auto& c : n.children) e.args.push_back(expr(*c));
      return e;
    }
    if (n.is_type<g::e_postfix>()) {
      // primary [i] [j] ...: left-nested Index nodes.
      e = expr(*n.children[0]);
      for (size_t i = 1; i < n.children.size(); ++i) {
        syntax::Expr idx;
        idx.kind = K::Index;
        idx.loc = loc_of(n);
        idx.loc.len = static_cast<uint32_t>(n.children[i]->m_end.byte - n.m_begin.byte);
        idx.name_loc = loc_of(*n.children[i]);
        idx.args.push_back(std::move(e));
        if (n.children[i]->is_type<g::e_multi>()) {
          e = multi_index(std::move(idx.args[0]), *n.children[i], idx.loc);
          continue;
        }
        if (n.children[i]->is_type<g::e_slice>()) {
          // x[a:b] is slice(x, start=a, stop=b).
          idx.kind = K::Call;
          idx.name = "slice";
          idx.slice_form = true;
          slice_attrs(*n.children[i], idx);
        } else {
          idx.args.push_back(expr(*n.children[i]->children.front()));
        }
        e = std::move(idx);
      }
      return e;
    }
    if (n.is_type<g::e_unary>() && n.children[1]->is_type<g::number>()) {
      // `-3` is one literal (so that -9223372036854775808 fits).
      std::string text = "-" + n.children[1]->string();
      e.kind = K::Lit;
      Scalar sc = scalar_text(text, loc_of(n));
      e.lit.kind = sc.kind;
      e.lit.elems.push_back(sc);
      return e;
    }
    if (n.is_type<g::e_unary>() || n.is_type<g::e_not>()) {
      e.kind = K::Unary;
      e.op = n.children[0]->string();
      e.name_loc = loc_of(*n.children[0]);
      e.args.push_back(expr(*n.children[1]));
      return e;
    }
    if (n.is_type<g::e_pow>()) {
      // base ** exponent (the exponent already nests to the right)
      e.kind = K::Binary;
      e.op = "**";
      e.name_loc = loc_of(*n.children[1]);
      e.args.push_back(expr(*n.children[0]));
      e.args.push_back(expr(*n.children[2]));
      return e;
    }
    if (n.is_type<g::e_mul>() || n.is_type<g::e_add>() || n.is_type<g::e_cmp>() ||
        n.is_type<g::e_and>() || n.is_type<g::e_or>()) {
      // a op b op c ...: left-associative
      e = expr(*n.children[0]);
      for (size_t i = 1; i + 1 < n.children.size(); i += 2) {
        syntax::Expr bin;
        bin.kind = K::Binary;
        bin.op = n.children[i]->string();
        bin.name_loc = loc_of(*n.children[i]);
        bin.loc = loc_of(n);
        const Node& rhs = *n.children[i + 1];
        bin.loc.len = static_cast<uint32_t>(rhs.m_end.byte - n.m_begin.byte);
        std::string_view text(n.m_begin.data, bin.loc.len);
        if (size_t nl = text.find('\n'); nl != std::string_view::npos)
          bin.loc.len = static_cast<uint32_t>(nl);
        bin.args.push_back(std::move(e));
        bin.args.push_back(expr(rhs));
        e = std::move(bin);
      }
      return e;
    }
    diags_.error(loc_of(n), "internal error: unexpected expression node");
    e.kind = K::Lit;
    e.lit.elems.push_back(Scalar::of_int(0));
    return e;
  }

  // ---- statements ----

  syntax::Body stmts(const Node& block) {
    syntax::Body out;
    for (const auto& c : block.children) {
      if (c->is_type<g::block_close>() || c->is_type<g::body_close>()) continue;
      out.push_back(stmt(*c));
    }
    return out;
  }

  static const Node* close_of(const Node& block) {
    for (const auto& c : block.children)
      if (c->is_type<g::block_close>() || c->is_type<g::body_close>()) return c.get();
    return nullptr;
  }

  // One bracket of an assignment's target (x[i] = v, x[i, j] += v): its
  // positions, each an index (a slice cannot be assigned to).
  void target_index(const Node& b, syntax::Stmt& s) {
    if (!b.is_type<g::e_multi>()) {
      s.exprs.push_back(expr(*b.children.front()));
      s.brackets.push_back(1);
      return;
    }
    for (const auto& c : b.children) {
      if (c->is_type<g::slice_pos>())
        diags_.error(loc_of(*c),
                     "a slice cannot be assigned to: set one element at a time (x[i, j] = v), "
                     "or build the new tensor and assign it whole");
      else
        s.exprs.push_back(expr(*c));
    }
    s.brackets.push_back(static_cast<uint32_t>(b.children.size()));
  }

  syntax::Stmt stmt(const Node& n) {
    using K = syntax::Stmt::Kind;
    syntax::Stmt s;
    s.loc = loc_of(n);
    s.lines = lines_of(n);
    if (n.is_type<g::s_if>()) {
      s.kind = K::If;
      // children: cond, stmt_block, else_if*, else_block?
      syntax::IfArm first;
      first.cond = expr(*n.children[0]);
      first.body = stmts(*n.children[1]);
      first.lines = {s.lines.first, static_cast<uint32_t>(n.children[1]->m_begin.line)};
      const Node* last_block = n.children[1].get();
      s.arms.push_back(std::move(first));
      for (size_t i = 2; i < n.children.size(); ++i) {
        const Node& c = *n.children[i];
        uint32_t header = static_cast<uint32_t>(close_of(*last_block)->m_begin.line);
        if (c.is_type<g::else_if>()) {
          syntax::IfArm arm;
          arm.cond = expr(*c.children[0]);
          arm.body = stmts(*c.children[1]);
          arm.lines = {header, static_cast<uint32_t>(c.children[1]->m_begin.line)};
          last_block = c.children[1].get();
          s.arms.push_back(std::move(arm));
        } else {
          s.has_else = true;
          s.else_body = stmts(*c.children[0]);
          s.else_lines = {header, static_cast<uint32_t>(c.children[0]->m_begin.line)};
          last_block = c.children[0].get();
        }
      }
      uint32_t close = static_cast<uint32_t>(close_of(*last_block)->m_begin.line);
      s.close_lines = {close, close};
      s.lines = s.arms[0].lines;
      return s;
    }
    if (n.is_type<g::s_for>()) {
      s.kind = K::For;
      s.target = name_ref(*n.children[0]);
      s.exprs.push_back(expr(*n.children[1]));
      s.body = stmts(*n.children[2]);
      s.lines = {s.lines.first, static_cast<uint32_t>(n.children[2]->m_begin.line)};
      uint32_t close = static_cast<uint32_t>(close_of(*n.children[2])->m_begin.line);
      s.close_lines = {close, close};
      return s;
    }
    if (n.is_type<g::s_while>()) {
      s.kind = K::While;
      s.exprs.push_back(expr(*n.children[0]));
      s.body = stmts(*n.children[1]);
      s.lines = {s.lines.first, static_cast<uint32_t>(n.children[1]->m_begin.line)};
      uint32_t close = static_cast<uint32_t>(close_of(*n.children[1])->m_begin.line);
      s.close_lines = {close, close};
      return s;
    }
    if (n.is_type<g::s_break>()) {
      s.kind = K::Break;
    } else if (n.is_type<g::s_continue>()) {
      s.kind = K::Continue;
    } else if (n.is_type<g::instr_pop>()) {
      s.kind = K::Pop;
      for (const auto& c : n.children) s.names.push_back(name_ref(*c));
    } else if (n.is_type<g::label_def>()) {
      s.kind = K::Label;
      s.target = name_ref(*n.children[0]);
    } else if (n.is_type<g::instr_assign>()) {
      s.kind = K::Assign;
      s.pat = pattern(*n.children[0]);
      s.exprs.push_back(expr(*n.children[1]));
    } else if (n.is_type<g::s_index_assign>()) {
      s.kind = K::IndexAssign;
      s.target = name_ref(*n.children[0]);
      for (size_t i = 1; i + 1 < n.children.size(); ++i) target_index(*n.children[i], s);
      s.exprs.push_back(expr(*n.children.back()));
    } else if (n.is_type<g::s_compound>()) {
      // target [i]... op= rhs
      const std::string op = n.children[n.children.size() - 2]->string();
      s.op = op.substr(0, op.size() - 1);
      s.target = name_ref(*n.children[0]);
      if (n.children.size() == 3) {
        s.kind = K::Assign;
        s.pat.name = s.target.name;
        s.pat.loc = s.target.loc;
        s.exprs.push_back(expr(*n.children.back()));
      } else {
        s.kind = K::IndexAssign;
        for (size_t i = 1; i + 2 < n.children.size(); ++i) target_index(*n.children[i], s);
        s.exprs.push_back(expr(*n.children.back()));
      }
    } else if (n.is_type<g::s_eval>()) {
      s.kind = K::Eval;
      s.exprs.push_back(expr(*n.children[0]));
    } else if (n.is_type<g::term_branch>()) {
      s.kind = K::Branch;
      s.target = name_ref(*n.children[0]);
      s.t1 = name_ref(*n.children[1]);
      s.t2 = name_ref(*n.children[2]);
    } else if (n.is_type<g::term_goto>()) {
      s.kind = K::Goto;
      s.t1 = name_ref(*n.children[0]);
    } else if (n.is_type<g::term_return>()) {
      s.kind = K::Return;
      for (const auto& c : n.children) s.exprs.push_back(expr(*c));
    } else if (n.is_type<g::term_push_goto>()) {
      s.kind = K::PushGoto;
      s.t1 = name_ref(*n.children[0]);
      s.t2 = name_ref(*n.children[1]);
    } else if (n.is_type<g::term_indirect_goto>()) {
      s.kind = K::IndirectGoto;
    } else {
      s.kind = K::Halt;
    }
    return s;
  }

  // A declared constraint (ir.h, Constraint) fits its parameter: a known
  // name, its number of bounds, an f64 type of the shape it needs, constant
  // bounds in order. Checked for every function, so that `check` finds a
  // misspelled constraint before `sample` does.
  void check_constraint(const Param& prm, const Constraint& con) {
    struct Kind {
      const char* name;
      size_t bounds;
      int rank;  // -1: any shape (elementwise), else the rank it needs
      int64_t min_k;
      const char* shape_text;
    };
    static const Kind kinds[] = {
        {"unconstrained", 0, -1, 0, ""},   {"positive", 0, -1, 0, ""},
        {"lower", 1, -1, 0, ""},           {"upper", 1, -1, 0, ""},
        {"bounded", 2, -1, 0, ""},         {"unit_interval", 0, -1, 0, ""},
        {"simplex", 0, 1, 2, "f64[K], K >= 2"},
        {"ordered", 0, 1, 1, "f64[K]"},    {"positive_ordered", 0, 1, 1, "f64[K]"},
        {"cholesky_corr", 0, 2, 2, "f64[K, K], K >= 2"},
        {"corr_matrix", 0, 2, 2, "f64[K, K], K >= 2"},
        {"cov_matrix", 0, 2, 1, "f64[K, K]"},
    };
    const std::string& who = prm.name.name;
    const Kind* kind = nullptr;
    for (const Kind& k : kinds)
      if (con.kind == k.name) kind = &k;
    if (!kind) {
      std::string all;
      for (const Kind& k : kinds) all += std::string(all.empty() ? "" : ", ") + k.name;
      diags_.error(con.loc, "unknown constraint '" + con.kind + "' on parameter '" + who +
                                "'; the constraints are " + all);
      return;
    }
    if (con.args.size() != kind->bounds) {
      static const char* forms[] = {"", "one bound, as in lower(0.0)",
                                    "two bounds, as in bounded(0.0, 1.0)"};
      diags_.error(con.loc, "constraint '" + con.kind + "' takes " +
                                (kind->bounds ? forms[kind->bounds] : std::string("no bounds")) +
                                "; it has " + std::to_string(con.args.size()));
      return;
    }
    const Type& t = *prm.type;
    if (t.is_tuple || t.tensor.dtype != DType::F64) {
      diags_.error(prm.type_loc, "parameter '" + who + "' is declared " + con.kind +
                                     ", so its type must be f64 (with a shape or not); it is " +
                                     t.str());
      return;
    }
    const auto& sh = t.tensor.shape;
    if (kind->rank >= 0) {
      bool fits = static_cast<int>(sh.size()) == kind->rank && sh[0] >= kind->min_k &&
                  (kind->rank == 1 || sh[1] == sh[0]);
      if (!fits) {
        diags_.error(prm.type_loc, "parameter '" + who + "' is declared " + con.kind +
                                       ", so its type must be " + kind->shape_text + "; it is " +
                                       t.str());
        return;
      }
    }
    auto number = [](const std::string& a, double& v) {
      char* end = nullptr;
      v = std::strtod(a.c_str(), &end);
      return !a.empty() && end && *end == '\0';
    };
    // A bound that is a number is finite (an infinite bound is no bound:
    // leave it out).
    for (const auto& a : con.args) {
      double v = 0;
      if (number(a, v) && !std::isfinite(v)) {
        diags_.error(con.loc, "parameter '" + who + "' is declared " + con.kind +
                                  " with the bound " + a +
                                  "; a bound must be finite (declare no bound instead)");
        return;
      }
    }
    // Both bounds numbers: lower below upper (a name is checked when sampling).
    if (con.kind == "bounded") {
      double lo = 0, hi = 0;
      if (number(con.args[0], lo) && number(con.args[1], hi) && !(lo < hi))
        diags_.error(con.loc, "parameter '" + who + "' is declared bounded(" + con.args[0] + ", " +
                                  con.args[1] + "): the lower bound must be below the upper");
    }
  }

  // A bound of a declared constraint: its text as written (on one line, its
  // comments left out, so that it reads back as one expression), and
  // the variables it reads (`sample` checks that each is a data argument or
  // a parameter declared before).
  static void constraint_bound(const Node& a, Constraint& con) {
    std::string text;
    bool comment = false;
    for (char ch : a.string()) {
      if (ch == '\n' || ch == '\r') comment = false;
      if (ch == '#') comment = true;
      if (!comment) text += ch == '\n' || ch == '\r' || ch == '\t' ? ' ' : ch;
    }
    con.args.push_back(std::move(text));
    std::vector<std::string> reads;
    auto walk = [&](auto&& self, const Node& x) -> void {
      if (x.is_type<g::e_var>()) {
        std::string v = x.string();
        if (std::find(reads.begin(), reads.end(), v) == reads.end()) reads.push_back(v);
        return;
      }
      for (const auto& c : x.children) self(self, *c);
    };
    walk(walk, a);
    con.reads.push_back(std::move(reads));
  }

  syntax::Func function(const Node& n) {
    syntax::Func sf;
    Function& f = sf.header;
    f.loc = loc_of(n);
    for (const auto& c : n.children) {
      if (c->is_type<g::func_name>()) {
        f.name = name_ref(*c);
      } else if (c->is_type<g::param>() || c->is_type<g::param_next>()) {
        Param prm;
        prm.name = name_ref(*c->children[0]);
        if (c->children.size() > 1) {
          prm.type = type(*c->children[1]);
          prm.type_loc = loc_of(*c->children[1]);
        }
        if (c->children.size() > 2) {
          const Node& k = *c->children[2];
          Constraint con;
          con.loc = loc_of(k);
          for (const auto& a : k.children) {
            if (a->is_type<g::constraint_name>())
              con.kind = a->string();
            else
              constraint_bound(*a, con);
          }
          check_constraint(prm, con);
          prm.constraint = std::move(con);
        }
        f.params.push_back(std::move(prm));
      } else if (c->is_type<g::entry_mark>()) {
        f.is_entry = true;
      } else if (c->is_type<g::inline_mark>()) {
        f.is_inline = true;
      } else if (c->is_type<g::results>()) {
        f.results_declared = true;
        f.results_loc = loc_of(*c);
        // Types, each after its name if it has one.
        std::vector<std::string> names;
        std::string pending;
        for (const auto& t : c->children) {
          if (t->is_type<g::result_name>()) {
            pending = t->string();
            continue;
          }
          f.results.push_back(type(*t));
          names.push_back(std::move(pending));
          pending.clear();
        }
        if (std::any_of(names.begin(), names.end(), [](const auto& x) { return !x.empty(); }))
          f.result_names = std::move(names);
      } else if (c->is_type<g::body>()) {
        sf.body = stmts(*c);
        sf.lines = {static_cast<uint32_t>(n.m_begin.line), static_cast<uint32_t>(c->m_begin.line)};
        uint32_t close = static_cast<uint32_t>(close_of(*c)->m_begin.line);
        sf.close_lines = {close, close};
      }
    }
    for (const auto& s : sf.body) sf.block_form |= s.kind == syntax::Stmt::Kind::Label;
    return sf;
  }

  VarDecl var_decl(const Node& n) {
    VarDecl v;
    v.loc = loc_of(n);
    v.name = name_ref(*n.children[0]);
    size_t i = 1;
    if (n.children.size() > 2) v.type = type(*n.children[i++]);
    v.storage = *parse_storage_class(n.children[i]->string_view());
    return v;
  }

  syntax::ProgramItem program(const Node& n) {
    syntax::ProgramItem pi;
    Program& prog = pi.header;
    prog.loc = loc_of(n);
    for (const auto& c : n.children) {
      if (c->is_type<g::func_name>()) {
        prog.entry = name_ref(*c);
      } else if (c->is_type<g::prog_inputs>()) {
        for (const auto& v : c->children) prog.inputs.push_back(name_ref(*v));
      } else if (c->is_type<g::prog_outputs>()) {
        std::vector<std::string> names;
        std::string pending;
        for (const auto& v : c->children) {
          if (v->is_type<g::prog_out_name>()) {
            pending = v->string();
            continue;
          }
          prog.outputs.push_back(name_ref(*v));
          names.push_back(std::move(pending));
          pending.clear();
        }
        if (std::any_of(names.begin(), names.end(), [](const auto& x) { return !x.empty(); }))
          prog.output_names = std::move(names);
      } else if (c->is_type<g::body>()) {
        pi.body = stmts(*c);
        pi.lines = {static_cast<uint32_t>(n.m_begin.line), static_cast<uint32_t>(c->m_begin.line)};
        uint32_t close = static_cast<uint32_t>(close_of(*c)->m_begin.line);
        pi.close_lines = {close, close};
      }
    }
    return pi;
  }
};

}  // namespace

// The grammar recurses on every '(' and '['; bound the nesting before
// parsing so a hostile file cannot overflow the stack.
constexpr int kMaxNesting = 64;

static std::optional<SourceLoc> too_deep(const std::string& text) {
  int depth = 0;
  uint32_t line = 1, col = 1;
  bool comment = false;
  for (char c : text) {
    if (c == '\n') {
      ++line;
      col = 1;
      comment = false;
      continue;
    }
    if (!comment) {
      if (c == '#')
        comment = true;
      else if (c == '(' || c == '[') {
        if (++depth > kMaxNesting) return SourceLoc{line, col, 1};
      } else if ((c == ')' || c == ']') && depth > 0) {
        --depth;
      }
    }
    ++col;
  }
  return std::nullopt;
}

namespace {

// The token a float-literal error points at, and what to write instead.
std::string float_advice(const std::string& text, size_t at) {
  size_t end = at;
  while (end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.'))
    ++end;
  std::string tok = text.substr(at, end - at);
  if (const size_t dots = tok.find(".."); dots != std::string::npos) {
    // `5..200` or `0..n`: a range as Rust, Kotlin or Swift write it.
    size_t stop = at + dots + 2;
    while (stop < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[stop])) || text[stop] == '_'))
      ++stop;
    const std::string lo = tok.substr(0, dots);
    const std::string hi = text.substr(at + dots + 2, stop - at - dots - 2);
    const std::string written = text.substr(at, stop - at);
    if (!lo.empty() && !hi.empty())
      return "'" + written + "' is not a range in this language: write range(" + lo + ", " + hi +
             ") (from " + lo + " up to " + hi + ", " + hi + " excluded)";
    return "'" + written + "' is not a range in this language: write range(A, B) (B excluded)";
  }
  std::string fix = tok;
  if (!fix.empty() && fix.front() == '.') fix = "0" + fix;
  if (!fix.empty() && fix.back() == '.') fix += "0";
  // An exponent after `1.` stays: `1.e5` is `1.0e5`.
  size_t exp = end;
  if (exp < text.size() && (text[exp] == 'e' || text[exp] == 'E')) {
    ++exp;
    if (exp < text.size() && (text[exp] == '+' || text[exp] == '-')) ++exp;
    size_t digits = exp;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
    if (digits > exp) {
      tok += text.substr(end, digits - end);
      fix += text.substr(end, digits - end);
    }
  }
  return "float literal '" + tok + "' needs digits on both sides of the point: write '" + fix + "'";
}

// What to write instead, where a syntax error stands at a spelling from
// another language ("" when it does not).
std::string foreign_advice(const std::string& text, size_t at) {
  auto starts = [&](const char* w) { return text.compare(at, std::strlen(w), w) == 0; };
  if (starts("&&")) return "'&&' is not an operator in this language: write 'and'";
  if (starts("||")) return "'||' is not an operator in this language: write 'or'";
  if (starts("?"))
    return "there is no '? :' in this language: write select(condition, a, b), or an if/else";
  if (starts("~"))
    return "there is no '~' statement in this language: a model's log density is its function's "
           "result; add each term to it, as in 'lp += normal_lpdf(y, mu, sigma)' (import dists), "
           "and return lp";
  // A declaration keyword before the name the error stands at: `var n = 0`.
  size_t b = at;
  while (b > 0 && (text[b - 1] == ' ' || text[b - 1] == '\t')) --b;
  size_t w = b;
  while (w > 0 && (std::isalnum(static_cast<unsigned char>(text[w - 1])) || text[w - 1] == '_'))
    --w;
  const std::string word = text.substr(w, b - w);
  size_t line = w;
  while (line > 0 && (text[line - 1] == ' ' || text[line - 1] == '\t')) --line;
  const bool first_on_line = line == 0 || text[line - 1] == '\n';
  if (first_on_line && (word == "var" || word == "let" || word == "const" || word == "auto"))
    return "'" + word + "' is not needed: a variable is made by assigning it (write 'x = 0')";
  return "";
}

}  // namespace

namespace syntax {

Result<File> parse_syntax(SourceRef source, uint32_t file_tag) {
  struct Tag {
    explicit Tag(uint32_t t) { t_file_tag = t; }
    ~Tag() { t_file_tag = 0; }
  } tag(file_tag);
  Diagnostics diags(source);
  if (auto loc = too_deep(source->text())) {
    diags.error(*loc, "brackets nested more than " + std::to_string(kMaxNesting) + " levels deep");
    return diags;
  }
  p::memory_input in(source->text().data(), source->text().size(), source->name());
  try {
    auto root = p::parse_tree::parse<g::file, selector, p::nothing, g::control>(in);
    if (!root) {
      diags.error({1, 1, 1}, "could not parse the file");
      return diags;
    }
    Builder builder(diags);
    File f = builder.build(*root);
    f.source = source;
    if (diags.has_errors()) return diags;
    attach_comments(f, source->text());
    return f;
  } catch (const p::parse_error& e) {
    const auto& pos = e.positions().front();
    SourceLoc loc{static_cast<uint32_t>(pos.line), static_cast<uint32_t>(pos.column), 1};
    std::string msg(e.message());
    // The generic PEGTL message names internal rules; make it readable.
    if (msg.rfind("parse error matching", 0) == 0) msg = "syntax error";
    if (msg == g::error_message<g::bad_float>) {
      msg = float_advice(source->text(), pos.byte);
      size_t q = msg.find('\'');
      loc.len = static_cast<uint32_t>(msg.find('\'', q + 1) - q - 1);
    } else if (std::string advice = foreign_advice(source->text(), pos.byte); !advice.empty()) {
      msg = advice;
    }
    bool at_end = pos.byte >= source->text().size();
    diags.error(loc,
                std::string("syntax error: ") + (at_end ? "unexpected end of file: " : "") + msg);
    return diags;
  }
}

}  // namespace syntax

static Result<SourceRef> read_source(const std::string& path);

namespace {

// The directory `import NAME` looks in beside a file; none for a shipped
// module or a text without a file.
std::optional<std::filesystem::path> directory_of(const SourceFile& f) {
  if (f.name().rfind(kShippedPrefix, 0) == 0) return std::nullopt;
  if (f.name().empty() || f.name().front() == '<') return std::filesystem::path(".");
  std::filesystem::path p(f.name());
  return p.has_parent_path() ? p.parent_path() : std::filesystem::path(".");
}

// The file an import names, and a key that is the same for the same file.
Result<std::pair<std::string, SourceRef>> find_import(const syntax::ImportItem& im,
                                                      const SourceFile& from,
                                                      const SourceRef& reporting) {
  std::optional<std::filesystem::path> dir = directory_of(from);
  std::error_code ec;
  auto read = [&](const std::filesystem::path& p) -> Result<std::pair<std::string, SourceRef>> {
    if (!std::filesystem::is_regular_file(p, ec)) {  // not a directory, a device or stdin
      Diagnostics d(reporting);
      d.error(im.loc, "import: '" + p.string() + "' is not a file that can be read");
      return d;
    }
    Result<SourceRef> src = read_source(p.string());
    if (!src) {
      Diagnostics d(reporting);
      d.error(im.loc, "import: " + src.diags().items().front().message);
      return d;
    }
    std::string key = std::filesystem::weakly_canonical(p, ec).string();
    return std::make_pair(key, *src);
  };
  if (im.is_path) {
    std::filesystem::path p(im.target);
    if (p.is_relative() && dir) p = *dir / p;
    return read(p);
  }
  if (dir) {
    std::filesystem::path p = *dir / (im.target + ".ab");
    if (std::filesystem::is_regular_file(p, ec)) return read(p);
  }
  if (std::optional<std::string_view> text = shipped_module(im.target))
    return std::make_pair(std::string(kShippedPrefix) + im.target,
                          SourceRef(std::make_shared<SourceFile>(
                              std::string(kShippedPrefix) + im.target + ".ab", std::string(*text))));
  Diagnostics d(reporting);
  std::string names;
  for (const auto& n : shipped_module_names()) names += (names.empty() ? "" : ", ") + n;
  d.error(im.loc, "import: no module '" + im.target + "'" +
                      (dir ? ": no " + (*dir / (im.target + ".ab")).string() + "," : ":") +
                      " and the library shipped with autobatch has no such module (it has " +
                      names + ")");
  return d;
}

}  // namespace

Result<Module> parse_module(SourceRef source) {
  Result<syntax::File> f = syntax::parse_syntax(source);
  if (!f) return f.diags();
  // Warnings about the user's own functions, before the imported ones join
  // them; none for a lowered program (the compiler's, not the user's).
  std::vector<ModuleWarning> warnings;
  bool lowered = false;
  for (const auto& item : f->items) lowered |= item.kind == syntax::Item::Kind::Program;
  if (!lowered) syntax::unused_variables(*f, warnings);
  // Imports, breadth first: every file once, its functions added to the
  // module; an imported file's locations carry its index (source.h).
  std::vector<SourceRef> imported;
  std::vector<std::pair<syntax::ImportItem, SourceRef>> todo;
  std::set<std::string> seen;
  {
    std::error_code ec;
    seen.insert(std::filesystem::weakly_canonical(source->name(), ec).string());
  }
  for (const auto& item : f->items)
    if (item.kind == syntax::Item::Kind::Import) todo.emplace_back(item.import, source);
  for (size_t i = 0; i < todo.size(); ++i) {
    auto reporting = std::make_shared<SourceFile>(source->name(), source->text(), imported);
    auto found = find_import(todo[i].first, *todo[i].second, reporting);
    if (!found) return found.diags();
    if (!seen.insert(found->first).second) continue;
    const uint32_t index = static_cast<uint32_t>(imported.size() + 1);
    if (index >= (uint32_t{1} << (32 - kFileShift))) {
      Diagnostics d(reporting);
      d.error(todo[i].first.loc, "import: more than 255 imported files");
      return d;
    }
    Result<syntax::File> g = syntax::parse_syntax(found->second, index << kFileShift);
    if (!g) return g.diags();
    imported.push_back(found->second);
    for (auto& item : g->items) {
      if (item.kind == syntax::Item::Kind::Import) {
        todo.emplace_back(item.import, found->second);
      } else if (item.kind == syntax::Item::Kind::Func) {
        f->items.push_back(std::move(item));
      } else {
        Diagnostics d(found->second);
        d.error({}, "an imported module holds functions (and imports) only; this one holds a "
                    "lowered program");
        return d;
      }
    }
  }
  if (!imported.empty())
    source = std::make_shared<SourceFile>(source->name(), source->text(), std::move(imported));
  Diagnostics diags(source);
  Module m = syntax::to_blocks(*f, diags);
  m.source = source;
  m.warnings = std::move(warnings);
  if (!diags.has_errors()) inline_calls(m, diags);
  if (diags.has_errors()) return diags;
  return m;
}

Result<Module> parse_text(const std::string& name, std::string text) {
  return parse_module(std::make_shared<SourceFile>(name, std::move(text)));
}

static Result<SourceRef> read_source(const std::string& path) {
  std::string text;
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    text = ss.str();
  } else {
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) {
      Diagnostics d;
      d.error({}, "cannot read '" + path + "': it is a directory");
      return d;
    }
    std::ifstream f(path, std::ios::binary);
    if (!f) {
      Diagnostics d;
      d.error({}, "cannot read '" + path + "': no such file or not readable");
      return d;
    }
    std::ostringstream ss;
    ss << f.rdbuf();
    text = ss.str();
  }
  return SourceRef(std::make_shared<SourceFile>(path == "-" ? "<stdin>" : path, std::move(text)));
}

Result<Module> parse_file(const std::string& path) {
  Result<SourceRef> src = read_source(path);
  if (!src) return src.diags();
  return parse_module(*src);
}

namespace {
Result<std::string> format_source(const SourceRef& src) {
  Result<syntax::File> f = syntax::parse_syntax(src);
  if (!f) return f.diags();
  Diagnostics d(src);
  (void)syntax::to_blocks(*f, d);  // structural errors stop fmt as they stop run
  if (d.has_errors()) return d;
  return syntax::format(*f);
}
}  // namespace

Result<std::string> format_file(const std::string& path) {
  Result<SourceRef> src = read_source(path);
  if (!src) return src.diags();
  return format_source(*src);
}

Result<std::string> format_text(const std::string& name, std::string text) {
  return format_source(std::make_shared<SourceFile>(name, std::move(text)));
}

}  // namespace ab
