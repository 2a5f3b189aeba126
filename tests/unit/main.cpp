// The unit tests' main: doctest's, then a wait for the JIT's background
// compiles. A tiered run leaves its compile going when it ends; if the
// process exited meanwhile, its exit handlers would destroy LLVM's lazily
// made statics under the compiling thread (autobatch.h says to wait).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "autobatch/autobatch.h"

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  const int status = context.run();
  autobatch::wait_for_background_compiles();
  return status;
}
