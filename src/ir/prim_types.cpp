// Type rules of the primitives (see prim_types.h for the choices made).
#include "ir/prim_types.h"

#include <algorithm>

#include "ir/ir.h"

namespace ab {

namespace {

PrimTypeResult fail(std::string msg) { return {std::nullopt, std::move(msg)}; }
PrimTypeResult ok(Type t) { return {std::move(t), {}}; }

std::string q(PrimId op) { return std::string("'") + prim_info(op).name + "'"; }

// The dtype to suggest when two differ: a float over an integer, the wider
// of two of a kind, a number over bool.
DType suggested_common(DType a, DType b) {
  auto rank = [](DType d) {
    switch (d) {
      case DType::Bool:
        return 0;
      case DType::I32:
        return 1;
      case DType::I64:
        return 2;
      case DType::F32:
        return 3;
      case DType::F64:
        return 4;
    }
    return 0;
  };
  return rank(a) >= rank(b) ? a : b;
}

std::string cast_hint(DType to) { return std::string("cast(x, dtype=") + dtype_name(to) + ")"; }

std::optional<std::string> check_same_dtype(PrimId op, const TensorType& a, const TensorType& b) {
  if (a.dtype == b.dtype) return std::nullopt;
  return "operands of " + q(op) + " have different dtypes " + dtype_name(a.dtype) + " and " +
         dtype_name(b.dtype) + "; convert one with " +
         cast_hint(suggested_common(a.dtype, b.dtype));
}

std::optional<std::string> check_numeric(PrimId op, const TensorType& t) {
  if (t.dtype != DType::Bool) return std::nullopt;
  return q(op) + " needs numeric operands, got bool; convert with " + cast_hint(DType::I64);
}

std::optional<std::string> check_float(PrimId op, const TensorType& t) {
  if (is_float(t.dtype)) return std::nullopt;
  return q(op) + " needs a float operand, got " + dtype_name(t.dtype) + "; convert it with " +
         cast_hint(DType::F64);
}

std::optional<std::string> check_bool(PrimId op, const TensorType& t) {
  if (t.dtype == DType::Bool) return std::nullopt;
  return q(op) + " needs bool operands, got " + dtype_name(t.dtype) +
         "; compare first, for example ne(x, 0)";
}

std::optional<std::string> check_shape_attr(PrimId op, const Shape& s, bool allow_infer) {
  for (int64_t d : s)
    if (d < 0 && !(allow_infer && d == -1))
      return q(op) + " has a negative dimension in shape=" + shape_str(s);
  return std::nullopt;
}

// Broadcast the event shapes of all `ts`; error text names every operand.
PrimTypeResult broadcast_all(PrimId op, const std::vector<TensorType>& ts, DType result) {
  Shape s;
  for (const auto& t : ts) {
    auto b = broadcast_shapes(s, t.shape);
    if (!b) {
      std::string list;
      for (size_t i = 0; i < ts.size(); ++i)
        list += (i ? ", " : "") + Type::tensor_of(ts[i].dtype, ts[i].shape).str();
      return fail("operands of " + q(op) + " have incompatible event shapes (" + list +
                  "); they must broadcast as in NumPy");
    }
    s = std::move(*b);
  }
  return ok(Type::tensor_of(result, std::move(s)));
}

std::string tstr(const TensorType& t) { return Type::tensor_of(t.dtype, t.shape).str(); }

std::optional<std::string> check_key(PrimId op, const TensorType& k) {
  if (k.dtype == DType::I64 && k.shape.empty()) return std::nullopt;
  return "the key of " + q(op) + " must be an i64 scalar, got " + tstr(k) +
         " (a key is an i64: an input, a literal, or a result of split or fold_in)";
}

std::optional<std::string> check_index(PrimId op, const TensorType& i) {
  if (is_integer(i.dtype) && i.shape.empty()) return std::nullopt;
  return "the index of " + q(op) + " must be an i32 or i64 scalar, got " + tstr(i);
}

}  // namespace

PrimAttrs resolve_attrs(const Instr& in) {
  PrimAttrs a;
  for (const auto& at : in.attrs) {
    if (at.key == "dtype" && at.is_dtype) a.dtype = at.dtype;
    if (at.key == "shape" && !at.is_dtype) {
      Shape s;
      for (const auto& e : at.lit.elems) s.push_back(e.i);
      a.shape = s;
    }
    if (at.key == "axis" && !at.is_dtype && !at.lit.elems.empty()) a.axis = at.lit.elems[0].i;
    if (at.key == "n" && !at.is_dtype && !at.lit.elems.empty()) a.n = at.lit.elems[0].i;
    if (at.key == "start" && !at.is_dtype && !at.lit.elems.empty()) a.start = at.lit.elems[0].i;
    if (at.key == "stop" && !at.is_dtype && !at.lit.elems.empty()) a.stop = at.lit.elems[0].i;
  }
  return a;
}

std::optional<std::pair<int64_t, int64_t>> slice_bounds(const PrimAttrs& a, int64_t rows) {
  int64_t first = a.start.value_or(0), last = a.stop.value_or(rows);
  if (first < 0) first += rows;
  if (last < 0) last += rows;
  if (first < 0 || last > rows || first > last) return std::nullopt;
  return std::make_pair(first, last);
}

PrimKind prim_kind(PrimId op) { return prim_info(op).kind; }

namespace {

PrimTypeResult reduce_type(PrimId op, const TensorType& x, const PrimAttrs& attrs) {
  if (op == PrimId::Any || op == PrimId::All) {
    if (x.dtype != DType::Bool)
      return fail(q(op) + " needs a bool operand, got " + dtype_name(x.dtype) +
                  "; compare first, for example ne(x, 0)");
  } else if (op == PrimId::Mean) {
    if (auto e = check_float(op, x)) return fail(*e);
  } else if (x.dtype == DType::Bool) {
    return fail(q(op) + " needs a numeric operand, got bool; use any/all, or convert with " +
                cast_hint(DType::I64));
  }
  Shape out;
  int64_t reduced = x.num_elements();
  if (attrs.axis) {
    auto rank = static_cast<int64_t>(x.shape.size());
    auto k = normalize_axis(*attrs.axis, rank);
    if (!k)
      return fail(q(op) + " has axis=" + std::to_string(*attrs.axis) + " out of range for " +
                  tstr(x) + " (rank " + std::to_string(rank) + "; valid: " +
                  (rank ? std::to_string(-rank) + ".." + std::to_string(rank - 1) : "none") + ")");
    out = x.shape;
    reduced = out[static_cast<size_t>(*k)];
    out.erase(out.begin() + *k);
  }
  if ((op == PrimId::ReduceMax || op == PrimId::ReduceMin) && reduced == 0 &&
      num_elements(out) != 0)
    return fail(q(op) + " of zero elements has no identity (operand " + tstr(x) + ")");
  return ok(Type::tensor_of(x.dtype, std::move(out)));
}

std::optional<std::string> check_rank(PrimId op, const TensorType& t, size_t rank,
                                      const char* what) {
  if (t.shape.size() == rank) return std::nullopt;
  return q(op) + " needs " + what + ", got " + tstr(t);
}

std::optional<std::string> check_linalg_dtypes(PrimId op, const TensorType& a,
                                               const TensorType& b) {
  if (auto e = check_numeric(op, a)) return e;
  if (auto e = check_numeric(op, b)) return e;
  return check_same_dtype(op, a, b);
}

PrimTypeResult linalg_type(PrimId op, const std::vector<TensorType>& t) {
  if (op == PrimId::Transpose) {
    // (Also what X[:, j] and X[a:b, c:d] make: they index a matrix's columns
    // through transpose, so the message says so.)
    if (auto e = check_rank(op, t[0], 2, "a matrix [m,n]"))
      return fail(*e + " (X[:, j] and X[a:b, c:d] index the columns of a matrix: a vector has "
                       "one index)");
    return ok(Type::tensor_of(t[0].dtype, {t[0].shape[1], t[0].shape[0]}));
  }
  if (auto e = check_linalg_dtypes(op, t[0], t[1])) return fail(*e);
  auto mismatch = [&]() {
    return fail("operands of " + q(op) + " have mismatched dimensions " + tstr(t[0]) + " and " +
                tstr(t[1]));
  };
  DType d = t[0].dtype;
  switch (op) {
    case PrimId::Dot:
      if (auto e = check_rank(op, t[0], 1, "vectors [n]")) return fail(*e);
      if (auto e = check_rank(op, t[1], 1, "vectors [n]")) return fail(*e);
      if (t[0].shape[0] != t[1].shape[0]) return mismatch();
      return ok(Type::scalar(d));
    case PrimId::Matvec:
      if (auto e = check_rank(op, t[0], 2, "a matrix [m,n] first")) return fail(*e);
      if (auto e = check_rank(op, t[1], 1, "a vector [n] second")) return fail(*e);
      if (t[0].shape[1] != t[1].shape[0]) return mismatch();
      return ok(Type::tensor_of(d, {t[0].shape[0]}));
    case PrimId::Matmul:
      if (auto e = check_rank(op, t[0], 2, "matrices [m,k] and [k,n]")) return fail(*e);
      if (auto e = check_rank(op, t[1], 2, "matrices [m,k] and [k,n]")) return fail(*e);
      if (t[0].shape[1] != t[1].shape[0]) return mismatch();
      return ok(Type::tensor_of(d, {t[0].shape[0], t[1].shape[1]}));
    case PrimId::Outer:
      if (auto e = check_rank(op, t[0], 1, "vectors [m] and [n]")) return fail(*e);
      if (auto e = check_rank(op, t[1], 1, "vectors [m] and [n]")) return fail(*e);
      return ok(Type::tensor_of(d, {t[0].shape[0], t[1].shape[0]}));
    default:
      return fail("internal: " + q(op) + " is not a linear algebra primitive");
  }
}

}  // namespace

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    int64_t d;
    if (da == db || db == 1)
      d = da;
    else if (da == 1)
      d = db;
    else
      return std::nullopt;
    out[r - 1 - i] = d;
  }
  return out;
}

