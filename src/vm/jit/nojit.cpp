// The JIT in a build without LLVM (AUTOBATCH_JIT off): unavailable, and
// compile() fails with a message, so the VM interprets every block.
#include "vm/jit/jit.h"

namespace ab::jit {

bool available() { return false; }

std::shared_ptr<const Code> compile(const std::vector<Segment>&, const std::vector<Segment>&,
                                    const std::vector<Segment>&, const std::vector<uint32_t>*,
                                    uint32_t, std::string* error, bool* cached) {
  *cached = false;
  *error = "this build has no JIT (configure with LLVM 15: llvm-15-dev)";
  return nullptr;
}

}  // namespace ab::jit
