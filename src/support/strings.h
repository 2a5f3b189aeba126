// Small string helpers shared by the passes and the CLI.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace ab {

size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `name`, if it is close enough to be a plausible
// typo; empty otherwise. Used for "did you mean 'x'?".
std::string closest_match(std::string_view name, const std::vector<std::string>& candidates);

// " (did you mean 'x'?)" or "".
std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates);

std::string join(const std::vector<std::string>& parts, std::string_view sep);

}  // namespace ab
