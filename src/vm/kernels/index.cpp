// Kernels of the indexing and building primitives: get, set, size,
// reshape, zeros, fill, iota. get/set index the first event dimension and
// accept Python-style negative indices (-1 is the last row); any other
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

template <class I, class W>
bool get_impl(const KernelCall& c, KernelError* err) {
  const ArgView& vx = c.args[0];
  const ArgView& vi = c.args[1];
  const OutView& vo = c.outs[0];
  const int64_t d = vx.type->shape[0];
  const int64_t row = vo.type->num_elements();  // elements per row
  for (int64_t j = 0; j < c.n; ++j) {
    I raw = load_index<I>(vi, j);
    int64_t r = resolve_index(raw, d);
    if (r < 0) return fail(err, j, index_error("get", raw, d));
    const W* src = lane_in<W>(vx, j, d * row) + r * row;
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
  const ArgView& vi = c.args[1];
  const ArgView& vv = c.args[2];
  const OutView& vo = c.outs[0];
  const int64_t d = vx.type->shape[0];
  const int64_t E = vx.type->num_elements();
  const int64_t row = d ? E / d : 0;
  const int64_t Ev = vv.type->num_elements();
  const std::span<const int64_t> row_shape(vx.type->shape.data() + 1, vx.type->shape.size() - 1);
  const Bcast bv = make_bcast(vv.type->shape, row_shape, 0);
  for (int64_t j = 0; j < c.n; ++j) {
    I raw = load_index<I>(vi, j);
    int64_t r = resolve_index(raw, d);
    if (r < 0) return fail(err, j, index_error("set", raw, d));
    const W* src = lane_in<W>(vx, j, E);
    W* dst = lane_out<W>(vo, j, E);
    if (dst != src && E)
      std::memcpy(dst, src, static_cast<size_t>(E) * sizeof(W));  // in place: no copy
    const W* pv = lane_in<W>(vv, j, Ev);
    W* out_row = dst + r * row;
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
