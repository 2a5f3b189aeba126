// Linear-algebra kernels against naive loops: the shared-matrix GEMM paths
// (dense, gathered and scattered lanes, f64 and f32), the per-lane paths
// (small loops and per-lane BLAS), integer wrap, and results in place.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernel_harness.h"
#include "vm/kernels/ordered_linalg.h"

using namespace ab;
using namespace ab::test;

namespace {

std::vector<double> values(size_t count, double seed) {
  std::vector<double> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = std::sin(seed + 0.7 * static_cast<double>(i)) * 3.0;
  return v;
}

// y = A x for one lane, naive.
std::vector<double> naive_matvec(const double* A, const double* x, int64_t m, int64_t k) {
  std::vector<double> y(m, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p) y[i] += A[i * k + p] * x[p];
  return y;
}

std::vector<double> naive_matmul(const double* A, const double* B, int64_t m, int64_t k,
                                 int64_t n) {
  std::vector<double> C(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t q = 0; q < n; ++q)
      for (int64_t p = 0; p < k; ++p) C[i * n + q] += A[i * k + p] * B[p * n + q];
  return C;
}

template <class T>
void check_close(const std::vector<T>& got, const std::vector<double>& want, double tol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    CAPTURE(i);
    CHECK(std::abs(static_cast<double>(got[i]) - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

}  // namespace

TEST_CASE("matvec with a shared matrix is one GEMM and matches the naive loop") {
  const int64_t m = 5, k = 7, n = 13;
  auto A = values(m * k, 0.1);
  auto X = values(n * k, 2.0);
  std::vector<double> want;
  for (int64_t j = 0; j < n; ++j) {
    auto y = naive_matvec(A.data(), X.data() + j * k, m, k);
    want.insert(want.end(), y.begin(), y.end());
  }
  SUBCASE("dense lanes") {
    auto r =
        run(PrimId::Matvec, n, {shared(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k}), X)});
    REQUIRE(r.ok);
    check_close(r.out<double>(), want, 1e-12);
  }
  SUBCASE("gathered lanes") {
    std::vector<uint32_t> idx;
    std::vector<double> storage((n + 2) * k, -1.0);
    for (int64_t j = 0; j < n; ++j) {
      idx.push_back(static_cast<uint32_t>(n + 1 - j));
      std::copy(X.begin() + j * k, X.begin() + (j + 1) * k, storage.begin() + idx.back() * k);
    }
    auto r = run(PrimId::Matvec, n,
                 {shared(tt(DType::F64, {m, k}), A), gather(tt(DType::F64, {k}), storage, idx)});
    REQUIRE(r.ok);
    check_close(r.out<double>(), want, 1e-12);
  }
  SUBCASE("f32") {
    std::vector<float> A32(A.begin(), A.end()), X32(X.begin(), X.end());
    auto r = run(PrimId::Matvec, n,
                 {shared(tt(DType::F32, {m, k}), A32), dense(tt(DType::F32, {k}), X32)});
    REQUIRE(r.ok);
    check_close(r.out<float>(), want, 1e-5);
  }
  SUBCASE("per-lane matrices, shared vector") {
    std::vector<double> As;
    for (int64_t j = 0; j < n; ++j) As.insert(As.end(), A.begin(), A.end());
    auto r =
        run(PrimId::Matvec, n, {dense(tt(DType::F64, {m, k}), As), dense(tt(DType::F64, {k}), X)});
    check_close(r.out<double>(), want, 1e-12);
  }
}

TEST_CASE("matvec: scattered results and x = matvec(A, x) in place") {
  const int64_t m = 6, n = 4;
  auto A = values(m * m, 0.3);
  const TensorType ta = tt(DType::F64, {m, m}), tv = tt(DType::F64, {m});
  for (bool shared_matrix : {true, false}) {
    CAPTURE(shared_matrix);
    std::vector<double> As = A;
    if (!shared_matrix)
      for (int64_t j = 1; j < n; ++j) As.insert(As.end(), A.begin(), A.end());
    // Dense in place
    auto x = values(n * m, 1.0);
    auto orig = x;
    ArgView args[2] = {{As.data(), shared_matrix ? Access::Shared : Access::Dense, nullptr, &ta},
                       {x.data(), Access::Dense, nullptr, &tv}};
    OutView o{x.data(), Access::Dense, nullptr, &tv};
    PrimAttrs attrs;
    KernelCall call{n, args, 2, &o, 1, &attrs};
    KernelError err;
    REQUIRE(kernel_for(PrimId::Matvec)(call, &err));
    std::vector<double> want;
    for (int64_t j = 0; j < n; ++j) {
      auto y = naive_matvec(A.data(), orig.data() + j * m, m, m);
      want.insert(want.end(), y.begin(), y.end());
    }
    check_close(x, want, 1e-12);
    // Gather in place: lanes 0 and 2 of the 4 stored vectors
    x = orig;
    std::vector<uint32_t> active = {2, 0};
    args[1] = {x.data(), Access::Gather, active.data(), &tv};
    o = {x.data(), Access::Gather, active.data(), &tv};
    call.n = 2;
    REQUIRE(kernel_for(PrimId::Matvec)(call, &err));
    std::vector<double> want2 = orig;
    for (uint32_t s : active) {
      auto y = naive_matvec(A.data(), orig.data() + s * m, m, m);
      std::copy(y.begin(), y.end(), want2.begin() + s * m);
    }
    check_close(x, want2, 1e-12);
  }
}

TEST_CASE("matvec: large per-lane matrices use per-lane BLAS") {
  const int64_t m = 70, k = 80, n = 2;
  auto A = values(n * m * k, 0.5);
  auto X = values(n * k, 1.5);
  auto r =
      run(PrimId::Matvec, n, {dense(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k}), X)});
  std::vector<double> want;
  for (int64_t j = 0; j < n; ++j) {
    auto y = naive_matvec(A.data() + j * m * k, X.data() + j * k, m, k);
    want.insert(want.end(), y.begin(), y.end());
  }
  check_close(r.out<double>(), want, 1e-12);
}

