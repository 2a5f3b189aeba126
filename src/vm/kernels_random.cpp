// Kernels of uniform, normal and split: each lane's numbers are a pure
// function of its key (the scheme is in philox.h), so they do not depend on
// the lane, the batch or the schedule. A Shared key is expanded once and
// copied to every lane.
#include "vm/elementwise_impl.h"
#include "vm/philox.h"

namespace ab::kern {

namespace {

using Generator = void (*)(int64_t key, double* out, int64_t count);

bool generate(const KernelCall& c, Generator gen) {
  const ArgView& vk = c.args[0];
  const OutView& vo = c.outs[0];
  const int64_t E = vo.type->num_elements();
  if (c.n == 0 || E == 0) return true;
  if (vk.access == Access::Shared) {
    double* first = lane_out<double>(vo, 0, E);
    gen(*static_cast<const int64_t*>(vk.data), first, E);
    for (int64_t j = 1; j < c.n; ++j)
      std::memcpy(lane_out<double>(vo, j, E), first, static_cast<size_t>(E) * sizeof(double));
    return true;
  }
  for (int64_t j = 0; j < c.n; ++j) gen(*lane_in<int64_t>(vk, j, 1), lane_out<double>(vo, j, E), E);
  return true;
}

}  // namespace

bool kernel_Uniform(const KernelCall& c, KernelError*) { return generate(c, &random_uniform); }
bool kernel_Normal(const KernelCall& c, KernelError*) { return generate(c, &random_normal); }

// Reads each lane's key before writing either result: `k, s = split(k)`
// updates the key in place.
bool kernel_Split(const KernelCall& c, KernelError*) {
  const ArgView& vk = c.args[0];
  for (int64_t j = 0; j < c.n; ++j) {
    KeyPair kp = random_split(*lane_in<int64_t>(vk, j, 1));
    *lane_out<int64_t>(c.outs[0], j, 1) = kp.first;
    *lane_out<int64_t>(c.outs[1], j, 1) = kp.second;
  }
  return true;
}

}  // namespace ab::kern
