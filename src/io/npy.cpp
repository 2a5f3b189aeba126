#include "io/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bit>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <limits>

#include "io/io_error.h"

namespace ab {

static_assert(std::endian::native == std::endian::little,
              ".npy files are read and written as little endian without byte swapping");

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;

// A cursor over the header's Python dict literal, e.g.
// {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool eat(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool at_end() {
    skip_space();
    return pos_ == text_.size();
  }
  std::optional<std::string> string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return std::nullopt;
    char quote = text_[pos_++];
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != quote) out += text_[pos_++];
    if (pos_ >= text_.size()) return std::nullopt;
    ++pos_;
    return out;
  }
  std::optional<bool> boolean() {
    skip_space();
    for (auto [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      size_t n = std::strlen(word);
      if (text_.substr(pos_, n) == word) {
        pos_ += n;
        return value;
      }
    }
    return std::nullopt;
  }
  // A tuple of non-negative integers: "()", "(3,)", "(3, 4)"; Python 2
  // headers may write "3L".
  std::optional<Shape> tuple() {
    if (!eat('(')) return std::nullopt;
    Shape shape;
    for (;;) {
      if (eat(')')) return shape;
      skip_space();
      size_t start = pos_;
      int64_t v = 0;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        int digit = text_[pos_++] - '0';
        if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return std::nullopt;
        v = v * 10 + digit;
      }
      if (pos_ == start) return std::nullopt;
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;
      shape.push_back(v);
      if (eat(')')) return shape;
      if (!eat(',')) return std::nullopt;
    }
  }
  // Text near the cursor, for messages.
  std::string here() const { return std::string(text_.substr(pos_, 20)); }

 private:
  std::string_view text_;
  size_t pos_ = 0;
};

std::optional<DType> dtype_of_descr(std::string_view d) {
  if (d == "|b1") return DType::Bool;
  if (d == "<i4") return DType::I32;
  if (d == "<i8") return DType::I64;
  if (d == "<f4") return DType::F32;
  if (d == "<f8") return DType::F64;
  return std::nullopt;
}

uint32_t read_le(std::string_view bytes, size_t at, size_t n) {
  uint32_t v = 0;
  for (size_t k = 0; k < n; ++k)
    v |= static_cast<uint32_t>(static_cast<uint8_t>(bytes[at + k])) << (8 * k);
  return v;
}

}  // namespace

const char* npy_descr(DType dtype) {
  switch (dtype) {
    case DType::Bool:
      return "|b1";
    case DType::I32:
      return "<i4";
    case DType::I64:
      return "<i8";
    case DType::F32:
      return "<f4";
    case DType::F64:
      return "<f8";
  }
  return "?";
}