TEST_CASE("matmul: shared A, shared B, per-lane both, large, in place") {
  const int64_t m = 3, k = 4, q = 5, n = 6;
  auto A = values(m * k, 0.2), B = values(k * q, 0.9);
  auto As = values(n * m * k, 1.1), Bs = values(n * k * q, 2.3);
  auto expect = [&](bool a_shared, bool b_shared) {
    std::vector<double> want;
    for (int64_t j = 0; j < n; ++j) {
      const double* a = a_shared ? A.data() : As.data() + j * m * k;
      const double* b = b_shared ? B.data() : Bs.data() + j * k * q;
      auto c = naive_matmul(a, b, m, k, q);
      want.insert(want.end(), c.begin(), c.end());
    }
    return want;
  };
  auto r1 = run(PrimId::Matmul, n,
                {shared(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k, q}), Bs)});
  check_close(r1.out<double>(), expect(true, false), 1e-12);
  auto r2 = run(PrimId::Matmul, n,
                {dense(tt(DType::F64, {m, k}), As), shared(tt(DType::F64, {k, q}), B)});
  check_close(r2.out<double>(), expect(false, true), 1e-12);
  auto r3 = run(PrimId::Matmul, n,
                {dense(tt(DType::F64, {m, k}), As), dense(tt(DType::F64, {k, q}), Bs)});
  check_close(r3.out<double>(), expect(false, false), 1e-12);
  auto r4 = run(PrimId::Matmul, n,
                {shared(tt(DType::F64, {m, k}), A), shared(tt(DType::F64, {k, q}), B)});
  check_close(r4.out<double>(), expect(true, true), 1e-12);
  std::vector<float> A32(A.begin(), A.end()), Bs32(Bs.begin(), Bs.end());
  auto r5 = run(PrimId::Matmul, n,
                {shared(tt(DType::F32, {m, k}), A32), dense(tt(DType::F32, {k, q}), Bs32)});
  check_close(r5.out<float>(), expect(true, false), 1e-5);

  const int64_t L = 40;  // 40^3 > the per-lane BLAS threshold
  auto A6 = values(2 * L * L, 0.4), BB = values(2 * L * L, 0.8);
  auto r6 = run(PrimId::Matmul, 2,
                {dense(tt(DType::F64, {L, L}), A6), dense(tt(DType::F64, {L, L}), BB)});
  std::vector<double> want6;
  for (int j = 0; j < 2; ++j) {
    auto c = naive_matmul(A6.data() + j * L * L, BB.data() + j * L * L, L, L, L);
    want6.insert(want6.end(), c.begin(), c.end());
  }
  check_close(r6.out<double>(), want6, 1e-12);

  // B = matmul(A, B) with shared A (square), and A = matmul(A, B) with shared B.
  const TensorType sq = tt(DType::F64, {k, k});
  auto S = values(k * k, 0.6);
  for (int which = 0; which < 2; ++which) {
    auto V = values(n * k * k, 3.3);
    auto orig = V;
    ArgView args[2];
    if (which == 0) {
      args[0] = {S.data(), Access::Shared, nullptr, &sq};
      args[1] = {V.data(), Access::Dense, nullptr, &sq};
    } else {
      args[0] = {V.data(), Access::Dense, nullptr, &sq};
      args[1] = {S.data(), Access::Shared, nullptr, &sq};
    }
    OutView o{V.data(), Access::Dense, nullptr, &sq};
    PrimAttrs attrs;
    KernelCall call{n, args, 2, &o, 1, &attrs};
    KernelError err;
    REQUIRE(kernel_for(PrimId::Matmul)(call, &err));
    std::vector<double> want;
    for (int64_t j = 0; j < n; ++j) {
      const double* lane = orig.data() + j * k * k;
      auto c = which == 0 ? naive_matmul(S.data(), lane, k, k, k)
                          : naive_matmul(lane, S.data(), k, k, k);
      want.insert(want.end(), c.begin(), c.end());
    }
    check_close(V, want, 1e-12);
  }
}

