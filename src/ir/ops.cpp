#include "ir/ops.h"

namespace ab {

static const PrimInfo kPrims[] = {
#define AB_PRIM(id, name, lo, hi, attrs, group, kind, dtypes, doc) \
  {PrimId::id, name, lo, hi, attrs, group, PrimKind::kind, DtypeGroups::dtypes, doc},
#include "ir/ops.def"
#undef AB_PRIM
};

std::span<const PrimInfo> all_prims() { return kPrims; }

const PrimInfo* find_prim(std::string_view name) {
  for (const auto& p : kPrims)
    if (name == p.name) return &p;
  return nullptr;
}

const PrimInfo& prim_info(PrimId id) { return kPrims[static_cast<size_t>(id)]; }

std::vector<std::string> prim_names() {
  std::vector<std::string> out;
  for (const auto& p : kPrims) out.push_back(p.name);
  return out;
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
