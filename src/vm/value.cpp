#include "vm/value.h"

#include <cstring>

#include "vm/kernel.h"

namespace ab {

std::optional<std::string> apply_kernel(PrimId op, const std::vector<const Value*>& args,
                                        const PrimAttrs& attrs, Value& result, int64_t thread) {
  std::vector<Value*> outs;
  result.leaves(outs);
  std::vector<ArgView> views;
  for (const Value* a : args)
    views.push_back(ArgView{a->data.data(), Access::Dense, nullptr, &a->type});
  std::vector<OutView> out_views;
  for (Value* o : outs)
    out_views.push_back(OutView{o->data.data(), Access::Dense, nullptr, &o->type});
  KernelCall call;
  call.n = 1;
  call.args = views.data();
  call.nargs = static_cast<int>(views.size());
  call.outs = out_views.data();
  call.nouts = static_cast<int>(out_views.size());
  call.attrs = &attrs;
  call.threads = &thread;
  KernelFn fn = kernel_for(op);
  if (!fn) return std::string("no kernel for '") + prim_info(op).name + "'";
  KernelError err;
  if (!fn(call, &err)) return err.message;
  return std::nullopt;
}

std::vector<Array> gather_results(const std::vector<Type>& types,
                                  std::vector<std::vector<Value>>& per_thread) {
  std::vector<TensorType> leaves;
  for (const auto& t : types) t.leaves(leaves);
  int64_t batch = static_cast<int64_t>(per_thread.size());
  std::vector<Array> out;
  for (const auto& lt : leaves) out.emplace_back(lt, batch);
  for (int64_t t = 0; t < batch; ++t) {
    std::vector<Value*> vals;
    for (auto& v : per_thread[t]) v.leaves(vals);
    for (size_t i = 0; i < vals.size() && i < out.size(); ++i) {
      size_t bytes = vals[i]->data.size();
      if (bytes) std::memcpy(out[i].data.data() + t * bytes, vals[i]->data.data(), bytes);
    }
  }
  return out;
}

}  // namespace ab