TEST_CASE("dot, outer, transpose; integers wrap") {
  auto d = run(PrimId::Dot, 2,
               {dense(tt(DType::F64, {3}), std::vector<double>{1, 2, 3, 4, 5, 6}),
                shared(tt(DType::F64, {3}), std::vector<double>{1, 0, -1})});
  CHECK(d.out<double>() == std::vector<double>{-2, -2});
  const int64_t big = std::numeric_limits<int64_t>::max();
  auto di = run(PrimId::Dot, 1,
                {dense(tt(DType::I64, {2}), std::vector<int64_t>{big, 1}),
                 dense(tt(DType::I64, {2}), std::vector<int64_t>{2, 2})});
  CHECK(di.out<int64_t>()[0] == 0);  // 2*MAX + 2 wraps to 0
  auto mvi = run(PrimId::Matvec, 1,
                 {shared(tt(DType::I32, {2, 2}), std::vector<int32_t>{1, 2, 3, 4}),
                  dense(tt(DType::I32, {2}), std::vector<int32_t>{5, 6})});
  CHECK(mvi.out<int32_t>() == std::vector<int32_t>{17, 39});
  auto mmi = run(PrimId::Matmul, 1,
                 {shared(tt(DType::I64, {1, 2}), std::vector<int64_t>{1, 2}),
                  dense(tt(DType::I64, {2, 2}), std::vector<int64_t>{1, 2, 3, 4})});
  CHECK(mmi.out<int64_t>() == std::vector<int64_t>{7, 10});
  auto o = run(PrimId::Outer, 1,
               {dense(tt(DType::F64, {2}), std::vector<double>{1, 2}),
                dense(tt(DType::F64, {3}), std::vector<double>{1, 10, 100})});
  CHECK(o.out<double>() == std::vector<double>{1, 10, 100, 2, 20, 200});
  auto t = run(
      PrimId::Transpose, 2,
      {dense(tt(DType::I32, {2, 3}), std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})});
  CHECK(t.out<int32_t>() == std::vector<int32_t>{1, 4, 2, 5, 3, 6, 7, 10, 8, 11, 9, 12});
  // transpose in place (square)
  const TensorType sq = tt(DType::F64, {2, 2});
  std::vector<double> v = {1, 2, 3, 4, 5, 6, 7, 8};
  ArgView a{v.data(), Access::Dense, nullptr, &sq};
  OutView out{v.data(), Access::Dense, nullptr, &sq};
  PrimAttrs attrs;
  KernelCall call{2, &a, 1, &out, 1, &attrs};
  KernelError err;
  REQUIRE(kernel_for(PrimId::Transpose)(call, &err));
  CHECK(v == std::vector<double>{1, 3, 2, 4, 5, 7, 6, 8});
}