namespace {

// The header of a .npy file whose first bytes are `bytes` (at least the whole
// header) and whose size is `file_size`; checks that the data has exactly the
// size of the shape.
Result<NpyHeader> parse_header(std::string_view bytes, uint64_t file_size,
                               const std::string& origin) {
  const std::string where = origin + ": ";
  if (bytes.size() < kMagicLen || bytes.substr(0, kMagicLen) != std::string_view(kMagic, kMagicLen))
    return io_error(where + "not a .npy file (it does not start with \"\\x93NUMPY\")");
  if (bytes.size() < kMagicLen + 2) return io_error(where + "truncated .npy header");
  const int major = static_cast<uint8_t>(bytes[6]), minor = static_cast<uint8_t>(bytes[7]);
  if (minor != 0 || major < 1 || major > 3)
    return io_error(where + ".npy format version " + std::to_string(major) + "." +
                    std::to_string(minor) + " is not supported (supported: 1.0, 2.0, 3.0)");
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t header_start = kMagicLen + 2 + len_bytes;
  if (bytes.size() < header_start) return io_error(where + "truncated .npy header");
  const size_t header_len = read_le(bytes, kMagicLen + 2, len_bytes);
  if (bytes.size() - header_start < header_len)
    return io_error(where + "truncated .npy header: it says " + std::to_string(header_len) +
                    " bytes, the file has " + std::to_string(bytes.size() - header_start));
  std::string_view header = bytes.substr(header_start, header_len);

  HeaderParser p(header);
  auto bad = [&](const std::string& what) {
    return io_error(where + "malformed .npy header: " + what + " (near '" + p.here() + "')");
  };
  std::optional<std::string> descr;
  std::optional<bool> fortran;
  std::optional<Shape> shape;
  if (!p.eat('{')) return bad("expected '{'");
  while (!p.eat('}')) {
    auto key = p.string();
    if (!key) return bad("expected a quoted key");
    if (!p.eat(':')) return bad("expected ':' after '" + *key + "'");
    if (*key == "descr") {
      descr = p.string();
      if (!descr)
        return io_error(where +
                        "dtype is not a simple type string (structured dtypes are not supported; "
                        "supported: |b1 <i4 <i8 <f4 <f8)");
    } else if (*key == "fortran_order") {
      fortran = p.boolean();
      if (!fortran) return bad("fortran_order must be True or False");
    } else if (*key == "shape") {
      shape = p.tuple();
      if (!shape) return bad("shape must be a tuple of non-negative integers");
    } else {
      return bad("unexpected key '" + *key + "'");
    }
    if (!p.eat(',')) {
      if (p.eat('}')) break;
      return bad("expected ',' or '}'");
    }
  }
  if (!p.at_end()) return bad("unexpected text after the dictionary");
  if (!descr || !fortran || !shape)
    return io_error(
        where + "malformed .npy header: it needs the keys 'descr', 'fortran_order' and 'shape'");
  auto dtype = dtype_of_descr(*descr);
  if (!dtype)
    return io_error(where + "dtype '" + *descr +
                    "' is not supported (supported: |b1 <i4 <i8 <f4 <f8)");
  if (*fortran)
    return io_error(
        where +
        "Fortran-order arrays are not supported; save a C-order array (np.ascontiguousarray)");

  // Count the bytes without overflowing; a shape too big for memory cannot
  // match the file either.
  const size_t item = dtype_size(*dtype);
  const size_t available = static_cast<size_t>(file_size) - header_start - header_len;
  size_t count = 1;
  bool too_big = false;
  for (int64_t d : *shape) {
    if (d == 0)
      count = 0;
    else if (count != 0 && static_cast<uint64_t>(d) > SIZE_MAX / item / count)
      too_big = true;
    else
      count *= static_cast<size_t>(d);
  }
  if (too_big && count != 0)
    return io_error(where + "truncated data: shape " + shape_str(*shape) +
                    " needs more bytes than the " + std::to_string(available) + " in the file");
  const size_t need = count * item;
  if (available < need)
    return io_error(where + "truncated data: shape " + shape_str(*shape) + " needs " +
                    std::to_string(need) + " bytes, the file has " + std::to_string(available));
  if (available > need)
    return io_error(where + "unexpected " + std::to_string(available - need) +
                    " bytes after the data of shape " + shape_str(*shape));

  NpyHeader out;
  out.dtype = *dtype;
  out.shape = std::move(*shape);
  out.data_offset = header_start + header_len;
  return out;
}

// NumPy treats any nonzero byte as true; we keep bools as 0 or 1.
void normalize_bools(DType dtype, Buffer& data) {
  if (dtype != DType::Bool) return;
  auto* b = reinterpret_cast<uint8_t*>(data.data());
  for (size_t k = 0; k < data.size(); ++k) b[k] = b[k] != 0;
}

}  // namespace

Result<NpyArray> parse_npy(std::string_view bytes, const std::string& origin) {
  auto header = parse_header(bytes, bytes.size(), origin);
  if (!header.ok()) return header.diags();
  NpyArray out;
  out.dtype = header->dtype;
  out.shape = std::move(header->shape);
  const size_t need = static_cast<size_t>(num_elements(out.shape)) * dtype_size(out.dtype);
  out.data = Buffer::for_overwrite(need);
  if (need) std::memcpy(out.data.data(), bytes.data() + header->data_offset, need);
  normalize_bools(out.dtype, out.data);
  return out;
}

