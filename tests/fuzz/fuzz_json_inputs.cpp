// libFuzzer target: see targets.h (ab::fuzz::json_inputs).
#include "targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ab::fuzz::json_inputs(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