std::optional<int64_t> normalize_axis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

PrimTypeResult prim_result_type(PrimId op, const std::vector<Type>& args, const PrimAttrs& attrs) {
  const PrimInfo& info = prim_info(op);
  int nargs = static_cast<int>(args.size());
  if (nargs < info.min_args || (info.max_args >= 0 && nargs > info.max_args)) {
    std::string want = info.min_args == info.max_args ? std::to_string(info.min_args)
                       : info.max_args < 0
                           ? "at least " + std::to_string(info.min_args)
                           : std::to_string(info.min_args) + " to " + std::to_string(info.max_args);
    return fail(q(op) + " takes " + want + " operand" + (want == "1" ? "" : "s") + ", got " +
                std::to_string(nargs));
  }
  if (op == PrimId::Tuple) return ok(Type::tuple(args));

  std::vector<TensorType> t;
  t.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].is_tuple)
      return fail(q(op) + " cannot take a tuple operand (operand " + std::to_string(i + 1) +
                  " is " + args[i].str() + "); unpack it first, for example (a, b) = t");
    t.push_back(args[i].tensor);
  }
  if (const CustomPrimDef* c = custom_prim(op)) {
    std::string error;
    std::optional<Type> r = c->type_rule(args, error);
    if (r) return ok(std::move(*r));
    return fail(q(op) + ": " + (error.empty() ? "its type rule rejected the operands" : error));
  }

  switch (prim_kind(op)) {
    case PrimKind::Arith2:
      if (auto e = check_numeric(op, t[0])) return fail(*e);
      if (auto e = check_numeric(op, t[1])) return fail(*e);
      if (auto e = check_same_dtype(op, t[0], t[1])) return fail(*e);
      return broadcast_all(op, t, t[0].dtype);
    case PrimKind::Arith1:
      if (auto e = check_numeric(op, t[0])) return fail(*e);
      return ok(args[0]);
    case PrimKind::Float1:
      if (auto e = check_float(op, t[0])) return fail(*e);
      return ok(args[0]);
    case PrimKind::FloatPred:
      if (auto e = check_float(op, t[0])) return fail(*e);
      return ok(Type::tensor_of(DType::Bool, t[0].shape));
    case PrimKind::Float2:
      if (auto e = check_float(op, t[0])) return fail(*e);
      if (auto e = check_float(op, t[1])) return fail(*e);
      if (auto e = check_same_dtype(op, t[0], t[1])) return fail(*e);
      return broadcast_all(op, t, t[0].dtype);
    case PrimKind::Compare:
      if (auto e = check_same_dtype(op, t[0], t[1])) return fail(*e);
      return broadcast_all(op, t, DType::Bool);
    case PrimKind::Logic2:
      if (auto e = check_bool(op, t[0])) return fail(*e);
      if (auto e = check_bool(op, t[1])) return fail(*e);
      return broadcast_all(op, t, DType::Bool);
    case PrimKind::Logic1:
      if (auto e = check_bool(op, t[0])) return fail(*e);
      return ok(args[0]);
    case PrimKind::Reduce:
      return reduce_type(op, t[0], attrs);
    case PrimKind::Other:
      break;
  }

  switch (op) {
    case PrimId::Select:
      if (t[0].dtype != DType::Bool)
        return fail("the condition of 'select' must be bool, got " + tstr(t[0]) +
                    "; compare first, for example ne(c, 0)");
      if (auto e = check_same_dtype(op, t[1], t[2])) return fail(*e);
      return broadcast_all(op, t, t[1].dtype);
    case PrimId::Cast:
      if (!attrs.dtype) return fail("'cast' needs dtype=, for example cast(x, dtype=f64)");
      return ok(Type::tensor_of(*attrs.dtype, t[0].shape));
    case PrimId::Zeros: {
      Shape s = attrs.shape.value_or(Shape{});
      if (auto e = check_shape_attr(op, s, false)) return fail(*e);
      return ok(Type::tensor_of(attrs.dtype.value_or(DType::F64), std::move(s)));
    }
    case PrimId::Stack: {
      for (size_t i = 1; i < t.size(); ++i) {
        if (auto e = check_same_dtype(op, t[0], t[i])) return fail(*e);
        if (t[i].shape != t[0].shape)
          return fail("the elements of a tensor must have equal shapes, got " + tstr(t[0]) +
                      " and " + tstr(t[i]));
      }
      Shape s{static_cast<int64_t>(t.size())};
      s.insert(s.end(), t[0].shape.begin(), t[0].shape.end());
      return ok(Type::tensor_of(t[0].dtype, std::move(s)));
    }
    case PrimId::Concat: {
      int64_t rows = 0;
      for (size_t i = 0; i < t.size(); ++i) {
        if (auto e = check_same_dtype(op, t[0], t[i])) return fail(*e);
        if (t[i].shape.empty())
          return fail("the operands of 'concat' must be tensors (join scalars with [a, b]), got " +
                      tstr(t[i]));
        if (!std::equal(t[i].shape.begin() + 1, t[i].shape.end(), t[0].shape.begin() + 1,
                        t[0].shape.end()))
          return fail("the operands of 'concat' must have equal shapes after the first dimension, "
                      "got " + tstr(t[0]) + " and " + tstr(t[i]));
        rows += t[i].shape[0];
      }
      Shape s = t[0].shape;
      s[0] = rows;
      return ok(Type::tensor_of(t[0].dtype, std::move(s)));
    }
    case PrimId::Fill:
      if (!t[0].shape.empty())
        return fail("the value of 'fill' must be a scalar, got " + tstr(t[0]));
      if (!attrs.shape) return fail("'fill' needs shape=, for example fill(v, shape=[3])");
      if (auto e = check_shape_attr(op, *attrs.shape, false)) return fail(*e);
      return ok(Type::tensor_of(t[0].dtype, *attrs.shape));
    case PrimId::Iota:
      if (!attrs.n) return fail("'iota' needs n=, for example iota(n=5)");
      if (*attrs.n < 0) return fail("'iota' needs n >= 0, got n=" + std::to_string(*attrs.n));
      return ok(Type::tensor_of(DType::I64, {*attrs.n}));
    case PrimId::Get: {
      // get(x, i1, ..., ik): one index per leading dimension, k <= rank.
      const size_t k = t.size() - 1;
      if (t[0].shape.empty())
        return fail("'get' needs an operand with at least one dimension, got " + tstr(t[0]));
      if (k > t[0].shape.size())
        return fail("'get' has " + std::to_string(k) + " indices but " + tstr(t[0]) + " has " +
                    std::to_string(t[0].shape.size()) + " dimension" +
                    (t[0].shape.size() == 1 ? "" : "s"));
      for (size_t a = 1; a <= k; ++a)
        if (auto e = check_index(op, t[a])) return fail(*e);
      return ok(Type::tensor_of(t[0].dtype, Shape(t[0].shape.begin() + static_cast<long>(k),
                                                  t[0].shape.end())));
    }
    case PrimId::Set: {
      // set(x, i1, ..., ik, v): v stored at x[i1, ..., ik], k <= rank.
      const size_t k = t.size() - 2;
      const TensorType& v = t.back();
      if (t[0].shape.empty())
        return fail("'set' needs an operand with at least one dimension, got " + tstr(t[0]));
      if (k > t[0].shape.size())
        return fail("'set' has " + std::to_string(k) + " indices but " + tstr(t[0]) + " has " +
                    std::to_string(t[0].shape.size()) + " dimension" +
                    (t[0].shape.size() == 1 ? "" : "s"));
      for (size_t a = 1; a <= k; ++a)
        if (auto e = check_index(op, t[a])) return fail(*e);
      if (v.dtype != t[0].dtype)
        return fail("the value stored by 'set' has dtype " + std::string(dtype_name(v.dtype)) +
                    " but the tensor has " + dtype_name(t[0].dtype) + "; convert it with " +
                    cast_hint(t[0].dtype));
      Shape row(t[0].shape.begin() + static_cast<long>(k), t[0].shape.end());
      auto b = broadcast_shapes(row, v.shape);
      if (!b || *b != row)
        return fail("the value stored by 'set' is " + tstr(v) + ", which does not fit " +
                    (row.empty() ? std::string("an element ")
                                 : "a row " + Type::tensor_of(t[0].dtype, row).str() + " ") +
                    "of " + tstr(t[0]));
      return ok(args[0]);
    }
    case PrimId::Size:
      return ok(Type::scalar(DType::I64));
    case PrimId::Slice: {
      if (t[0].shape.empty()) return fail("'slice' needs a tensor, got " + tstr(t[0]));
      auto b = slice_bounds(attrs, t[0].shape[0]);
      if (!b) {
        auto bound = [](const std::optional<int64_t>& v) {
          return v ? std::to_string(*v) : std::string();
        };
        return fail("the slice [" + bound(attrs.start) + ":" + bound(attrs.stop) +
                    "] is out of range for " + tstr(t[0]) + " (" + std::to_string(t[0].shape[0]) +
                    " rows)");
      }
      Shape s = t[0].shape;
      s[0] = b->second - b->first;
      return ok(Type::tensor_of(t[0].dtype, std::move(s)));
    }
    case PrimId::Reshape: {
      if (!attrs.shape) return fail("'reshape' needs shape=, for example reshape(x, shape=[2,3])");
      Shape s = *attrs.shape;
      if (auto e = check_shape_attr(op, s, true)) return fail(*e);
      int64_t known = 1, infer = -1;
      for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] != -1) {
          known *= s[i];
        } else if (infer >= 0) {
          return fail("'reshape' allows at most one -1 in shape=" + shape_str(s));
        } else {
          infer = static_cast<int64_t>(i);
        }
      }
      int64_t total = t[0].num_elements();
      if (infer >= 0) {
        if (known == 0 || total % known != 0)
          return fail("'reshape' cannot infer the -1 in shape=" + shape_str(s) + " for " +
                      tstr(t[0]) + " (" + std::to_string(total) + " elements)");
        s[static_cast<size_t>(infer)] = total / known;
      } else if (known != total) {
        return fail("'reshape' cannot change the number of elements: " + tstr(t[0]) + " has " +
                    std::to_string(total) + ", shape=" + shape_str(s) + " has " +
                    std::to_string(known));
      }
      return ok(Type::tensor_of(t[0].dtype, std::move(s)));
    }
    case PrimId::Dot:
    case PrimId::Matvec:
    case PrimId::Matmul:
    case PrimId::Outer:
    case PrimId::Transpose:
      return linalg_type(op, t);
    case PrimId::Uniform:
    case PrimId::Normal:
    case PrimId::Exponential: {
      if (auto e = check_key(op, t[0])) return fail(*e);
      Shape s = attrs.shape.value_or(Shape{});
      if (t.size() == 2) {
        if (attrs.shape)
          return fail(q(op) + " takes its shape from shape= or from a second operand, not both");
        s = t[1].shape;
      }
      if (auto e = check_shape_attr(op, s, false)) return fail(*e);
      return ok(Type::tensor_of(DType::F64, std::move(s)));
    }
    case PrimId::Gamma:
    case PrimId::Poisson:
    case PrimId::Bernoulli:
    case PrimId::Categorical: {
      if (auto e = check_key(op, t[0])) return fail(*e);
      const char* what = op == PrimId::Gamma       ? "the shape parameter alpha"
                         : op == PrimId::Poisson   ? "the rate lam"
                         : op == PrimId::Bernoulli ? "the probability p"
                                                   : "the logits";
      if (!is_float(t[1].dtype))
        return fail(std::string(what) + " of " + q(op) + " must be a float (f32 or f64), got " +
                    tstr(t[1]) + "; convert it with " + cast_hint(DType::F64));
      if (op == PrimId::Gamma) return ok(Type::tensor_of(t[1].dtype, t[1].shape));
      if (op == PrimId::Poisson) return ok(Type::tensor_of(DType::I64, t[1].shape));
      if (op == PrimId::Bernoulli) return ok(Type::tensor_of(DType::Bool, t[1].shape));
      if (t[1].shape.empty() || t[1].shape.back() == 0)
        return fail("the logits of 'categorical' need a last axis of at least one category, got " +
                    tstr(t[1]) + "; for example categorical(key, [0.0, 1.5, -2.0])");
      return ok(Type::tensor_of(DType::I64, Shape(t[1].shape.begin(), t[1].shape.end() - 1)));
    }
    case PrimId::Split:
      if (auto e = check_key(op, t[0])) return fail(*e);
      return ok(Type::tuple({Type::scalar(DType::I64), Type::scalar(DType::I64)}));
    case PrimId::FoldIn:
      if (auto e = check_key(op, t[0])) return fail(*e);
      if (!is_integer(t[1].dtype) || !t[1].shape.empty())
        return fail("the value 'fold_in' folds into the key must be an i32 or i64 scalar, got " +
                    tstr(t[1]) + "; for example fold_in(key, thread_index())");
      return ok(Type::scalar(DType::I64));
    case PrimId::ThreadIndex:
      return ok(Type::scalar(DType::I64));
    case PrimId::Progress:
      if (t[0].dtype != DType::I64 || !t[0].shape.empty())
        return fail("'progress' takes an i64 scalar (an iteration, say), got " + tstr(t[0]));
      return ok(Type::scalar(DType::I64));
    default:
      break;
  }
  return fail("internal: no type rule for " + q(op));
}

}  // namespace ab