namespace {

// An open file, closed when it goes.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Opens `path` for reading; its size in `size`.
Result<int> open_for_reading(const std::string& path, uint64_t& size) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return io_error(path + ": cannot open the file: it is a directory");
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error(path + ": cannot open the file: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    std::string why = std::strerror(errno);
    ::close(fd);
    return io_error(path + ": cannot read the file: " + why);
  }
  size = static_cast<uint64_t>(st.st_size);
  return fd;
}

// Reads exactly `n` bytes at `offset` into `dst`, straight from the file
// into the caller's memory (no stream buffer, no copy); an error text if
// the file ends first (it changed since its size was taken) or a read fails.
std::optional<std::string> read_exact(int fd, uint64_t offset, std::byte* dst, size_t n) {
  while (n > 0) {
    // At most 1 GiB a call: Linux reads at most 2 GiB - 4 KiB at once.
    ssize_t got = ::pread(fd, dst, std::min<size_t>(n, size_t{1} << 30),
                          static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR) continue;
      return std::string(std::strerror(errno));
    }
    if (got == 0) return std::string("the file is shorter than it was (did it change?)");
    dst += got;
    offset += static_cast<uint64_t>(got);
    n -= static_cast<size_t>(got);
  }
  return std::nullopt;
}

// The header of the open file `fd` of `size` bytes (only the header's bytes
// are read).
Result<NpyHeader> read_header(int fd, uint64_t size, const std::string& path) {
  // The magic, the version and the header length; then the whole header.
  std::string bytes(static_cast<size_t>(std::min<uint64_t>(size, kMagicLen + 2 + 4)), '\0');
  if (auto why = read_exact(fd, 0, reinterpret_cast<std::byte*>(bytes.data()), bytes.size()))
    return io_error(path + ": cannot read the file: " + *why);
  if (bytes.size() >= kMagicLen + 2 + 4 &&
      bytes.substr(0, kMagicLen) == std::string_view(kMagic, kMagicLen)) {
    const int major = static_cast<uint8_t>(bytes[6]);
    const size_t len_bytes = major == 1 ? 2 : 4;
    const uint64_t end = kMagicLen + 2 + len_bytes + read_le(bytes, kMagicLen + 2, len_bytes);
    const size_t have = bytes.size();
    bytes.resize(static_cast<size_t>(std::min(end, size)));
    if (bytes.size() > have)
      if (auto why = read_exact(fd, have, reinterpret_cast<std::byte*>(bytes.data() + have),
                                bytes.size() - have))
        return io_error(path + ": cannot read the file: " + *why);
  }
  return parse_header(bytes, size, path);
}

size_t row_bytes_of(const NpyHeader& header) {
  const int64_t rows = header.shape.empty() ? 1 : header.shape[0];
  return static_cast<size_t>(num_elements(header.shape) / std::max<int64_t>(rows, 1)) *
         dtype_size(header.dtype);
}

}  // namespace

Result<NpyHeader> read_npy_header(const std::string& path) {
  uint64_t size = 0;
  auto fd = open_for_reading(path, size);
  if (!fd.ok()) return fd.diags();
  Fd file(*fd);
  return read_header(file.fd, size, path);
}

Result<Buffer> read_npy_rows(const std::string& path, const NpyHeader& header, int64_t first,
                             int64_t count) {
  const int64_t rows = header.shape.empty() ? 1 : header.shape[0];
  if (first < 0 || count < 0 || first + count > rows)
    return io_error(path + ": rows " + std::to_string(first) + ".." +
                    std::to_string(first + count) + " are outside the file's " +
                    std::to_string(rows));
  const size_t row_bytes = row_bytes_of(header);
  Buffer out = Buffer::for_overwrite(row_bytes * static_cast<size_t>(count));
  if (out.size() == 0) return out;
  uint64_t size = 0;
  auto fd = open_for_reading(path, size);
  if (!fd.ok()) return fd.diags();
  Fd file(*fd);
  if (read_exact(file.fd, header.data_offset + row_bytes * static_cast<uint64_t>(first),
                 out.data(), out.size()))
    return io_error(path + ": cannot read rows " + std::to_string(first) + ".." +
                    std::to_string(first + count) + " (the file changed?)");
  normalize_bools(header.dtype, out);
  return out;
}

