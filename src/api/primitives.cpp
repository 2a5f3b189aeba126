// Custom primitives: the public Primitive becomes an internal registration
// (ir/ops.h: name, arity, type rule) and a kernel (vm/kernels/kernel.h) that sees the
// public view of the same call.
#include <array>
#include <exception>
#include <variant>

#include "api/internal.h"
#include "vm/kernels/kernel.h"

namespace autobatch {

namespace {

constexpr int kMaxArity = 16;
constexpr size_t kMaxResults = 16;

Status fail(const std::string& name, const std::string& why) {
  return Status{{option_error("primitive '" + name + "': " + why)}};
}

TensorType public_type(const ab::TensorType& t) { return {to_public(t.dtype), t.shape}; }

ab::Type internal_type(const TensorType& t) {
  return ab::Type::tensor_of(to_internal(t.dtype), t.shape);
}

// One result as its tensor type, several as the tuple of theirs (what a
// program destructures: `a, b = prim(x)`).
ab::Type internal_result(const std::vector<TensorType>& types) {
  if (types.size() == 1) return internal_type(types[0]);
  std::vector<ab::Type> elems;
  for (const auto& t : types) elems.push_back(internal_type(t));
  return ab::Type::tuple(std::move(elems));
}

// The internal type rule over the public one.
std::function<std::optional<ab::Type>(const std::vector<ab::Type>&, std::string&)> type_rule(
    const Primitive& p) {
  if (!p.result.empty()) {
    ab::Type t = internal_result(*parse_result_types(p.result));
    return [t](const std::vector<ab::Type>&, std::string&) { return std::optional<ab::Type>(t); };
  }
  return [rule = p.rule](const std::vector<ab::Type>& args,
                         std::string& error) -> std::optional<ab::Type> {
    std::vector<TensorType> in;
    for (const auto& a : args) in.push_back(public_type(a.tensor));
    TypeRuleResult r;
    try {
      r = rule(in);
    } catch (const std::exception& e) {
      error = std::string("its type rule threw: ") + e.what();
      return std::nullopt;
    } catch (...) {
      error = "its type rule threw";
      return std::nullopt;
    }
    if (r.type && !r.types.empty()) {
      error = "its type rule gave both one result type and several";
      return std::nullopt;
    }
    if (r.types.size() == 1 || r.types.size() > kMaxResults) {
      error = "its type rule gave " + std::to_string(r.types.size()) +
              " result types (several results: 2 to " + std::to_string(kMaxResults) + ")";
      return std::nullopt;
    }
    if (!r.type && r.types.empty()) {
      error = r.error.empty() ? "its type rule rejected the operands" : r.error;
      return std::nullopt;
    }
    return r.type ? internal_type(*r.type) : internal_result(r.types);
  };
}

// The internal kernel over the public one: the same call, seen through the
// public view types (no data is copied).
ab::CustomKernel kernel(Kernel k) {
  return [k = std::move(k)](const ab::KernelCall& c, ab::KernelError* err) -> bool {
    std::array<KernelArg, kMaxArity> args;
    std::array<KernelOut, kMaxResults> outs;
    if (c.nargs > kMaxArity || c.nouts > static_cast<int>(kMaxResults)) {
      err->lane = 0;
      err->message = "internal: too many operands for a custom kernel";
      return false;
    }
    for (int i = 0; i < c.nargs; ++i) {
      const ab::ArgView& a = c.args[i];
      args[i] = KernelArg{a.data,
                          static_cast<Access>(a.access),
                          a.index,
                          to_public(a.type->dtype),
                          a.type->shape.data(),
                          static_cast<int>(a.type->shape.size()),
                          a.type->num_elements()};
    }
    for (int i = 0; i < c.nouts; ++i) {
      const ab::OutView& o = c.outs[i];
      outs[i] = KernelOut{o.data,
                          static_cast<Access>(o.access),
                          o.index,
                          to_public(o.type->dtype),
                          o.type->shape.data(),
                          static_cast<int>(o.type->shape.size()),
                          o.type->num_elements()};
    }
    KernelCall call{c.n, args.data(), c.nargs, outs.data(), c.nouts};
    KernelError e;
    bool ok = false;
    try {
      ok = k(call, &e);
    } catch (const std::exception& ex) {
      e = {0, std::string("the kernel threw: ") + ex.what()};
    } catch (...) {
      e = {0, "the kernel threw"};
    }
    if (!ok) {
      err->lane = e.lane >= 0 && e.lane < c.n ? e.lane : 0;
      err->message = e.message.empty() ? "the kernel failed" : e.message;
    }
    return ok;
  };
}

// Checks `p` and registers it; the id, or the reason it cannot be.
std::variant<ab::PrimId, Status> register_one(const Primitive& p) {
  if (std::string e = ab::prim_name_error(p.name); !e.empty()) return fail(p.name, e);
  if (p.arity < 0 || p.arity > kMaxArity)
    return fail(p.name, "arity must be 0 to " + std::to_string(kMaxArity));
  if (!p.kernel) return fail(p.name, "no kernel");
  if (p.result.empty() == !p.rule)
    return fail(p.name, "give exactly one of a result type (\"f64\", \"f64[3]\") and a type rule");
  if (!p.result.empty()) {
    auto types = parse_result_types(p.result);
    if (!types)
      return fail(p.name, "result type '" + p.result +
                              "' is not a tensor type such as \"f64\" or \"f64[3]\", nor "
                              "several in parentheses such as \"(f64, f64[3])\"");
    if (types->size() > kMaxResults)
      return fail(p.name, "at most " + std::to_string(kMaxResults) + " results");
  }
  ab::CustomPrimDef def;
  def.name = p.name;
  def.min_args = def.max_args = p.arity;
  def.doc = p.doc.empty() ? "custom primitive" : p.doc;
  def.type_rule = type_rule(p);
  std::optional<ab::PrimId> id = ab::register_custom_prim(std::move(def));
  if (!id)
    return fail(p.name, "too many custom primitives (at most " +
                            std::to_string(ab::kMaxCustomPrims) + " per process)");
  ab::set_custom_kernel(*id, kernel(p.kernel));
  return *id;
}

struct Registry {
  std::mutex mu;
  std::vector<ab::PrimId> ids;
};

Registry& global_registry() {
  static Registry r;
  return r;
}

bool has_name(const std::vector<ab::PrimId>& ids, const std::string& name) {
  for (ab::PrimId id : ids)
    if (name == ab::prim_info(id).name) return true;
  return false;
}

}  // namespace

std::optional<std::vector<TensorType>> parse_result_types(std::string_view s) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  s = trim(s);
  if (s.empty() || s.front() != '(') {
    auto t = parse_tensor_type(s);
    if (!t) return std::nullopt;
    return std::vector<TensorType>{*t};
  }
  if (s.back() != ')') return std::nullopt;
  s = s.substr(1, s.size() - 2);
  // Commas inside brackets separate dimensions, not types.
  std::vector<TensorType> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i < s.size() && s[i] == '[') ++depth;
    if (i < s.size() && s[i] == ']') --depth;
    if (i < s.size() && (s[i] != ',' || depth > 0)) continue;
    auto t = parse_tensor_type(trim(s.substr(start, i - start)));
    if (!t) return std::nullopt;
    out.push_back(std::move(*t));
    start = i + 1;
  }
  if (out.size() < 2) return std::nullopt;
  return out;
}

