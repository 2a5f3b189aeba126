// The names lowering gives: a variable `fib.n` belongs to function `fib`; a
// block `gcd.again.1` comes from block `again` of function `gcd`.
#pragma once
#include <string>
#include <utility>

#include "ir/ir.h"

namespace ab {

// The function a qualified name belongs to (`fib.n` -> `fib`).
std::string owner_function(const std::string& qualified);

// The function and source block a lowered label belongs to:
// `gcd.again.1` -> ("gcd", "again"). A guess from the name alone, for
// programs parsed from lowered text: a front-end label has a dot of its own
// (`endif.1`), so prefer lowered_block_source.
std::pair<std::string, std::string> split_lowered_label(const std::string& label);

// The function and source block of a lowered block: from the lowering's
// record (Block::origin) when it has one, else split_lowered_label.
std::pair<std::string, std::string> lowered_block_source(const Block& block);

}  // namespace ab
