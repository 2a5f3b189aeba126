#include "parse/parser.h"

#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <tao/pegtl/contrib/parse_tree.hpp>

#include "parse/grammar.h"

namespace ab {
namespace {

namespace p = tao::pegtl;
namespace g = grammar;
using Node = p::parse_tree::node;

template <typename Rule>
using selector = p::parse_tree::selector<
    Rule, p::parse_tree::store_content::on<
              g::name, g::func_name, g::callee, g::op_name, g::label_ref, g::cond_ref, g::popped,
              g::var_name, g::prog_var, g::prog_var_next, g::number, g::special_float, g::true_lit,
              g::false_lit, g::dim, g::dtype, g::storage, g::bang, g::tensor_lit, g::shape,
              g::type_tensor, g::type_tuple, g::param, g::param_next, g::results, g::pat_tuple,
              g::pat_name, g::pattern, g::arg_attr, g::rhs_call, g::rhs_prim, g::rhs_copy,
              g::instr_assign, g::instr_call, g::instr_pop, g::term_branch, g::term_goto,
              g::term_return, g::term_push_goto, g::term_indirect_goto, g::term_halt, g::label_def,
              g::func_def, g::var_decl, g::program_def, g::prog_inputs, g::prog_outputs, g::body>>;

SourceLoc loc_of(const Node& n) {
  SourceLoc l;
  l.line = static_cast<uint32_t>(n.m_begin.line);
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

  Module build(const Node& root) {
    Module m;
    for (const auto& c : root.children) {
      if (c->is_type<g::func_def>()) {
        m.funcs.push_back(function(*c));
      } else if (c->is_type<g::var_decl>()) {
        pending_vars_.push_back(var_decl(*c));
      } else if (c->is_type<g::program_def>()) {
        if (m.program) {
          diags_.error(loc_of(*c), "a file holds at most one lowered program");
          continue;
        }
        m.program = program(*c);
      }
    }
    if (!pending_vars_.empty()) {
      if (m.program) {
        m.program->vars = std::move(pending_vars_);
      } else {
        diags_.error(
            pending_vars_.front().loc,
            "'var' declarations belong to a lowered program, and this file has no 'program'");
      }
    }
    if (m.program && !m.funcs.empty())
      diags_.error(m.funcs.front().loc,
                   "a lowered program cannot be mixed with 'func' definitions in one file");
    return m;
  }

 private:
  Diagnostics& diags_;
  std::vector<VarDecl> pending_vars_;

  static NameRef name_ref(const Node& n) { return {n.string(), loc_of(n)}; }

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
    auto sv = n.string_view();
    if (n.is_type<g::special_float>()) {
      bool neg = sv.front() == '-';
      if (neg) sv.remove_prefix(1);
      double v = sv == "inf" ? INFINITY : NAN;
      return Scalar::of_float(neg ? -v : v);
    }
    bool is_float = sv.find_first_of(".eE") != std::string_view::npos;
    if (!is_float) {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), v);
      if (ec != std::errc() || ptr != sv.data() + sv.size())
        diags_.error(loc_of(n), "integer literal " + std::string(sv) + " is out of range for i64");
      return Scalar::of_int(v);
    }
    double v = 0;
    auto [ptr, ec] = std::from_chars(sv.data(), sv.data() + sv.size(), v);
    if (ec == std::errc::result_out_of_range) {
      diags_.error(loc_of(n), "float literal " + std::string(sv) + " is out of range for f64");
    } else if (ec != std::errc() || ptr != sv.data() + sv.size()) {
      diags_.error(loc_of(n), "malformed float literal " + std::string(sv));
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

  Operand operand(const Node& n) {
    Operand o;
    o.loc = loc_of(n);
    if (n.is_type<g::name>()) {
      o.is_var = true;
      o.name = n.string();
    } else {
      o.is_var = false;
      o.lit = literal(n);
    }
    return o;
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

  void args(const Node& n, size_t first, Instr& in) {
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
        in.attrs.push_back(std::move(a));
      } else {
        if (seen_attr) diags_.error(loc_of(c), "positional argument after a keyword argument");
        in.args.push_back(operand(c));
      }
    }
  }

  Instr instr(const Node& n) {
    Instr in;
    in.loc = loc_of(n);
    if (n.is_type<g::instr_pop>()) {
      in.kind = InstrKind::Pop;
      in.out.is_tuple = true;  // a pop writes nothing
      for (const auto& c : n.children) in.popped.push_back(name_ref(*c));
      return in;
    }
    const Node* rhs = nullptr;
    if (n.is_type<g::instr_call>()) {
      in.out.is_tuple = true;  // no results kept
      rhs = &n;
    } else {
      in.out = pattern(*n.children[0]);
      rhs = n.children[1].get();
    }
    if (rhs->is_type<g::rhs_copy>()) {
      in.kind = InstrKind::Copy;
      in.args.push_back(operand(*rhs->children[0]));
      return in;
    }
    in.kind = rhs->is_type<g::rhs_prim>() ? InstrKind::Prim : InstrKind::Call;
    in.callee = name_ref(*rhs->children[0]);
    if (in.kind == InstrKind::Prim) {
      if (const PrimInfo* info = find_prim(in.callee.name)) in.prim = info->id;
    }
    args(*rhs, 1, in);
    return in;
  }

