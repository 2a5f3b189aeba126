// Shard planning and the merge of parts' results (src/api/shards.h), shared
// by Program::run's --threads and the split over MPI processes.
#include <doctest/doctest.h>

#include <numeric>

#include "api/shards.h"

namespace shards = autobatch::shards;
using autobatch::Array;
using autobatch::ArrayView;

namespace {

Array ints(std::vector<int64_t> v) {
  return Array::copy_of(ArrayView::of(v.data(), static_cast<int64_t>(v.size())));
}

std::vector<int64_t> values(const Array& a) {
  return std::vector<int64_t>(a.as<int64_t>(), a.as<int64_t>() + a.batch());
}

shards::Part ok_part(int64_t first, std::vector<int64_t> out) {
  shards::Part p;
  p.span = {first, static_cast<int64_t>(out.size())};
  p.outputs.push_back(ints(std::move(out)));
  return p;
}

autobatch::RuntimeError runtime_error(int64_t thread, const std::string& text) {
  autobatch::RuntimeError e;
  e.thread = thread;
  e.message = text;
  e.rendered = text + "\n";
  return e;
}

}  // namespace

TEST_CASE("shards: contiguous shares, the first ones one larger") {
  CHECK(shards::share(10, 3, 0).first == 0);
  CHECK(shards::share(10, 3, 0).count == 4);
  CHECK(shards::share(10, 3, 1).first == 4);
  CHECK(shards::share(10, 3, 1).count == 3);
  CHECK(shards::share(10, 3, 2).first == 7);
  CHECK(shards::share(10, 3, 2).count == 3);
  // Fewer threads than parts: the last parts are empty.
  CHECK(shards::share(2, 3, 1).first == 1);
  CHECK(shards::share(2, 3, 2).first == 2);
  CHECK(shards::share(2, 3, 2).count == 0);
}

TEST_CASE("shards: the plan of --threads") {
  auto covers = [](const shards::Plan& p, int64_t batch) {
    int64_t at = 0;
    for (const auto& s : p.shards) {
      if (s.first != at) return false;
      at += s.count;
    }
    return at == batch;
  };
  SUBCASE("many small shards handed out, at least 256 threads each, at most 32 per thread") {
    shards::Plan p = shards::plan(20000, 4, 0, false, false, 8);
    CHECK(p.workers == 4);
    CHECK(p.shards.size() == 20000 / 256);
    CHECK(covers(p, 20000));
    for (const auto& s : p.shards) CHECK(s.count >= 256);
    p = shards::plan(10000000, 2, 0, false, false, 8);
    CHECK(p.shards.size() == 64);
    CHECK(covers(p, 10000000));  }
  SUBCASE("one thread: one shard, or shards of at least kSoloShardMin threads in a large batch") {
    CHECK(shards::plan(20000, 1, 0, false, false, 8).shards.size() == 1);
    CHECK(shards::plan(2 * shards::kSoloShardMin - 1, 1, 0, false, false, 8).shards.size() == 1);
    shards::Plan p = shards::plan(3 * shards::kSoloShardMin + 5, 1, 0, false, false, 8);
    CHECK(p.workers == 1);
    CHECK(p.shards.size() == 3);
    CHECK(covers(p, 3 * shards::kSoloShardMin + 5));
    p = shards::plan(int64_t{1} << 24, 1, 0, false, false, 8);
    CHECK(p.shards.size() == shards::kShardsPerThread);
    CHECK(covers(p, int64_t{1} << 24));
    CHECK(shards::plan(int64_t{1} << 24, 1, 0, true, false, 8).shards.size() == 1);  // --stats
    CHECK(shards::plan(int64_t{1} << 24, 4, 0, false, true, 8).shards.size() == 1);  // a trace
  }
  SUBCASE("with statistics, one shard per thread: the MPI split's shares") {
    shards::Plan p = shards::plan(1001, 3, 0, true, false, 8);
    CHECK(p.workers == 3);
    REQUIRE(p.shards.size() == 3);
    for (int64_t k = 0; k < 3; ++k) {
      CHECK(p.shards[k].first == shards::share(1001, 3, k).first);
      CHECK(p.shards[k].count == shards::share(1001, 3, k).count);
    }
  }
  SUBCASE("automatic threads, lanes, a trace, tiny batches") {
    CHECK(shards::plan(3000, 0, 0, false, false, 8).workers == 2);  // one per 1024 threads
    CHECK(shards::plan(1000000, 0, 0, false, false, 8).workers == 8);
    CHECK(shards::plan(100000, 8, 3, false, false, 8).workers == 3);
    shards::Plan traced = shards::plan(100000, 8, 0, false, true, 8);
    CHECK(traced.workers == 1);
    CHECK(traced.shards.size() == 1);
    CHECK(shards::plan(1, 8, 0, false, false, 8).workers == 1);
    CHECK(shards::plan(5, 8, 0, false, false, 8).workers == 5);
    shards::Plan empty = shards::plan(0, 4, 0, false, false, 8);
    REQUIRE(empty.shards.size() == 1);
    CHECK(empty.shards[0].count == 0);
  }
}

