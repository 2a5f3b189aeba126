// The grad pass's IR builder: the instructions of one generated function,
// written through helpers keyed by PrimId (no primitive looked up by name).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab::gradient {

Operand var(const std::string& name);
Operand flit(double v);  // a float literal: it takes the dtype of what it meets (f32 or f64)
Operand ilit(int64_t v);
Attr int_attr(const char* key, int64_t v);
Attr shape_attr(const Shape& s);
Attr dtype_attr(DType d);
Pattern name_pattern(const std::string& n);
Pattern tuple_pattern(const std::vector<std::string>& names);
bool has_float(const Type& t);

// An operand of a primitive the builder writes: a variable, by name, or a
// literal (flit, ilit).
struct Arg {
  Operand o;
  Arg(const std::string& v) : o(var(v)) {}  // NOLINT: implicit on purpose
  Arg(Operand v) : o(std::move(v)) {}       // NOLINT
};

// One generated function: its blocks, parameters and fresh names.
class FnBuilder {
 public:
  FnBuilder(std::string name, SourceLoc loc);

  Function take() { return std::move(fn_); }
  void new_block(const std::string& label);
  Block& cur() { return fn_.blocks.back(); }
  void param(const std::string& name);
  std::string fresh() { return "d." + std::to_string(++counter_); }
  // Where the instructions written next come from in the source.
  void set_loc(SourceLoc l) { loc_ = l; }

  // `d.N = id(args) attrs`: the new variable's name.
  std::string prim(PrimId id, std::vector<Arg> args, std::vector<Attr> attrs = {});
  void copy(Pattern out, Operand v);
  void call(Pattern out, const std::string& callee, std::vector<Operand> args);

  // Zeros of type t (its dtype, f32 or f64, and shape; a tuple's leaf by leaf).
  std::string zeros(const Type& t);
  // The leaves of a tuple value v of type t, one level down.
  std::vector<std::string> unpack(const std::string& v, const Type& t);
  // a + b of type t (a tuple's leaf by leaf).
  std::string add_values(const std::string& a, const std::string& b, const Type& t);
  // c (of shape `from`) summed down to `to`, the shape it was broadcast from.
  std::string unbroadcast(std::string c, Shape from, const Shape& to);
  // v (of dtype dt), the result of reducing `full` over `axis` (or all
  // axes), broadcast back to `full`.
  std::string expand(const std::string& v, const Shape& full, std::optional<int64_t> axis,
                     DType dt);

 protected:
  Function fn_;
  int counter_ = 0;  // fresh names and versions
  SourceLoc loc_;
};

}  // namespace ab::gradient