struct Primitives::Impl : Registry {};

Primitives::Primitives() : impl_(std::make_shared<Impl>()) {}

Status Primitives::add(Primitive p) {
  std::lock_guard lock(impl_->mu);
  if (has_name(impl_->ids, p.name)) return fail(p.name, "already in this set");
  auto r = register_one(p);
  if (auto* s = std::get_if<Status>(&r)) return *s;
  impl_->ids.push_back(std::get<ab::PrimId>(r));
  return {};
}

std::vector<std::string> Primitives::names() const {
  std::lock_guard lock(impl_->mu);
  std::vector<std::string> out;
  for (ab::PrimId id : impl_->ids) out.push_back(ab::prim_info(id).name);
  return out;
}

std::vector<ab::PrimId> PrimitivesAccess::snapshot(const Primitives& p) {
  std::lock_guard lock(p.impl_->mu);
  return p.impl_->ids;
}

Status register_primitive(Primitive p) {
  Registry& g = global_registry();
  std::lock_guard lock(g.mu);
  if (has_name(g.ids, p.name)) return fail(p.name, "already registered");
  auto r = register_one(p);
  if (auto* s = std::get_if<Status>(&r)) return *s;
  ab::PrimId id = std::get<ab::PrimId>(r);
  g.ids.push_back(id);
  ab::make_prim_global(id);
  return {};
}

std::vector<OpInfo> ops(const Primitives* extra) {
  std::vector<OpInfo> out;
  auto add = [&](const ab::PrimInfo& p, bool custom) {
    OpInfo o;
    o.name = p.name;
    o.min_args = p.min_args;
    o.max_args = p.max_args;
    o.attrs = p.attrs;
    o.group = p.group;
    o.doc = p.doc;
    o.custom = custom;
    o.effects = ab::prim_effects_name(p.effects);
    o.speculate = ab::speculate_name(p.speculate);
    o.compiles = ab::jit_kind_name(p.jit);
    if (p.symbol && *p.symbol) o.compiles += std::string(" ") + p.symbol;
    out.push_back(std::move(o));
  };
  for (const auto& p : ab::all_prims()) add(p, false);
  {
    Registry& g = global_registry();
    std::lock_guard lock(g.mu);
    for (ab::PrimId id : g.ids) add(ab::prim_info(id), true);
  }
  if (extra)
    for (ab::PrimId id : PrimitivesAccess::snapshot(*extra)) add(ab::prim_info(id), true);
  return out;
}

}  // namespace autobatch
