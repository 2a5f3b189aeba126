// Type rules of the primitives (src/ir/prim_types.h): results for good
// operands, and error messages that tell the user what to write instead.
#include <doctest/doctest.h>

#include "ir/prim_types.h"

using namespace ab;

namespace {

Type S(DType d) { return Type::scalar(d); }
Type T(DType d, Shape s) { return Type::tensor_of(d, std::move(s)); }

std::string ty(PrimId op, std::vector<Type> args, PrimAttrs attrs = {}) {
  PrimTypeResult r = prim_result_type(op, args, attrs);
  return r.ok() ? r.type->str() : "error: " + r.error;
}

constexpr DType b = DType::Bool, i32 = DType::I32, i64 = DType::I64, f32 = DType::F32,
                f64 = DType::F64;

PrimAttrs axis(int64_t k) {
  PrimAttrs a;
  a.axis = k;
  return a;
}
PrimAttrs shape(Shape s) {
  PrimAttrs a;
  a.shape = std::move(s);
  return a;
}

}  // namespace

TEST_CASE("arithmetic: same dtype, NumPy broadcasting") {
  CHECK(ty(PrimId::Add, {S(i64), S(i64)}) == "i64");
  CHECK(ty(PrimId::Sub, {S(i32), S(i32)}) == "i32");
  CHECK(ty(PrimId::Mul, {S(f64), T(f64, {3})}) == "f64[3]");
  CHECK(ty(PrimId::Div, {T(f32, {2, 1}), T(f32, {3})}) == "f32[2,3]");
  CHECK(ty(PrimId::Pow, {T(i64, {4, 1, 2}), T(i64, {3, 1})}) == "i64[4,3,2]");
  CHECK(ty(PrimId::Add, {T(f64, {0}), S(f64)}) == "f64[0]");
  CHECK(ty(PrimId::Add, {T(f64, {0}), T(f64, {1})}) == "f64[0]");
  CHECK(ty(PrimId::Neg, {T(i32, {2})}) == "i32[2]");
  CHECK(ty(PrimId::Abs, {S(f32)}) == "f32");
}

TEST_CASE("arithmetic errors suggest cast") {
  CHECK(ty(PrimId::Add, {S(i64), S(f64)}) ==
        "error: operands of 'add' have different dtypes i64 and f64; convert one with "
        "cast(x, dtype=f64)");
  CHECK(ty(PrimId::Mul, {S(i64), S(i32)}).find("cast(x, dtype=i64)") != std::string::npos);
  CHECK(ty(PrimId::Sub, {S(f32), S(f64)}).find("cast(x, dtype=f64)") != std::string::npos);
  CHECK(ty(PrimId::Add, {S(b), S(b)}) ==
        "error: 'add' needs numeric operands, got bool; convert with cast(x, dtype=i64)");
  CHECK(ty(PrimId::Neg, {S(b)}).find("numeric") != std::string::npos);
  CHECK(ty(PrimId::Add, {T(f64, {2, 3}), T(f64, {4})}) ==
        "error: operands of 'add' have incompatible event shapes (f64[2,3], f64[4]); they must "
        "broadcast as in NumPy");
}

TEST_CASE("float math needs floats") {
  CHECK(ty(PrimId::Exp, {T(f32, {2})}) == "f32[2]");
  CHECK(ty(PrimId::Round, {S(f64)}) == "f64");
  CHECK(ty(PrimId::IsNan, {T(f64, {3})}) == "bool[3]");
  CHECK(ty(PrimId::IsFinite, {S(f32)}) == "bool");
  CHECK(ty(PrimId::Exp, {S(i64)}) ==
        "error: 'exp' needs a float operand, got i64; convert it with cast(x, dtype=f64)");
  CHECK(ty(PrimId::Sqrt, {S(b)}).find("needs a float operand") != std::string::npos);
}

