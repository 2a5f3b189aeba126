// `autobatch run` over MPI processes. Every process compiles the program;
// rank 0 loads the inputs (JSON whole, batched .npy files only their headers)
// and broadcasts a plan: the batch, and per parameter either its shared value
// (batch 1), or "JSON rows" (rank 0 sends each process its rows), or the .npy
// file and data offset (each process reads only its rows, by offset).
//
// Static split (default): process r runs threads [first_r, first_r + n_r),
// the contiguous shares `--threads K` would make, in one Program::run, and
// rank 0 gathers the outputs in input order. Dynamic split: rank 0 hands out
// chunks of threads as processes finish theirs (the refill of --lanes,
// across processes); rank 0 works too, on a second thread that never calls MPI
// (MPI_THREAD_FUNNELED), while its main thread serves the others.
//
// Errors: every phase ends with `agree`, so a failure anywhere (a file one
// node cannot read, a runtime error) ends every process with the same exit
// status and rank 0 prints the message once. A runtime error stops every
// process (`Abort`: an abort notice sets the others' RunOptions::cancel) and
// names its thread in the whole batch (RunOptions::first_thread); with
// several, the first in batch order among those that failed before the stop.
// Under the dynamic split, rank 0 stops the hand-out and sends the notices.
// `--on-error record`: each process's failed threads (numbered in the whole
// batch) go to rank 0 with its outcome, which lists them as one process would.
// A process that dies is noticed by the MPI runtime, which ends the job (see
// docs/cluster.md).
//
// The shares and the merge of the parts' outputs, errors and statistics are
// Program::run's own (api/shards.h), so that -np K gives what --threads K
// gives. The pieces: internal.h (shared declarations), comm.cpp (the MPI
// calls), wire.cpp (the plan and the results as bytes), this file (the job).
#include "mpi/mpi_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "mpi/internal.h"
#include "support/env_options.h"

namespace ab::mpi {

// (The launcher's environment, read by env_options(): the only way to know
// before MPI_Init.)
bool launched() { return ab::env_options().mpi_launcher; }

namespace {

namespace shards = autobatch::shards;
using shards::Part;
using shards::Span;

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Every failure's rendered message (diagnostics, or the runtime error).
std::string rendered(const Part& p) {
  std::string out;
  for (const auto& d : p.diagnostics) out += d.rendered;
  if (p.runtime_error) out += p.runtime_error->rendered;
  return out;
}

class Job {
 public:
  Job(World w, const Request& req) : w_(w), req_(req) {}
  int run();

 private:
  int run_static(autobatch::RunOptions ro);
  int run_dynamic(autobatch::RunOptions ro);
  // OS threads for a process's `count` threads: RunOptions::threads, else the
  // node's cores shared by the processes on it (shards::auto_threads).
  int threads_for(int64_t count) const;
  // Rank 0 merges the parts (shards::merge) and reports the failure or
  // writes the result (`outputs`, when the parts carry none); every process
  // returns the same status.
  int finish(std::vector<Part>& parts, std::optional<std::vector<autobatch::Array>> outputs,
             double run_seconds);

