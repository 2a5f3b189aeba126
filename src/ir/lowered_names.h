// The names lowering gives: a variable `fib.n` belongs to function `fib`; a
// block `gcd.again.1` comes from block `again` of function `gcd`.
#pragma once
#include <string>
#include <utility>

namespace ab {

// The function a qualified name belongs to (`fib.n` -> `fib`).
std::string owner_function(const std::string& qualified);

// The function and source block a lowered label belongs to:
// `gcd.again.1` -> ("gcd", "again").
std::pair<std::string, std::string> split_lowered_label(const std::string& label);

}  // namespace ab
