// The JIT in a build without LLVM (AUTOBATCH_JIT off): unavailable, and
// compile() fails with a message, so the VM interprets every block.
#include "vm/jit/jit.h"

namespace ab::jit {

namespace {
const char* const kNoJit = "this build has no JIT (configure with LLVM 15: llvm-15-dev)";
}

bool available() { return false; }

std::shared_ptr<const Code> compile(const std::vector<Segment>&, const std::vector<Segment>&,
                                    const std::vector<Segment>&, const std::vector<uint32_t>*,
                                    uint32_t, std::string* error, bool* cached) {
  *cached = false;
  *error = kNoJit;
  return nullptr;
}

std::shared_ptr<const Pending> compile_in_background(const std::vector<Segment>&,
                                                     const std::vector<Segment>&,
                                                     const std::vector<Segment>&,
                                                     const std::vector<uint32_t>*, uint32_t,
                                                     bool* cached) {
  *cached = false;
  auto failed = std::make_shared<Pending>();
  failed->finish(nullptr, kNoJit);
  return failed;
}

bool compiling() { return false; }
void hold_background(bool) {}
void wait_idle() {}

}  // namespace ab::jit
