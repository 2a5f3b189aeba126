// Source text and positions. Every IR node carries a SourceLoc so that any
// pass, and the VMs at run time, can point at the line that caused a problem.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ab {

// 1-based line and column (columns count bytes); line 0 means "no location".
struct SourceLoc {
  uint32_t line = 0;
  uint32_t col = 0;
  uint32_t len = 1;  // how many characters the caret underlines
  bool known() const { return line != 0; }
};

// A module with imports keeps the files apart in its locations: the high
// bits of SourceLoc::line hold the file's index (0: the main file, k: the
// module's k-th imported file), the low bits the line in that file.
constexpr uint32_t kFileShift = 24;
constexpr uint32_t kLineMask = (uint32_t{1} << kFileShift) - 1;
inline uint32_t local_line(uint32_t line) { return line & kLineMask; }
inline uint32_t file_index(uint32_t line) { return line >> kFileShift; }  // 0: the main file

class SourceFile {
 public:
  // `imports`: the files the module imports, in order (file index 1, 2, ...).
  SourceFile(std::string name, std::string text,
             std::vector<std::shared_ptr<const SourceFile>> imports = {});
  const std::string& name() const { return name_; }
  const std::string& text() const { return text_; }
  // The file a line (with its file index) is in, and that file's name.
  const SourceFile& file_of(uint32_t line) const;
  const std::string& name_of(uint32_t line) const { return file_of(line).name(); }
  // "NAME:LINE" of a location's line, in the file it is in.
  std::string where(uint32_t line) const;
  // The text of a 1-based line, without its line ending.
  std::string_view line(uint32_t line) const;
  uint32_t line_count() const { return static_cast<uint32_t>(line_starts_.size()); }
  // The statement on a line, as reports show it: the line without its
  // indentation, comment and opening brace, a function's parameters shown
  // as `(...)`, at most `max` characters ("..." ends a longer one); "" for a
  // line the file does not have.
  std::string statement(uint32_t line, size_t max = 60) const;

 private:
  std::string name_;
  std::string text_;
  std::vector<size_t> line_starts_;
  std::vector<std::shared_ptr<const SourceFile>> imports_;
};

using SourceRef = std::shared_ptr<const SourceFile>;

}  // namespace ab
