// libFuzzer target: see targets.h (ab::fuzz::front_end).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ab::fuzz::front_end(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
