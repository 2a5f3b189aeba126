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

#include "support/source.h"

namespace ab {

struct ShippedModule {
  const char* name;  // `import NAME`
  const char* text;
};
extern const ShippedModule kShippedModules[];
extern const size_t kShippedModuleCount;

// What diagnostics call a shipped module's file: "<autobatch>/NAME.ab".
inline constexpr const char* kShippedPrefix = "<autobatch>/";

// Whether a location lies in a shipped module's file.
inline bool in_shipped_file(const SourceRef& source, const SourceLoc& loc) {
  return source && loc.known() && source->name_of(loc.line).rfind(kShippedPrefix, 0) == 0;
}

std::optional<std::string_view> shipped_module(std::string_view name);
std::vector<std::string> shipped_module_names();

}  // namespace ab
