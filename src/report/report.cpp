#include "report/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <vector>

#include "vm/trace.h"

namespace ab::report {

namespace {

// The page's markup and script (src/report/report.html), embedded at build time.
const char kTemplate[] =
#include "report_template.inc"
    ;

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

constexpr size_t kSeries = 12;  // blocks drawn in their own colour; the rest are "other"

// Active threads per step, binned: the bins double in width whenever there
// would be more than kMaxBins, so memory stays bounded whatever the length.
class Timeline {
 public:
  void add(uint32_t block, int64_t active, int64_t live) {
    size_t i = static_cast<size_t>(n_ / per_bin_);
    if (i >= kMaxBins) {
      halve();
      i = static_cast<size_t>(n_ / per_bin_);
    }
    if (i >= bins_.size()) bins_.resize(i + 1);
    Bin& b = bins_[i];
    ++b.steps;
    if (live >= 0) {
      b.live_sum += live;
      ++b.live_steps;
    }
    auto it = std::find_if(b.active.begin(), b.active.end(),
                           [&](const auto& p) { return p.first == block; });
    if (it == b.active.end())
      b.active.emplace_back(block, active);
    else
      it->second += active;
    ++n_;
  }

  // {"per_bin", "steps", "series": [{"block", "values"}], "live"}; the
  // blocks of `order` first (each its own series), the rest summed.
  ojson to_json(const std::vector<uint32_t>& order) const {
    ojson series = ojson::array();
    std::vector<int> which;  // block -> series
    for (size_t k = 0; k < order.size() && k < kSeries; ++k) {
      if (order[k] >= which.size()) which.resize(order[k] + 1, -1);
      which[order[k]] = static_cast<int>(k);
    }
    size_t ns = std::min(order.size(), kSeries);
    bool other = order.size() > kSeries;
    std::vector<std::vector<double>> values(ns + (other ? 1 : 0),
                                            std::vector<double>(bins_.size(), 0.0));
    ojson live = ojson::array();
    for (size_t i = 0; i < bins_.size(); ++i) {
      const Bin& b = bins_[i];
      double steps = b.steps ? static_cast<double>(b.steps) : 1.0;
      for (const auto& [blk, a] : b.active) {
        int s = blk < which.size() ? which[blk] : -1;
        size_t k = s >= 0 ? static_cast<size_t>(s) : ns;
        if (k < values.size()) values[k][i] += static_cast<double>(a) / steps;
      }
      if (b.live_steps)
        live.push_back(round3(static_cast<double>(b.live_sum) / static_cast<double>(b.live_steps)));
      else
        live.push_back(nullptr);
    }
    for (size_t k = 0; k < values.size(); ++k) {
      ojson v = ojson::array();
      for (double x : values[k]) v.push_back(round3(x));
      ojson s = {{"block", k < ns ? ojson(order[k]) : ojson(nullptr)}, {"values", v}};
      series.push_back(s);
    }
    return ojson{{"per_bin", per_bin_}, {"steps", n_}, {"series", series}, {"live", live}};
  }

  int64_t steps() const { return n_; }

  static double round3(double x) { return std::round(x * 1000.0) / 1000.0; }

 private:
  struct Bin {
    int64_t steps = 0;
    int64_t live_sum = 0, live_steps = 0;
    std::vector<std::pair<uint32_t, int64_t>> active;  // per block: sum of active threads
  };
  void halve() {
    std::vector<Bin> merged((bins_.size() + 1) / 2);
    for (size_t i = 0; i < bins_.size(); ++i) {
      Bin& m = merged[i / 2];
      const Bin& b = bins_[i];
      m.steps += b.steps;
      m.live_sum += b.live_sum;
      m.live_steps += b.live_steps;
      for (const auto& ba : b.active) {
        auto it = std::find_if(m.active.begin(), m.active.end(),
                               [&](const auto& p) { return p.first == ba.first; });
        if (it == m.active.end())
          m.active.push_back(ba);
        else
          it->second += ba.second;
      }
    }
    bins_ = std::move(merged);
    per_bin_ *= 2;
  }
  std::vector<Bin> bins_;
  int64_t per_bin_ = 1;
  int64_t n_ = 0;
};

// "0-3,7" -> {0, 1, 2, 3, 7}; false if it is not such a list.
bool parse_ranges(const std::string& s, std::vector<uint32_t>& out) {
  out.clear();
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    uint32_t a = 0, b = 0;
    auto r = std::from_chars(p, end, a);
    if (r.ec != std::errc()) return false;
    p = r.ptr;
    b = a;
    if (p < end && *p == '-') {
      r = std::from_chars(p + 1, end, b);
      if (r.ec != std::errc() || b < a || b - a > (1u << 26)) return false;
      p = r.ptr;
    }
    for (uint32_t t = a;; ++t) {
      out.push_back(t);
      if (t == b) break;
    }
    if (p < end) {
      if (*p != ',') return false;
      ++p;
    }
  }
  return true;
}

struct Reader {
  std::string path;
  std::string vm = "?";
  std::string format = "jsonl";
  int64_t batch = 0;
  std::vector<std::string> blocks;
  // Where each block comes from (traces written with the program's text).
  std::string source;
  std::vector<int64_t> lines;
  std::vector<std::string> statements;
  Timeline timeline;
  TraceSummary summary;  // computed from the steps
  bool have_summary_line = false;
  TraceSummary written;  // the compact trace's own
  bool depth_known = false;
  std::vector<uint32_t> threads, depths;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::string error;

