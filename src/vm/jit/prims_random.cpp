// The JIT's random primitives on scalars, bit for bit the kernels' numbers
// (the scheme is in src/vm/kernels/philox.h): Philox-4x32-10 inline (split,
// fold_in, uniform, exponential, bernoulli draw one block each), and calls
// of the exported scalar kernels for the samplers with libm chains or
// rejection loops (normal, gamma, poisson). gamma and poisson check their
// parameter here as their kernels do: a bad one fails the segment, and the
// kernels report the error.
#include <cmath>

#include "ir/ops.h"
#include "vm/jit/gen.h"
#include "vm/kernels/scalar.h"
#include "vm/kernels/philox.h"

namespace ab::jit::detail {

using namespace llvm;

namespace {

constexpr uint32_t kMul0 = 0xD2511F53u;
constexpr uint32_t kMul1 = 0xCD9E8D57u;
constexpr uint32_t kWeyl0 = 0x9E3779B9u;
constexpr uint32_t kWeyl1 = 0xBB67AE85u;

uint32_t domain_of(RandomDomain d) { return static_cast<uint32_t>(d); }

}  // namespace

// The block with counter {c0, c1, 0, domain} under the i64 key: ten rounds
// of philox_round (32x32 -> 64-bit products), the key bumped between them.
std::array<Value*, 4> Gen::philox(Value* key, Value* domain, Value* c0, Value* c1) {
  Type* i32 = b_.getInt32Ty();
  Type* i64 = b_.getInt64Ty();
  Value* k0 = b_.CreateTrunc(key, i32);
  Value* k1 = b_.CreateTrunc(b_.CreateLShr(key, 32), i32);
  std::array<Value*, 4> c = {c0, c1, b_.getInt32(0), domain};
  for (int r = 0; r < 10; ++r) {
    if (r > 0) {
      k0 = b_.CreateAdd(k0, b_.getInt32(kWeyl0));
      k1 = b_.CreateAdd(k1, b_.getInt32(kWeyl1));
    }
    Value* p0 = b_.CreateMul(b_.getInt64(kMul0), b_.CreateZExt(c[0], i64));
    Value* p1 = b_.CreateMul(b_.getInt64(kMul1), b_.CreateZExt(c[2], i64));
    Value* hi0 = b_.CreateTrunc(b_.CreateLShr(p0, 32), i32);
    Value* lo0 = b_.CreateTrunc(p0, i32);
    Value* hi1 = b_.CreateTrunc(b_.CreateLShr(p1, 32), i32);
    Value* lo1 = b_.CreateTrunc(p1, i32);
    c = {b_.CreateXor(b_.CreateXor(hi1, c[1]), k0), lo1, b_.CreateXor(b_.CreateXor(hi0, c[3]), k1),
         lo0};
  }
  return c;
}

// The block's two words x1:x0 and x3:x2. The dense loops compute it inline
// (vectorised with the rest of the body); the other forms call one copy of
// it in the module, which keeps their code, and its compile time, small.
std::pair<Value*, Value*> Gen::philox_words(Value* key, uint32_t domain, Value* c0, Value* c1) {
  if (dense_) {
    std::array<Value*, 4> x = philox(key, b_.getInt32(domain), c0, c1);
    return {join64(x[0], x[1]), join64(x[2], x[3])};
  }
  Type* i64 = b_.getInt64Ty();
  Type* i32 = b_.getInt32Ty();
  Function* f = m_.getFunction("ab.philox");
  if (!f) {
    StructType* pair = StructType::get(ctx_, {i64, i64});
    f = Function::Create(FunctionType::get(pair, {i64, i32, i32, i32}, false),
                         Function::InternalLinkage, "ab.philox", m_);
    f->addFnAttr(Attribute::NoUnwind);
    f->addFnAttr(Attribute::NoInline);
    f->addFnAttr(Attribute::WillReturn);
    f->setDoesNotAccessMemory();
    IRBuilderBase::InsertPointGuard keep(b_);
    b_.SetInsertPoint(BasicBlock::Create(ctx_, "entry", f));
    auto a = f->arg_begin();
    Value* k = &*a++;
    Value* d = &*a++;
    Value* x0 = &*a++;
    Value* x1 = &*a++;
    std::array<Value*, 4> x = philox(k, d, x0, x1);
    Value* r = UndefValue::get(pair);
    r = b_.CreateInsertValue(r, join64(x[0], x[1]), 0);
    r = b_.CreateInsertValue(r, join64(x[2], x[3]), 1);
    b_.CreateRet(r);
  }
  CallInst* r = b_.CreateCall(f, {key, b_.getInt32(domain), c0, c1});
  r->setDoesNotAccessMemory();
  return {b_.CreateExtractValue(r, 0), b_.CreateExtractValue(r, 1)};
}

// hi:lo as an i64.
Value* Gen::join64(Value* lo, Value* hi) {
  Type* i64 = b_.getInt64Ty();
  return b_.CreateOr(b_.CreateShl(b_.CreateZExt(hi, i64), 32), b_.CreateZExt(lo, i64));
}

// The 53-bit uniform in [0, 1) of a 64-bit word: (u >> 11) * 2^-53.
Value* Gen::unit_double(Value* bits64) {
  Value* u = b_.CreateSIToFP(b_.CreateLShr(bits64, 11), b_.getDoubleTy());
  return b_.CreateFMul(u, ConstantFP::get(b_.getDoubleTy(), 1.0 / 9007199254740992.0));
}

Value* Gen::random(const FOp& o, const std::vector<Value*>& v) {
  Type* f64 = b_.getDoubleTy();
  Type* i64 = b_.getInt64Ty();
  Value* zero = b_.getInt32(0);
  // Element 0 of uniform's scheme in `domain`.
  auto uniform = [&](RandomDomain domain) {
    return unit_double(philox_words(v[0], domain_of(domain), zero, zero).first);
  };
  switch (o.prim) {
    case PrimId::Uniform:
      return uniform(RandomDomain::Uniform);
    case PrimId::Exponential: {
      Value* u = uniform(RandomDomain::Exponential);
      return b_.CreateFNeg(libm("log1p", DType::F64, {b_.CreateFNeg(u)}));
    }
    case PrimId::Bernoulli: {
      Value* u = uniform(RandomDomain::Bernoulli);
      Value* p = dtype_of(o.args[1]) == DType::F32 ? b_.CreateFPExt(v[1], f64) : v[1];
      return to_bool(b_.CreateFCmpOLT(u, p));
    }
    case PrimId::Split: {
      auto [first, second] = philox_words(v[0], domain_of(RandomDomain::Split), zero, zero);
      second_ = second;
      return first;
    }
    case PrimId::FoldIn: {
      Value* x64 = dtype_of(o.args[1]) == DType::I32 ? b_.CreateSExt(v[1], i64) : v[1];
      Value* lo = b_.CreateTrunc(x64, b_.getInt32Ty());
      Value* hi = b_.CreateTrunc(b_.CreateLShr(x64, 32), b_.getInt32Ty());
      return philox_words(v[0], domain_of(RandomDomain::FoldIn), lo, hi).first;
    }
    case PrimId::Normal:
      return kernel_call("ab_scalar_normal", f64, {v[0]});
    case PrimId::Gamma:
    case PrimId::Poisson: {
      const DType d = dtype_of(o.args[1]);
      Value* p = d == DType::F32 ? b_.CreateFPExt(v[1], f64) : v[1];
      auto c = [&](double x) { return ConstantFP::get(f64, x); };
      // The kernels' checks: gamma, a finite alpha > 0; poisson, 0 <= lam
      // <= kMaxPoissonRate. A bad one fails (the kernel reports it); the call
      // gets 1 instead.
      Value* ok =
          o.prim == PrimId::Gamma
              ? b_.CreateAnd(b_.CreateFCmpOGT(p, c(0.0)), b_.CreateFCmpOLT(p, c(HUGE_VAL)))
              : b_.CreateAnd(b_.CreateFCmpOGE(p, c(0.0)), b_.CreateFCmpOLE(p, c(kMaxPoissonRate)));
      fail_if(b_.CreateNot(ok));
      Value* safe = b_.CreateSelect(ok, p, c(1.0));
      if (o.prim == PrimId::Poisson) return kernel_call("ab_scalar_poisson", i64, {v[0], safe});
      Value* g = kernel_call("ab_scalar_gamma", f64, {v[0], safe});
      return d == DType::F32 ? b_.CreateFPTrunc(g, b_.getFloatTy()) : g;
    }
    default:
      return nullptr;  // not reached: supported() said no
  }
}

}  // namespace ab::jit::detail
