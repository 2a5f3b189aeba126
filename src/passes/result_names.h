// The names of a program's results (docs/language.md, "Result names"): what
// `{"names": [...]}`, `--output DIR/NAME.npy`, the API's RunResult::names and
// Python's result object call each output.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "ir/ir.h"

namespace ab {

// One per result of `f` (as many as its `->` or its returns give): the name
// its signature gives the result; else the name every return of `f` agrees
// on at that position, where a return names a result by returning a plain
// variable (`return total, n`), or by returning a call's results unchanged
// (`return g(x)`: g's names); else "". A return of a recursive call says
// nothing about the names (the other returns decide). A name two results
// would share names neither.
std::vector<std::string> result_names(const Module& m, const Function& f);

// The names of the output leaves, one per leaf of `types` (a result of tuple
// type has one output per tensor leaf: NAME.0, NAME.1, NAME.1.0, ...); a
// leaf without a name is out<k>, k its position among the outputs. A name
// that would repeat another gives way to out<k>. When `types` do not
// account for exactly `leaves` outputs, every output is out<k>.
std::vector<std::string> output_names(const std::vector<std::string>& names,
                                      const std::vector<std::optional<Type>>& types,
                                      size_t leaves);

// out0, out1, ...: the names of `leaves` unnamed outputs.
std::vector<std::string> default_output_names(size_t leaves);

}  // namespace ab
