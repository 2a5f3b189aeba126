// Parsing `.ab` text into the IR. Syntax errors stop at the first one (a PEG
// parser cannot resynchronise reliably); structural problems found while
// building the IR (a block with no terminator, a ragged tensor literal, ...)
// are all collected.
#pragma once
#include <string>

#include "ir/ir.h"
#include "support/result.h"

namespace ab {

Result<Module> parse_module(SourceRef source);
Result<Module> parse_text(const std::string& name, std::string text);
// Reads the file ("-" is standard input) and parses it.
Result<Module> parse_file(const std::string& path);
// `fmt`: the file in canonical formatting, every comment kept.
Result<std::string> format_file(const std::string& path);
Result<std::string> format_text(const std::string& name, std::string text);

}  // namespace ab
