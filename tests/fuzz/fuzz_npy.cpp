// libFuzzer target: see targets.h (ab::fuzz::npy).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ab::fuzz::npy(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