// The header first, then the data read straight into the array's own
// (uninitialised) memory: one pass over the data, as np.load makes.
Result<NpyArray> read_npy_file(const std::string& path) {
  uint64_t size = 0;
  auto fd = open_for_reading(path, size);
  if (!fd.ok()) return fd.diags();
  Fd file(*fd);
  auto header = read_header(file.fd, size, path);
  if (!header.ok()) return header.diags();
  NpyArray out;
  out.dtype = header->dtype;
  out.shape = std::move(header->shape);
  out.data = Buffer::for_overwrite(size - header->data_offset);  // its size is checked
  if (auto why = read_exact(file.fd, header->data_offset, out.data.data(), out.data.size()))
    return io_error(path + ": cannot read the file: " + *why);
  normalize_bools(out.dtype, out.data);
  return out;
}

std::string npy_header(DType dtype, const Shape& shape) {
  std::string dict =
      std::string("{'descr': '") + npy_descr(dtype) + "', 'fortran_order': False, 'shape': (";
  for (size_t k = 0; k < shape.size(); ++k) {
    if (k) dict += ", ";
    dict += std::to_string(shape[k]);
  }
  if (shape.size() == 1) dict += ',';
  dict += "), }";
  // Pad with spaces and a final newline so that the data starts at a
  // multiple of 64 bytes, as NumPy does.
  size_t prefix = kMagicLen + 2 + 2;
  int major = 1;
  if (prefix + dict.size() + 1 > 65535) {
    prefix = kMagicLen + 2 + 4;
    major = 2;
  }
  size_t total = prefix + dict.size() + 1;
  total = (total + 63) / 64 * 64;
  size_t header_len = total - prefix;
  dict.append(header_len - dict.size() - 1, ' ');
  dict += '\n';

  std::string out;
  out.reserve(total);
  out.append(kMagic, kMagicLen);
  out += static_cast<char>(major);
  out += '\0';
  for (size_t k = 0; k < prefix - kMagicLen - 2; ++k)
    out += static_cast<char>((header_len >> (8 * k)) & 0xff);
  out += dict;
  return out;
}

std::string encode_npy(DType dtype, const Shape& shape, const std::byte* data) {
  std::string out = npy_header(dtype, shape);
  const size_t data_bytes = static_cast<size_t>(num_elements(shape)) * dtype_size(dtype);
  if (data_bytes) {
    out.reserve(out.size() + data_bytes);
    out.append(reinterpret_cast<const char*>(data), data_bytes);
  }
  return out;
}

namespace {
Shape batch_shape(const Array& a, int64_t batch) {
  Shape shape{batch};
  shape.insert(shape.end(), a.type.shape.begin(), a.type.shape.end());
  return shape;
}
}  // namespace

std::string encode_npy(const Array& a, int64_t batch) {
  const Shape shape = batch_shape(a, batch);
  if (a.batch == batch) return encode_npy(a.type.dtype, shape, a.data.data());
  // A shared array: repeat its one row.
  Array wide(a.type, batch);
  const size_t row = a.byte_size();
  for (int64_t b = 0; b < batch; ++b)
    if (row) std::memcpy(wide.data.data() + static_cast<size_t>(b) * row, a.data.data(), row);
  return encode_npy(wide.type.dtype, shape, wide.data.data());
}

PendingFile npy_file(std::string path, const Array& a, int64_t batch) {
  if (a.batch != batch) return {std::move(path), encode_npy(a, batch)};
  return {std::move(path), npy_header(a.type.dtype, batch_shape(a, batch)), a.data.data(),
          a.byte_size()};
}

Array npy_to_array(NpyArray npy) {
  Array a;
  a.type.dtype = npy.dtype;
  if (npy.shape.empty()) {
    a.batch = 1;
  } else {
    a.batch = npy.shape[0];
    a.type.shape.assign(npy.shape.begin() + 1, npy.shape.end());
  }
  a.data = std::move(npy.data);
  return a;
}

}  // namespace ab
