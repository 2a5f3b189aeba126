// The syntax tree of an `.ab` file (docs/language.md, "The block form" and "The structured form"):
// what was written, with nested expressions, structured statements and every comment. `fmt`
// prints it (format.cpp); the front end turns it into the IR of ir.h
// (to_blocks.cpp), where every later pass takes over.
#pragma once
#include <string>
#include <vector>

#include "ir/ir.h"
#include "support/diag.h"
#include "support/result.h"

namespace ab::syntax {

// Comments attached to one printed line: own-line comments written before
// it, and end-of-line comments written on it. Each comment is kept with its
// leading '#'.
struct Notes {
  std::vector<std::string> before;
  std::vector<std::string> after;
};

// Lines of the source a node spans, for attaching comments.
struct Lines {
  uint32_t first = 0;
  uint32_t last = 0;
};

struct Expr {
  enum class Kind : uint8_t {
    Var,     // name
    Lit,     // lit (scalar literals are unsigned; `-1` is Neg of 1)
    Call,    // name(args, attrs): a primitive or a function of the module
    Unary,   // op args[0]: "-" or "not"
    Binary,  // args[0] op args[1]: "or" "and" "==" ... "+" "-" "*" "/" "%" "**"
    Index,   // args[0][args[1]]
    Tensor,  // [args...]
  };
  Kind kind = Kind::Var;
  std::string name;            // Var, Call
  std::string op;              // Unary, Binary
  Literal lit;                 // Lit
  bool explicit_call = false;  // `call f(...)`
  bool slice_form = false;     // slice(x, start=a, stop=b) written x[a:b]
  bool parens = false;         // written inside ( )
  std::vector<Expr> args;
  std::vector<Attr> attrs;  // Call
  // x[p, q, ...] as written, for `autobatch fmt` (x, then each position: an
  // index, or a slice_form call without operand; `:` has no attrs); the
  // node itself is what it means (get, slice, transpose). Empty otherwise.
  std::vector<Expr> written;
  SourceLoc loc;            // the whole expression
  SourceLoc name_loc;       // Var, Call: the name; Unary, Binary: the operator
};

struct Stmt;
using Body = std::vector<Stmt>;

// `if c {` or `} else if c {` and what follows up to the next `}`.
struct IfArm {
  Expr cond;
  Body body;
  Lines lines;  // the header line(s)
  Notes notes;
};

struct Stmt {
  enum class Kind : uint8_t {
    Assign,       // pat = exprs[0]; with op: pat op= exprs[0] (pat a name)
    IndexAssign,  // target[exprs[0]]...[exprs[n-2]] = exprs[n-1]; with op: op=
    Eval,         // exprs[0] (a call) alone
    If,           // arms, else
    While,        // while exprs[0] { body }
    For,          // for target in exprs[0] { body } (exprs[0]: range(...))
    Break,
    Continue,
    Return,  // return exprs...
    Label,   // target:
    Branch,  // branch target, t1, t2 (target is the condition)
    Goto,    // goto t1
    Pop,     // pop names...
    PushGoto,
    IndirectGoto,
    Halt,
  };
  Kind kind = Kind::Assign;
  std::string op;  // Assign, IndexAssign: "+" for `+=`, ... ("" for `=`)
  Pattern pat;
  NameRef target;
  NameRef t1, t2;
  std::vector<Expr> exprs;
  // IndexAssign: the positions in each bracket of the target, as written
  // (x[i, j] = v: {2}; x[i][j] = v: {1, 1}).
  std::vector<uint32_t> brackets;
  std::vector<NameRef> names;  // Pop
  std::vector<IfArm> arms;     // If
  bool has_else = false;       // If
  Body else_body;              // If
  Lines else_lines;            // If: the `} else {` line
  Notes else_notes;
  Body body;          // While, For
  Lines close_lines;  // If, While, For: the closing `}`
  Notes close_notes;  // comments before and on the closing `}`
  Lines lines;        // the statement's (first) line(s)
  Notes notes;
  SourceLoc loc;
};

struct Func {
  Function header;  // name, params, results (no blocks)
  Body body;
  bool block_form = false;  // labelled blocks rather than statements
  Lines lines;              // `func ... {`
  Notes notes;
  Lines close_lines;
  Notes close_notes;
};

struct VarItem {
  VarDecl decl;
  Lines lines;
  Notes notes;
};

struct ProgramItem {
  Program header;  // entry, inputs, outputs (no vars, no blocks)
  Body body;
  Lines lines;
  Notes notes;
  Lines close_lines;
  Notes close_notes;
};

// `import NAME` or `import "PATH"`.
struct ImportItem {
  std::string target;    // NAME, or PATH without its quotes
  bool is_path = false;  // written with quotes
  SourceLoc loc;
  Lines lines;
  Notes notes;
};

struct Item {
  enum class Kind : uint8_t { Func, Var, Program, Import };
  Kind kind = Kind::Func;
  ImportItem import;
  Func func;
  VarItem var;
  ProgramItem program;
};

struct File {
  std::vector<Item> items;
  Notes end_notes;  // comments after the last item
  SourceRef source;
};

// Parses the text into a syntax tree with every comment attached. `file_tag`:
// the file index (source.h) its locations carry, shifted into place.
Result<File> parse_syntax(SourceRef source, uint32_t file_tag = 0);

// The canonical text of a file, comments included.
std::string format(const File& f);

// The front end: statements and nested expressions become blocks and
// three-address instructions. Compiler temporaries and labels are named
// `NAME.N`, a shape no name of a source function can otherwise take.
Module to_blocks(const File& f, Diagnostics& diags);

// True for the names the front end makes up (`t.3`, `if.2`): one
// identifier, a dot, digits.
bool is_frontend_name(const std::string& s);

}  // namespace ab::syntax
