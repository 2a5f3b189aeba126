// Kernels of the indexing and building primitives: get, set, size,
// reshape, zeros, fill, iota. get/set index the leading event dimensions,
// one index each (get(x, i) the first, get(x, i, j) an element of a
// matrix), and accept Python-style negative indices (-1 is the last row); any other
// index outside [-d, d) is a runtime error. Moves are by element width, not
// dtype.
#include "vm/kernels/elementwise_impl.h"

namespace ab::kern {

namespace {

template <class I>
inline I load_index(const ArgView& vi, int64_t j) {
  return *lane_in<I>(vi, j, 1);
}

// The row for index i on a dimension of size d, or -1.
inline int64_t resolve_index(int64_t i, int64_t d) {
  if (i < 0) i += d;
  return (i < 0 || i >= d) ? -1 : i;
}

inline std::string index_error(const char* op, int64_t i, int64_t d) {
  return std::string("index ") + std::to_string(i) + " is out of range for '" + op +
         "' on a dimension of size " + std::to_string(d);
}

template <class W>
void fill_elems(W* p, int64_t count, W v) {
  for (int64_t k = 0; k < count; ++k) p[k] = v;
}

// The leading dimensions that operands 1 .. k of get/set index, and the
// elements each selection holds (a row: the product of the other
// dimensions).
struct Indexed {
  int k;
  int64_t lead;  // elements of x over elements per selection
  int64_t row;
};

inline Indexed indexed(const KernelCall& c, int k) {
  const auto& shape = c.args[0].type->shape;
  int64_t lead = 1;
  for (int d = 0; d < k; ++d) lead *= shape[static_cast<size_t>(d)];
  const int64_t E = c.args[0].type->num_elements();
  return {k, lead, lead ? E / lead : 0};
}

// Lane j's element offset of x[i1, ..., ik] (indices checked in order,
// each against its own dimension), or false with the error. I is the
// dtype of the first index; the others are read by their own dtype.
template <class I>
inline bool offset_of(const KernelCall& c, int64_t j, const Indexed& ix, const char* op,
                      int64_t* off, KernelError* err) {
  const auto& shape = c.args[0].type->shape;
  int64_t at = 0;
  for (int d = 0; d < ix.k; ++d) {
    const ArgView& vi = c.args[1 + d];
    const int64_t raw = d == 0 ? static_cast<int64_t>(load_index<I>(vi, j))
                        : vi.type->dtype == DType::I32 ? load_index<int32_t>(vi, j)
                                                       : load_index<int64_t>(vi, j);
    const int64_t dim = shape[static_cast<size_t>(d)];
    const int64_t r = resolve_index(raw, dim);
    if (r < 0) return fail(err, j, index_error(op, raw, dim));
    at = at * dim + r;
  }
  *off = at * ix.row;
  return true;
}

template <class I, class W>
bool get_impl(const KernelCall& c, KernelError* err) {
  const ArgView& vx = c.args[0];
  const OutView& vo = c.outs[0];
  const Indexed ix = indexed(c, c.nargs - 1);
  const int64_t E = vx.type->num_elements();
  const int64_t row = ix.row;  // elements per selection
  for (int64_t j = 0; j < c.n; ++j) {
    int64_t off = 0;
    if (!offset_of<I>(c, j, ix, "get", &off, err)) return false;
    const W* src = lane_in<W>(vx, j, E) + off;
    W* dst = lane_out<W>(vo, j, row);
    if (row == 1)
      *dst = *src;
    else if (row)
      std::memcpy(dst, src, static_cast<size_t>(row) * sizeof(W));
  }
  return true;
}

template <class I, class W>
bool set_impl(const KernelCall& c, KernelError* err) {
  const ArgView& vx = c.args[0];
  const ArgView& vv = c.args[c.nargs - 1];
  const OutView& vo = c.outs[0];
  const Indexed ix = indexed(c, c.nargs - 2);
  const int64_t E = vx.type->num_elements();
  const int64_t row = ix.row;
  const int64_t Ev = vv.type->num_elements();
  const std::span<const int64_t> row_shape(vx.type->shape.data() + ix.k,
                                           vx.type->shape.size() - static_cast<size_t>(ix.k));
  const Bcast bv = make_bcast(vv.type->shape, row_shape, 0);
  for (int64_t j = 0; j < c.n; ++j) {
    int64_t off = 0;
    if (!offset_of<I>(c, j, ix, "set", &off, err)) return false;
    const W* src = lane_in<W>(vx, j, E);
    W* dst = lane_out<W>(vo, j, E);
    if (dst != src && E)
      std::memcpy(dst, src, static_cast<size_t>(E) * sizeof(W));  // in place: no copy
    const W* pv = lane_in<W>(vv, j, Ev);
    W* out_row = dst + off;
    if (!bv.table && bv.stride == 1) {
      if (row) std::memcpy(out_row, pv, static_cast<size_t>(row) * sizeof(W));
    } else {
      for (int64_t k = 0; k < row; ++k) out_row[k] = pv[bv.at(k)];
    }
  }
  return true;
}

// Dispatch on the element width of operand `x`.
template <class I>
bool get_width(const KernelCall& c, KernelError* e) {
  switch (dtype_size(c.args[0].type->dtype)) {
    case 1:
      return get_impl<I, uint8_t>(c, e);
    case 4:
      return get_impl<I, uint32_t>(c, e);
    default:
      return get_impl<I, uint64_t>(c, e);
  }
}

template <class I>
bool set_width(const KernelCall& c, KernelError* e) {
  switch (dtype_size(c.args[0].type->dtype)) {
    case 1:
      return set_impl<I, uint8_t>(c, e);
    case 4:
      return set_impl<I, uint32_t>(c, e);
    default:
      return set_impl<I, uint64_t>(c, e);
  }
}

template <class W>
void fill_lanes(const KernelCall& c) {
  const ArgView& vv = c.args[0];
  const OutView& vo = c.outs[0];
  const int64_t E = vo.type->num_elements();
  for (int64_t j = 0; j < c.n; ++j) fill_elems(lane_out<W>(vo, j, E), E, *lane_in<W>(vv, j, 1));
}

}  // namespace

bool kernel_Get(const KernelCall& c, KernelError* e) {
  if (c.n == 0) return true;
  return c.args[1].type->dtype == DType::I32 ? get_width<int32_t>(c, e) : get_width<int64_t>(c, e);
}

bool kernel_Set(const KernelCall& c, KernelError* e) {
  if (c.n == 0) return true;
  return c.args[1].type->dtype == DType::I32 ? set_width<int32_t>(c, e) : set_width<int64_t>(c, e);
}

bool kernel_Size(const KernelCall& c, KernelError*) {
  const int64_t size = c.args[0].type->num_elements();
  for (int64_t j = 0; j < c.n; ++j) *lane_out<int64_t>(c.outs[0], j, 1) = size;
  return true;
}

bool kernel_Slice(const KernelCall& c, KernelError*) {
  const ArgView& vx = c.args[0];
  const OutView& vo = c.outs[0];
  const size_t out_bytes = event_bytes(*vo.type);
  if (c.n == 0 || out_bytes == 0) return true;
  const int64_t rows = vx.type->shape[0];
  const size_t row_bytes = event_bytes(*vx.type) / static_cast<size_t>(rows);
  const size_t offset = static_cast<size_t>(slice_bounds(*c.attrs, rows)->first) * row_bytes;
  for (int64_t j = 0; j < c.n; ++j)
    std::memcpy(lane_out_bytes(vo, j, out_bytes),
                lane_in_bytes(vx, j, event_bytes(*vx.type)) + offset, out_bytes);
  return true;
}

bool kernel_Reshape(const KernelCall& c, KernelError*) {
  const ArgView& vx = c.args[0];
  const OutView& vo = c.outs[0];
  const size_t bytes = event_bytes(*vo.type);
  if (c.n == 0 || bytes == 0) return true;
  if (vx.access == Access::Dense && vo.access == Access::Dense) {
    if (vx.data != vo.data) std::memcpy(vo.data, vx.data, bytes * static_cast<size_t>(c.n));
    return true;
  }
  for (int64_t j = 0; j < c.n; ++j) {
    const std::byte* src = lane_in_bytes(vx, j, bytes);
    std::byte* dst = lane_out_bytes(vo, j, bytes);
    if (src != dst) std::memcpy(dst, src, bytes);
  }
  return true;
}

bool kernel_Zeros(const KernelCall& c, KernelError*) {
  const OutView& vo = c.outs[0];
  const size_t bytes = event_bytes(*vo.type);
  if (c.n == 0 || bytes == 0) return true;
  if (vo.access == Access::Dense) {
    std::memset(vo.data, 0, bytes * static_cast<size_t>(c.n));
    return true;
  }
  for (int64_t j = 0; j < c.n; ++j) std::memset(lane_out_bytes(vo, j, bytes), 0, bytes);
  return true;
}

bool kernel_Fill(const KernelCall& c, KernelError*) {
  switch (dtype_size(c.args[0].type->dtype)) {
    case 1:
      fill_lanes<uint8_t>(c);
      break;
    case 4:
      fill_lanes<uint32_t>(c);
      break;
    default:
      fill_lanes<uint64_t>(c);
      break;
  }
  return true;
}

// stack(a, b, ...): each lane's operands one after another.
bool kernel_Stack(const KernelCall& c, KernelError*) {
  const OutView& vo = c.outs[0];
  const size_t bytes = event_bytes(*vo.type);
  if (c.n == 0 || bytes == 0) return true;
  const size_t part = bytes / static_cast<size_t>(c.nargs);
  for (int64_t j = 0; j < c.n; ++j) {
    std::byte* dst = lane_out_bytes(vo, j, bytes);
    for (int a = 0; a < c.nargs; ++a)
      std::memcpy(dst + static_cast<size_t>(a) * part, lane_in_bytes(c.args[a], j, part), part);
  }
  return true;
}

// concat(a, b, ...): each lane's operands' events one after another (the
// first dimension is the outermost, so rows follow rows).
bool kernel_Concat(const KernelCall& c, KernelError*) {
  const OutView& vo = c.outs[0];
  const size_t bytes = event_bytes(*vo.type);
  if (c.n == 0 || bytes == 0) return true;
  for (int64_t j = 0; j < c.n; ++j) {
    std::byte* dst = lane_out_bytes(vo, j, bytes);
    for (int a = 0; a < c.nargs; ++a) {
      const size_t part = event_bytes(*c.args[a].type);
      std::memcpy(dst, lane_in_bytes(c.args[a], j, part), part);
      dst += part;
    }
  }
  return true;
}

bool kernel_Iota(const KernelCall& c, KernelError*) {
  const OutView& vo = c.outs[0];
  const int64_t E = vo.type->num_elements();
  for (int64_t j = 0; j < c.n; ++j) {
    int64_t* p = lane_out<int64_t>(vo, j, E);
    for (int64_t k = 0; k < E; ++k) p[k] = k;
  }
  return true;
}

}  // namespace ab::kern