TEST_CASE("shards: the failure reported is the worst, then the first in batch order") {
  std::vector<shards::Part> parts(4);
  for (int64_t k = 0; k < 4; ++k) parts[k].span = {k * 10, 10};
  CHECK(shards::first_failure(parts) == nullptr);
  parts[3].runtime_error = runtime_error(35, "late");
  parts[1].runtime_error = runtime_error(12, "early");
  CHECK(shards::first_failure(parts) == &parts[1]);
  CHECK(shards::first_failure(parts)->exit_status() == 1);
  parts[2].diagnostics.push_back({});  // could not run: worse than a runtime error
  CHECK(shards::first_failure(parts) == &parts[2]);
  CHECK(shards::first_failure(parts)->exit_status() == 2);

  autobatch::RunResult r = shards::merge(parts, 40, false, true);
  CHECK(r.diagnostics.size() == 1);
  CHECK(!r.runtime_error);
  CHECK(r.outputs.empty());
  CHECK(!r.stats);
}

TEST_CASE("shards: merging outputs, recorded errors and statistics") {
  std::vector<shards::Part> parts;
  parts.push_back(ok_part(3, {30, 40}));  // out of order, as MPI chunks arrive
  parts.push_back(ok_part(0, {0, 10, 20}));
  shards::Part shared;  // one row that is every thread's
  shared.span = {5, 2};
  shared.outputs.push_back(ints({7}));
  parts.push_back(shared);
  shards::Part stats_only;  // a process's statistics, without threads
  stats_only.stats.emplace();
  parts.push_back(stats_only);

  autobatch::ThreadError t4, t1;
  t4.thread = 4;
  t1.thread = 1;
  parts[0].errors.push_back(t4);
  parts[1].errors.push_back(t1);
  autobatch::Stats a, b;
  a.steps = 10;
  a.block_executions = {{"f.entry", 3}, {"f.loop", 7}};
  a.lane_operations = 100;
  a.utilization_sum = 5;
  a.peak_stack_depth = 2;
  a.seconds["compile"] = 0.5;
  b.steps = 30;
  b.block_executions = {{"f.entry", 1}, {"f.loop", 29}};
  b.lane_operations = 50;
  b.utilization_sum = 15;
  b.peak_stack_depth = 4;
  b.seconds["compile"] = 0.25;
  parts[0].stats = a;
  parts[1].stats = b;

  autobatch::RunResult r = shards::merge(parts, 7, true, true);
  REQUIRE(r.ok() == false);  // the recorded errors
  CHECK(r.recorded);
  REQUIRE(r.outputs.size() == 1);
  CHECK(values(r.outputs[0]) == std::vector<int64_t>{0, 10, 20, 30, 40, 7, 7});
  REQUIRE(r.errors.size() == 2);
  CHECK(r.errors[0].thread == 1);
  CHECK(r.errors[1].thread == 4);
  REQUIRE(r.stats);
  CHECK(r.stats->steps == 40);
  CHECK(r.stats->block_executions[1].second == 36);
  CHECK(r.stats->lane_operations == 150);
  CHECK(r.stats->peak_stack_depth == 4);
  CHECK(r.stats->seconds["compile"] == 0.5);
  CHECK(r.stats->mean_utilization == doctest::Approx(0.5));

  // One part covering the batch: its outputs are the result's, not a copy.
  std::vector<shards::Part> one{ok_part(0, {1, 2, 3})};
  const void* data = one[0].outputs[0].data();
  autobatch::RunResult whole = shards::merge(one, 3, false, false);
  CHECK(whole.outputs[0].data() == data);
  CHECK(!whole.stats);
  CHECK(!whole.recorded);
}
