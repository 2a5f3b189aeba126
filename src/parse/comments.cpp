#include "parse/comments.h"

namespace ab {
namespace {

// ---- comments ----------------------------------------------------------------
// A comment is attached to the printed line it belongs with: an end-of-line
// comment to the line it ends, an own-line comment to the next line printed
// (or, before a closing '}', to that brace; after the last item, to the end
// of the file).

struct Anchor {
  syntax::Lines lines;
  syntax::Notes* notes;
};

void anchors(syntax::Body& body, std::vector<Anchor>& out);

void anchors(syntax::Stmt& s, std::vector<Anchor>& out) {
  using K = syntax::Stmt::Kind;
  if (s.kind == K::If) {
    for (auto& arm : s.arms) {
      out.push_back({arm.lines, &arm.notes});
      anchors(arm.body, out);
    }
    if (s.has_else) {
      out.push_back({s.else_lines, &s.else_notes});
      anchors(s.else_body, out);
    }
    out.push_back({s.close_lines, &s.close_notes});
    return;
  }
  out.push_back({s.lines, &s.notes});
  if (s.kind == K::While || s.kind == K::For) {
    anchors(s.body, out);
    out.push_back({s.close_lines, &s.close_notes});
  }
}

void anchors(syntax::Body& body, std::vector<Anchor>& out) {
  for (auto& s : body) anchors(s, out);
}

}  // namespace

void attach_comments(syntax::File& f, const std::string& text) {
  std::vector<Anchor> as;
  for (auto& item : f.items) {
    switch (item.kind) {
      case syntax::Item::Kind::Func:
        as.push_back({item.func.lines, &item.func.notes});
        anchors(item.func.body, as);
        as.push_back({item.func.close_lines, &item.func.close_notes});
        break;
      case syntax::Item::Kind::Var:
        as.push_back({item.var.lines, &item.var.notes});
        break;
      case syntax::Item::Kind::Import:
        as.push_back({item.import.lines, &item.import.notes});
        break;
      case syntax::Item::Kind::Program:
        as.push_back({item.program.lines, &item.program.notes});
        anchors(item.program.body, as);
        as.push_back({item.program.close_lines, &item.program.close_notes});
        break;
    }
  }
  uint32_t line = 1;
  bool own_line = true;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      ++line;
      own_line = true;
      continue;
    }
    if (c != '#') {
      if (c != ' ' && c != '\t' && c != '\r') own_line = false;
      continue;
    }
    size_t end = text.find('\n', i);
    if (end == std::string::npos) end = text.size();
    std::string comment = text.substr(i, end - i);
    while (!comment.empty() &&
           (comment.back() == '\r' || comment.back() == ' ' || comment.back() == '\t'))
      comment.pop_back();
    i = end - 1;
    // The last anchor that starts on or before this line.
    size_t k = as.size();
    for (size_t j = 0; j < as.size() && as[j].lines.first <= line; ++j) k = j;
    if (k == as.size()) {
      (as.empty() ? f.end_notes : *as.front().notes).before.push_back(comment);
    } else if (as[k].lines.last >= line) {
      if (own_line || line < as[k].lines.last)
        as[k].notes->before.push_back(comment);
      else
        as[k].notes->after.push_back(comment);
    } else if (own_line) {
      (k + 1 < as.size() ? *as[k + 1].notes : f.end_notes).before.push_back(comment);
    } else {
      as[k].notes->after.push_back(comment);
    }
  }
}

}  // namespace ab
