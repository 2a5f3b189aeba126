// The primitive table (ops.def) as C++ data.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace ab {

enum class PrimId : uint16_t {
#define AB_PRIM(id, name, lo, hi, attrs, group, doc) id,
#include "ir/ops.def"
#undef AB_PRIM
};

struct AttrSpec {
  std::string key;
  bool required = false;
};

struct PrimInfo {
  PrimId id;
  const char* name;
  int min_args;
  int max_args;  // -1: any number
  const char* attrs;
  const char* group;
  const char* doc;
  std::vector<AttrSpec> attr_specs() const;
};

std::span<const PrimInfo> all_prims();
const PrimInfo* find_prim(std::string_view name);
const PrimInfo& prim_info(PrimId id);
std::vector<std::string> prim_names();

}  // namespace ab