  bool fail(size_t line, const std::string& what) {
    error = path + ":" + std::to_string(line) + ": " + what;
    return false;
  }

  void start(const json& h, bool divergence) {
    vm = h.value("vm", std::string("?"));
    batch = h.value("batch", int64_t{0});
    if (h.contains("blocks") && h["blocks"].is_array())
      for (const auto& b : h["blocks"])
        blocks.push_back(b.is_string() ? b.get<std::string>() : b.dump());
    if (h.contains("source") && h["source"].is_string()) source = h["source"].get<std::string>();
    if (h.contains("lines") && h["lines"].is_array())
      for (const auto& l : h["lines"]) lines.push_back(l.is_number_integer() ? l.get<int64_t>() : 0);
    if (h.contains("statements") && h["statements"].is_array())
      for (const auto& s : h["statements"])
        statements.push_back(s.is_string() ? s.get<std::string>() : std::string());
    summary.init(batch, blocks.size(), divergence);
  }

  void step(uint32_t block, int64_t active, int64_t live) {
    timeline.add(block, active, live);
    if (block >= blocks.size())
      for (size_t b = blocks.size(); b <= block; ++b) blocks.push_back("#" + std::to_string(b));
  }

  bool read() {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      error = "cannot read the trace file '" + path + "'";
      return false;
    }
    std::string line;
    if (!std::getline(in, line)) return fail(1, "empty file: not an autobatch trace");
    if (line.rfind("{\"displayTimeUnit\"", 0) == 0) {
      format = "chrome";
      return read_chrome(in);
    }
    json h = json::parse(line, nullptr, false);
    if (h.is_discarded() || !h.is_object() || h.value("trace", std::string()) != "autobatch")
      return fail(1,
                  "not an autobatch trace (its first line is not the header "
                  "{\"trace\": \"autobatch\", ...})");
    if (h.value("format", std::string()) == "compact") {
      format = "compact";
      start(h, false);
      return read_compact(in);
    }
    start(h, true);
    return read_jsonl(in);
  }

