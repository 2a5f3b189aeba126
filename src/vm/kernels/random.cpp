// Kernels of the random primitives and of thread_index: each lane's numbers
// are a pure function of its key and parameters (the scheme is in philox.h),
// so they do not depend on the lane, the batch or the schedule. Lanes go to
// the generator kLanes at a time (its blocks are computed several at once);
// a Shared key is expanded once and copied to every lane.
#include <cmath>

#include "vm/kernels/elementwise_impl.h"
#include "vm/kernels/scalar.h"
#include "vm/kernels/philox.h"

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
bool kernel_Exponential(const KernelCall& c, KernelError*) {
  return generate(c, &random_exponential_lanes);
}

namespace {

// Per lane j and element e of the parameter: out[e] = draw(key, e, p[e]),
// or an error for the first lane with a parameter `bad` rejects.
template <class P, class R, class Draw, class Bad>
bool per_element(const KernelCall& c, KernelError* err, Draw draw, Bad bad) {
  const ArgView& vk = c.args[0];
  const ArgView& vp = c.args[1];
  const OutView& vo = c.outs[0];
  const int64_t E = vo.type->num_elements();
  for (int64_t j = 0; j < c.n; ++j) {
    const int64_t key = *lane_in<int64_t>(vk, j, 1);
    const P* p = lane_in<P>(vp, j, E);
    R* o = lane_out<R>(vo, j, E);
    for (int64_t e = 0; e < E; ++e) {
      const double x = static_cast<double>(p[e]);
      if (std::string m = bad(x); !m.empty()) [[unlikely]]
        return fail(err, j, std::move(m));
      o[e] = static_cast<R>(draw(key, e, x));
    }
  }
  return true;
}

template <class P>
bool gamma_of(const KernelCall& c, KernelError* err) {
  return per_element<P, P>(
      c, err, [](int64_t k, int64_t e, double a) { return random_gamma(k, e, a); },
      [](double a) -> std::string {
        if (a > 0 && std::isfinite(a)) return {};
        return "'gamma' needs a finite alpha > 0, got " + format_number(a);
      });
}

template <class P>
bool poisson_of(const KernelCall& c, KernelError* err) {
  return per_element<P, int64_t>(
      c, err, [](int64_t k, int64_t e, double lam) { return random_poisson(k, e, lam); },
      [](double lam) -> std::string {
        if (lam >= 0 && lam <= kMaxPoissonRate) return {};
        return "'poisson' needs 0 <= lam <= 1e15, got " + format_number(lam);
      });
}

// Uniforms of `domain` (uniform's scheme), `count` per lane, for lanes
// [j0, j0 + m): row i of the result is lane j0 + i's.
const double* lane_uniforms(const KernelCall& c, int64_t j0, int64_t m, int64_t count,
                            RandomDomain domain) {
  double* u = scratch<double>(0, m * count);
  int64_t keys[kLanes];
  double* outs[kLanes];
  for (int64_t i = 0; i < m; ++i) {
    keys[i] = *lane_in<int64_t>(c.args[0], j0 + i, 1);
    outs[i] = u + i * count;
  }
  random_uniform_domain_lanes(keys, outs, count, m, domain);
  return u;
}

template <class P>
bool bernoulli_of(const KernelCall& c) {
  const OutView& vo = c.outs[0];
  const int64_t E = vo.type->num_elements();
  if (E == 0) return true;
  for (int64_t j0 = 0; j0 < c.n; j0 += kLanes) {
    const int64_t m = std::min(kLanes, c.n - j0);
    const double* u = lane_uniforms(c, j0, m, E, RandomDomain::Bernoulli);
    for (int64_t i = 0; i < m; ++i) {
      const P* p = lane_in<P>(c.args[1], j0 + i, E);
      Bool8* o = lane_out<Bool8>(vo, j0 + i, E);
      for (int64_t e = 0; e < E; ++e) o[e] = u[i * E + e] < static_cast<double>(p[e]) ? 1 : 0;
    }
  }
  return true;
}

template <class P>
bool categorical_of(const KernelCall& c, KernelError* err) {
  const TensorType& lt = *c.args[1].type;
  const int64_t K = lt.shape.back();
  const int64_t rows = c.outs[0].type->num_elements();
  const int64_t E = lt.num_elements();
  if (rows == 0) return true;
  for (int64_t j0 = 0; j0 < c.n; j0 += kLanes) {
    const int64_t m = std::min(kLanes, c.n - j0);
    const double* u = lane_uniforms(c, j0, m, rows, RandomDomain::Categorical);
    for (int64_t i = 0; i < m; ++i) {
      const P* logits = lane_in<P>(c.args[1], j0 + i, E);
      int64_t* o = lane_out<int64_t>(c.outs[0], j0 + i, rows);
      for (int64_t r = 0; r < rows; ++r) {
        const P* l = logits + r * K;
        double top = -INFINITY;
        for (int64_t k = 0; k < K; ++k) {
          const double x = static_cast<double>(l[k]);
          if (std::isnan(x) || x == INFINITY)
            return fail(
                err, j0 + i,
                "'categorical' needs logits that are finite or -inf, got " + format_number(x));
          top = std::max(top, x);
        }
        if (top == -INFINITY)
          return fail(err, j0 + i, "'categorical' needs at least one finite logit in each row");
        double total = 0;
        for (int64_t k = 0; k < K; ++k) total += std::exp(static_cast<double>(l[k]) - top);
        const double target = u[i * rows + r] * total;
        double run = 0;
        int64_t pick = K - 1;
        for (int64_t k = 0; k < K; ++k) {
          run += std::exp(static_cast<double>(l[k]) - top);
          if (run > target) {
            pick = k;
            break;
          }
        }
        o[r] = pick;
      }
    }
  }
  return true;
}

}  // namespace

