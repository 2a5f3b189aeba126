#include "ir/lowered_names.h"

namespace ab {

std::string owner_function(const std::string& qualified) {
  return qualified.substr(0, qualified.find('.'));
}

std::pair<std::string, std::string> split_lowered_label(const std::string& label) {
  size_t a = label.find('.');
  if (a == std::string::npos) return {"", label};
  size_t b = label.find('.', a + 1);
  return {label.substr(0, a),
          label.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1)};
}

std::pair<std::string, std::string> lowered_block_source(const Block& block) {
  if (block.origin.label.empty()) return split_lowered_label(block.label.name);
  return {owner_function(block.label.name), block.origin.label};
}

}  // namespace ab
