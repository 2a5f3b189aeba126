// PLACEHOLDER so the tree builds: the root CMakeLists.txt names src/cli/main.cpp
// but main has no CLI yet. The CLI owner's real main.cpp replaces this file.
#include <cstdio>

int main() {
  std::fprintf(stderr, "autobatch %s: command line not implemented yet\n", AUTOBATCH_VERSION);
  return 2;
}
