// Cutting a batch into parts and merging the parts' results (shards.h): the
// one place that decides how `--threads` and the MPI split share out a batch
// and how their outputs, errors and statistics come together.
#include "api/shards.h"

#include <algorithm>
#include <cstring>

#include "api/internal.h"
#include "passes/result_names.h"

namespace autobatch::shards {

Span share(int64_t total, int64_t parts, int64_t k) {
  return {k * (total / parts) + std::min(k, total % parts), total / parts + (k < total % parts)};
}

int64_t auto_threads(int64_t batch, int64_t cores) {
  return std::clamp<int64_t>(batch / kAutoThreadMin, 1, std::max<int64_t>(1, cores));
}

Plan plan(int64_t batch, int64_t threads, int64_t lanes, bool stats, bool one_shard,
          int64_t cores) {
  Plan p;
  if (!one_shard && batch > 1) {
    p.workers = threads > 0 ? std::min(threads, batch) : auto_threads(batch, cores);
    if (lanes > 0) p.workers = std::min(p.workers, lanes);
  }
  int64_t shards = p.workers;
  if (p.workers > 1 && !stats)
    shards = std::clamp<int64_t>(batch / kShardMin, p.workers, p.workers * kShardsPerThread);
  else if (!stats && !one_shard)
    shards = std::clamp<int64_t>(batch / kSoloShardMin, 1, kShardsPerThread);
  p.shards.reserve(static_cast<size_t>(shards));
  for (int64_t k = 0; k < shards; ++k) p.shards.push_back(share(batch, shards, k));
  return p;
}

const Part* first_failure(const std::vector<Part>& parts) {
  const Part* best = nullptr;
  for (const Part& p : parts) {
    if (!p.failed()) continue;
    if (!best || p.exit_status() > best->exit_status() ||
        (p.exit_status() == best->exit_status() && p.span.first < best->span.first))
      best = &p;
  }
  return best;
}

void add_stats(Stats& total, const Stats& part) {
  total.steps += part.steps;
  if (total.block_executions.empty()) {
    total.block_executions = part.block_executions;
  } else {
    for (size_t b = 0; b < part.block_executions.size() && b < total.block_executions.size(); ++b)
      total.block_executions[b].second += part.block_executions[b].second;
  }
  total.primitive_executions += part.primitive_executions;
  total.lane_operations += part.lane_operations;
  total.utilization_sum += part.utilization_sum;
  total.utilization_applicable = total.utilization_applicable && part.utilization_applicable;
  total.peak_stack_depth = std::max(total.peak_stack_depth, part.peak_stack_depth);
  // Every part ran the same plan (same program, same options): keep one copy.
  if (total.execution.empty()) total.execution = part.execution;
  for (const auto& [phase, s] : part.seconds)
    total.seconds[phase] = std::max(total.seconds[phase], s);
}

void finish_stats(Stats& s) {
  s.mean_utilization =
      s.steps && s.utilization_applicable ? s.utilization_sum / static_cast<double>(s.steps) : 0.0;
}

namespace {

// Copies `part` (count rows, or 1 row for every thread) into rows
// [first, first + count) of `whole`.
void place(std::byte* whole, size_t row_bytes, const Array& part, int64_t first, int64_t count) {
  if (row_bytes == 0 || count == 0) return;
  std::byte* to = whole + static_cast<size_t>(first) * row_bytes;
  const auto* from = static_cast<const std::byte*>(part.data());
  if (part.batch() == count) {
    std::memcpy(to, from, static_cast<size_t>(count) * row_bytes);
    return;
  }
  for (int64_t i = 0; i < count; ++i) std::memcpy(to + i * row_bytes, from, row_bytes);
}

std::vector<Array> merge_outputs(std::vector<Part>& parts, int64_t batch) {
  std::vector<Part*> with;
  for (Part& p : parts)
    if (!p.outputs.empty()) with.push_back(&p);
  if (with.empty()) return {};
  std::vector<Array> out;
  const std::vector<Array>& first = with[0]->outputs;
  for (size_t r = 0; r < first.size(); ++r) {
    if (with.size() == 1 && with[0]->span.first == 0 && with[0]->span.count == batch &&
        first[r].batch() == batch) {
      out.push_back(first[r]);  // shares the data: no copy
      continue;
    }
    ab::TensorType type;
    type.dtype = to_internal(first[r].dtype());
    type.shape.assign(first[r].shape().begin() + (first[r].shape().empty() ? 0 : 1),
                      first[r].shape().end());
    ab::Array all(type, batch);
    size_t row_bytes = static_cast<size_t>(all.event_size()) * ab::dtype_size(type.dtype);
    for (const Part* p : with)
      if (r < p->outputs.size())
        place(all.data.data(), row_bytes, p->outputs[r], p->span.first, p->span.count);
    out.push_back(ArrayAccess::wrap(std::move(all)));
  }
  return out;
}

}  // namespace

std::vector<std::string> names_of(const std::vector<Part>& parts, size_t outputs) {
  for (const Part& p : parts)
    if (p.names.size() == outputs) return p.names;
  return ab::default_output_names(outputs);
}

RunResult merge(std::vector<Part>& parts, int64_t batch, bool recorded, bool stats,
                std::vector<Array> placed) {
  RunResult out;
  out.batch = batch;
  if (const Part* f = first_failure(parts)) {
    if (!f->diagnostics.empty())
      out.diagnostics = f->diagnostics;
    else
      out.runtime_error = f->runtime_error;
    return out;
  }
  out.outputs = placed.empty() ? merge_outputs(parts, batch) : std::move(placed);
  out.names = names_of(parts, out.outputs.size());
  out.recorded = recorded;
  for (const Part& p : parts) out.errors.insert(out.errors.end(), p.errors.begin(), p.errors.end());
  std::stable_sort(out.errors.begin(), out.errors.end(),
                   [](const ThreadError& a, const ThreadError& b) { return a.thread < b.thread; });
  if (stats) {
    Stats st;
    for (const Part& p : parts)
      if (p.stats) add_stats(st, *p.stats);
    finish_stats(st);
    out.stats = std::move(st);
  }
  return out;
}

}  // namespace autobatch::shards
