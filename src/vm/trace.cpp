#include "vm/trace.h"

#include <algorithm>

namespace ab {

MaskFormat parse_mask_format(const std::string& s) {
  if (s == "none") return MaskFormat::None;
  if (s == "ranges") return MaskFormat::Ranges;
  return MaskFormat::Bits;
}

TraceWriter::TraceWriter(const std::string& path, MaskFormat fmt) : fmt_(fmt) {
  auto f = std::make_unique<std::ofstream>(path, std::ios::binary | std::ios::trunc);
  if (!*f) {
    error_ = "cannot write the trace file '" + path + "'";
    return;
  }
  out_ = std::move(f);
}

void TraceWriter::header(const char* vm, int64_t batch, const std::vector<std::string>& blocks) {
  if (!out_) return;
  batch_ = batch;
  *out_ << "{\"trace\": \"autobatch\", \"version\": 1, \"vm\": " << nlohmann::json(vm).dump()
        << ", \"batch\": " << batch << ", \"blocks\": " << nlohmann::json(blocks).dump() << "}\n";
}

void TraceWriter::step(int64_t step, const std::string& block, int64_t pc, const uint32_t* lanes,
                       size_t n, std::optional<int64_t> depth) {
  if (!out_) return;
  std::string& line = mask_;
  line.clear();
  line += "{\"step\": " + std::to_string(step) + ", \"block\": " + nlohmann::json(block).dump() +
          ", \"pc\": " + std::to_string(pc) + ", \"active\": " + std::to_string(n);
  if (depth) line += ", \"depth\": " + std::to_string(*depth);
  if (fmt_ == MaskFormat::Bits) {
    line += ", \"mask\": \"";
    size_t start = line.size();
    line.append(static_cast<size_t>(batch_), '0');
    for (size_t i = 0; i < n; ++i) line[start + lanes[i]] = '1';
    line += '"';
  } else if (fmt_ == MaskFormat::Ranges) {
    sorted_.assign(lanes, lanes + n);
    std::sort(sorted_.begin(), sorted_.end());
    line += ", \"mask\": \"";
    for (size_t i = 0; i < sorted_.size();) {
      size_t j = i;
      while (j + 1 < sorted_.size() && sorted_[j + 1] == sorted_[j] + 1) ++j;
      if (i) line += ',';
      line += std::to_string(sorted_[i]);
      if (j > i) line += "-" + std::to_string(sorted_[j]);
      i = j + 1;
    }
    line += '"';
  }
  line += "}\n";
  out_->write(line.data(), static_cast<std::streamsize>(line.size()));
}

void TraceWriter::close() {
  if (out_) out_->flush();
  out_.reset();
}

nlohmann::ordered_json Stats::to_json() const {
  nlohmann::ordered_json per_block = nlohmann::ordered_json::object();
  for (size_t i = 0; i < block_names.size(); ++i) per_block[block_names[i]] = block_executions[i];
  nlohmann::ordered_json secs = nlohmann::ordered_json::object();
  for (const char* phase : {"parse", "inputs", "compile", "jit", "run", "output"})
    if (seconds.count(phase)) secs[phase] = seconds.at(phase);
  return nlohmann::ordered_json{
      {"steps", steps},
      {"block_executions", per_block},
      {"primitive_executions", primitive_executions},
      {"lane_operations", lane_operations},
      {"mean_utilization", steps ? utilization_sum / static_cast<double>(steps) : 0.0},
      {"peak_stack_depth", peak_stack_depth},
      {"seconds", secs}};
}

}  // namespace ab
