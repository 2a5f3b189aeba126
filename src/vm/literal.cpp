#include "vm/literal.h"

#include <cstring>

namespace ab {

Value literal_value(const Literal& lit, const Type& t) {
  Value v = Value::of_type(t);
  int64_t n = t.tensor.num_elements();
  int64_t count = static_cast<int64_t>(lit.elems.size());
  for (int64_t i = 0; i < n; ++i) {
    const Scalar& s = lit.elems[count == n ? i : 0];
    double f = s.kind == Scalar::Kind::Float  ? s.f
               : s.kind == Scalar::Kind::Bool ? s.b
                                              : static_cast<double>(s.i);
    int64_t k = s.kind == Scalar::Kind::Int ? s.i : static_cast<int64_t>(s.b);
    std::byte* p = v.data.data() + i * dtype_size(t.tensor.dtype);
    switch (t.tensor.dtype) {
      case DType::Bool: {
        uint8_t b = s.kind == Scalar::Kind::Bool ? s.b : k != 0;
        std::memcpy(p, &b, 1);
        break;
      }
      case DType::I32: {
        int32_t x = static_cast<int32_t>(k);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::I64:
        std::memcpy(p, &k, 8);
        break;
      case DType::F32: {
        float x = static_cast<float>(f);
        std::memcpy(p, &x, 4);
        break;
      }
      case DType::F64:
        std::memcpy(p, &f, 8);
        break;
    }
  }
  return v;
}

}  // namespace ab
