// philox_bench: nanoseconds per value of the uniform, normal and split
// kernels on chunks of 256 lanes with distinct keys (the stack VM's chunk),
// for scalar results and for shape [16]. Best of several repetitions; prints
// one JSON object. Time is the thread's CPU time, so other processes on a
// busy machine disturb it less. Usage: philox_bench [--quick]
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <vector>

#include "vm/kernels/kernel.h"

using namespace ab;

namespace {

constexpr int64_t kLanes = 256;

double cpu_seconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// ns per value of `op` over kLanes lanes with E values each.
double measure(PrimId op, int64_t E, int64_t values_wanted) {
  std::vector<int64_t> keys(kLanes);
  for (int64_t j = 0; j < kLanes; ++j) keys[j] = j * 7919 + 13;
  TensorType key_t{DType::I64, {}};
  TensorType out_t =
      op == PrimId::Split ? key_t : TensorType{DType::F64, E == 1 ? Shape{} : Shape{E}};
  std::vector<double> out(static_cast<size_t>(kLanes * E));
  std::vector<int64_t> k1(kLanes), k2(kLanes);
  ArgView a{keys.data(), Access::Dense, nullptr, &key_t};
  OutView o[2];
  if (op == PrimId::Split) {
    o[0] = {k1.data(), Access::Dense, nullptr, &key_t};
    o[1] = {k2.data(), Access::Dense, nullptr, &key_t};
  } else {
    o[0] = {out.data(), Access::Dense, nullptr, &out_t};
  }
  PrimAttrs attrs;
  if (E > 1) attrs.shape = Shape{E};
  KernelCall c{kLanes, &a, 1, o, op == PrimId::Split ? 2 : 1, &attrs};
  KernelFn fn = kernel_for(op);
  const int64_t per_call = op == PrimId::Split ? 2 * kLanes : kLanes * E;
  const int64_t calls = std::max<int64_t>(1, values_wanted / per_call);
  double best = 1e300, sink = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = cpu_seconds();
    for (int64_t i = 0; i < calls; ++i) {
      keys[0] = i;  // not hoistable
      KernelError err;
      fn(c, &err);
      sink += op == PrimId::Split ? static_cast<double>(k1[1] & 1) : out[1];
    }
    best = std::min(best, cpu_seconds() - t0);
  }
  if (sink == -1) std::puts("");
  return best / static_cast<double>(calls * per_call) * 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t want = (argc > 1 && std::strcmp(argv[1], "--quick") == 0) ? 200000 : 4000000;
  std::printf(
      "{\"ns_per_value\": {\"uniform\": %.2f, \"uniform[16]\": %.2f, \"normal\": %.2f, "
      "\"normal[16]\": %.2f, \"split\": %.2f}}\n",
      measure(PrimId::Uniform, 1, want), measure(PrimId::Uniform, 16, want),
      measure(PrimId::Normal, 1, want), measure(PrimId::Normal, 16, want),
      measure(PrimId::Split, 1, want));
}