TEST_CASE("compare gives bool, logic needs bool") {
  CHECK(ty(PrimId::Lt, {S(i64), T(i64, {3})}) == "bool[3]");
  CHECK(ty(PrimId::Eq, {S(b), S(b)}) == "bool");
  CHECK(ty(PrimId::Ge, {S(i32), S(i64)}).find("different dtypes i32 and i64") != std::string::npos);
  CHECK(ty(PrimId::And, {S(b), T(b, {2})}) == "bool[2]");
  CHECK(ty(PrimId::Not, {S(b)}) == "bool");
  CHECK(ty(PrimId::Or, {S(i64), S(b)}) ==
        "error: 'or' needs bool operands, got i64; compare first, for example ne(x, 0)");
}

TEST_CASE("select") {
  CHECK(ty(PrimId::Select, {S(b), S(f64), S(f64)}) == "f64");
  CHECK(ty(PrimId::Select, {T(b, {2, 1}), T(i64, {3}), S(i64)}) == "i64[2,3]");
  CHECK(ty(PrimId::Select, {S(i64), S(f64), S(f64)}).find("condition of 'select' must be bool") !=
        std::string::npos);
  CHECK(ty(PrimId::Select, {S(b), S(i64), S(f64)}).find("different dtypes") != std::string::npos);
}

TEST_CASE("cast, zeros, fill, iota, tuple") {
  PrimAttrs to_f32;
  to_f32.dtype = f32;
  CHECK(ty(PrimId::Cast, {T(i64, {2})}, to_f32) == "f32[2]");
  CHECK(ty(PrimId::Cast, {S(i64)}).find("needs dtype=") != std::string::npos);
  CHECK(ty(PrimId::Zeros, {}) == "f64");
  PrimAttrs z = shape({2, 3});
  z.dtype = i32;
  CHECK(ty(PrimId::Zeros, {}, z) == "i32[2,3]");
  CHECK(ty(PrimId::Zeros, {}, shape({-2})).find("negative dimension") != std::string::npos);
  CHECK(ty(PrimId::Fill, {S(b)}, shape({4})) == "bool[4]");
  CHECK(ty(PrimId::Fill, {T(f64, {2})}, shape({4})).find("must be a scalar") != std::string::npos);
  CHECK(ty(PrimId::Fill, {S(f64)}).find("needs shape=") != std::string::npos);
  PrimAttrs n5;
  n5.n = 5;
  CHECK(ty(PrimId::Iota, {}, n5) == "i64[5]");
  CHECK(ty(PrimId::Iota, {}).find("needs n=") != std::string::npos);
  CHECK(ty(PrimId::Tuple, {S(i64), Type::tuple({T(f64, {2}), S(b)})}) == "(i64, (f64[2], bool))");
  CHECK(ty(PrimId::Tuple, {}) == "()");
}

TEST_CASE("tuples only go into tuple; arity is checked") {
  CHECK(ty(PrimId::Add, {Type::tuple({S(i64), S(i64)}), S(i64)}) ==
        "error: 'add' cannot take a tuple operand (operand 1 is (i64, i64)); unpack it first, "
        "for example (a, b) = t");
  CHECK(ty(PrimId::Add, {S(i64)}) == "error: 'add' takes 2 operands, got 1");
  CHECK(ty(PrimId::Neg, {S(i64), S(i64)}) == "error: 'neg' takes 1 operand, got 2");
}

