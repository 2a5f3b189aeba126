#include "ir/ops.h"

#include <atomic>
#include <cctype>
#include <memory>
#include <mutex>

namespace ab {

namespace {
using namespace prim_effect;  // the Effects column's names
const PrimInfo kPrims[] = {
#define AB_PRIM(id, name, lo, hi, attrs, group, kind, dtypes, effects, speculate, jit, symbol, \
                grad, doc)                                                                     \
  {PrimId::id,                                                                                 \
   name,                                                                                       \
   lo,                                                                                         \
   hi,                                                                                         \
   attrs,                                                                                      \
   group,                                                                                      \
   PrimKind::kind,                                                                             \
   DtypeGroups::dtypes,                                                                        \
   static_cast<uint8_t>(effects),                                                              \
   Speculate::speculate,                                                                       \
   JitKind::jit,                                                                               \
   symbol,                                                                                     \
   GradKind::grad,                                                                             \
   doc},
#include "ir/ops.def"
#undef AB_PRIM
};
}  // namespace

constexpr size_t kBuiltins = std::size(kPrims);
static_assert(kBuiltins == kBuiltinPrimCount);

namespace {

// A registered custom primitive: its definition and the PrimInfo view of it.
struct Custom {
  CustomPrimDef def;
  PrimInfo info;
};

// Append-only: slots are published once (release) and never change, so
// readers need no lock.
std::atomic<const Custom*> g_custom[kMaxCustomPrims];
std::mutex g_mutex;  // registration and the global list
size_t g_count = 0;
std::vector<PrimId> g_global;
thread_local const std::vector<PrimId>* t_scope = nullptr;

const Custom* custom_of(PrimId id) {
  size_t i = static_cast<size_t>(id);
  if (i < kBuiltins || i >= kBuiltins + kMaxCustomPrims) return nullptr;
  return g_custom[i - kBuiltins].load(std::memory_order_acquire);
}

}  // namespace

std::span<const PrimInfo> all_prims() { return kPrims; }

const PrimInfo* find_prim(std::string_view name) {
  for (const auto& p : kPrims)
    if (name == p.name) return &p;
  if (t_scope)
    for (auto it = t_scope->rbegin(); it != t_scope->rend(); ++it)
      if (const Custom* c = custom_of(*it); c && name == c->def.name) return &c->info;
  std::lock_guard lock(g_mutex);
  for (auto it = g_global.rbegin(); it != g_global.rend(); ++it)
    if (const Custom* c = custom_of(*it); c && name == c->def.name) return &c->info;
  return nullptr;
}

const PrimInfo& prim_info(PrimId id) {
  if (const Custom* c = custom_of(id)) return c->info;
  return kPrims[static_cast<size_t>(id)];
}

std::vector<std::string> prim_names() {
  std::vector<std::string> out;
  for (const auto& p : kPrims) out.push_back(p.name);
  if (t_scope)
    for (PrimId id : *t_scope) out.push_back(prim_info(id).name);
  std::lock_guard lock(g_mutex);
  for (PrimId id : g_global) out.push_back(prim_info(id).name);
  return out;
}

std::optional<PrimId> register_custom_prim(CustomPrimDef def) {
  std::lock_guard lock(g_mutex);
  if (g_count == kMaxCustomPrims) return std::nullopt;
  auto id = static_cast<PrimId>(kBuiltins + g_count);
  auto* c = new Custom{std::move(def), {}};  // lives for the process
  // An embedder's primitive may fail (or cost) anywhere: never speculated;
  // compiled code calls its kernel for a segment's lanes; it has no gradient.
  c->info = PrimInfo{id,
                     c->def.name.c_str(),
                     c->def.min_args,
                     c->def.max_args,
                     "",
                     "custom",
                     PrimKind::Other,
                     DtypeGroups::None,
                     prim_effect::Fails,
                     Speculate::Never,
                     JitKind::Batched,
                     "",
                     GradKind::None,
                     c->def.doc.c_str()};
  g_custom[g_count++].store(c, std::memory_order_release);
  return id;
}

bool is_custom_prim(PrimId id) { return custom_of(id) != nullptr; }

const CustomPrimDef* custom_prim(PrimId id) {
  const Custom* c = custom_of(id);
  return c ? &c->def : nullptr;
}

std::string prim_name_error(const std::string& name) {
  auto ident_start = [](char ch) {
    return std::isalpha(static_cast<unsigned char>(ch)) || ch == '_';
  };
  bool ok = !name.empty() && ident_start(name[0]);
  for (char ch : name) ok = ok && (ident_start(ch) || std::isdigit(static_cast<unsigned char>(ch)));
  if (!ok)
    return "'" + name +
           "' is not an identifier (letters, digits and '_', not starting with a digit)";
  static const char* const kKeywords[] = {
      "func",      "program", "var",           "call", "branch", "goto", "return", "pop",
      "push_goto", "halt",    "indirect_goto", "true", "false",  "inf",  "nan"};
  for (const char* k : kKeywords)
    if (name == k) return "'" + name + "' is a keyword";
  for (const auto& p : kPrims)
    if (name == p.name) return "'" + name + "' is a built-in primitive";
  return "";
}

void make_prim_global(PrimId id) {
  std::lock_guard lock(g_mutex);
  g_global.push_back(id);
}

PrimScope::PrimScope(const std::vector<PrimId>* ids) : prev_(t_scope) { t_scope = ids; }
PrimScope::~PrimScope() { t_scope = prev_; }

std::string prim_effects_name(uint8_t effects) {
  std::string out;
  auto add = [&](uint8_t bit, const char* name) {
    if (!(effects & bit)) return;
    if (!out.empty()) out += ",";
    out += name;
  };
  add(prim_effect::Random, "random");
  add(prim_effect::Thread, "thread");
  add(prim_effect::Fails, "fails");
  add(prim_effect::Progress, "progress");
  return out.empty() ? "pure" : out;
}

const char* speculate_name(Speculate s) {
  switch (s) {
    case Speculate::Always:
      return "always";
    case Speculate::Never:
      return "never";
    case Speculate::IfCannotFail:
      return "if it cannot fail";
  }
  return "?";
}

const char* jit_kind_name(JitKind k) {
  switch (k) {
    case JitKind::Inline:
      return "inline";
    case JitKind::Intrinsic:
      return "intrinsic";
    case JitKind::Libm:
      return "libm";
    case JitKind::Kernel:
      return "kernel call";
    case JitKind::Batched:
      return "batched kernel";
    case JitKind::None:
      return "none";
  }
  return "?";
}

std::vector<AttrSpec> PrimInfo::attr_specs() const {
  std::vector<AttrSpec> out;
  std::string_view s(attrs);
  while (!s.empty()) {
    size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    AttrSpec a;
    if (!item.empty() && item.back() == '!') {
      a.required = true;
      item.remove_suffix(1);
    }
    a.key = std::string(item);
    out.push_back(a);
    if (comma == std::string_view::npos) break;
    s.remove_prefix(comma + 1);
  }
  return out;
}

}  // namespace ab
