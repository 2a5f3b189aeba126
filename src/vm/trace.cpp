#include "vm/trace.h"

#include <algorithm>
#include <cstdio>

namespace ab {

namespace {
constexpr size_t kColumns = 4096;        // compact: steps per line
constexpr int64_t kMaskAllFirst = 1024;  // compact: every mask of the first steps,
constexpr int64_t kMaskEvery = 1024;     // then one step in this many
}  // namespace

MaskFormat parse_mask_format(const std::string& s) {
  if (s == "none") return MaskFormat::None;
  if (s == "ranges") return MaskFormat::Ranges;
  return MaskFormat::Bits;
}

std::optional<TraceFormat> parse_trace_format(const std::string& s) {
  if (s == "jsonl") return TraceFormat::Jsonl;
  if (s == "compact") return TraceFormat::Compact;
  if (s == "chrome") return TraceFormat::Chrome;
  return std::nullopt;
}

// ---------------------------------------------------------------- summary

void TraceSummary::init(int64_t b, size_t nblocks, bool track_divergence) {
  batch = b;
  steps = 0;
  divergence = track_divergence;
  blocks.assign(nblocks, {});
  depth_histogram.clear();
  last_step_.assign(track_divergence ? static_cast<size_t>(std::max<int64_t>(b, 0)) : 0, -1);
  open_.clear();
}

void TraceSummary::close_group(const Group& g) {
  if (g.next == UINT32_MAX || g.block >= blocks.size()) return;
  ++blocks[g.block].groups;
  if (g.split) ++blocks[g.block].splits;
}

void TraceSummary::add(const TraceStep& s) {
  ++steps;
  if (s.block >= blocks.size()) blocks.resize(s.block + 1);
  Block& b = blocks[s.block];
  ++b.executions;
  b.thread_steps += static_cast<int64_t>(s.n);
  if (s.live > 0) {
    b.utilization_sum += static_cast<double>(s.n) / static_cast<double>(s.live);
    ++b.utilization_steps;
  }
  auto count_depth = [&](int64_t d, int64_t k) {
    if (d < 0) return;
    if (static_cast<size_t>(d) >= depth_histogram.size())
      depth_histogram.resize(static_cast<size_t>(d) + 1, 0);
    depth_histogram[static_cast<size_t>(d)] += k;
  };
  if (s.depths) {
    for (size_t i = 0; i < s.n; ++i) count_depth(s.depths[i], 1);
  } else if (s.depth >= 0) {
    count_depth(s.depth, static_cast<int64_t>(s.n));
  }
  if (!divergence || !s.threads) return;
  // Each thread's previous step learns where its thread went next; a step
  // is closed once all its threads have been seen again.
  int64_t cached_step = -1;
  Group* cached = nullptr;
  for (size_t i = 0; i < s.n; ++i) {
    uint32_t t = s.threads[i];
    if (t >= last_step_.size()) last_step_.resize(t + 1, -1);
    int64_t p = last_step_[t];
    last_step_[t] = s.step;
    if (p < 0) continue;
    if (p != cached_step) {
      auto it = open_.find(p);
      cached = it == open_.end() ? nullptr : &it->second;
      cached_step = p;
    }
    if (!cached) continue;
    if (cached->next == UINT32_MAX)
      cached->next = s.block;
    else if (cached->next != s.block)
      cached->split = true;
    if (--cached->remaining == 0) {
      close_group(*cached);
      open_.erase(p);
      cached = nullptr;
    }
  }
  if (s.n > 0) open_[s.step] = Group{s.block, UINT32_MAX, static_cast<int64_t>(s.n), false};
}

void TraceSummary::finish() {
  for (const auto& [step, g] : open_) close_group(g);
  open_.clear();
  last_step_.clear();
}

nlohmann::ordered_json TraceSummary::to_json() const {
  nlohmann::ordered_json bl = nlohmann::ordered_json::array();
  for (const Block& b : blocks)
    bl.push_back(
        {b.executions, b.thread_steps, b.utilization_sum, b.utilization_steps, b.groups, b.splits});
  return nlohmann::ordered_json{{"steps", steps},
                                {"divergence", divergence},
                                {"blocks", bl},
                                {"depth_histogram", depth_histogram}};
}

bool TraceSummary::from_json(const nlohmann::json& j) {
  if (!j.is_object() || !j.contains("blocks") || !j["blocks"].is_array()) return false;
  steps = j.value("steps", int64_t{0});
  divergence = j.value("divergence", false);
  blocks.clear();
  for (const auto& r : j["blocks"]) {
    if (!r.is_array() || r.size() < 6) return false;
    Block b;
    b.executions = r[0].get<int64_t>();
    b.thread_steps = r[1].get<int64_t>();
    b.utilization_sum = r[2].get<double>();
    b.utilization_steps = r[3].get<int64_t>();
    b.groups = r[4].get<int64_t>();
    b.splits = r[5].get<int64_t>();
    blocks.push_back(b);
  }
  depth_histogram.clear();
  if (j.contains("depth_histogram") && j["depth_histogram"].is_array())
    for (const auto& d : j["depth_histogram"]) depth_histogram.push_back(d.get<int64_t>());
  return true;
}

// ---------------------------------------------------------------- writer

TraceWriter::TraceWriter(const std::string& path, MaskFormat mask, TraceFormat fmt)
    : path_(path), mask_fmt_(mask), fmt_(fmt) {
  auto f = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
  if (!*f) {
    error_ = "cannot write the trace file '" + path + "'";
    path_.clear();
    return;
  }
  out_ = std::move(f);
}

void TraceWriter::header(const char* vm, int64_t batch, const std::vector<std::string>& blocks,
                         const std::vector<SourceLoc>& locs) {
  if (!out_) return;
  batch_ = batch;
  blocks_ = blocks;
  started_ = true;
  std::string vm_json = nlohmann::json(vm).dump();
  std::string blocks_json = nlohmann::json(blocks).dump();
  // Where each block comes from: its source line and statement.
  std::string sources_json;
  std::vector<std::string> statements(blocks.size());
  if (source_ && locs.size() == blocks.size()) {
    std::vector<uint32_t> lines;
    for (size_t b = 0; b < blocks.size(); ++b) {
      // A line of an imported file has no place in `source`'s lines: 0, and
      // the statement alone.
      lines.push_back(file_index(locs[b].line) == 0 ? locs[b].line : 0);
      statements[b] = source_->statement(locs[b].line);
    }
    sources_json = ", \"source\": " + nlohmann::json(source_->name()).dump() +
                   ", \"lines\": " + nlohmann::json(lines).dump() +
                   ", \"statements\": " + nlohmann::json(statements).dump();
  }
  if (fmt_ == TraceFormat::Chrome || fmt_ == TraceFormat::Compact)
    summary_.init(batch, blocks.size());
  if (fmt_ == TraceFormat::Chrome) {
    // One event per line, so that `autobatch report` can read it line by line.
    std::string s = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
    s += "{\"ph\": \"M\", \"pid\": 1, \"name\": \"autobatch\", \"args\": {\"vm\": " + vm_json +
         ", \"batch\": " + std::to_string(batch) + ", \"blocks\": " + blocks_json + sources_json +
         "}}";
    s += ",\n{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": " +
         nlohmann::json("autobatch " + std::string(vm) + " VM, " + std::to_string(batch) +
                        " threads (1 us = 1 step)")
             .dump() +
         "}}";
    for (size_t b = 0; b < blocks.size(); ++b) {
      std::string tid = std::to_string(b);
      // The track's name: the block and, when known, its line and statement.
      std::string track = blocks[b];
      if (!sources_json.empty() && locs[b].known())
        track += " (" + source_->where(locs[b].line) + ": " + statements[b] + ")";
      s += ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": " + tid +
           ", \"name\": \"thread_name\", \"args\": {\"name\": " + nlohmann::json(track).dump() +
           "}}";
      s += ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": " + tid +
           ", \"name\": \"thread_sort_index\", \"args\": {\"sort_index\": " + tid + "}}";
    }
    write(s);
    chrome_first_ = false;
    return;
  }
  std::string s = "{\"trace\": \"autobatch\", \"version\": 1";
  if (fmt_ == TraceFormat::Compact) s += ", \"format\": \"compact\"";
  s += ", \"vm\": " + vm_json + ", \"batch\": " + std::to_string(batch) +
       ", \"blocks\": " + blocks_json + sources_json;
  if (fmt_ == TraceFormat::Compact)
    s += ", \"masks\": \"" +
         std::string(mask_fmt_ == MaskFormat::None ? "none" : "ranges, sampled") + "\"";
  s += "}\n";
  write(s);
}

void TraceWriter::append_ranges(std::string& line, const uint32_t* threads, size_t n) {
  sorted_.assign(threads, threads + n);
  std::sort(sorted_.begin(), sorted_.end());
  char buf[32];
  for (size_t i = 0; i < sorted_.size();) {
    size_t j = i;
    while (j + 1 < sorted_.size() && sorted_[j + 1] == sorted_[j] + 1) ++j;
    int len = j > i
                  ? std::snprintf(buf, sizeof buf, "%s%u-%u", i ? "," : "", sorted_[i], sorted_[j])
                  : std::snprintf(buf, sizeof buf, "%s%u", i ? "," : "", sorted_[i]);
    line.append(buf, static_cast<size_t>(len));
    i = j + 1;
  }
}

void TraceWriter::step(const TraceStep& s) {
  if (!out_) return;
  const std::string& name = s.block < blocks_.size() ? blocks_[s.block] : std::string();
  std::string& line = line_;
  line.clear();
  if (fmt_ == TraceFormat::Compact) {
    summary_.add(s);
    if (col_block_.empty()) first_ = s.step;
    col_block_.push_back(s.block);
    col_active_.push_back(static_cast<int64_t>(s.n));
    col_live_.push_back(s.live);
    if (mask_fmt_ != MaskFormat::None && (s.step < kMaskAllFirst || s.step % kMaskEvery == 0)) {
      if (!masks_.empty()) masks_ += ", ";
      masks_ += "[" + std::to_string(s.step) + ", \"";
      append_ranges(masks_, s.threads, s.n);
      masks_ += "\"]";
    }
    if (col_block_.size() >= kColumns) flush_columns();
    return;
  }
  if (fmt_ == TraceFormat::Chrome) {
    // The summary (divergence, call depths) is written at the end, as in
    // the compact format; each step carries its deepest call.
    summary_.add(s);
    int64_t depth = s.depth;
    if (s.depths)
      for (size_t i = 0; i < s.n; ++i) depth = std::max<int64_t>(depth, s.depths[i]);
    std::string ts = std::to_string(s.step);
    line += ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": " + std::to_string(s.block) +
            ", \"ts\": " + ts + ", \"dur\": 1, \"name\": " + nlohmann::json(name).dump() +
            ", \"args\": {\"active\": " + std::to_string(s.n);
    if (s.live >= 0) line += ", \"live\": " + std::to_string(s.live);
    if (depth >= 0) line += ", \"depth\": " + std::to_string(depth);
    line += "}}";
    line += ",\n{\"ph\": \"C\", \"pid\": 1, \"ts\": " + ts +
            ", \"name\": \"active threads\", \"args\": {\"active\": " + std::to_string(s.n) + "}}";
    if (depth >= 0)
      line += ",\n{\"ph\": \"C\", \"pid\": 1, \"ts\": " + ts +
              ", \"name\": \"call depth\", \"args\": {\"deepest\": " + std::to_string(depth) +
              "}}";
    write(line);
    return;
  }
  line += "{\"step\": " + std::to_string(s.step) + ", \"block\": " + nlohmann::json(name).dump() +
          ", \"pc\": " + std::to_string(s.block) + ", \"active\": " + std::to_string(s.n);
  if (s.live >= 0) line += ", \"live\": " + std::to_string(s.live);
  if (s.depth >= 0) line += ", \"depth\": " + std::to_string(s.depth);
  if (mask_fmt_ == MaskFormat::Bits) {
    line += ", \"mask\": \"";
    size_t start = line.size();
    line.append(static_cast<size_t>(batch_), '0');
    for (size_t i = 0; i < s.n; ++i)
      if (s.threads[i] < static_cast<uint64_t>(batch_)) line[start + s.threads[i]] = '1';
    line += '"';
  } else if (mask_fmt_ == MaskFormat::Ranges) {
    line += ", \"mask\": \"";
    append_ranges(line, s.threads, s.n);
    line += '"';
  }
  if (s.depths && mask_fmt_ != MaskFormat::None) {
    // Each thread's call depth, in the mask's order (ascending threads).
    depth_pairs_.clear();
    for (size_t i = 0; i < s.n; ++i) depth_pairs_.emplace_back(s.threads[i], s.depths[i]);
    std::sort(depth_pairs_.begin(), depth_pairs_.end());
    line += ", \"depths\": [";
    for (size_t i = 0; i < depth_pairs_.size(); ++i) {
      if (i) line += ',';
      line += std::to_string(depth_pairs_[i].second);
    }
    line += ']';
  }
  line += "}\n";
  write(line);
}

void TraceWriter::flush_columns() {
  if (col_block_.empty()) return;
  std::string& s = line_;
  s.clear();
  s += "{\"first\": " + std::to_string(first_) + ", \"block\": [";
  char buf[32];
  for (size_t i = 0; i < col_block_.size(); ++i) {
    int len = std::snprintf(buf, sizeof buf, i ? ",%u" : "%u", col_block_[i]);
    s.append(buf, static_cast<size_t>(len));
  }
  s += "], \"active\": [";
  for (size_t i = 0; i < col_active_.size(); ++i) {
    int len = std::snprintf(buf, sizeof buf, i ? ",%lld" : "%lld",
                            static_cast<long long>(col_active_[i]));
    s.append(buf, static_cast<size_t>(len));
  }
  // Live threads change rarely: as runs [value, count].
  s += "], \"live\": [";
  for (size_t i = 0; i < col_live_.size();) {
    size_t j = i;
    while (j < col_live_.size() && col_live_[j] == col_live_[i]) ++j;
    int len = std::snprintf(buf, sizeof buf, "%s[%lld,%zu]", i ? "," : "",
                            static_cast<long long>(col_live_[i]), j - i);
    s.append(buf, static_cast<size_t>(len));
    i = j;
  }
  s += "], \"masks\": [" + masks_ + "]}\n";
  write(s);
  col_block_.clear();
  col_active_.clear();
  col_live_.clear();
  masks_.clear();
}

void TraceWriter::close() {
  if (!out_) return;
  if (fmt_ == TraceFormat::Compact && started_) {
    flush_columns();
    summary_.finish();
    write("{\"summary\": " + summary_.to_json().dump() + "}\n");
  } else if (fmt_ == TraceFormat::Chrome && started_) {
    summary_.finish();
    write(",\n{\"ph\": \"M\", \"pid\": 1, \"name\": \"autobatch_summary\", \"args\": " +
          summary_.to_json().dump() + "}\n]}\n");
  }
  out_->flush();
  out_.reset();
}

void TraceWriter::discard() {
  out_.reset();
  if (!path_.empty()) std::remove(path_.c_str());
  path_.clear();
}

std::vector<BlockExecution> all_interpreted(const std::vector<std::string>& blocks,
                                            const std::vector<SourceLoc>& locs,
                                            const std::string& reason) {
  std::vector<BlockExecution> out;
  for (size_t b = 0; b < blocks.size(); ++b)
    out.push_back({blocks[b], "interpreted", reason, b < locs.size() ? locs[b] : SourceLoc{}});
  return out;
}

nlohmann::ordered_json Stats::to_json() const {
  nlohmann::ordered_json per_block = nlohmann::ordered_json::object();
  for (size_t i = 0; i < block_names.size(); ++i) per_block[block_names[i]] = block_executions[i];
  nlohmann::ordered_json secs = nlohmann::ordered_json::object();
  for (const char* phase : {"parse", "inputs", "compile", "jit", "run", "output"})
    if (seconds.count(phase)) secs[phase] = seconds.at(phase);
  nlohmann::ordered_json util = nullptr;  // the reference VM: not applicable
  if (batched) util = steps ? utilization_sum / static_cast<double>(steps) : 0.0;
  nlohmann::ordered_json exec = nlohmann::ordered_json::object();
  for (const auto& e : execution) {
    exec[e.block] = {{"mode", e.mode}, {"reason", e.reason}};
    if (e.loc.known()) {
      exec[e.block]["line"] = file_index(e.loc.line) == 0 ? e.loc.line : 0;
      exec[e.block]["statement"] = e.statement;
    }
  }
  return nlohmann::ordered_json{{"steps", steps},
                                {"block_executions", per_block},
                                {"primitive_executions", primitive_executions},
                                {"lane_operations", lane_operations},
                                {"mean_utilization", util},
                                {"peak_stack_depth", peak_stack_depth},
                                {"seconds", secs},
                                {"execution", exec}};
}

}  // namespace ab
