// JSON inputs: parsing text with positions in messages, and turning one
// parameter's value (a nested list, batch first) into an Array. Without a
// declared type, the nesting gives the shape and the elements the dtype
// (integers i64, any float makes f64, booleans bool); with one, the value
// must have exactly that event shape and its elements are converted and
// range-checked as by store_scalar.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "ir/array.h"
#include "ir/type.h"
#include "support/result.h"

namespace ab {

// Parses JSON text. A syntax error says "ORIGIN:LINE:COL: invalid JSON: ...";
// a key repeated in the top-level object is a duplicate-input error.
Result<nlohmann::ordered_json> parse_json_text(std::string_view text, const std::string& origin);

// One parameter's value. A bare scalar is a batch of 1. "NaN", "Infinity"
// and "-Infinity" are float values. Messages name `origin` and `param`.
// `whole`: the value is one thread's, without a batch dimension (CmdStan's
// data): the result has batch 1, and messages index the value alone.
Result<Array> json_to_array(const nlohmann::ordered_json& value,
                            const std::optional<TensorType>& declared, const std::string& origin,
                            const std::string& param, bool whole = false);

}  // namespace ab