TEST_CASE("linear algebra with empty dimensions") {
  auto mv = run(PrimId::Matvec, 2,
                {shared(tt(DType::F64, {3, 0}), std::vector<double>{}),
                 dense(tt(DType::F64, {0}), std::vector<double>{})});
  CHECK(mv.out<double>() == std::vector<double>(6, 0.0));
  auto mm = run(PrimId::Matmul, 2,
                {shared(tt(DType::F64, {2, 0}), std::vector<double>{}),
                 dense(tt(DType::F64, {0, 2}), std::vector<double>{})});
  CHECK(mm.out<double>() == std::vector<double>(8, 0.0));
  auto d = run(PrimId::Dot, 1,
               {dense(tt(DType::F64, {0}), std::vector<double>{}),
                dense(tt(DType::F64, {0}), std::vector<double>{})});
  CHECK(d.out<double>() == std::vector<double>{0});
}

// The ordered products (vm/kernels/ordered_linalg.h): every element is one fma
// chain in index order, so each must equal that chain computed plainly, to
// the last bit, on every instruction set the host has, for every tile shape
// (rows around the tiles' 4, 6 and 8; columns around the vectors' 4, 8, 12,
// 16, 32 and 64; depths across the 256-deep blocks), transposed operands and
// results, and either orientation the product may pick.
template <class T>
T chain(int64_t K, const T* a, int64_t sa, const T* b, int64_t sb) {
  T acc = 0;
  for (int64_t p = 0; p < K; ++p) acc = std::fma(a[p * sa], b[p * sb], acc);
  return acc;
}

template <class T>
void check_ordered_gemm() {
  for (int64_t M : {1, 3, 6, 7, 13, 64})
    for (int64_t N : {1, 4, 5, 9, 12, 17, 32, 33, 70})
      for (int64_t K : {1, 7, 255, 257, 600})
        for (int layout = 0; layout < 4; ++layout) {
          CAPTURE(M);
          CAPTURE(N);
          CAPTURE(K);
          CAPTURE(layout);
          const bool ta = layout & 1, tc = layout & 2;
          // A [M, K] (or stored transposed), B [K, N], C [M, N] (or transposed),
          // each with a padded leading dimension.
          const int64_t lda = (ta ? M : K) + 3, ldb = N + 2, ldc = (tc ? M : N) + 1;
          std::vector<T> A((ta ? K : M) * lda), B(K * ldb), C((tc ? N : M) * ldc, T(42));
          for (size_t i = 0; i < A.size(); ++i) A[i] = T(std::sin(0.3 + 0.77 * double(i)));
          for (size_t i = 0; i < B.size(); ++i) B[i] = T(std::cos(1.1 + 0.31 * double(i)));
          const int64_t rsa = ta ? 1 : lda, csa = ta ? lda : 1;
          const int64_t rsc = tc ? 1 : ldc, csc = tc ? ldc : 1;
          kern::ordered::gemm<T>(M, N, K, A.data(), rsa, csa, B.data(), ldb, 1, C.data(), rsc, csc);
          int64_t wrong = 0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j)
              wrong +=
                  C[i * rsc + j * csc] != chain<T>(K, A.data() + i * rsa, csa, B.data() + j, ldb);
          CHECK(wrong == 0);
          int64_t touched = 0;  // the padding of C is left alone
          for (int64_t r = 0; r < (tc ? N : M); ++r) touched += C[r * ldc + (tc ? M : N)] != T(42);
          CHECK(touched == 0);
        }
}

