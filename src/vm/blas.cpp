#include "vm/blas.h"

#include <cblas.h>
#include <dlfcn.h>

#include <mutex>
#include <stdexcept>
#include <string>

namespace ab::blas {

namespace {

// The functions, typed as cblas.h declares them (decltype does not link them).
struct Table {
  decltype(&::cblas_dgemm) dgemm = nullptr;
  decltype(&::cblas_sgemm) sgemm = nullptr;
  decltype(&::cblas_dgemv) dgemv = nullptr;
  decltype(&::cblas_sgemv) sgemv = nullptr;
};

Table g_table;
std::once_flag g_once;
std::string g_error;

template <typename F>
void find(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  if (!out && g_error.empty()) g_error = std::string("no ") + name + " in it";
}

void load_once() {
  // Debian's libopenblas0 provides the .so.0 (an alternatives link to the
  // pthread, OpenMP or serial build); the unversioned name comes with -dev.
  void* lib = nullptr;
  std::string why;
  for (const char* name : {"libopenblas.so.0", "libopenblas.so"}) {
    lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    if (const char* e = dlerror()) why = e;
  }
  if (!lib) {
    g_error = "cannot load OpenBLAS (libopenblas.so.0): " + why;
    return;
  }
  find(lib, "cblas_dgemm", g_table.dgemm);
  find(lib, "cblas_sgemm", g_table.sgemm);
  find(lib, "cblas_dgemv", g_table.dgemv);
  find(lib, "cblas_sgemv", g_table.sgemv);
  if (!g_error.empty()) {
    g_error = "OpenBLAS (libopenblas.so.0) is not usable: " + g_error;
    return;
  }
  // The VMs call BLAS on one chunk of lanes at a time and shard the batch
  // over their own threads: OpenBLAS's workers would only compete.
  using SetThreads = void (*)(int);
  if (auto set = reinterpret_cast<SetThreads>(dlsym(lib, "openblas_set_num_threads"))) set(1);
}

const Table& table() {
  std::call_once(g_once, load_once);
  if (!g_error.empty()) throw std::runtime_error(g_error);
  return g_table;
}

inline int bi(int64_t v) { return static_cast<int>(v); }

}  // namespace

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const double* A, int64_t lda,
          const double* B, int64_t ldb, double* C, int64_t ldc) {
  table().dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                bi(M), bi(N), bi(K), 1.0, A, bi(lda), B, bi(ldb), 0.0, C, bi(ldc));
}

void gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
          const float* B, int64_t ldb, float* C, int64_t ldc) {
  table().sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                bi(M), bi(N), bi(K), 1.0f, A, bi(lda), B, bi(ldb), 0.0f, C, bi(ldc));
}

void gemv(int64_t M, int64_t N, const double* A, const double* x, double* y) {
  table().dgemv(CblasRowMajor, CblasNoTrans, bi(M), bi(N), 1.0, A, bi(N), x, 1, 0.0, y, 1);
}

void gemv(int64_t M, int64_t N, const float* A, const float* x, float* y) {
  table().sgemv(CblasRowMajor, CblasNoTrans, bi(M), bi(N), 1.0f, A, bi(N), x, 1, 0.0f, y, 1);
}

}  // namespace ab::blas
