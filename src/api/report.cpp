// write_report: the report generator (src/report) behind the public API.
#include "report/report.h"

#include "api/internal.h"
#include "io/atomic_file.h"

namespace autobatch {

Status write_report(const std::string& trace_path, const std::string& html_path) {
  std::string page, error;
  try {
    if (!ab::report::html(trace_path, page, error)) return {{option_error(error)}};
  } catch (const std::exception& e) {
    return {{option_error(trace_path + ": not a trace this version can read (" + e.what() + ")")}};
  }
  auto written = ab::write_files_atomically({{html_path, std::move(page)}});
  if (!written) return {to_public(written.diags())};
  return {};
}

}  // namespace autobatch
