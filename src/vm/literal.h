// Literals as values: a literal of the source converted to the type type
// inference gave it (an integer literal may become any numeric dtype).
#pragma once
#include "ir/ir.h"
#include "vm/value.h"

namespace ab {

Value literal_value(const Literal& lit, const Type& t);

}  // namespace ab
