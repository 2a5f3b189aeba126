// A one-message Diagnostics for the I/O layer. Input and output errors have
// no source position, so each message names its file (or "inline JSON") and
// parameter itself; the caller prints it after "error: ".
#pragma once
#include <string>

#include "support/diag.h"

namespace ab {

inline Diagnostics io_error(std::string message) {
  Diagnostics d;
  d.error(SourceLoc{}, std::move(message));
  return d;
}

}  // namespace ab