  bool read_jsonl(std::istream& in) {
    std::string line;
    size_t no = 1;
    int64_t step_no = 0;
    while (std::getline(in, line)) {
      ++no;
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object() || !j.contains("active"))
        return fail(no, "not a step line of a JSON Lines trace");
      uint32_t block = 0;
      if (j.contains("pc") && j["pc"].is_number_unsigned()) {
        block = j["pc"].get<uint32_t>();
      } else {
        auto it = std::find(blocks.begin(), blocks.end(), j.value("block", std::string()));
        if (it == blocks.end()) return fail(no, "a step in a block the header does not list");
        block = static_cast<uint32_t>(it - blocks.begin());
      }
      if (!j["active"].is_number_unsigned()) return fail(no, "\"active\" is not a count");
      int64_t active = j["active"].get<int64_t>();
      int64_t live = j.contains("live") && j["live"].is_number() ? j["live"].get<int64_t>() : -1;
      TraceStep s;
      s.step = step_no++;
      s.block = block;
      s.n = static_cast<size_t>(active);
      s.live = live;
      if (j.contains("depth") && j["depth"].is_number_integer()) {
        s.depth = j["depth"].get<int64_t>();
        depth_known = true;
      }
      threads.clear();
      bool have_mask = false;
      if (j.contains("mask") && j["mask"].is_string()) {
        const std::string m = j["mask"].get<std::string>();
        bool bits = static_cast<int64_t>(m.size()) == batch &&
                    m.find_first_not_of("01") == std::string::npos &&
                    std::count(m.begin(), m.end(), '1') == active;
        if (bits) {
          for (size_t t = 0; t < m.size(); ++t)
            if (m[t] == '1') threads.push_back(static_cast<uint32_t>(t));
        } else if (!parse_ranges(m, threads)) {
          return fail(no, "\"mask\" is neither bits nor ranges");
        }
        have_mask = true;
      }
      if (have_mask) {
        s.threads = threads.data();
        s.n = threads.size();
        if (j.contains("depths") && j["depths"].is_array() &&
            j["depths"].size() == threads.size()) {
          depths.clear();
          for (const auto& d : j["depths"]) depths.push_back(d.get<uint32_t>());
          s.depths = depths.data();
          depth_known = true;
        }
      } else {
        summary.divergence = false;
      }
      step(block, active, live);
      summary.add(s);
    }
    summary.finish();
    return true;
  }

  bool read_compact(std::istream& in) {
    std::string line;
    size_t no = 1;
    while (std::getline(in, line)) {
      ++no;
      if (line.empty()) continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) return fail(no, "not a line of a compact trace");
      if (j.contains("summary")) {
        if (!written.from_json(j["summary"])) return fail(no, "a summary of the wrong form");
        have_summary_line = true;
        continue;
      }
      if (!j.contains("block") || !j["block"].is_array() || !j.contains("active") ||
          !j["active"].is_array() || j["block"].size() != j["active"].size())
        return fail(no, "not a line of a compact trace (\"block\" and \"active\" columns)");
      std::vector<int64_t> live;
      if (j.contains("live") && j["live"].is_array())
        for (const auto& r : j["live"]) {
          if (!r.is_array() || r.size() != 2) return fail(no, "\"live\" runs are [value, count]");
          int64_t v = r[0].get<int64_t>(), c = r[1].get<int64_t>();
          if (c < 0 || c > 1 << 20) return fail(no, "\"live\" runs are [value, count]");
          live.insert(live.end(), static_cast<size_t>(c), v);
        }
      const auto& bl = j["block"];
      const auto& ac = j["active"];
      int64_t first = j.value("first", int64_t{0});
      for (size_t i = 0; i < bl.size(); ++i) {
        if (!bl[i].is_number_unsigned() || !ac[i].is_number_unsigned())
          return fail(no, "a column entry that is not a count");
        TraceStep s;
        s.step = first + static_cast<int64_t>(i);
        s.block = bl[i].get<uint32_t>();
        s.n = ac[i].get<size_t>();
        s.live = i < live.size() ? live[i] : -1;
        step(s.block, static_cast<int64_t>(s.n), s.live);
        summary.add(s);
      }
    }
    summary.finish();
    return true;
  }

  bool read_chrome(std::istream& in) {
    std::string line;
    size_t no = 1;
    bool started = false;
    while (std::getline(in, line)) {
      ++no;
      size_t a = line.find('{');
      if (a == std::string::npos) continue;  // "]}" at the end
      size_t b = line.rfind('}');
      json j = json::parse(line.substr(a, b - a + 1), nullptr, false);
      if (j.is_discarded() || !j.is_object())
        return fail(no, "not a Chrome trace event written by autobatch");
      std::string ph = j.value("ph", std::string());
      if (ph == "M" && j.value("name", std::string()) == "autobatch" && j.contains("args")) {
        start(j["args"], false);
        started = true;
      } else if (ph == "M" && j.value("name", std::string()) == "autobatch_summary" &&
                 j.contains("args")) {
        // Divergence and call depths, which the slices do not carry.
        if (!written.from_json(j["args"])) return fail(no, "a summary of the wrong form");
        have_summary_line = true;
      } else if (ph == "X") {
        if (!started) return fail(no, "a step before the autobatch header event");
        const json& args = j.contains("args") ? j["args"] : json::object();
        TraceStep s;
        s.block = j.value("tid", 0u);
        s.n = args.value("active", size_t{0});
        s.live = args.value("live", int64_t{-1});
        step(s.block, static_cast<int64_t>(s.n), s.live);
        summary.add(s);
      }
    }
    if (!started) return fail(no, "not a Chrome trace written by autobatch (no autobatch event)");
    summary.finish();
    return true;
  }
};

std::string function_of(const std::string& block) {
  size_t dot = block.find('.');
  return dot == std::string::npos ? block : block.substr(0, dot);
}

}  // namespace

