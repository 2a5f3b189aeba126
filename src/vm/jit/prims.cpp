// The JIT's primitives: one elementwise primitive on one lane's values
// (Gen::op), exactly as the kernels (src/vm/kernels_*.cpp) compute it:
// integer division and mod floor, casts check their range, float math calls
// the C library functions the kernels call.
#include "ir/ops.h"
#include "vm/jit/gen.h"

namespace ab::jit::detail {

using namespace llvm;

Value* Gen::libm(const char* name, DType d, std::vector<Value*> args) {
  std::string n = name;
  if (d == DType::F32) n += "f";
  std::vector<Type*> ts(args.size(), ty(d));
  FunctionCallee f = m_.getOrInsertFunction(n, FunctionType::get(ty(d), ts, false));
  if (auto* decl = dyn_cast<Function>(f.getCallee())) {
    // A function of its operands only (errno, which it may set, is never
    // read; the rounding mode is never changed): LLVM may compute it once
    // for a loop whose operands do not change (log(sigma) in a loop over
    // time), or ahead of a branch, with the same result.
    decl->setDoesNotAccessMemory();
    decl->addFnAttr(Attribute::Speculatable);
    decl->addFnAttr(Attribute::WillReturn);
    decl->addFnAttr(Attribute::NoUnwind);
  }
  CallInst* c = b_.CreateCall(f, args);
  // Exactly the C library's function: no folding or rewriting as a builtin.
  c->addFnAttr(Attribute::NoBuiltin);
  c->addFnAttr(Attribute::WillReturn);
  c->addFnAttr(Attribute::NoUnwind);
  c->setDoesNotAccessMemory();
  return c;
}

Value* Gen::int_divmod(bool mod, Value* a, Value* bv, const Arg& barg, DType d) {
  Type* t = ty(d);
  int64_t c = 0;
  if (constant_divisor(barg, &c) && c > 0 && (c & (c - 1)) == 0) {
    // As the kernels: floor division by 2^k is a shift, mod a mask.
    if (mod) return b_.CreateAnd(a, ConstantInt::get(t, static_cast<uint64_t>(c - 1)));
    return b_.CreateAShr(a, ConstantInt::get(t, static_cast<uint64_t>(__builtin_ctzll(c))));
  }
  Value* zero = ConstantInt::get(t, 0);
  Value* one = ConstantInt::get(t, 1);
  Value* is0 = b_.CreateICmpEQ(bv, zero);
  Value* m1 = b_.CreateICmpEQ(bv, ConstantInt::getSigned(t, -1));
  fail_if(is0);
  Value* safe = b_.CreateSelect(b_.CreateOr(is0, m1), one, bv);
  Value* r = b_.CreateSRem(a, safe);
  Value* adj = b_.CreateAnd(b_.CreateICmpNE(r, zero),
                            b_.CreateICmpNE(b_.CreateICmpSLT(r, zero), b_.CreateICmpSLT(bv, zero)));
  if (mod) return b_.CreateSelect(adj, b_.CreateAdd(r, bv), r);  // b == -1: r is 0
  Value* q = b_.CreateSDiv(a, safe);
  q = b_.CreateSelect(adj, b_.CreateSub(q, one), q);
  return b_.CreateSelect(m1, b_.CreateSub(zero, a), q);
}

Value* Gen::cast(Value* x, DType from, DType to) {
  if (from == to) return x;
  if (to == DType::Bool) {
    Value* nz = is_float(from) ? b_.CreateFCmpUNE(x, ConstantFP::get(ty(from), 0.0))
                               : b_.CreateICmpNE(x, ConstantInt::get(ty(from), 0));
    return to_bool(nz);
  }
  if (from == DType::Bool)
    return is_float(to) ? b_.CreateUIToFP(x, ty(to)) : b_.CreateZExt(x, ty(to));
  if (is_int(from) && is_int(to)) return b_.CreateSExtOrTrunc(x, ty(to));
  if (is_int(from)) return b_.CreateSIToFP(x, ty(to));
  if (is_float(to)) return b_.CreateFPCast(x, ty(to));
  // float -> integer: truncation must fit (false for NaN), as CastOp::ok.
  Value* dd = from == DType::F32 ? b_.CreateFPExt(x, b_.getDoubleTy()) : x;
  auto c = [&](double v) { return ConstantFP::get(b_.getDoubleTy(), v); };
  Value* ok = to == DType::I32 ? b_.CreateAnd(b_.CreateFCmpOGT(dd, c(-2147483649.0)),
                                              b_.CreateFCmpOLT(dd, c(2147483648.0)))
                               : b_.CreateAnd(b_.CreateFCmpOGE(dd, c(-9223372036854775808.0)),
                                              b_.CreateFCmpOLT(dd, c(9223372036854775808.0)));
  fail_if(b_.CreateNot(ok));
  Value* safe = b_.CreateSelect(ok, x, ConstantFP::get(ty(from), 0.0));
  return b_.CreateFPToSI(safe, ty(to));
}

// Integer pow as the kernel's square-and-multiply on unsigned words, with
// all the exponent's bits (a constant count: no branch, so it vectorises;
// once the exponent's bits are used up the product no longer changes). A
// negative exponent fails.
Value* Gen::int_pow(Value* a, Value* b, const Arg& barg, DType d) {
  int64_t c = 0;
  if (!constant_divisor(barg, &c) || c < 0)
    fail_if(b_.CreateICmpSLT(b, ConstantInt::get(ty(d), 0)));
  const unsigned bits = d == DType::I32 ? 32 : 64;
  Type* t = ty(d);
  Value* one = ConstantInt::get(t, 1);
  Value* result = one;
  Value* base = a;
  for (unsigned k = 0; k < bits; ++k) {
    Value* bit = b_.CreateICmpNE(b_.CreateAnd(b_.CreateLShr(b, ConstantInt::get(t, k)), one),
                                 ConstantInt::get(t, 0));
    result = b_.CreateSelect(bit, b_.CreateMul(result, base), result);
    base = b_.CreateMul(base, base);
  }
  return result;
}

// A call of an exported scalar kernel (kernels/scalar.h), which the engine
// registers under its name.
Value* Gen::kernel_call(const char* name, Type* ret, std::vector<Value*> args) {
  std::vector<Type*> ts;
  for (Value* a : args) ts.push_back(a->getType());
  FunctionCallee f = m_.getOrInsertFunction(name, FunctionType::get(ret, ts, false));
  CallInst* c = b_.CreateCall(f, args);
  c->addFnAttr(Attribute::WillReturn);
  c->addFnAttr(Attribute::NoUnwind);
  c->setOnlyReadsMemory();
  return c;
}

void Gen::compute(const FOp& o) {
  if (tensor_op(o)) return;
  second_ = nullptr;
  cur_[o.outs[0]] = op(o);
  written_[o.outs[0]] = true;
  if (o.outs.size() > 1) {  // split: its second key
    cur_[o.outs[1]] = second_;
    written_[o.outs[1]] = true;
  }
}

Value* Gen::op(const FOp& o) {
  if (o.copy) return read(o.args[0]);
  std::vector<Value*> v;
  for (const Arg& a : o.args) v.push_back(read(a));
  return scalar_op(o, v, o.args.empty() ? DType::I64 : dtype_of(o.args[0]));
}

// Primitive o on one element's operand values v (d: operand 0's dtype).
Value* Gen::scalar_op(const FOp& o, const std::vector<Value*>& v, DType d) {
  bool f = is_float(d);
  // The rows of ops.def that name what they compile to.
  const PrimInfo& info = prim_info(o.prim);
  // A reduction of a scalar and a scalar zeros (their rows say Batched, for
  // tensors): what the kernels compute for one element, bit for bit (a float
  // sum is 0 + x, so -0.0 gives 0.0; max and min start from -inf and inf,
  // NaN sticks; mean divides by 1).
  if (info.kind == PrimKind::Reduce) {
    Value* x = v[0];
    switch (o.prim) {
      case PrimId::Sum:
        return f ? b_.CreateFAdd(ConstantFP::get(ty(d), 0.0), x) : x;
      case PrimId::Prod:
        return f ? b_.CreateFMul(ConstantFP::get(ty(d), 1.0), x) : x;
      case PrimId::Mean:
        return b_.CreateFDiv(b_.CreateFAdd(ConstantFP::get(ty(d), 0.0), x),
                             ConstantFP::get(ty(d), 1.0));
      case PrimId::ReduceMax:
      case PrimId::ReduceMin: {
        if (!f) return x;
        const bool mx = o.prim == PrimId::ReduceMax;
        Value* acc = ConstantFP::getInfinity(ty(d), mx);
        Value* keep = mx ? b_.CreateFCmpOGE(acc, x) : b_.CreateFCmpOLE(acc, x);
        return b_.CreateSelect(keep, acc, x);
      }
      default:  // any, all: x itself
        return x;
    }
  }
  if (o.prim == PrimId::Zeros) return Constant::getNullValue(ty(seg_->slots[o.outs[0]].dtype));
  switch (info.jit) {
    case JitKind::Libm:
      return libm(info.symbol, d, v);
    case JitKind::Intrinsic:
      return intrinsic(Function::lookupIntrinsicID(info.symbol), v[0]);
    case JitKind::Kernel:
    case JitKind::Inline:
      break;
    case JitKind::Batched:
    case JitKind::None:
      return nullptr;  // not reached: supported() said no
  }
  if (prim_random(o.prim)) return random(o, v);
  switch (o.prim) {
    case PrimId::Add:
      return f ? b_.CreateFAdd(v[0], v[1]) : b_.CreateAdd(v[0], v[1]);
    case PrimId::Sub:
      return f ? b_.CreateFSub(v[0], v[1]) : b_.CreateSub(v[0], v[1]);
    case PrimId::Mul:
      return f ? b_.CreateFMul(v[0], v[1]) : b_.CreateMul(v[0], v[1]);
    case PrimId::Div:
      return f ? b_.CreateFDiv(v[0], v[1]) : int_divmod(false, v[0], v[1], o.args[1], d);
    case PrimId::Mod: {
      if (!f) return int_divmod(true, v[0], v[1], o.args[1], d);
      Value* zero = ConstantFP::get(ty(d), 0.0);
      Value* r = libm("fmod", d, {v[0], v[1]});
      Value* adj = b_.CreateICmpNE(b_.CreateFCmpOLT(r, zero), b_.CreateFCmpOLT(v[1], zero));
      Value* nonzero = b_.CreateSelect(adj, b_.CreateFAdd(r, v[1]), r);
      Value* signed_zero = b_.CreateBinaryIntrinsic(Intrinsic::copysign, zero, v[1]);
      return b_.CreateSelect(b_.CreateFCmpUNE(r, zero), nonzero, signed_zero);
    }
    case PrimId::Neg:
      return f ? b_.CreateFNeg(v[0]) : b_.CreateSub(ConstantInt::get(ty(d), 0), v[0]);
    case PrimId::Abs:
      if (f) return intrinsic(Intrinsic::fabs, v[0]);
      return b_.CreateSelect(b_.CreateICmpSLT(v[0], ConstantInt::get(ty(d), 0)),
                             b_.CreateSub(ConstantInt::get(ty(d), 0), v[0]), v[0]);
    case PrimId::Min:
    case PrimId::Max: {
      bool mn = o.prim == PrimId::Min;
      if (!f)
        return b_.CreateSelect(mn ? b_.CreateICmpSLT(v[0], v[1]) : b_.CreateICmpSGT(v[0], v[1]),
                               v[0], v[1]);
      Value* c = mn ? b_.CreateFCmpOLE(v[0], v[1]) : b_.CreateFCmpOGE(v[0], v[1]);
      return b_.CreateSelect(b_.CreateOr(c, b_.CreateFCmpUNO(v[0], v[0])), v[0], v[1]);
    }
    case PrimId::Pow:
      return f ? libm("pow", d, {v[0], v[1]}) : int_pow(v[0], v[1], o.args[1], d);
    case PrimId::Lgamma:
      return kernel_call(d == DType::F32 ? "ab_scalar_lgammaf" : "ab_scalar_lgamma", ty(d), {v[0]});
    case PrimId::ThreadIndex:
      return b_.CreateAdd(v[0], v[1]);
    case PrimId::Size:
      return b_.getInt64(1);  // of a scalar (tensors: emit_tensor.cpp)
    case PrimId::Reshape:
      return v[0];  // the operands the VM passes: row + first thread
    case PrimId::Sigmoid: {
      Value* one = ConstantFP::get(ty(d), 1.0);
      Value* pos = b_.CreateFDiv(one, b_.CreateFAdd(one, libm("exp", d, {b_.CreateFNeg(v[0])})));
      Value* e = libm("exp", d, {v[0]});
      Value* neg = b_.CreateFDiv(e, b_.CreateFAdd(one, e));
      return b_.CreateSelect(b_.CreateFCmpOGE(v[0], ConstantFP::get(ty(d), 0.0)), pos, neg);
    }
    case PrimId::IsNan:
      return to_bool(b_.CreateFCmpUNO(v[0], v[0]));
    case PrimId::IsFinite:
      return to_bool(
          b_.CreateFCmpOLT(intrinsic(Intrinsic::fabs, v[0]), ConstantFP::getInfinity(ty(d))));
    case PrimId::Eq:
      return to_bool(f ? b_.CreateFCmpOEQ(v[0], v[1]) : b_.CreateICmpEQ(v[0], v[1]));
    case PrimId::Ne:
      return to_bool(f ? b_.CreateFCmpUNE(v[0], v[1]) : b_.CreateICmpNE(v[0], v[1]));
    case PrimId::Lt:
      return to_bool(f                  ? b_.CreateFCmpOLT(v[0], v[1])
                     : d == DType::Bool ? b_.CreateICmpULT(v[0], v[1])
                                        : b_.CreateICmpSLT(v[0], v[1]));
    case PrimId::Le:
      return to_bool(f                  ? b_.CreateFCmpOLE(v[0], v[1])
                     : d == DType::Bool ? b_.CreateICmpULE(v[0], v[1])
                                        : b_.CreateICmpSLE(v[0], v[1]));
    case PrimId::Gt:
      return to_bool(f                  ? b_.CreateFCmpOGT(v[0], v[1])
                     : d == DType::Bool ? b_.CreateICmpUGT(v[0], v[1])
                                        : b_.CreateICmpSGT(v[0], v[1]));
    case PrimId::Ge:
      return to_bool(f                  ? b_.CreateFCmpOGE(v[0], v[1])
                     : d == DType::Bool ? b_.CreateICmpUGE(v[0], v[1])
                                        : b_.CreateICmpSGE(v[0], v[1]));
    case PrimId::And:
      return b_.CreateAnd(v[0], v[1]);
    case PrimId::Or:
      return b_.CreateOr(v[0], v[1]);
    case PrimId::Xor:
      return b_.CreateXor(v[0], v[1]);
    case PrimId::Not:
      return b_.CreateXor(v[0], b_.getInt8(1));
    case PrimId::Select:
      return b_.CreateSelect(b_.CreateICmpNE(v[0], b_.getInt8(0)), v[1], v[2]);
    case PrimId::Cast:
      return cast(v[0], d, o.cast_to);
    default:
      return nullptr;  // not reached: supported() said no
  }
}

}  // namespace ab::jit::detail
