#include "ir/printer.h"

#include <charconv>
#include <cmath>

namespace ab {

std::string print_scalar(const Scalar& s) {
  switch (s.kind) {
    case Scalar::Kind::Bool:
      return s.b ? "true" : "false";
    case Scalar::Kind::Int:
      return std::to_string(s.i);
    case Scalar::Kind::Float: {
      if (std::isnan(s.f)) return "nan";
      if (std::isinf(s.f)) return s.f > 0 ? "inf" : "-inf";
      // Shortest round-trip digits; plain notation for everyday magnitudes.
      char buf[512];
      double mag = std::fabs(s.f);
      auto fmt = (mag == 0 || (mag >= 1e-4 && mag < 1e16)) ? std::chars_format::fixed
                                                           : std::chars_format::scientific;
      auto [end, ec] = std::to_chars(buf, buf + sizeof buf, s.f, fmt);
      std::string out(buf, end);
      // Keep it a float literal when read back.
      if (out.find_first_of(".e") == std::string::npos) out += ".0";
      return out;
    }
  }
  return "?";
}

static void print_tensor(const Literal& lit, size_t depth, size_t& next, std::string& out) {
  out += '[';
  int64_t n = lit.shape.empty() ? 0 : lit.shape[depth];
  for (int64_t i = 0; i < n; ++i) {
    if (i) out += ", ";
    if (depth + 1 < lit.shape.size())
      print_tensor(lit, depth + 1, next, out);
    else
      out += print_scalar(lit.elems[next++]);
  }
  out += ']';
}

std::string print_literal(const Literal& lit) {
  if (!lit.is_tensor) return print_scalar(lit.elems.front());
  std::string out;
  size_t next = 0;
  print_tensor(lit, 0, next, out);
  return out;
}

std::string print_operand(const Operand& o) { return o.is_var ? o.name : print_literal(o.lit); }

std::string print_pattern(const Pattern& p, bool top) {
  if (!p.is_tuple) return p.name + (p.in_place ? "!" : "");
  std::string inner;
  for (size_t i = 0; i < p.elems.size(); ++i) {
    if (i) inner += ", ";
    inner += print_pattern(p.elems[i], false);
  }
  // A top-level tuple of two or more is written bare: `q, p = ...`.
  if (top && p.elems.size() >= 2) return inner;
  return "(" + inner + ")";
}

static std::string print_args(const Instr& in) {
  std::string out = "(";
  bool first = true;
  for (const auto& a : in.args) {
    if (!first) out += ", ";
    first = false;
    out += print_operand(a);
  }
  for (const auto& a : in.attrs) {
    if (!first) out += ", ";
    first = false;
    out += a.key + "=" + (a.is_dtype ? std::string(dtype_name(a.dtype)) : print_literal(a.lit));
  }
  return out + ")";
}

std::string print_instr(const Instr& in) {
  if (in.kind == InstrKind::Pop) {
    std::string out = "pop ";
    for (size_t i = 0; i < in.popped.size(); ++i) {
      if (i) out += ", ";
      out += in.popped[i].name;
    }
    return out;
  }
  std::string rhs;
  switch (in.kind) {
    case InstrKind::Copy:
      rhs = print_operand(in.args.front());
      break;
    case InstrKind::Call:
      if (in.grad) {
        std::string args = print_args(in);  // "(x, a)", or "()" without arguments
        rhs = "value_and_grad(" + in.callee.name + (args == "()" ? ")" : ", " + args.substr(1));
      } else {
        rhs = "call " + in.callee.name + print_args(in);
      }
      break;
    case InstrKind::Prim:
      rhs = in.callee.name + print_args(in);
      break;
    case InstrKind::Pop:
      break;
  }
  // A call whose results are discarded has an empty tuple pattern, which has
  // no spelling: it is the statement alone. An operation that is no
  // primitive (the front end keeps unknown names as Prim for verify to
  // report) is written `call NAME(...)`, so that it parses back to the same
  // instruction instead of "the result of NAME is discarded".
  if (in.out.is_tuple && in.out.elems.empty()) {
    if (in.kind == InstrKind::Prim) return "call " + rhs;
    if (in.kind == InstrKind::Call) return rhs;
  }
  return print_pattern(in.out) + " = " + rhs;
}

std::string print_terminator(const Terminator& t) {
  std::string out = term_keyword(t.kind);
  switch (t.kind) {
    case TermKind::Branch:
      return out + " " + t.cond.name + ", " + t.target.name + ", " + t.target2.name;
    case TermKind::Goto:
      return out + " " + t.target.name;
    case TermKind::Return:
      for (size_t i = 0; i < t.values.size(); ++i)
        out += (i ? ", " : " ") + print_operand(t.values[i]);
      return out;
    case TermKind::PushGoto:
      return out + " " + t.target.name + ", " + t.target2.name;
    case TermKind::IndirectGoto:
    case TermKind::Halt:
      return out;
  }
  return out;
}

std::string print_block(const Block& b) {
  std::string out = b.label.name + ":\n";
  for (const auto& in : b.instrs) out += "  " + print_instr(in) + "\n";
  out += "  " + print_terminator(b.term) + "\n";
  return out;
}

std::string print_results(const std::vector<Type>& results, const std::vector<std::string>& names) {
  auto named = [&](size_t i) {
    return i < names.size() && !names[i].empty() ? names[i] + ": " : std::string();
  };
  if (results.size() == 1 && !results[0].is_tuple) return "-> " + named(0) + results[0].str();
  std::string out = "-> (";
  for (size_t i = 0; i < results.size(); ++i) {
    if (i) out += ", ";
    out += named(i) + results[i].str();
  }
  return out + ")";
}

std::string print_constraint(const Constraint& c) {
  std::string out = c.kind;
  if (!c.args.empty()) {
    out += "(";
    for (size_t k = 0; k < c.args.size(); ++k) out += (k ? ", " : "") + c.args[k];
    out += ")";
  }
  return out;
}

std::string print_signature(const Function& f) {
  std::string out = std::string(f.is_entry    ? "entry func "
                                : f.is_inline ? "inline func "
                                              : "func ") +
                    f.name.name + "(";
  for (size_t i = 0; i < f.params.size(); ++i) {
    if (i) out += ", ";
    out += f.params[i].name.name;
    if (f.params[i].type) out += ": " + f.params[i].type->str();
    if (f.params[i].constraint) out += " " + print_constraint(*f.params[i].constraint);
  }
  out += ")";
  if (f.results_declared) out += " " + print_results(f.results, f.result_names);
  return out;
}

std::string print_function(const Function& f) {
  std::string out = print_signature(f) + " {\n";
  for (const auto& b : f.blocks) out += print_block(b);
  return out + "}\n";
}

static std::string name_list(const std::vector<NameRef>& names) {
  std::string out = "(";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    out += names[i].name;
  }
  return out + ")";
}

std::string print_program(const Program& p) {
  std::string out;
  for (const auto& v : p.vars) {
    out += "var " + v.name.name;
    if (v.type) out += ": " + v.type->str();
    out += " " + std::string(storage_class_name(v.storage)) + "\n";
  }
  if (!p.vars.empty()) out += "\n";
  std::vector<NameRef> outputs = p.outputs;
  for (size_t i = 0; i < outputs.size() && i < p.output_names.size(); ++i)
    if (!p.output_names[i].empty()) outputs[i].name = p.output_names[i] + ": " + outputs[i].name;
  out += "program " + p.entry.name + name_list(p.inputs) + " -> " + name_list(outputs) + " {\n";
  for (const auto& b : p.blocks) out += print_block(b);
  return out + "}\n";
}

std::string print_module(const Module& m) {
  if (m.program) return print_program(*m.program);
  std::string out;
  for (size_t i = 0; i < m.funcs.size(); ++i) {
    if (i) out += "\n";
    out += print_function(m.funcs[i]);
  }
  return out;
}

}  // namespace ab