  Terminator terminator(const Node& n) {
    Terminator t;
    t.loc = loc_of(n);
    if (n.is_type<g::term_branch>()) {
      t.kind = TermKind::Branch;
      t.cond = name_ref(*n.children[0]);
      t.target = name_ref(*n.children[1]);
      t.target2 = name_ref(*n.children[2]);
    } else if (n.is_type<g::term_goto>()) {
      t.kind = TermKind::Goto;
      t.target = name_ref(*n.children[0]);
    } else if (n.is_type<g::term_return>()) {
      t.kind = TermKind::Return;
      for (const auto& c : n.children) t.values.push_back(operand(*c));
    } else if (n.is_type<g::term_push_goto>()) {
      t.kind = TermKind::PushGoto;
      t.target = name_ref(*n.children[0]);
      t.target2 = name_ref(*n.children[1]);
    } else if (n.is_type<g::term_indirect_goto>()) {
      t.kind = TermKind::IndirectGoto;
    } else {
      t.kind = TermKind::Halt;
    }
    return t;
  }

  static bool is_terminator(const Node& n) {
    return n.is_type<g::term_branch>() || n.is_type<g::term_goto>() ||
           n.is_type<g::term_return>() || n.is_type<g::term_push_goto>() ||
           n.is_type<g::term_indirect_goto>() || n.is_type<g::term_halt>();
  }

  // Groups the body's lines into blocks: a label opens a block, a terminator
  // closes it.
  std::vector<Block> blocks(const Node& body, const std::string& owner) {
    std::vector<Block> out;
    bool open = false;
    for (const auto& c : body.children) {
      if (c->is_type<g::label_def>()) {
        if (open && out.back().label.name != "<unlabelled>")
          diags_.error(
              loc_of(*c),
              "block '" + out.back().label.name +
                  "' does not end with a terminator (branch, goto or return) before label '" +
                  c->children[0]->string() + "'");
        Block b;
        b.label = name_ref(*c->children[0]);
        out.push_back(std::move(b));
        open = true;
      } else if (!open) {
        if (out.empty())
          diags_.error(loc_of(*c), "expected a label to start the first block of '" + owner + "'");
        else
          diags_.error(loc_of(*c), "this follows the terminator of block '" +
                                       out.back().label.name + "'; start a new block with a label");
        // Keep going so later errors are reported too; the block made up
        // here to hold the stray line reports nothing of its own.
        Block b;
        b.label.name = "<unlabelled>";
        b.label.loc = loc_of(*c);
        out.push_back(std::move(b));
        open = true;
        if (is_terminator(*c)) {
          out.back().term = terminator(*c);
          open = false;
        } else {
          out.back().instrs.push_back(instr(*c));
        }
      } else if (is_terminator(*c)) {
        out.back().term = terminator(*c);
        open = false;
      } else {
        out.back().instrs.push_back(instr(*c));
      }
    }
    if (open && out.back().label.name != "<unlabelled>")
      diags_.error(out.back().label.loc,
                   "block '" + out.back().label.name +
                       "' does not end with a terminator (branch, goto or return)");
    if (out.empty()) diags_.error(loc_of(body), "'" + owner + "' has no blocks");
    return out;
  }

  Function function(const Node& n) {
    Function f;
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
        f.params.push_back(std::move(prm));
      } else if (c->is_type<g::results>()) {
        f.results_declared = true;
        f.results_loc = loc_of(*c);
        for (const auto& t : c->children) f.results.push_back(type(*t));
      } else if (c->is_type<g::body>()) {
        f.blocks = blocks(*c, f.name.name);
      }
    }
    return f;
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

  Program program(const Node& n) {
    Program prog;
    prog.loc = loc_of(n);
    for (const auto& c : n.children) {
      if (c->is_type<g::func_name>()) {
        prog.entry = name_ref(*c);
      } else if (c->is_type<g::prog_inputs>()) {
        for (const auto& v : c->children) prog.inputs.push_back(name_ref(*v));
      } else if (c->is_type<g::prog_outputs>()) {
        for (const auto& v : c->children) prog.outputs.push_back(name_ref(*v));
      } else if (c->is_type<g::body>()) {
        prog.blocks = blocks(*c, prog.entry.name);
      }
    }
    return prog;
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

Result<Module> parse_module(SourceRef source) {
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
    Module m = builder.build(*root);
    m.source = source;
    if (diags.has_errors()) return diags;
    return m;
  } catch (const p::parse_error& e) {
    const auto& pos = e.positions().front();
    SourceLoc loc{static_cast<uint32_t>(pos.line), static_cast<uint32_t>(pos.column), 1};
    std::string msg(e.message());
    // The generic PEGTL message names internal rules; make it readable.
    if (msg.rfind("parse error matching", 0) == 0) msg = "syntax error";
    bool at_end = pos.byte >= source->text().size();
    diags.error(loc,
                std::string("syntax error: ") + (at_end ? "unexpected end of file: " : "") + msg);
    return diags;
  }
}

Result<Module> parse_text(const std::string& name, std::string text) {
  return parse_module(std::make_shared<SourceFile>(name, std::move(text)));
}

Result<Module> parse_file(const std::string& path) {
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
  return parse_text(path == "-" ? "<stdin>" : path, std::move(text));
}

}  // namespace ab
