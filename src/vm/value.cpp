#include "vm/value.h"

#include <cstring>

#include "vm/kernels/kernel.h"

namespace ab {

std::optional<std::string> apply_kernel(PrimId op, const std::vector<const Value*>& args,
                                        const PrimAttrs& attrs, Value& result, int64_t thread,
                                        const ProgressTable* progress) {
  // Views on the stack for the usual few operands (this runs once per
  // instruction of the reference interpreters); the heap past that.
  constexpr size_t kFew = 8;
  ArgView arg_few[kFew];
  std::vector<ArgView> arg_many;
  ArgView* views = arg_few;
  if (args.size() > kFew) {
    arg_many.resize(args.size());
    views = arg_many.data();
  }
  for (size_t i = 0; i < args.size(); ++i)
    views[i] = ArgView{args[i]->data.data(), Access::Dense, nullptr, &args[i]->type};
  OutView out_one;
  std::vector<OutView> out_many;
  OutView* out_views = &out_one;
  int nouts = 1;
  if (!result.is_tuple) {
    out_one = OutView{result.data.data(), Access::Dense, nullptr, &result.type};
  } else {
    std::vector<Value*> outs;
    result.leaves(outs);
    for (Value* o : outs)
      out_many.push_back(OutView{o->data.data(), Access::Dense, nullptr, &o->type});
    out_views = out_many.data();
    nouts = static_cast<int>(out_many.size());
  }
  KernelCall call;
  call.n = 1;
  call.args = views;
  call.nargs = static_cast<int>(args.size());
  call.outs = out_views;
  call.nouts = nouts;
  call.attrs = &attrs;
  call.threads = &thread;
  call.progress = progress;
  KernelFn fn = kernel_for(op);
  if (!fn) return std::string("no kernel for '") + prim_info(op).name + "'";
  KernelError err;
  if (!fn(call, &err)) return err.message;
  return std::nullopt;
}

std::vector<TensorType> result_leaves(const std::vector<Type>& types) {
  std::vector<TensorType> leaves;
  for (const auto& t : types) t.leaves(leaves);
  return leaves;
}

void put_results(std::vector<Array>& outputs, int64_t t, std::vector<Value>& results) {
  std::vector<Value*> vals;
  for (auto& v : results) v.leaves(vals);
  for (size_t i = 0; i < vals.size() && i < outputs.size(); ++i) {
    size_t bytes = vals[i]->data.size();
    if (bytes) std::memcpy(outputs[i].data.data() + t * bytes, vals[i]->data.data(), bytes);
  }
}

}  // namespace ab