  World w_;
  const Request& req_;
  std::optional<autobatch::Program> program_;
  autobatch::Inputs inputs_;  // rank 0
  Plan plan_;
  int on_node_ = 1;  // processes on this node (they share its cores)
  double parse_seconds_ = 0, input_seconds_ = 0;
};

int Job::threads_for(int64_t count) const {
  if (req_.run.threads > 0) return req_.run.threads;
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency() / on_node_);
  return static_cast<int>(shards::auto_threads(count, cores));
}

int Job::run() {
  auto t0 = Clock::now();
  on_node_ = processes_on_this_node();
  // Options and the program: the same checks on every process.
  std::string msg;
  int code = kOk;
  if (auto s = autobatch::check_output_target(req_.output); !s) {
    code = kUsageError;
    msg = s.rendered();
  }
  if (code == kOk && !req_.run.trace_path.empty() && w_.size > 1) {
    code = kUsageError;
    msg =
        "autobatch: error: --trace runs the whole batch as one sequence of steps: run it "
        "without mpirun (or with -np 1)\n";
  }
  if ((code = agree(w_, code, msg)) != kOk) return code;
  autobatch::CompileOptions co = req_.compile;
  std::optional<autobatch::Result<autobatch::Program>> compiled;
  std::optional<autobatch::Inputs> made_inputs;
  if (req_.make) {
    autobatch::Result<Made> made = req_.make();
    if (made) {
      compiled = made->program;
      made_inputs = std::move(made->inputs);
    } else {
      compiled = made.diagnostics();
    }
  } else if (req_.program == "-") {  // mpirun gives standard input to rank 0 only
    std::string text;
    if (w_.rank == 0) {
      std::ostringstream ss;
      ss << std::cin.rdbuf();
      text = ss.str();
    }
    bcast(w_, text);
    co.name = "<stdin>";
    compiled = autobatch::compile(text, co);
  } else {
    compiled = autobatch::compile_file(req_.program, co);
  }
  autobatch::RunOptions ro = req_.run;
  if (!*compiled) {
    code = kUsageError;
    msg = compiled->rendered();
  } else if (auto s = (*compiled)->check(ro); !s) {
    code = kUsageError;
    msg = s.rendered();
  }
  if ((code = agree(w_, code, msg)) != kOk) return code;
  program_ = **compiled;
  if (w_.rank == 0 && req_.warnings)
    for (const auto& w : program_->warnings()) std::cerr << w.rendered;
  parse_seconds_ = seconds_since(t0);

  // Inputs: rank 0 loads and plans; the plan goes to everyone.
  auto t1 = Clock::now();
  std::string plan;
  if (w_.rank == 0 && made_inputs) {
    inputs_ = std::move(*made_inputs);
    plan = encode(make_plan(inputs_));
  } else if (w_.rank == 0) {
    auto loaded = program_->load_inputs(req_.inputs, req_.batch, /*defer_npy=*/true);
    if (!loaded) {
      code = kUsageError;
      msg = loaded.rendered();
    } else {
      inputs_ = std::move(*loaded);
      plan = encode(make_plan(inputs_));
    }
  }
  if ((code = agree(w_, code, msg)) != kOk) return code;
  bcast(w_, plan);
  plan_ = decode_plan(plan);
  input_seconds_ = seconds_since(t1);

  // --lanes L: each process gets its share of the lanes (at least one).
  if (ro.lanes > 0)
    ro.lanes = std::max<int64_t>(1, shards::share(ro.lanes, w_.size, w_.rank).count);
  return req_.split == "dynamic" && w_.size > 1 ? run_dynamic(ro) : run_static(ro);
}
int Job::run_static(autobatch::RunOptions ro) {
  auto t0 = Clock::now();
  // Process r runs share r of the batch (shards::share): the contiguous
  // shares `--threads K` cuts with --stats.
  Rows part;
  const Span mine_span = shards::share(plan_.batch, w_.size, w_.rank);
  part.first = mine_span.first;
  part.count = mine_span.count;
  // JSON rows: scattered from rank 0, as whole rows.
  part.json_rows.resize(plan_.params.size());
  std::vector<int> counts(static_cast<size_t>(w_.size)), offsets(static_cast<size_t>(w_.size));
  for (int r = 0; r < w_.size; ++r) {
    Span s = shards::share(plan_.batch, w_.size, r);
    counts[r] = static_cast<int>(s.count);
    offsets[r] = static_cast<int>(s.first);
  }
  for (size_t k = 0; k < plan_.params.size(); ++k) {
    const Param& q = plan_.params[k];
    if (q.source != Source::JsonRows || q.row_bytes() == 0) continue;
    MPI_Datatype row;
    MPI_Type_contiguous(static_cast<int>(q.row_bytes()), MPI_BYTE, &row);
    MPI_Type_commit(&row);
    part.json_rows[k].resize(q.row_bytes() * static_cast<size_t>(part.count));
    const void* all = w_.rank == 0 ? inputs_.arrays[k].data() : nullptr;
    MPI_Scatterv(all, counts.data(), offsets.data(), row, part.json_rows[k].data(),
                 static_cast<int>(part.count), row, 0, MPI_COMM_WORLD);
    MPI_Type_free(&row);
  }
  std::string msg =
      build_views(plan_, part, [&](size_t k) -> const void* { return part.json_rows[k].data(); });
  int code = agree(w_, msg.empty() ? kOk : kUsageError, msg);
  if (code != kOk) return code;

  // Run: every process with threads (rank 0 also with none, for the outputs'
  // types when the batch is empty).
  // A failure tells the others to stop (Abort).
  Part mine;
  mine.span = mine_span;
  Abort abort(w_);
  if (part.count > 0 || w_.rank == 0) {
    ro.threads = threads_for(part.count);
    ro.cancel = &abort.flag;
    abort.watch([&] { mine = run_part(*program_, ro, plan_, part); });
    if (mine.failed()) abort.tell_all();
  }
  wait_for_all();
  abort.drain();
  std::vector<autobatch::Array> my_outputs = std::move(mine.outputs);
  mine.outputs.clear();  // (they come to rank 0 below, by rows)
  std::vector<std::string> all = gather(w_, encode(mine));
  std::vector<Part> parts;
  int worst = mine.exit_status();
  if (w_.rank == 0) {
    for (const auto& s : all) {
      parts.push_back(decode_part(s));
      worst = std::max(worst, parts.back().exit_status());
    }
  }
  MPI_Bcast(&worst, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (worst != kOk) return finish(parts, std::nullopt, 0);

  // Outputs: rank 0 gathers every process's rows into whole outputs, each
  // share in its place (MPI places them: the shares' offsets above).
  std::vector<autobatch::Array> outputs;
  std::vector<OutputType> types;
  std::string encoded_types;
  if (w_.rank == 0) encoded_types = encode(output_types(my_outputs));
  bcast(w_, encoded_types);
  types = decode_types(encoded_types);
  for (size_t k = 0; k < types.size(); ++k) {
    const OutputType& t = types[k];
    std::vector<int64_t> shape{plan_.batch};
    shape.insert(shape.end(), t.event.begin(), t.event.end());
    std::string all_rows;
    if (w_.rank == 0) all_rows.resize(t.row_bytes() * static_cast<size_t>(plan_.batch));
    if (t.row_bytes() > 0) {
      MPI_Datatype row;
      MPI_Type_contiguous(static_cast<int>(t.row_bytes()), MPI_BYTE, &row);
      MPI_Type_commit(&row);
      const void* rows = part.count > 0 ? my_outputs[k].data() : nullptr;
      MPI_Gatherv(rows, static_cast<int>(part.count), row, all_rows.data(), counts.data(),
                  offsets.data(), row, 0, MPI_COMM_WORLD);
      MPI_Type_free(&row);
    }
    if (w_.rank == 0)
      outputs.push_back(autobatch::Array::copy_of({t.dtype, shape, all_rows.data()}));
  }
  return finish(parts, std::move(outputs), seconds_since(t0));
}

int Job::run_dynamic(autobatch::RunOptions ro) {
  auto t0 = Clock::now();
  const int64_t batch = plan_.batch;
  const int64_t chunk = req_.chunk > 0
                            ? req_.chunk
                            : std::max<int64_t>(1, (batch + 16 * w_.size - 1) / (16 * w_.size));
  const int64_t chunks = (batch + chunk - 1) / chunk;
  ro.threads = threads_for(chunk);
  Part mine;        // this process's statistics, over every chunk it ran
  Abort abort(w_);  // rank 0 tells the workers to stop their chunk on a failure
  ro.cancel = &abort.flag;
  // A chunk's statistics go to this process's total, not with the chunk.
  auto keep_stats = [&](Part& p) {
    if (!p.stats) return;
    if (!mine.stats) mine.stats.emplace();
    shards::add_stats(*mine.stats, *p.stats);
    p.stats.reset();
  };

  // The rows of chunk c of every JsonRows parameter (rank 0's inputs).
  auto json_rows = [&](size_t k, int64_t first) -> const void* {
    return static_cast<const std::byte*>(inputs_.arrays[k].data()) +
           plan_.params[k].row_bytes() * static_cast<size_t>(first);
  };

  if (w_.rank != 0) {
    // Worker: ask for work (sending the last chunk's result), run it, repeat.
    std::string report;  // empty: the first request
    for (;;) {
      send(report, 0, kTagResult);
      std::string work = recv(0, kTagWork);
      Reader rd{work};
      Rows part;
      part.first = rd.i64();
      part.count = rd.i64();
      if (part.count < 0) break;  // no more work
      part.json_rows.resize(plan_.params.size());
      for (size_t k = 0; k < plan_.params.size(); ++k)
        if (plan_.params[k].source == Source::JsonRows) part.json_rows[k] = rd.str();
      std::string msg = build_views(
          plan_, part, [&](size_t k) -> const void* { return part.json_rows[k].data(); });
      Part done;
      if (!msg.empty())
        done = usage_error({part.first, part.count}, msg);
      else
        abort.watch([&] { done = run_part(*program_, ro, plan_, part); });
      keep_stats(done);
      Writer res;
      res.str(encode(done));
      res.str(done.failed() || done.cancelled ? std::string() : encode(done.outputs));
      report = res.buf;
    }
    wait_for_all();
    abort.drain();
    gather(w_, encode(mine));
    int worst = 0;
    MPI_Bcast(&worst, 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<Part> none;
    return finish(none, std::nullopt, 0);
  }

  // Rank 0: hands out chunks to the others (this thread: all MPI calls) and
  // runs chunks itself on a second thread. Every chunk's result (with its
  // outputs) is a part of the batch.
  std::mutex mu;
  int64_t next = 0;
  bool failed = false;        // a chunk failed: no more chunks, the others stop
  std::vector<Part> parts;    // the chunks', in the order they came
  auto add = [&](Part p) {    // under mu
    if (p.cancelled) return;  // another chunk's failure stopped this one
    failed = failed || p.failed();
    parts.push_back(std::move(p));
  };
  auto take = [&](int64_t& first, int64_t& count) {  // under mu
    if (failed || next >= chunks) return false;
    first = next * chunk;
    count = std::min(chunk, batch - first);
    ++next;
    return true;
  };
  std::thread local([&] {
    for (;;) {
      Rows part;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (!take(part.first, part.count)) return;
      }
      std::string msg =
          build_views(plan_, part, [&](size_t k) { return json_rows(k, part.first); });
      Part done = msg.empty() ? run_part(*program_, ro, plan_, part)
                              : usage_error({part.first, part.count}, msg);
      std::lock_guard<std::mutex> lock(mu);
      keep_stats(done);
      add(std::move(done));
    }
  });

  int workers = w_.size - 1;
  while (workers > 0) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (failed) abort.tell_all();  // once; stops the local chunk too
    }
    int flag = 0;
    MPI_Status st;
    MPI_Iprobe(MPI_ANY_SOURCE, kTagResult, MPI_COMM_WORLD, &flag, &st);
    if (!flag) {  // Open MPI's blocking receive spins: poll gently instead
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      continue;
    }
    int from = 0;
    std::string report = recv(st.MPI_SOURCE, kTagResult, &from);
    Writer work;
    std::lock_guard<std::mutex> lock(mu);
    if (!report.empty()) {
      Reader rd{report};
      Part done = decode_part(rd.str());
      std::string outs = rd.str();
      if (!outs.empty()) done.outputs = decode_outputs(outs);
      add(std::move(done));
    }
    int64_t first = 0, count = -1;
    if (take(first, count)) {
      work.i64(first);
      work.i64(count);
      for (size_t k = 0; k < plan_.params.size(); ++k)
        if (plan_.params[k].source == Source::JsonRows)
          work.bytes(json_rows(k, first), plan_.params[k].row_bytes() * static_cast<size_t>(count));
    } else {
      work.i64(0);
      work.i64(-1);
      --workers;
    }
    send(work.buf, from, kTagWork);
  }
  {
    // A failure the loop did not get to (the last worker's): stop the local chunk.
    std::lock_guard<std::mutex> lock(mu);
    if (failed) abort.tell_all();
  }
  local.join();
  wait_for_all();
  abort.drain();
  // Every process's statistics, as parts without threads.
  for (const auto& s : gather(w_, encode(mine))) parts.push_back(decode_part(s));
  const Part* failure = shards::first_failure(parts);
  int worst = failure ? failure->exit_status() : kOk;
  MPI_Bcast(&worst, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (worst != kOk) return finish(parts, std::nullopt, 0);
  // An empty batch ran no chunk: rank 0 runs it alone for the outputs' types.
  if (chunks == 0) {
    Rows part;
    build_views(plan_, part, [&](size_t k) { return json_rows(k, 0); });
    parts.push_back(run_part(*program_, ro, plan_, part));
  }
  return finish(parts, std::nullopt, seconds_since(t0));
}

int Job::finish(std::vector<Part>& parts, std::optional<std::vector<autobatch::Array>> outputs,
                double run_seconds) {
  int code = kOk;
  if (w_.rank == 0) {
    const Part* failed = shards::first_failure(parts);
    const bool cancelled =
        std::any_of(parts.begin(), parts.end(), [](const Part& p) { return p.cancelled; });
    if (failed) {
      std::cerr << rendered(*failed);
      code = failed->exit_status();
    } else if (cancelled) {  // (a notice comes only from a process that failed)
      std::cerr << "autobatch: internal error: a process stopped without a failure\n";
      code = kUsageError;
    } else {
      const bool stats = req_.run.stats;
      autobatch::RunResult result =
          shards::merge(parts, plan_.batch, req_.run.on_error == autobatch::OnError::Record, stats);
      if (outputs) {
        result.outputs = std::move(*outputs);
        result.names = shards::names_of(parts, result.outputs.size());
      }
      if (result.stats) {
        // "compile": the slowest process's (merge keeps the maximum).
        result.stats->seconds["parse"] = parse_seconds_;
        result.stats->seconds["inputs"] = input_seconds_;
        result.stats->seconds["run"] = run_seconds;
      }
      code = req_.finish(result);
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

}  // namespace

int run(const Request& request) {
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  int code = kOk;
  {
    Job job(w, request);
    code = job.run();
  }
  MPI_Finalize();
  return code;
}

}  // namespace ab::mpi
