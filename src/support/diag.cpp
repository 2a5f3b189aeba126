#include "support/diag.h"

#include <algorithm>

namespace ab {

bool Diagnostics::has_errors() const { return error_count() != 0; }

size_t Diagnostics::error_count() const {
  size_t n = 0;
  for (const auto& d : items_) n += d.severity == Severity::Error;
  return n;
}

void Diagnostics::append(const Diagnostics& other) {
  items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

static const char* severity_name(Severity s) {
  switch (s) {
    case Severity::Error:
      return "error";
    case Severity::Warning:
      return "warning";
    case Severity::Note:
      return "note";
  }
  return "error";
}

std::string render_diagnostic(const SourceFile* source, const Diagnostic& d) {
  // Without a source file (input and flag errors), the tool names itself.
  std::string out = source ? source->name_of(d.loc.line) : std::string("autobatch");
  if (d.loc.known())
    out += ":" + std::to_string(local_line(d.loc.line)) + ":" + std::to_string(d.loc.col);
  out += ": ";
  out += severity_name(d.severity);
  out += ": ";
  out += d.message;
  out += "\n";
  if (source && d.loc.known() &&
      local_line(d.loc.line) <= source->file_of(d.loc.line).line_count()) {
    std::string_view text = source->line(d.loc.line);
    // A very long line is shown as a window around the column.
    constexpr uint32_t kWindow = 80;
    uint32_t first = 1;
    std::string prefix, suffix;
    if (text.size() > 2 * kWindow) {
      first = d.loc.col > kWindow ? d.loc.col - kWindow : 1;
      size_t len = std::min<size_t>(2 * kWindow, text.size() - (first - 1));
      if (first > 1) prefix = "...";
      if (first - 1 + len < text.size()) suffix = "...";
      text = text.substr(first - 1, len);
    }
    out += "    " + prefix;
    out += text;
    out += suffix + "\n    " + std::string(prefix.size(), ' ');
    // Keep tabs from the line's prefix so the caret lines up in a terminal.
    for (uint32_t i = first; i < d.loc.col; ++i)
      out += (i - first < text.size() && text[i - first] == '\t') ? '\t' : ' ';
    out += '^';
    uint32_t len = d.loc.len == 0 ? 1 : d.loc.len;
    uint32_t avail = d.loc.col - first < text.size()
                         ? static_cast<uint32_t>(text.size()) - (d.loc.col - first)
                         : 1;
    if (len > avail) len = avail == 0 ? 1 : avail;
    for (uint32_t i = 1; i < len; ++i) out += '~';
    out += "\n";
  }
  return out;
}

std::string Diagnostics::render() const {
  std::string out;
  for (const auto& d : items_) out += render_diagnostic(source_.get(), d);
  return out;
}

}  // namespace ab
