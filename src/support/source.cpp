#include "support/source.h"

namespace ab {

SourceFile::SourceFile(std::string name, std::string text,
                       std::vector<std::shared_ptr<const SourceFile>> imports)
    : name_(std::move(name)), text_(std::move(text)), imports_(std::move(imports)) {
  line_starts_.push_back(0);
  for (size_t i = 0; i < text_.size(); ++i)
    if (text_[i] == '\n') line_starts_.push_back(i + 1);
}

const SourceFile& SourceFile::file_of(uint32_t line) const {
  uint32_t k = file_index(line);
  return k >= 1 && k <= imports_.size() ? *imports_[k - 1] : *this;
}

std::string SourceFile::where(uint32_t line) const {
  return name_of(line) + ":" + std::to_string(local_line(line));
}

std::string_view SourceFile::line(uint32_t line) const {
  const SourceFile& f = file_of(line);
  if (&f != this) return f.line(local_line(line));
  line = local_line(line);
  if (line == 0 || line > line_starts_.size()) return {};
  size_t begin = line_starts_[line - 1];
  size_t end = line < line_starts_.size() ? line_starts_[line] - 1 : text_.size();
  std::string_view s(text_.data() + begin, end - begin);
  if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
  return s;
}

std::string SourceFile::statement(uint32_t line, size_t max) const {
  std::string_view s = this->line(line);
  size_t hash = s.find('#');  // the language has no strings: '#' always starts a comment
  if (hash != std::string_view::npos) s = s.substr(0, hash);
  auto blank = [](char c) { return c == ' ' || c == '\t'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  if (!s.empty() && s.back() == '{') {
    s.remove_suffix(1);
    while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  }
  std::string out(s);
  // A function's signature is long and says little here: `func f(...)`.
  for (const char* head : {"func ", "entry func "})
    if (out.rfind(head, 0) == 0) {
      size_t open = out.find('(');
      if (open != std::string::npos) out = out.substr(0, open) + "(...)";
    }
  if (out.size() > max && max > 3) {
    out.resize(max - 3);
    out += "...";
  }
  return out;
}

}  // namespace ab
