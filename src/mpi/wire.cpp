// What the processes of the run over MPI send each other (internal.h): the
// plan of the inputs, a part's result (as api/shards.h's Part, without its
// outputs) and the outputs, in the flat encoding of Writer and Reader.
#include "mpi/internal.h"

namespace ab::mpi {

std::string encode(const Plan& p) {
  Writer w;
  w.i64(p.batch);
  w.i64(static_cast<int64_t>(p.params.size()));
  for (const Param& q : p.params) {
    w.i64(static_cast<int64_t>(q.source));
    w.i64(static_cast<int64_t>(q.dtype));
    w.shape(q.shape);
    w.str(q.shared);
    w.str(q.npy.path);
    w.str(q.npy.parameter);
    w.i64(static_cast<int64_t>(q.npy.file_dtype));
    w.i64(static_cast<int64_t>(q.npy.dtype));
    w.shape(q.npy.shape);
    w.i64(static_cast<int64_t>(q.npy.data_offset));
  }
  return w.buf;
}

Plan decode_plan(const std::string& s) {
  Reader r{s};
  Plan p;
  p.batch = r.i64();
  p.params.resize(static_cast<size_t>(r.i64()));
  for (Param& q : p.params) {
    q.source = static_cast<Source>(r.i64());
    q.dtype = static_cast<autobatch::DType>(r.i64());
    q.shape = r.shape();
    q.shared = r.str();
    q.npy.path = r.str();
    q.npy.parameter = r.str();
    q.npy.file_dtype = static_cast<autobatch::DType>(r.i64());
    q.npy.dtype = static_cast<autobatch::DType>(r.i64());
    q.npy.shape = r.shape();
    q.npy.data_offset = static_cast<uint64_t>(r.i64());
  }
  return p;
}

// Rank 0: the plan for the loaded inputs (JSON rows stay in `inputs`).
Plan make_plan(const autobatch::Inputs& inputs) {
  Plan p;
  p.batch = inputs.batch;
  for (size_t k = 0; k < inputs.arrays.size(); ++k) {
    const autobatch::Array& a = inputs.arrays[k];
    Param q;
    q.dtype = a.dtype();
    q.shape = a.shape();
    if (k < inputs.on_disk.size() && inputs.on_disk[k]) {
      q.source = Source::NpyFile;
      q.npy = *inputs.on_disk[k];
    } else if (a.batch() == 1) {
      q.source = Source::Shared;
      q.shared.assign(static_cast<const char*>(a.data()), a.byte_size());
    } else {
      q.source = Source::JsonRows;
    }
    p.params.push_back(std::move(q));
  }
  return p;
}

// Fills part.views; `json` gives a JsonRows parameter's rows (borrowed from
// rank 0's inputs, or from part.json_rows). An input error: its message.
std::string build_views(const Plan& plan, Rows& part,
                        const std::function<const void*(size_t k)>& json) {
  part.views.clear();
  for (size_t k = 0; k < plan.params.size(); ++k) {
    const Param& q = plan.params[k];
    autobatch::ArrayView v{q.dtype, q.shape, nullptr};
    if (q.source == Source::Shared) {
      v.data = q.shared.data();
    } else if (q.source == Source::JsonRows) {
      v.shape[0] = part.count;
      v.data = json(k);
    } else {
      auto rows = autobatch::read_rows(q.npy, part.first, part.count);
      if (!rows) return rows.rendered();
      part.keep.push_back(*rows);
      v = rows->view();
    }
    part.views.push_back(std::move(v));
  }
  return "";
}

using autobatch::shards::Part;
using autobatch::shards::Span;

Part usage_error(Span span, const std::string& rendered) {
  Part p;
  p.span = span;
  autobatch::Diagnostic d;
  d.message = rendered;
  d.rendered = rendered;
  p.diagnostics.push_back(std::move(d));
  return p;
}

Part run_part(const autobatch::Program& program, autobatch::RunOptions ro, const Plan& plan,
              const Rows& rows) {
  ro.first_thread = rows.first;
  ro.total_batch = plan.batch;
  ro.batch = rows.count;
  autobatch::RunResult r = program.run(rows.views, ro);
  Part p;
  p.span = {rows.first, rows.count};
  if (r.timed_out) {  // --time-limit: this process's share stopped, a failure like an error
    p.runtime_error = std::move(r.runtime_error);
  } else if (r.cancelled) {
    p.cancelled = true;
  } else if (!r.diagnostics.empty()) {
    p.diagnostics = std::move(r.diagnostics);
  } else if (r.runtime_error) {
    p.runtime_error = std::move(r.runtime_error);
  } else {
    p.stats = std::move(r.stats);
    p.errors = std::move(r.errors);
    p.outputs = std::move(r.outputs);
    p.names = std::move(r.names);
  }
  return p;
}

namespace {

void put(Writer& w, const autobatch::RuntimeError& e) {
  w.str(e.file);
  w.i64(e.line);
  w.i64(e.column);
  w.str(e.function);
  w.str(e.block);
  w.i64(e.thread);
  w.i64(e.batch);
  w.str(e.message);
  w.str(e.rendered);
}

autobatch::RuntimeError get_error(Reader& r) {
  autobatch::RuntimeError e;
  e.file = r.str();
  e.line = static_cast<int>(r.i64());
  e.column = static_cast<int>(r.i64());
  e.function = r.str();
  e.block = r.str();
  e.thread = r.i64();
  e.batch = r.i64();
  e.message = r.str();
  e.rendered = r.str();
  return e;
}

}  // namespace

std::string encode(const Part& p) {
  Writer w;
  w.i64(p.span.first);
  w.i64(p.span.count);
  w.i64(p.cancelled);
  w.i64(static_cast<int64_t>(p.diagnostics.size()));
  for (const autobatch::Diagnostic& d : p.diagnostics) {
    w.str(d.file);
    w.i64(d.line);
    w.i64(d.column);
    w.i64(static_cast<int64_t>(d.severity));
    w.str(d.message);
    w.str(d.rendered);
  }
  w.i64(p.runtime_error.has_value());
  if (p.runtime_error) put(w, *p.runtime_error);
  w.i64(p.stats.has_value());
  if (p.stats) {
    const autobatch::Stats& s = *p.stats;
    w.i64(s.steps);
    w.i64(s.primitive_executions);
    w.i64(s.lane_operations);
    w.f64(s.utilization_sum);
    w.i64(s.utilization_applicable);
    w.i64(s.peak_stack_depth);
    w.i64(static_cast<int64_t>(s.block_executions.size()));
    for (const auto& [name, n] : s.block_executions) {
      w.str(name);
      w.i64(n);
    }
    w.i64(static_cast<int64_t>(s.seconds.size()));
    for (const auto& [name, t] : s.seconds) {
      w.str(name);
      w.f64(t);
    }
    w.i64(static_cast<int64_t>(s.execution.size()));
    for (const autobatch::BlockExecution& e : s.execution) {
      w.str(e.block);
      w.str(e.mode);
      w.str(e.reason);
      w.i64(e.line);
      w.str(e.statement);
    }
  }
  w.i64(static_cast<int64_t>(p.errors.size()));
  for (const autobatch::ThreadError& t : p.errors) {
    w.i64(t.thread);
    w.str(t.message);
    put(w, t.error);
  }
  w.i64(static_cast<int64_t>(p.names.size()));
  for (const std::string& name : p.names) w.str(name);
  return w.buf;
}

Part decode_part(const std::string& buf) {
  Reader r{buf};
  Part p;
  p.span.first = r.i64();
  p.span.count = r.i64();
  p.cancelled = r.i64() != 0;
  for (int64_t n = r.i64(); n > 0; --n) {
    autobatch::Diagnostic d;
    d.file = r.str();
    d.line = static_cast<int>(r.i64());
    d.column = static_cast<int>(r.i64());
    d.severity = static_cast<autobatch::Severity>(r.i64());
    d.message = r.str();
    d.rendered = r.str();
    p.diagnostics.push_back(std::move(d));
  }
  if (r.i64()) p.runtime_error = get_error(r);
  if (r.i64()) {
    autobatch::Stats& s = p.stats.emplace();
    s.steps = r.i64();
    s.primitive_executions = r.i64();
    s.lane_operations = r.i64();
    s.utilization_sum = r.f64();
    s.utilization_applicable = r.i64() != 0;
    s.peak_stack_depth = r.i64();
    for (int64_t n = r.i64(); n > 0; --n) {
      std::string name = r.str();
      s.block_executions.emplace_back(name, r.i64());
    }
    for (int64_t n = r.i64(); n > 0; --n) {
      std::string name = r.str();
      s.seconds[name] = r.f64();
    }
    for (int64_t n = r.i64(); n > 0; --n) {
      autobatch::BlockExecution e;
      e.block = r.str();
      e.mode = r.str();
      e.reason = r.str();
      e.line = static_cast<int>(r.i64());
      e.statement = r.str();
      s.execution.push_back(std::move(e));
    }
  }
  for (int64_t n = r.i64(); n > 0; --n) {
    autobatch::ThreadError t;
    t.thread = r.i64();
    t.message = r.str();
    t.error = get_error(r);
    p.errors.push_back(std::move(t));
  }
  for (int64_t n = r.i64(); n > 0; --n) p.names.push_back(r.str());
  return p;
}

std::vector<OutputType> output_types(const std::vector<autobatch::Array>& outputs) {
  std::vector<OutputType> out;
  for (const auto& a : outputs)
    out.push_back({a.dtype(), std::vector<int64_t>(a.shape().begin() + 1, a.shape().end())});
  return out;
}

std::string encode(const std::vector<OutputType>& types) {
  Writer w;
  w.i64(static_cast<int64_t>(types.size()));
  for (const auto& t : types) {
    w.i64(static_cast<int64_t>(t.dtype));
    w.shape(t.event);
  }
  return w.buf;
}

std::vector<OutputType> decode_types(const std::string& buf) {
  Reader r{buf};
  std::vector<OutputType> types;
  for (int64_t n = r.i64(); n > 0; --n) {
    auto d = static_cast<autobatch::DType>(r.i64());
    types.push_back({d, r.shape()});
  }
  return types;
}

std::string encode(const std::vector<autobatch::Array>& outputs) {
  Writer w;
  w.i64(static_cast<int64_t>(outputs.size()));
  for (const auto& a : outputs) {
    w.i64(static_cast<int64_t>(a.dtype()));
    w.shape(a.shape());
    w.bytes(a.data(), a.byte_size());
  }
  return w.buf;
}

std::vector<autobatch::Array> decode_outputs(const std::string& buf) {
  Reader r{buf};
  std::vector<autobatch::Array> arrays;
  for (int64_t n = r.i64(); n > 0; --n) {
    auto d = static_cast<autobatch::DType>(r.i64());
    std::vector<int64_t> shape = r.shape();
    std::string_view data = r.bytes();
    arrays.push_back(autobatch::Array::copy_of({d, shape, data.data()}));
  }
  return arrays;
}

}  // namespace ab::mpi
