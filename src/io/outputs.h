// The results of a run, as JSON ({"outputs": [R1, R2, ...]}) or as .npy
// files, on stdout or in files written whole or not at all (docs/language.md, "Inputs and
// outputs"). Results are the entry's result leaves in order; each has batch `batch`, or
// 1 when it is shared by all threads (then it is repeated: sharing is
// invisible in the outputs).
#pragma once
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "io/atomic_file.h"
#include "ir/array.h"
#include "support/result.h"

namespace ab {

// Where --output sends the results.
struct OutputTarget {
  enum class Kind { Stdout, JsonFile, NpyFile, Directory };
  Kind kind = Kind::Stdout;
  std::string path;  // empty for Stdout; for Directory, without the trailing '/'
};

// Classifies an --output value: "" or "-" is stdout, "X.json" a JSON file,
// "X.npy" one .npy file, "X/" a directory of NAME.npy, one per result.
// Anything else is an error (the message explains the forms), so the CLI
// can reject a bad --output before running the program.
Result<OutputTarget> parse_output_target(const std::string& arg);

// {"outputs": [...], "names": [...]} and, after them, the members of `extra`
// if it is an object (the VM adds "stats"). `names`: one per result (the
// results' names, passes/result_names.h); when they are not one per result,
// out0, out1, ... One line, no trailing newline.
std::string render_outputs_json(const std::vector<Array>& results, int64_t batch,
                                const nlohmann::ordered_json& extra = nullptr,
                                const std::vector<std::string>& names = {});

// Writes the results to `target`. Stdout and JSON files get the rendered
// JSON and a newline. A .npy file needs exactly one result. A directory is
// created if missing and gets NAME.npy per result (`names` as for
// render_outputs_json); for .npy targets, the
// members of `extra` (if any) are printed to `out` as a JSON object so that
// --stats still shows. `beside`: more files (path: a bare name) written
// with a file target, in its directory, in the same all-or-nothing set (the
// errors.json of --on-error record). Returns the paths of the files written.
Result<std::vector<std::string>> write_outputs(const std::vector<Array>& results, int64_t batch,
                                               const OutputTarget& target,
                                               const nlohmann::ordered_json& extra = nullptr,
                                               std::ostream& out = std::cout,
                                               const std::vector<PendingFile>& beside = {},
                                               const std::vector<std::string>& names = {});

}  // namespace ab
