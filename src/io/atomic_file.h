// Writing output files whole or not at all. Each file is first written to a
// temporary file beside its target (same directory, so same file system);
// only when every temporary is complete are they renamed over the targets.
// On any failure the temporaries are removed, so a crash of the writer or a
// full disk never leaves a half-written output behind.
#pragma once
#include <string>
#include <vector>

#include "support/result.h"

namespace ab {

struct PendingFile {
  std::string path;      // the target
  std::string contents;  // its bytes: all of them, or the first ones
  // Then `data_bytes` bytes at `data`, written from there, not copied into
  // `contents` (the rows of a large output: a .npy file is its header, then
  // the array's bytes as they are in memory). Borrowed: the caller keeps
  // them alive until the write returns.
  const std::byte* data = nullptr;
  size_t data_bytes = 0;
};

// Writes all `files` or none; returns their paths. If a rename fails after
// others succeeded (rare: the checks before it make it unlikely), the files
// already renamed are removed too, so no incomplete set is left.
Result<std::vector<std::string>> write_files_atomically(const std::vector<PendingFile>& files);

}  // namespace ab
