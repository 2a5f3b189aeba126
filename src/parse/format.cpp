// `fmt`: the canonical text of a syntax tree, both forms, every comment in
// place. Labels sit in column 0, everything else is indented two spaces per
// level; expressions keep the parentheses that were written and are printed
// with one space around infix operators.
#include "ir/printer.h"
#include "parse/syntax.h"

namespace ab::syntax {
namespace {

using EK = Expr::Kind;
using SK = Stmt::Kind;

std::string attr_text(const Attr& a) {
  return a.key + "=" + (a.is_dtype ? std::string(dtype_name(a.dtype)) : print_literal(a.lit));
}

std::string slice_text(const Expr& e) {
  std::string start, stop;
  for (const auto& a : e.attrs) (a.key == "start" ? start : stop) = print_literal(a.lit);
  return start + ":" + stop;
}

std::string expr_text(const Expr& e) {
  std::string out;
  if (!e.written.empty()) {  // x[p, q, ...], as written
    out = expr_text(e.written[0]) + "[";
    for (size_t i = 1; i < e.written.size(); ++i) {
      const Expr& p = e.written[i];
      out += (i > 1 ? ", " : "") + (p.slice_form && p.args.empty() ? slice_text(p) : expr_text(p));
    }
    out += "]";
    return e.parens ? "(" + out + ")" : out;
  }
  switch (e.kind) {
    case EK::Var:
      out = e.name;
      break;
    case EK::Lit:
      out = print_literal(e.lit);
      break;
    case EK::Call: {
      if (e.slice_form) {  // x[a:b], as written
        out = expr_text(e.args[0]) + "[" + slice_text(e) + "]";
        break;
      }
      out = (e.explicit_call ? "call " : "") + e.name + "(";
      bool first = true;
      for (const auto& a : e.args) {
        if (!first) out += ", ";
        first = false;
        out += expr_text(a);
      }
      for (const auto& a : e.attrs) {
        if (!first) out += ", ";
        first = false;
        out += attr_text(a);
      }
      out += ")";
      break;
    }
    case EK::Unary:
      out = e.op == "not" ? "not " + expr_text(e.args[0]) : "-" + expr_text(e.args[0]);
      break;
    case EK::Binary:
      out = expr_text(e.args[0]) + " " + e.op + " " + expr_text(e.args[1]);
      break;
    case EK::Index:
      out = expr_text(e.args[0]) + "[" + expr_text(e.args[1]) + "]";
      break;
    case EK::Tensor:
      out = "[";
      for (size_t i = 0; i < e.args.size(); ++i) out += (i ? ", " : "") + expr_text(e.args[i]);
      out += "]";
      break;
  }
  return e.parens ? "(" + out + ")" : out;
}

std::string names(const std::vector<NameRef>& ns) {
  std::string out;
  for (size_t i = 0; i < ns.size(); ++i) out += (i ? ", " : "") + ns[i].name;
  return out;
}

class Printer {
 public:
  std::string out;

  void line(int indent, const std::string& text, const Notes& n, int comment_indent = -1) {
    std::string pad(static_cast<size_t>(comment_indent < 0 ? indent : comment_indent) * 2, ' ');
    for (const auto& c : n.before) out += pad + c + "\n";
    out += std::string(static_cast<size_t>(indent) * 2, ' ') + text;
    for (const auto& c : n.after) out += " " + c;
    out += "\n";
  }

  void body(const Body& b, int indent, bool block_form) {
    for (const auto& s : b) stmt(s, indent, block_form);
  }

  void stmt(const Stmt& s, int indent, bool block_form) {
    switch (s.kind) {
      case SK::If: {
        for (size_t i = 0; i < s.arms.size(); ++i) {
          const IfArm& arm = s.arms[i];
          line(indent, (i ? "} else if " : "if ") + expr_text(arm.cond) + " {", arm.notes,
               i ? indent + 1 : indent);
          body(arm.body, indent + 1, block_form);
        }
        if (s.has_else) {
          line(indent, "} else {", s.else_notes, indent + 1);
          body(s.else_body, indent + 1, block_form);
        }
        line(indent, "}", s.close_notes, indent + 1);
        return;
      }
      case SK::For:
        line(indent, "for " + s.target.name + " in " + expr_text(s.exprs[0]) + " {", s.notes);
        body(s.body, indent + 1, block_form);
        line(indent, "}", s.close_notes, indent + 1);
        return;
      case SK::While:
        line(indent, "while " + expr_text(s.exprs[0]) + " {", s.notes);
        body(s.body, indent + 1, block_form);
        line(indent, "}", s.close_notes, indent + 1);
        return;
      case SK::Label:
        line(0, s.target.name + ":", s.notes);
        return;
      default:
        line(indent, simple(s), s.notes);
    }
  }

