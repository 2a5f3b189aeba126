#include "support/strings.h"

#include <algorithm>

namespace ab {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_match(std::string_view name, const std::vector<std::string>& candidates) {
  // About one edit per three characters. A one- or two-letter name is close
  // only to a longer name it misses a letter of ('ad' -> 'add'): any other
  // short name would look "close" to it.
  bool short_name = name.size() <= 2;
  size_t limit = short_name ? 1 : std::max<size_t>(1, (name.size() + 1) / 3);
  std::string best;
  size_t best_d = SIZE_MAX;
  for (const auto& c : candidates) {
    bool prefix = c.rfind(name, 0) == 0 || name.rfind(c, 0) == 0;
    if (c == name || (short_name && !prefix)) continue;
    size_t d = edit_distance(name, c);
    if (d < best_d) best_d = d, best = c;
  }
  return best_d <= limit ? best : std::string();
}

std::string did_you_mean(std::string_view name, const std::vector<std::string>& candidates) {
  std::string m = closest_match(name, candidates);
  return m.empty() ? std::string() : " (did you mean '" + m + "'?)";
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

}  // namespace ab
