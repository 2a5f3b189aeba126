// The library shipped with autobatch: the modules of lib/ (log densities,
// transforms, the NUTS sampler), embedded in the binary at build time
// (cmake/embed_lib.cmake), which `import NAME` finds when no NAME.ab lies
// beside the importing file.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ab {

struct ShippedModule {
  const char* name;  // `import NAME`
  const char* text;
};
extern const ShippedModule kShippedModules[];
extern const size_t kShippedModuleCount;

// What diagnostics call a shipped module's file: "<autobatch>/NAME.ab".
inline constexpr const char* kShippedPrefix = "<autobatch>/";

std::optional<std::string_view> shipped_module(std::string_view name);
std::vector<std::string> shipped_module_names();

}  // namespace ab
