#include "passes/grad/builder.h"

namespace ab::gradient {

Operand var(const std::string& name) {
  Operand o;
  o.is_var = true;
  o.name = name;
  return o;
}

namespace {
Operand scalar_lit(Scalar v) {
  Operand o;
  o.is_var = false;
  o.lit.kind = v.kind;
  o.lit.elems = {v};
  return o;
}
}  // namespace

Operand flit(double v) { return scalar_lit(Scalar::of_float(v)); }
Operand ilit(int64_t v) { return scalar_lit(Scalar::of_int(v)); }

Attr int_attr(const char* key, int64_t v) {
  Attr a;
  a.key = key;
  a.lit = ilit(v).lit;
  return a;
}

Attr shape_attr(const Shape& s) {
  Attr a;
  a.key = "shape";
  a.lit.kind = Scalar::Kind::Int;
  a.lit.is_tensor = true;
  a.lit.shape = {static_cast<int64_t>(s.size())};
  for (int64_t n : s) a.lit.elems.push_back(Scalar::of_int(n));
  return a;
}

Attr dtype_attr(DType d) {
  Attr a;
  a.key = "dtype";
  a.is_dtype = true;
  a.dtype = d;
  return a;
}

Pattern name_pattern(const std::string& n) {
  Pattern p;
  p.name = n;
  return p;
}

Pattern tuple_pattern(const std::vector<std::string>& names) {
  Pattern p;
  p.is_tuple = true;
  for (const auto& n : names) p.elems.push_back(name_pattern(n));
  return p;
}

bool has_float(const Type& t) {
  if (!t.is_tuple) return is_float(t.tensor.dtype);
  for (const auto& e : t.elems)
    if (has_float(e)) return true;
  return false;
}

FnBuilder::FnBuilder(std::string name, SourceLoc loc) {
  fn_.name.name = std::move(name);
  fn_.loc = loc;
  new_block("entry");
}

void FnBuilder::new_block(const std::string& label) {
  Block b;
  b.label.name = label;
  fn_.blocks.push_back(std::move(b));
}

void FnBuilder::param(const std::string& name) {
  Param p;
  p.name.name = name;
  fn_.params.push_back(p);
}

std::string FnBuilder::prim(PrimId id, std::vector<Arg> args, std::vector<Attr> attrs) {
  std::string out = fresh();
  Instr in;
  in.kind = InstrKind::Prim;
  in.prim = id;
  in.callee.name = prim_info(id).name;
  for (auto& a : args) in.args.push_back(std::move(a.o));
  in.attrs = std::move(attrs);
  in.out = name_pattern(out);
  in.loc = loc_;
  cur().instrs.push_back(std::move(in));
  return out;
}

void FnBuilder::copy(Pattern out, Operand v) {
  Instr in;
  in.kind = InstrKind::Copy;
  in.out = std::move(out);
  in.args = {std::move(v)};
  in.loc = loc_;
  cur().instrs.push_back(std::move(in));
}

void FnBuilder::call(Pattern out, const std::string& callee, std::vector<Operand> args) {
  Instr in;
  in.kind = InstrKind::Call;
  in.out = std::move(out);
  in.callee.name = callee;
  in.callee.loc = loc_;  // where the VMs report a call's errors (the depth bound)
  in.args = std::move(args);
  in.loc = loc_;
  cur().instrs.push_back(std::move(in));
}

std::string FnBuilder::zeros(const Type& t) {
  if (t.is_tuple) {
    std::vector<Arg> parts;
    for (const auto& e : t.elems) parts.emplace_back(zeros(e));
    return prim(PrimId::Tuple, std::move(parts));
  }
  std::vector<Attr> attrs;
  if (!t.tensor.shape.empty()) attrs.push_back(shape_attr(t.tensor.shape));
  attrs.push_back(dtype_attr(t.tensor.dtype));
  return prim(PrimId::Zeros, {}, std::move(attrs));
}

std::vector<std::string> FnBuilder::unpack(const std::string& v, const Type& t) {
  std::vector<std::string> names;
  for (size_t k = 0; k < t.elems.size(); ++k) names.push_back(fresh());
  copy(tuple_pattern(names), var(v));
  return names;
}

std::string FnBuilder::add_values(const std::string& a, const std::string& b, const Type& t) {
  if (!t.is_tuple) return prim(PrimId::Add, {a, b});
  std::vector<std::string> x = unpack(a, t);
  std::vector<std::string> y = unpack(b, t);
  std::vector<Arg> parts;
  for (size_t k = 0; k < t.elems.size(); ++k)
    parts.emplace_back(add_values(x[k], y[k], t.elems[k]));
  return prim(PrimId::Tuple, std::move(parts));
}

std::string FnBuilder::unbroadcast(std::string c, Shape from, const Shape& to) {
  if (from == to) return c;
  if (to.empty()) return prim(PrimId::Sum, {c});
  while (from.size() > to.size()) {
    c = prim(PrimId::Sum, {c}, {int_attr("axis", 0)});
    from.erase(from.begin());
  }
  bool summed = false;
  for (size_t k = to.size(); k-- > 0;)
    if (to[k] == 1 && from[k] != 1) {
      c = prim(PrimId::Sum, {c}, {int_attr("axis", static_cast<int64_t>(k))});
      summed = true;
    }
  return summed ? prim(PrimId::Reshape, {c}, {shape_attr(to)}) : c;
}

std::string FnBuilder::expand(const std::string& v, const Shape& full, std::optional<int64_t> axis,
                              DType dt) {
  if (full.empty()) return v;
  if (!axis) return prim(PrimId::Fill, {v}, {shape_attr(full)});
  Shape keep = full;
  keep[static_cast<size_t>(*axis)] = 1;
  std::string r = prim(PrimId::Reshape, {v}, {shape_attr(keep)});
  // (broadcast by adding zeros of v's dtype: an f32 sum stays f32)
  return prim(PrimId::Add, {r, zeros(Type::tensor_of(dt, full))});
}

}  // namespace ab::gradient
