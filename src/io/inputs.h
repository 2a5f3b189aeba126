// Loading the entry function's inputs from the --inputs flags (docs/language.md,
// "Inputs and outputs"): inline JSON, JSON files and NAME=FILE.npy, mixed freely, each
// parameter given exactly once. The result holds one Array per parameter
// and the batch size (number of threads) of the run.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "io/npy.h"
#include "ir/array.h"
#include "ir/type.h"
#include "support/result.h"

namespace ab {

// One parameter of the entry function. Without a declared type, the input
// decides it (JSON: integers i64, floats f64, booleans bool; .npy: its
// dtype; the shape from the nesting or the file's shape after the batch).
struct ParamSpec {
  std::string name;
  std::optional<Type> declared;
};

// A batched parameter given as NAME=FILE.npy whose data load_inputs left on
// disk (defer_npy): the header is checked, the rows are read on demand.
struct NpySource {
  std::string path;
  std::string param;
  NpyHeader header;
  DType dtype = DType::F64;  // the parameter's (converted from header.dtype)
};

struct InputSet {
  // One per parameter, in parameter order. Each has batch == `batch`, or 1:
  // an input given once is kept once (the VM treats it as shared).
  std::vector<Array> values;
  int64_t batch = 0;
  // With defer_npy, one per parameter: where a deferred parameter's rows are
  // (its Array has the type and batch but no data).
  std::vector<std::optional<NpySource>> on_disk;
};

// `input_args`: the values of every --inputs flag, in order. Each is
//   - inline JSON, if it starts with '{' or '[' (after whitespace);
//   - NAME=PATH, if NAME is an identifier: parameter NAME from a .npy file;
//   - otherwise the path of a JSON file.
// A JSON object is keyed by parameter name; a JSON array gives values in
// parameter order (the first k parameters, if shorter).
//
// Batch size: the common batch of the inputs whose batch is not 1; inputs
// with batch 1 are broadcast. `batch_flag` (--batch N, N >= 1) sets the
// batch when every input has batch 1 (or there are no parameters) and must
// otherwise agree with the inputs. With neither, the batch is 1.
//
// Errors (all reported, each naming its file or "inline JSON" and the
// parameter): unreadable file, malformed JSON (with line:col), bad .npy,
// ragged nesting, wrong shape or element kind, out-of-range or non-integral
// value for the declared type, unknown or duplicate or missing input,
// tuple-typed parameter, batch-size mismatch.
Result<InputSet> load_inputs(const std::vector<std::string>& input_args,
                             const std::vector<ParamSpec>& params,
                             std::optional<int64_t> batch_flag, bool defer_npy = false);

// Rows [first, first + count) of a deferred .npy parameter, converted to its
// dtype.
Result<Array> read_input_rows(const NpySource& source, int64_t first, int64_t count);

}  // namespace ab