bool trace_data_json(const std::string& path, std::string& out, std::string& error) {
  Reader r;
  r.path = path;
  if (!r.read()) {
    error = r.error;
    return false;
  }
  const TraceSummary& sum = r.have_summary_line ? r.written : r.summary;
  bool depth_known = r.format == "jsonl" ? r.depth_known : r.have_summary_line;
  bool divergence = sum.divergence;
  bool batched = r.vm != "reference";

  // Blocks by thread-steps, the busiest first: the timeline's series.
  std::vector<uint32_t> order;
  for (uint32_t b = 0; b < sum.blocks.size(); ++b)
    if (sum.blocks[b].executions > 0) order.push_back(b);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return sum.blocks[a].thread_steps > sum.blocks[b].thread_steps;
  });

  auto util = [&](double s, int64_t n) -> ojson {
    if (!batched || n == 0) return nullptr;
    return Timeline::round3(s / static_cast<double>(n));
  };
  ojson blocks = ojson::array();
  struct Fn {
    int64_t executions = 0, thread_steps = 0, util_steps = 0, groups = 0, splits = 0;
    double util_sum = 0;
  };
  std::vector<std::pair<std::string, Fn>> fns;
  int64_t thread_steps = 0, util_steps = 0;
  double util_sum = 0;
  for (size_t b = 0; b < sum.blocks.size(); ++b) {
    const auto& s = sum.blocks[b];
    std::string name = b < r.blocks.size() ? r.blocks[b] : "#" + std::to_string(b);
    ojson row = {{"name", name},
                 {"function", function_of(name)},
                 {"line", b < r.lines.size() && r.lines[b] > 0 ? ojson(r.lines[b]) : ojson(nullptr)},
                 {"statement", b < r.statements.size() ? ojson(r.statements[b]) : ojson(nullptr)},
                 {"executions", s.executions},
                 {"thread_steps", s.thread_steps},
                 {"utilization", util(s.utilization_sum, s.utilization_steps)},
                 {"groups", s.groups},
                 {"splits", s.splits}};
    blocks.push_back(row);
    thread_steps += s.thread_steps;
    util_steps += s.utilization_steps;
    util_sum += s.utilization_sum;
    std::string fn = function_of(name);
    auto it = std::find_if(fns.begin(), fns.end(), [&](const auto& p) { return p.first == fn; });
    if (it == fns.end()) {
      fns.emplace_back(fn, Fn{});
      it = fns.end() - 1;
    }
    it->second.executions += s.executions;
    it->second.thread_steps += s.thread_steps;
    it->second.util_steps += s.utilization_steps;
    it->second.util_sum += s.utilization_sum;
    it->second.groups += s.groups;
    it->second.splits += s.splits;
  }
  ojson functions = ojson::array();
  for (const auto& [name, f] : fns)
    functions.push_back({{"name", name},
                         {"executions", f.executions},
                         {"thread_steps", f.thread_steps},
                         {"utilization", util(f.util_sum, f.util_steps)},
                         {"groups", f.groups},
                         {"splits", f.splits}});
  int64_t peak = 0;
  for (size_t d = 0; d < sum.depth_histogram.size(); ++d)
    if (sum.depth_histogram[d]) peak = static_cast<int64_t>(d);
  int64_t steps = r.timeline.steps();
  ojson stats = {{"vm", r.vm},
                 {"format", r.format},
                 {"batch", r.batch},
                 {"steps", steps},
                 {"blocks", r.blocks.size()},
                 {"thread_steps", thread_steps},
                 {"mean_active", steps ? Timeline::round3(static_cast<double>(thread_steps) /
                                                          static_cast<double>(steps))
                                       : 0.0},
                 {"mean_utilization", util(util_sum, util_steps)},
                 {"peak_depth", depth_known ? ojson(peak) : ojson(nullptr)}};
  ojson data = {{"trace", r.path},
                {"source", r.source.empty() ? ojson(nullptr) : ojson(r.source)},
                {"stats", stats},
                {"blocks", blocks},
                {"functions", functions},
                {"timeline", r.timeline.to_json(order)},
                {"divergence_known", divergence},
                {"depth_histogram", depth_known ? ojson(sum.depth_histogram) : ojson(nullptr)}};
  out = data.dump();
  return true;
}

bool html(const std::string& path, std::string& out, std::string& error) {
  std::string data;
  if (!trace_data_json(path, data, error)) return false;
  // Inside <script>: no "</" may end the element early.
  std::string safe;
  safe.reserve(data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe += data[i];
    }
  }
  std::string page = kTemplate;
  const std::string marker = "/*AUTOBATCH_DATA*/null";
  size_t at = page.find(marker);
  if (at == std::string::npos) {
    error = "internal error: the report template has no data marker";
    return false;
  }
  page.replace(at, marker.size(), safe);
  out = std::move(page);
  return true;
}

}  // namespace ab::report