TEST_CASE("reductions: all dims or axis, negative axis counts from the end") {
  CHECK(ty(PrimId::Sum, {T(i64, {2, 3})}) == "i64");
  CHECK(ty(PrimId::Sum, {S(i64)}) == "i64");
  CHECK(ty(PrimId::Prod, {T(f32, {2, 3})}, axis(0)) == "f32[3]");
  CHECK(ty(PrimId::ReduceMax, {T(f64, {2, 3, 4})}, axis(-1)) == "f64[2,3]");
  CHECK(ty(PrimId::ReduceMin, {T(i32, {2, 3, 4})}, axis(-3)) == "i32[3,4]");
  CHECK(ty(PrimId::Sum, {T(i64, {2, 3})}, axis(2)) ==
        "error: 'sum' has axis=2 out of range for i64[2,3] (rank 2; valid: -2..1)");
  CHECK(ty(PrimId::Sum, {T(i64, {2, 3})}, axis(-3)).find("out of range") != std::string::npos);
  CHECK(ty(PrimId::Sum, {S(i64)}, axis(0)).find("valid: none") != std::string::npos);
  CHECK(ty(PrimId::Mean, {T(f64, {4})}) == "f64");
  CHECK(ty(PrimId::Mean, {T(i64, {4})}).find("needs a float operand") != std::string::npos);
  CHECK(ty(PrimId::Any, {T(b, {4})}) == "bool");
  CHECK(ty(PrimId::All, {T(i64, {4})}).find("needs a bool operand") != std::string::npos);
  CHECK(ty(PrimId::Sum, {T(b, {4})}).find("use any/all") != std::string::npos);
  CHECK(ty(PrimId::Sum, {T(f64, {0})}) == "f64");
  CHECK(ty(PrimId::ReduceMax, {T(f64, {0})}).find("no identity") != std::string::npos);
  CHECK(ty(PrimId::ReduceMin, {T(f64, {3, 0})}, axis(1)).find("no identity") != std::string::npos);
  CHECK(ty(PrimId::ReduceMin, {T(f64, {0, 3})}, axis(1)) == "f64[0]");
}

TEST_CASE("get, set, size, reshape") {
  CHECK(ty(PrimId::Get, {T(f64, {4}), S(i64)}) == "f64");
  CHECK(ty(PrimId::Get, {T(f64, {4, 2}), S(i32)}) == "f64[2]");
  CHECK(ty(PrimId::Get, {S(f64), S(i64)}).find("at least one dimension") != std::string::npos);
  CHECK(ty(PrimId::Get, {T(f64, {4}), S(f64)}) ==
        "error: the index of 'get' must be an i32 or i64 scalar, got f64");
  CHECK(ty(PrimId::Get, {T(f64, {4}), T(i64, {1})}).find("scalar") != std::string::npos);
  CHECK(ty(PrimId::Set, {T(f64, {4, 2}), S(i64), T(f64, {2})}) == "f64[4,2]");
  CHECK(ty(PrimId::Set, {T(f64, {4, 2}), S(i64), S(f64)}) == "f64[4,2]");
  CHECK(ty(PrimId::Set, {T(f64, {4, 2}), S(i64), T(f64, {3})}).find("does not fit a row f64[2]") !=
        std::string::npos);
  CHECK(ty(PrimId::Set, {T(f64, {4}), S(i64), S(i64)}).find("cast(x, dtype=f64)") !=
        std::string::npos);
  // One index per leading dimension: get(x, i, j) is x[i, j].
  CHECK(ty(PrimId::Get, {T(f64, {4, 2}), S(i64), S(i32)}) == "f64");
  CHECK(ty(PrimId::Get, {T(f64, {4, 2, 3}), S(i64), S(i64)}) == "f64[3]");
  CHECK(ty(PrimId::Get, {T(f64, {4, 2}), S(i64), S(i64), S(i64)}) ==
        "error: 'get' has 3 indices but f64[4,2] has 2 dimensions");
  CHECK(ty(PrimId::Get, {T(f64, {4, 2}), S(i64), S(f64)}) ==
        "error: the index of 'get' must be an i32 or i64 scalar, got f64");
  CHECK(ty(PrimId::Set, {T(f64, {4, 2}), S(i64), S(i32), S(f64)}) == "f64[4,2]");
  CHECK(ty(PrimId::Set, {T(f64, {4, 2, 3}), S(i64), S(i64), T(f64, {3})}) == "f64[4,2,3]");
  CHECK(ty(PrimId::Set, {T(f64, {4, 2}), S(i64), S(i64), T(f64, {2})}) ==
        "error: the value stored by 'set' is f64[2], which does not fit an element of f64[4,2]");
  CHECK(ty(PrimId::Set, {T(f64, {4}), S(i64), S(i64), S(f64)}) ==
        "error: 'set' has 2 indices but f64[4] has 1 dimension");
  CHECK(ty(PrimId::Size, {T(b, {3, 5})}) == "i64");
  CHECK(ty(PrimId::Reshape, {T(f64, {2, 3})}, shape({3, 2})) == "f64[3,2]");
  CHECK(ty(PrimId::Reshape, {T(f64, {2, 3})}, shape({-1})) == "f64[6]");
  CHECK(ty(PrimId::Reshape, {T(f64, {2, 3})}, shape({})).find("cannot change the number") !=
        std::string::npos);
  CHECK(ty(PrimId::Reshape, {S(f64)}, shape({1, 1})) == "f64[1,1]");
  CHECK(ty(PrimId::Reshape, {T(f64, {2, 3})}, shape({-1, -1})).find("at most one -1") !=
        std::string::npos);
  CHECK(ty(PrimId::Reshape, {T(f64, {2, 3})}, shape({4, -1})).find("cannot infer") !=
        std::string::npos);
}

