// JSON text as autobatch writes it: one line, ", " and ": " separators,
// floats in their shortest round-trip decimal form (an f32 by float's own
// shortest form, so 0.1f prints as 0.1), always with a '.' or exponent so a
// float reads back as a float, and NaN and the infinities as the strings
// "NaN", "Infinity", "-Infinity" (JSON has no literal for them).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "ir/array.h"

namespace ab {

void append_f64(std::string& out, double v);
void append_f32(std::string& out, float v);

// `a` as a nested list with the batch first. `a.batch` must be `batch` or 1;
// a batch-1 (shared) array is repeated `batch` times.
void append_array_json(std::string& out, const Array& a, int64_t batch);

// Any JSON value in the same style (used for extra members such as "stats").
void append_json_value(std::string& out, const nlohmann::json& v);
void append_json_value(std::string& out, const nlohmann::ordered_json& v);

}  // namespace ab