bool kernel_Gamma(const KernelCall& c, KernelError* e) {
  return c.args[1].type->dtype == DType::F32 ? gamma_of<float>(c, e) : gamma_of<double>(c, e);
}
bool kernel_Poisson(const KernelCall& c, KernelError* e) {
  return c.args[1].type->dtype == DType::F32 ? poisson_of<float>(c, e) : poisson_of<double>(c, e);
}
bool kernel_Bernoulli(const KernelCall& c, KernelError*) {
  return c.args[1].type->dtype == DType::F32 ? bernoulli_of<float>(c) : bernoulli_of<double>(c);
}
bool kernel_Categorical(const KernelCall& c, KernelError* e) {
  return c.args[1].type->dtype == DType::F32 ? categorical_of<float>(c, e)
                                             : categorical_of<double>(c, e);
}

bool kernel_FoldIn(const KernelCall& c, KernelError*) {
  const ArgView& vk = c.args[0];
  const ArgView& vx = c.args[1];
  const bool narrow = vx.type->dtype == DType::I32;
  for (int64_t j = 0; j < c.n; ++j) {
    const int64_t key = *lane_in<int64_t>(vk, j, 1);
    const int64_t x = narrow ? *lane_in<int32_t>(vx, j, 1) : *lane_in<int64_t>(vx, j, 1);
    *lane_out<int64_t>(c.outs[0], j, 1) = random_fold_in(key, x);
  }
  return true;
}

bool kernel_ThreadIndex(const KernelCall& c, KernelError* err) {
  if (!c.threads && c.n > 0)
    return fail(err, 0, "internal: 'thread_index' called without the threads' numbers");
  for (int64_t j = 0; j < c.n; ++j) *lane_out<int64_t>(c.outs[0], j, 1) = c.threads[j];
  return true;
}

// progress(n): n, and each lane's n stored in the run's table at its thread.
// The operand is read before the result is written (`n = progress(n)`).
bool kernel_Progress(const KernelCall& c, KernelError* err) {
  const ProgressTable* table = c.progress;
  if (table && !c.threads && c.n > 0)
    return fail(err, 0, "internal: 'progress' called without the threads' numbers");
  for (int64_t j = 0; j < c.n; ++j) {
    const int64_t v = *lane_in<int64_t>(c.args[0], j, 1);
    if (table) {
      const int64_t t = c.threads[j] - table->first;
      if (t >= 0 && t < table->count) table->slots[t].store(v, std::memory_order_relaxed);
    }
    *lane_out<int64_t>(c.outs[0], j, 1) = v;
  }
  return true;
}

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
