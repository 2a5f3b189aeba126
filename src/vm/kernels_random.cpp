// Kernels of uniform, normal and split: each lane's numbers are a pure
// function of its key (the scheme is in philox.h), so they do not depend on
// the lane, the batch or the schedule. Lanes go to the generator kLanes at a
// time (its blocks are computed several at once); a Shared key is expanded
// once and copied to every lane.
#include "vm/elementwise_impl.h"
#include "vm/philox.h"

namespace ab::kern {

namespace {

using Generator = void (*)(const int64_t* keys, double* const* out, int64_t count, int64_t lanes);

constexpr int64_t kLanes = 64;

bool generate(const KernelCall& c, Generator gen) {
  const ArgView& vk = c.args[0];
  const OutView& vo = c.outs[0];
  const int64_t E = vo.type->num_elements();
  if (c.n == 0 || E == 0) return true;
  if (vk.access == Access::Shared) {
    double* first = lane_out<double>(vo, 0, E);
    gen(static_cast<const int64_t*>(vk.data), &first, E, 1);
    for (int64_t j = 1; j < c.n; ++j)
      std::memcpy(lane_out<double>(vo, j, E), first, static_cast<size_t>(E) * sizeof(double));
    return true;
  }
  int64_t keys[kLanes];
  double* outs[kLanes];
  for (int64_t j0 = 0; j0 < c.n; j0 += kLanes) {
    const int64_t m = std::min(kLanes, c.n - j0);
    for (int64_t i = 0; i < m; ++i) {
      keys[i] = *lane_in<int64_t>(vk, j0 + i, 1);
      outs[i] = lane_out<double>(vo, j0 + i, E);
    }
    gen(keys, outs, E, m);
  }
  return true;
}

}  // namespace

bool kernel_Uniform(const KernelCall& c, KernelError*) {
  return generate(c, &random_uniform_lanes);
}
bool kernel_Normal(const KernelCall& c, KernelError*) { return generate(c, &random_normal_lanes); }

// Reads the lanes' keys before writing either result: `k, s = split(k)`
// updates the key in place.
bool kernel_Split(const KernelCall& c, KernelError*) {
  const ArgView& vk = c.args[0];
  int64_t keys[kLanes], first[kLanes], second[kLanes];
  for (int64_t j0 = 0; j0 < c.n; j0 += kLanes) {
    const int64_t m = std::min(kLanes, c.n - j0);
    for (int64_t i = 0; i < m; ++i) keys[i] = *lane_in<int64_t>(vk, j0 + i, 1);
    random_split_lanes(keys, first, second, m);
    for (int64_t i = 0; i < m; ++i) {
      *lane_out<int64_t>(c.outs[0], j0 + i, 1) = first[i];
      *lane_out<int64_t>(c.outs[1], j0 + i, 1) = second[i];
    }
  }
  return true;
}

}  // namespace ab::kern
