// libFuzzer target: see targets.h (ab::fuzz::pipeline).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ab::fuzz::pipeline(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