TEST_CASE("ordered products: each element is its fma chain, on every instruction set") {
  const std::string host = kern::ordered::isa();
  for (const char* isa : {"scalar", "avx2", "avx512"}) {
    if (!kern::ordered::use_isa(isa)) continue;
    CAPTURE(isa);
    check_ordered_gemm<double>();
    check_ordered_gemm<float>();
    for (int64_t m : {1, 7, 8, 9, 30})
      for (int64_t k : {0, 1, 5, 300}) {
        std::vector<double> A(m * (k + 1)), x(k + 1), y(m, 42.0);
        for (size_t i = 0; i < A.size(); ++i) A[i] = std::sin(0.1 * double(i));
        for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(0.2 * double(i));
        kern::ordered::gemv<double>(m, k, A.data(), k + 1, x.data(), y.data());
        for (int64_t i = 0; i < m; ++i)
          CHECK(y[i] == chain<double>(k, A.data() + i * (k + 1), 1, x.data(), 1));
      }
    for (int n = 1; n <= 4; ++n) {
      std::vector<float> a(100 * n), b(100 * n);
      for (size_t i = 0; i < a.size(); ++i)
        a[i] = float(std::sin(0.5 * double(i))), b[i] = 0.25f + float(i % 7);
      const float* xs[4];
      const float* ys[4];
      float out[4];
      for (int i = 0; i < n; ++i) xs[i] = a.data() + 100 * i, ys[i] = b.data() + 100 * i;
      kern::ordered::dots<float>(n, 100, xs, ys, out);
      for (int i = 0; i < n; ++i) CHECK(out[i] == chain<float>(100, xs[i], 1, ys[i], 1));
    }
  }
  CHECK(kern::ordered::use_isa(host.c_str()));
  CHECK_FALSE(kern::ordered::use_isa("sse9"));
}

// A thread's product is the same bits whichever threads it is batched with:
// lane j of a batch of n (n = 1 .. 9, 64 and 301, shared matrix, through the
// kernels) equals the same lane computed alone and computed per lane.
TEST_CASE("linalg kernels: a lane's result does not depend on the batch it is in") {
  const int64_t m = 37, k = 300, q = 3;
  const auto A = values(m * k, 0.9);
  const auto X = values(301 * k, 0.2);
  const auto Bm = values(301 * k * q, 0.4);
  for (int64_t n : {1, 2, 3, 7, 9, 64, 301}) {
    CAPTURE(n);
    std::vector<double> xs(X.begin(), X.begin() + n * k), bs(Bm.begin(), Bm.begin() + n * k * q);
    auto mv =
        run(PrimId::Matvec, n, {shared(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k}), xs)});
    auto mm = run(PrimId::Matmul, n,
                  {shared(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k, q}), bs)});
    for (int64_t j = 0; j < n; j += (n > 9 ? 17 : 1)) {
      std::vector<double> x1(X.begin() + j * k, X.begin() + (j + 1) * k);
      std::vector<double> b1(Bm.begin() + j * k * q, Bm.begin() + (j + 1) * k * q);
      auto alone = run(PrimId::Matvec, 1,
                       {shared(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k}), x1)});
      auto lane = run(PrimId::Matvec, 1,
                      {dense(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k}), x1)});
      auto mm1 = run(PrimId::Matmul, 1,
                     {dense(tt(DType::F64, {m, k}), A), dense(tt(DType::F64, {k, q}), b1)});
      const auto got = mv.out<double>(), got_mm = mm.out<double>();
      CHECK(std::vector<double>(got.begin() + j * m, got.begin() + (j + 1) * m) ==
            alone.out<double>());
      CHECK(alone.out<double>() == lane.out<double>());
      CHECK(std::vector<double>(got_mm.begin() + j * m * q, got_mm.begin() + (j + 1) * m * q) ==
            mm1.out<double>());
    }
  }
}