  static std::string simple(const Stmt& s) {
    switch (s.kind) {
      case SK::Assign:
        return print_pattern(s.pat) + " " + s.op + "= " + expr_text(s.exprs[0]);
      case SK::IndexAssign: {
        std::string out = s.target.name;
        size_t i = 0;
        for (uint32_t n : s.brackets) {  // the brackets as written
          out += "[";
          for (uint32_t k = 0; k < n && i + 1 < s.exprs.size(); ++k, ++i)
            out += (k ? ", " : "") + expr_text(s.exprs[i]);
          out += "]";
        }
        for (; i + 1 < s.exprs.size(); ++i) out += "[" + expr_text(s.exprs[i]) + "]";
        return out + " " + s.op + "= " + expr_text(s.exprs.back());
      }
      case SK::Eval:
        return expr_text(s.exprs[0]);
      case SK::Break:
        return "break";
      case SK::Continue:
        return "continue";
      case SK::Return: {
        std::string out = "return";
        for (size_t i = 0; i < s.exprs.size(); ++i) out += (i ? ", " : " ") + expr_text(s.exprs[i]);
        return out;
      }
      case SK::Branch:
        return "branch " + s.target.name + ", " + s.t1.name + ", " + s.t2.name;
      case SK::Goto:
        return "goto " + s.t1.name;
      case SK::Pop:
        return "pop " + names(s.names);
      case SK::PushGoto:
        return "push_goto " + s.t1.name + ", " + s.t2.name;
      case SK::IndirectGoto:
        return "indirect_goto";
      case SK::Halt:
        return "halt";
      default:
        return "?";
    }
  }
};

}  // namespace

std::string format(const File& f) {
  Printer p;
  for (size_t i = 0; i < f.items.size(); ++i) {
    const Item& item = f.items[i];
    // A blank line between functions, and between the variables of a
    // lowered program and the program.
    // (imports stay together at the top).
    if (i && item.kind != Item::Kind::Var &&
        !(item.kind == Item::Kind::Import && f.items[i - 1].kind == Item::Kind::Import))
      p.out += "\n";
    switch (item.kind) {
      case Item::Kind::Func: {
        const Func& fn = item.func;
        p.line(0, print_signature(fn.header) + " {", fn.notes);
        p.body(fn.body, 1, fn.block_form);
        p.line(0, "}", fn.close_notes, 1);
        break;
      }
      case Item::Kind::Import:
        p.line(0, "import " + (item.import.is_path ? "\"" + item.import.target + "\""
                                                   : item.import.target),
               item.import.notes);
        break;
      case Item::Kind::Var: {
        const VarDecl& v = item.var.decl;
        std::string text = "var " + v.name.name;
        if (v.type) text += ": " + v.type->str();
        text += " " + std::string(storage_class_name(v.storage));
        p.line(0, text, item.var.notes);
        break;
      }
      case Item::Kind::Program: {
        const ProgramItem& pi = item.program;
        const Program& h = pi.header;
        std::vector<NameRef> outputs = h.outputs;
        for (size_t o = 0; o < outputs.size() && o < h.output_names.size(); ++o)
          if (!h.output_names[o].empty())
            outputs[o].name = h.output_names[o] + ": " + outputs[o].name;
        p.line(
            0,
            "program " + h.entry.name + "(" + names(h.inputs) + ") -> (" + names(outputs) + ") {",
            pi.notes);
        p.body(pi.body, 1, true);
        p.line(0, "}", pi.close_notes, 1);
        break;
      }
    }
  }
  for (const auto& c : f.end_notes.before) p.out += c + "\n";
  return p.out;
}

}  // namespace ab::syntax
