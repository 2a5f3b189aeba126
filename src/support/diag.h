// Compiler-style diagnostics: `file:line:col: error: message`, then the
// source line and a caret under the offending token. Passes collect several
// independent errors in one Diagnostics object and report them together.
#pragma once
#include <string>
#include <vector>

#include "support/source.h"

namespace ab {

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
};

class Diagnostics {
 public:
  explicit Diagnostics(SourceRef source = nullptr) : source_(std::move(source)) {}
  void error(SourceLoc loc, std::string message) {
    items_.push_back({Severity::Error, loc, std::move(message)});
  }
  void note(SourceLoc loc, std::string message) {
    items_.push_back({Severity::Note, loc, std::move(message)});
  }
  void warning(SourceLoc loc, std::string message) {
    items_.push_back({Severity::Warning, loc, std::move(message)});
  }
  bool has_errors() const;
  size_t error_count() const;
  const std::vector<Diagnostic>& items() const { return items_; }
  const SourceRef& source() const { return source_; }
  void set_source(SourceRef s) { source_ = std::move(s); }
  void append(const Diagnostics& other);
  // All diagnostics, in order, each with its source line and caret.
  std::string render() const;

 private:
  SourceRef source_;
  std::vector<Diagnostic> items_;
};

// One diagnostic rendered on its own (used for runtime errors too).
std::string render_diagnostic(const SourceFile* source, const Diagnostic& d);

}  // namespace ab