TEST_CASE("linear algebra") {
  CHECK(ty(PrimId::Dot, {T(f64, {3}), T(f64, {3})}) == "f64");
  CHECK(ty(PrimId::Dot, {T(i64, {3}), T(i64, {3})}) == "i64");
  CHECK(ty(PrimId::Dot, {T(f64, {3}), T(f64, {4})}) ==
        "error: operands of 'dot' have mismatched dimensions f64[3] and f64[4]");
  CHECK(ty(PrimId::Dot, {T(f64, {3}), T(f32, {3})}).find("different dtypes") != std::string::npos);
  CHECK(ty(PrimId::Matvec, {T(f64, {2, 3}), T(f64, {3})}) == "f64[2]");
  CHECK(ty(PrimId::Matvec, {T(f64, {3}), T(f64, {3})}).find("a matrix [m,n] first") !=
        std::string::npos);
  CHECK(ty(PrimId::Matmul, {T(f32, {2, 3}), T(f32, {3, 5})}) == "f32[2,5]");
  CHECK(ty(PrimId::Matmul, {T(f32, {2, 3}), T(f32, {2, 3})}).find("mismatched") !=
        std::string::npos);
  CHECK(ty(PrimId::Outer, {T(f64, {2}), T(f64, {3})}) == "f64[2,3]");
  CHECK(ty(PrimId::Transpose, {T(b, {2, 3})}) == "bool[3,2]");
  CHECK(ty(PrimId::Transpose, {T(f64, {2})}).find("a matrix") != std::string::npos);
  CHECK(ty(PrimId::Dot, {T(b, {2}), T(b, {2})}).find("numeric") != std::string::npos);
}

TEST_CASE("random") {
  CHECK(ty(PrimId::Uniform, {S(i64)}, shape({2, 2})) == "f64[2,2]");
  CHECK(ty(PrimId::Normal, {S(i64)}) == "f64");
  CHECK(ty(PrimId::Split, {S(i64)}) == "(i64, i64)");
  CHECK(ty(PrimId::Uniform, {S(i32)}) ==
        "error: the key of 'uniform' must be an i64 scalar, got i32 (a key is an i64: an input, a "
        "literal, or a result of split or fold_in)");
  CHECK(ty(PrimId::Split, {T(i64, {2})}).find("i64 scalar") != std::string::npos);
}

TEST_CASE("every primitive has a type rule") {
  for (const PrimInfo& p : all_prims()) {
    std::vector<Type> args(static_cast<size_t>(p.min_args), Type::scalar(DType::I64));
    PrimTypeResult r = prim_result_type(p.id, args, {});
    CAPTURE(p.name);
    CHECK(r.error.find("internal") == std::string::npos);
  }
}

TEST_CASE("broadcast_shapes and normalize_axis") {
  CHECK(broadcast_shapes({2, 1}, {3}) == Shape{2, 3});
  CHECK(broadcast_shapes({}, {3}) == Shape{3});
  CHECK(broadcast_shapes({0}, {1}) == Shape{0});
  CHECK_FALSE(broadcast_shapes({0}, {2}).has_value());
  CHECK(normalize_axis(-1, 3) == 2);
  CHECK_FALSE(normalize_axis(3, 3).has_value());
  CHECK_FALSE(normalize_axis(0, 0).has_value());
}
