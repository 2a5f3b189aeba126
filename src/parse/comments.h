// Comments in the syntax tree: each comment of the text is attached to the
// printed line it belongs with, so that `fmt` keeps every one in place.
#pragma once
#include <string>

#include "parse/syntax.h"

namespace ab {

// An end-of-line comment goes to the line it ends, an own-line comment to
// the next line printed (or, before a closing '}', to that brace; after the
// last item, to the end of the file).
void attach_comments(syntax::File& f, const std::string& text);

}  // namespace ab
