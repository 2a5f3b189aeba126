// The IR: modules of functions (the source language, docs/language.md) and lowered
// programs (docs/language.md, "The lowered form"). Every node carries its SourceLoc. Locations
// never take part in equality: `a == b` compares programs, not where they were written,
// which is what the round trip parse(print(p)) == p needs.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/ops.h"
#include "ir/type.h"
#include "support/diag.h"
#include "support/source.h"

namespace ab {

// Positions are metadata: every SourceLoc equals every other.
inline bool operator==(const SourceLoc&, const SourceLoc&) { return true; }

struct Scalar {
  enum class Kind : uint8_t { Int, Float, Bool };
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
  static Scalar of_int(int64_t v) { return {Kind::Int, v, 0.0, false}; }
  static Scalar of_float(double v) { return {Kind::Float, 0, v, false}; }
  static Scalar of_bool(bool v) { return {Kind::Bool, 0, 0.0, v}; }
  bool operator==(const Scalar& o) const;  // floats compare bit for bit
};

// A scalar literal (shape empty, one element) or a rectangular tensor
// literal. `kind` is Float if any element is a float.
struct Literal {
  Scalar::Kind kind = Scalar::Kind::Int;
  bool is_tensor = false;
  Shape shape;
  std::vector<Scalar> elems;
  bool operator==(const Literal&) const = default;
};

struct NameRef {
  std::string name;
  SourceLoc loc;
  bool operator==(const NameRef&) const = default;
};

// A variable or a literal, as an argument of an operation, call, copy or
// return.
struct Operand {
  bool is_var = true;
  std::string name;  // when is_var
  Literal lit;       // when !is_var
  SourceLoc loc;
  bool operator==(const Operand&) const = default;
};

// `KEY=attr` in a primitive's argument list: a literal (numbers, shapes) or
// a dtype.
struct Attr {
  std::string key;
  bool is_dtype = false;
  DType dtype = DType::F64;
  Literal lit;
  SourceLoc loc;
  bool operator==(const Attr&) const = default;
};

// The left-hand side of an assignment: a name (with `!` for an in-place
// update in lowered programs) or a tuple of patterns.
struct Pattern {
  bool is_tuple = false;
  std::string name;
  bool in_place = false;
  std::vector<Pattern> elems;
  SourceLoc loc;
  bool operator==(const Pattern&) const = default;
  void names(std::vector<const Pattern*>& out) const;  // the leaves
};

enum class InstrKind : uint8_t {
  Prim,  // out = op(args, key=attr...)
  Call,  // out = call f(args)
  Copy,  // out = operand
  Pop,   // pop x, y   (lowered programs only)
};

struct Instr {
  InstrKind kind = InstrKind::Prim;
  Pattern out;                  // Prim, Call, Copy
  PrimId prim = PrimId::Add;    // Prim
  NameRef callee;               // Call: function; Prim: operation name
  std::vector<Operand> args;    // Prim, Call; Copy: exactly one
  std::vector<Attr> attrs;      // Prim (on a Call only until verify rejects it)
  std::vector<NameRef> popped;  // Pop
  // Call: `value_and_grad(callee, args)`, the callee's result and its
  // gradient with respect to the first argument. Only the source form has
  // it: the grad pass (passes/grad.h) replaces it by a call it generates.
  bool grad = false;
  SourceLoc loc;
  // A copy of a shipped library's code (lib/*.ab) made by inlining it into
  // the user's code: the user's call it came from (parse/inline.cpp), where
  // errors in it are reported (passes/inference.h).
  SourceLoc inlined_at;
  bool operator==(const Instr&) const = default;
};

enum class TermKind : uint8_t {
#define AB_TERM(kind, rule, text, lowered) kind,
#include "ir/terminators.def"
#undef AB_TERM
};
const char* term_keyword(TermKind k);
bool term_lowered_only(TermKind k);  // push_goto, indirect_goto, halt

struct Terminator {
  TermKind kind = TermKind::Return;
  NameRef cond;                 // Branch
  NameRef target;               // Branch (true), Goto, PushGoto (return label)
  NameRef target2;              // Branch (false), PushGoto (jump target)
  std::vector<Operand> values;  // Return
  SourceLoc loc;
  bool operator==(const Terminator&) const = default;
};

// Where a lowered block comes from: the label of the source block it is
// (part of), without its function (`endif.5` for `adapt.endif.5.3`, the
// part after a call). Empty for a program parsed from lowered text.
// Metadata, like SourceLoc: it never takes part in equality.
struct BlockOrigin {
  std::string label;
};
inline bool operator==(const BlockOrigin&, const BlockOrigin&) { return true; }

struct Block {
  NameRef label;
  std::vector<Instr> instrs;
  Terminator term;
  BlockOrigin origin;
  bool operator==(const Block&) const = default;
};

// A parameter's declared constraint, written after its type
// (`tau: f64 positive`, `p: f64 bounded(0.0, 1.0)`, `L: f64[3, 3] cholesky_corr`):
// autobatch sample reads it to sample the parameter on the unconstrained
// scale (docs/sampling.md, "Declared parameters"); compilation otherwise
// ignores it, and the function takes the constrained value as given.
struct Constraint {
  std::string kind;               // positive, lower, bounded, simplex, ...
  std::vector<std::string> args;  // the bounds as written: a number, a name or an expression
  std::vector<std::vector<std::string>> reads;  // per bound, the variables it reads
  SourceLoc loc;
  bool operator==(const Constraint&) const = default;
};

struct Param {
  NameRef name;
  std::optional<Type> type;
  SourceLoc type_loc;
  std::optional<Constraint> constraint;
  bool operator==(const Param&) const = default;
};

struct Function {
  NameRef name;
  std::vector<Param> params;
  bool results_declared = false;
  std::vector<Type> results;  // when declared
  // The names the signature gives its results (`-> (total: f64, n: i64)`):
  // empty when it names none, else one per result ("" for an unnamed one).
  std::vector<std::string> result_names;
  bool is_entry = false;   // written `entry func NAME(...)`
  bool is_inline = false;  // written `inline func NAME(...)`: calls take its blocks
  SourceLoc results_loc;
  std::vector<Block> blocks;  // the first is the entry
  SourceLoc loc;
  bool operator==(const Function&) const = default;
  const Block* find_block(const std::string& label) const;
};

enum class StorageClass : uint8_t { Null, Temporary, Register, Full };
const char* storage_class_name(StorageClass c);
std::optional<StorageClass> parse_storage_class(std::string_view s);

struct VarDecl {
  NameRef name;
  std::optional<Type> type;  // absent when it depends on inputs not given
  StorageClass storage = StorageClass::Full;
  SourceLoc loc;
  bool operator==(const VarDecl&) const = default;
};

// A lowered program: all functions' blocks in one flat list with qualified
// names; `entry` names the source function it was lowered from, `inputs`
// and `outputs` the variables that carry its parameters and results.
struct Program {
  NameRef entry;
  std::vector<NameRef> inputs;
  std::vector<NameRef> outputs;
  // The outputs' result names (`-> (total: main.ret.0, main.ret.1)`): empty
  // when none is named, else one per output ("" for an unnamed one).
  std::vector<std::string> output_names;
  std::vector<VarDecl> vars;
  std::vector<Block> blocks;  // the first is the entry block
  SourceLoc loc;
  bool operator==(const Program&) const = default;
};

// A warning the front end found in the user's file (parse/unused.h):
// `entry_only` names the function that must be the entry for it to apply
// (an unused parameter), "" when it always applies.
struct ModuleWarning {
  std::string entry_only;
  Diagnostic diag;
};

// One parsed file: functions, or (lowered) one program with its variables.
struct Module {
  std::vector<Function> funcs;
  std::optional<Program> program;
  SourceRef source;                     // not compared
  std::vector<ModuleWarning> warnings;  // not compared
  bool operator==(const Module& o) const { return funcs == o.funcs && program == o.program; }
  const Function* find_func(const std::string& name) const;
  bool is_lowered() const { return program.has_value(); }
};

}  // namespace ab
