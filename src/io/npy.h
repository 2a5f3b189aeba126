// NumPy .npy files (format versions 1.0, 2.0 and 3.0), the binary form of
// inputs and outputs. Only the dtypes of the language are supported, little
// endian, C order: |b1 <i4 <i8 <f4 <f8. The reader validates the whole
// header and the data length before touching the data, so a malformed or
// truncated file is an error, never a crash or an out-of-bounds read.
#pragma once
#include <string>
#include <string_view>

#include "io/atomic_file.h"
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

// What the header of a .npy file says: dtype, full shape, and where the data
// (C order) starts.
struct NpyHeader {
  DType dtype = DType::F64;
  Shape shape;
  uint64_t data_offset = 0;
};

// Reads and checks only the header (the data's size must match the shape),
// not the data.
Result<NpyHeader> read_npy_header(const std::string& path);
// Rows [first, first + count) of the first axis (a 0-d array has one row),
// read by offset: the rest of the file is never read.
Result<Buffer> read_npy_rows(const std::string& path, const NpyHeader& header, int64_t first,
                             int64_t count);

// Parses the bytes of a .npy file. `origin` names the file in messages.
Result<NpyArray> parse_npy(std::string_view bytes, const std::string& origin);
Result<NpyArray> read_npy_file(const std::string& path);

// The bytes of a .npy file holding `data` (C order, num_elements(shape)
// elements of `dtype`). Version 1.0, or 2.0 if the header needs more than
// 65535 bytes.
std::string encode_npy(DType dtype, const Shape& shape, const std::byte* data);
// The bytes of such a file before its data (a multiple of 64).
std::string npy_header(DType dtype, const Shape& shape);

// `a` as a .npy file of shape [batch] + event shape; a batch-1 (shared)
// array is repeated `batch` times.
std::string encode_npy(const Array& a, int64_t batch);
// The same, as a file for write_files_atomically: the header, then the
// array's own bytes, not copied (the caller keeps `a` alive until it is
// written); a shared array is repeated into `contents`.
PendingFile npy_file(std::string path, const Array& a, int64_t batch);

// First axis = batch: shape [B, d1, ...] is B threads of [d1, ...]; a 0-d
// array is one thread of a scalar.
Array npy_to_array(NpyArray npy);

// "|b1", "<i4", "<i8", "<f4", "<f8".
const char* npy_descr(DType dtype);

}  // namespace ab
