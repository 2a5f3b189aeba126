// `autobatch report`: reads a trace in any of its formats (vm/trace.h) and
// writes one self-contained HTML page: a timeline of active threads per step
// coloured by block (binned to at most kMaxBins columns, so a trace of 10^6
// steps draws as fast as one of 100), utilization per block and per
// function, the blocks whose thread groups split most, a histogram of call
// depths, and the run's figures. The page's markup and script are
// src/report/report.html, embedded at build time; the data goes in as JSON.
#pragma once
#include <cstddef>
#include <string>

namespace ab::report {

constexpr size_t kMaxBins = 1000;

// The report's data (the JSON the page draws) from the trace at `path`;
// false with `error` naming the file (and line) when it is not a trace.
bool trace_data_json(const std::string& path, std::string& out, std::string& error);

// The whole page for the trace at `path`.
bool html(const std::string& path, std::string& out, std::string& error);

}  // namespace ab::report
