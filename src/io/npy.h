// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the binary form of
// inputs and outputs. Only the dtypes of the language are supported, little
// endian, C order: |b1 <i4 <i8 <f4 <f8. The reader validates the whole
// header and the data length before touching the data, so a malformed or
// truncated file is an error, never a crash or an out-of-bounds read.
#pragma once
#include <string>
#include <string_view>

#include "ir/array.h"
#include "ir/type.h"
#include "support/result.h"

namespace ab {

// The contents of a .npy file: dtype, full shape (no batch convention yet;
// a 0-d array has an empty shape) and the elements in C order.
struct NpyArray {
  DType dtype = DType::F64;
  Shape shape;
  Buffer data;
};

// Parses the bytes of a .npy file. `origin` names the file in messages.
Result<NpyArray> parse_npy(std::string_view bytes, const std::string& origin);
Result<NpyArray> read_npy_file(const std::string& path);

// The bytes of a .npy file holding `data` (C order, num_elements(shape)
// elements of `dtype`). Version 1.0, or 2.0 if the header needs more than
// 65535 bytes.
std::string encode_npy(DType dtype, const Shape& shape, const std::byte* data);

// `a` as a .npy file of shape [batch] + event shape; a batch-1 (shared)
// array is repeated `batch` times.
std::string encode_npy(const Array& a, int64_t batch);

// First axis = batch: shape [B, d1, ...] is B threads of [d1, ...]; a 0-d
// array is one thread of a scalar.
Array npy_to_array(NpyArray npy);

// "|b1", "<i4", "<i8", "<f4", "<f8".
const char* npy_descr(DType dtype);

}  // namespace ab
