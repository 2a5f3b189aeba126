#include "parse/shipped.h"

namespace ab {

std::optional<std::string_view> shipped_module(std::string_view name) {
  for (size_t i = 0; i < kShippedModuleCount; ++i)
    if (name == kShippedModules[i].name) return std::string_view(kShippedModules[i].text);
  return std::nullopt;
}

std::vector<std::string> shipped_module_names() {
  std::vector<std::string> out;
  for (size_t i = 0; i < kShippedModuleCount; ++i) out.emplace_back(kShippedModules[i].name);
  return out;
}

}  // namespace ab
