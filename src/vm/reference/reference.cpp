#include "vm/reference/reference.h"

#include <cstring>
#include <map>

#include "ir/tail_call.h"
#include "vm/kernels/kernel.h"
#include "vm/literal.h"
#include "vm/slots.h"
#include "vm/value.h"

namespace ab {
namespace {

// Everything about one function that does not change from thread to thread.
struct CompiledFunction {
  const Function* f = nullptr;
  Slots slots;  // variable -> index into a frame, with its type
  std::vector<size_t> param_slots;
  std::map<std::string, size_t> labels;
  // [block][instr][arg]: a variable slot, or a constant for a literal.
  struct Arg {
    bool is_var = true;
    size_t slot = 0;
    Value constant;
  };
  std::vector<std::vector<std::vector<Arg>>> args;
  std::vector<std::vector<Arg>> returns;
  std::vector<std::vector<PrimAttrs>> attrs;
  std::vector<std::vector<Type>> result_types;  // a prim's result type
  std::vector<std::vector<size_t>> callees;     // a call's function index
  std::vector<std::vector<char>> tail;          // a tail self-call (ir/tail_call.h)
  // [block][instr]: the destination's slot, or kTupleOut when the
  // destination is a tuple pattern (bound leaf by leaf through `slots`).
  std::vector<std::vector<size_t>> out_slot;
  static constexpr size_t kTupleOut = ~size_t{0};
  // [block]: a branch's condition slot and both targets' block indices (a
  // goto's target is `then`).
  struct Jump {
    size_t cond = 0, then = 0, otherwise = 0;
  };
  std::vector<Jump> jumps;
  size_t n_results = 0;
};

struct Frame {
  size_t func;
  size_t block = 0;
  size_t instr = 0;
  std::vector<Value> vars;
};

class Interpreter {
 public:
  Interpreter(const Module& m, const TypeInfo& types, const RunOptions& opt) : m_(m), opt_(opt) {
    for (const auto& f : m.funcs) {
      offsets_.push_back(block_names_.size());
      for (const auto& b : f.blocks) {
        block_names_.push_back(f.name.name + "." + b.label.name);
        block_locs_.push_back(b.label.loc);
      }
      compile(f, types.funcs.at(f.name.name));
    }
  }

  RunResult run(const std::string& entry, const std::vector<Array>& inputs, int64_t batch) {
    RunResult res;
    size_t ei = index_of(entry);
    const CompiledFunction& ef = fns_[ei];
    std::vector<Array> outputs = make_outputs(result_leaves(types_of_results(ef)), batch, opt_);
    std::vector<Value> results;
    if (opt_.trace && opt_.trace->on())
      opt_.trace->header("reference", batch, block_names_, block_locs_);
    if (opt_.stats) {
      opt_.stats->init(block_names_);
      opt_.stats->batched = false;  // one thread at a time: utilization does not apply
    }
    res.execution =
        all_interpreted(block_names_, block_locs_, "the reference interpreter runs every block");
    poll_.at = next_check(opt_, 0);
    for (int64_t t = 0; t < batch && !res.error; ++t) {
      std::vector<Value> args;
      for (size_t i = 0; i < inputs.size(); ++i)
        args.push_back(slice(inputs[i], inputs[i].batch == 1 ? 0 : t));
      thread_ = t;
      batch_ = batch;
      thread_steps_ = 0;
      results.clear();
      res.error = run_thread(ei, std::move(args), results);
      if (!res.error) put_results(outputs, t, results);
      res.steps = steps_;
      res.cancelled = poll_.cancelled;
      res.finished = thread_;
      res.running = running_;
      if (res.error && opt_.record_errors) {  // this thread stops; the next one runs
        res.failed.push_back(std::move(*res.error));
        res.error.reset();
      }
    }
    if (res.error) return res;
    res.outputs = std::move(outputs);
    finish_failed(res.outputs, res.failed);
    return res;
  }

 private:
  const Module& m_;
  RunOptions opt_;
  std::vector<CompiledFunction> fns_;
  std::vector<Type> entry_results_;
  int64_t thread_ = 0, batch_ = 0, steps_ = 0;
  Poller poll_;                           // cancel and progress
  std::vector<const Value*> values_;      // a primitive's operands (reused)
  std::vector<RunningThread> running_;    // at a stop: the thread that was running
  int64_t thread_steps_ = 0;              // blocks the current thread started (--max-steps)
  std::vector<std::string> block_names_;  // every function's blocks, qualified
  std::vector<SourceLoc> block_locs_;     // parallel: each block's label
  std::vector<size_t> offsets_;           // first block of each function in that list

  size_t index_of(const std::string& name) const {
    for (size_t i = 0; i < m_.funcs.size(); ++i)
      if (m_.funcs[i].name.name == name) return i;
    return 0;
  }

  std::vector<Type> types_of_results(const CompiledFunction& cf) const {
    return result_types_.at(cf.f->name.name);
  }
  std::map<std::string, std::vector<Type>> result_types_;

  void compile(const Function& f, const FunctionTypes& ft) {
    CompiledFunction cf;
    cf.f = &f;
    std::vector<std::string> params;
    for (const auto& p : f.params) params.push_back(p.name.name);
    cf.slots = compile_slots(f.blocks, params, ft);
    auto slot = [&](const std::string& n) -> size_t { return cf.slots.at(n); };
    for (const auto& p : f.params) cf.param_slots.push_back(slot(p.name.name));
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) cf.labels.emplace(f.blocks[bi].label.name, bi);
    std::vector<Type> rts;
    for (const auto& r : ft.results) rts.push_back(known_or_default(r));
    result_types_[f.name.name] = rts;
    cf.n_results = rts.size();
    cf.args.resize(f.blocks.size());
    cf.returns.resize(f.blocks.size());
    cf.attrs.resize(f.blocks.size());
    cf.result_types.resize(f.blocks.size());
    cf.callees.resize(f.blocks.size());
    cf.tail.resize(f.blocks.size());
    cf.out_slot.resize(f.blocks.size());
    cf.jumps.resize(f.blocks.size());
    for (size_t bi = 0; bi < f.blocks.size(); ++bi) {
      const Block& b = f.blocks[bi];
      for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
        const Instr& in = b.instrs[ii];
        std::vector<CompiledFunction::Arg> args;
        for (size_t ai = 0; ai < in.args.size(); ++ai) {
          CompiledFunction::Arg a;
          a.is_var = in.args[ai].is_var;
          if (a.is_var) {
            a.slot = slot(in.args[ai].name);
          } else {
            a.constant = literal_constant(in.args[ai].lit, operand_type(ft, bi, ii, ai));
          }
          args.push_back(std::move(a));
        }
        cf.args[bi].push_back(std::move(args));
        cf.attrs[bi].push_back(in.kind == InstrKind::Prim ? resolve_attrs(in) : PrimAttrs{});
        // The type a primitive produces is its destination's type.
        cf.result_types[bi].push_back(pattern_type(in.out, cf, slot));
        size_t callee = 0;
        if (in.kind == InstrKind::Call) callee = index_of(in.callee.name);
        cf.callees[bi].push_back(callee);
        cf.tail[bi].push_back(is_tail_self_call(f, bi, ii));
        cf.out_slot[bi].push_back(in.out.is_tuple ? CompiledFunction::kTupleOut : slot(in.out.name));
      }
      const Terminator& t = b.term;
      if (t.kind == TermKind::Branch)
        cf.jumps[bi] = {slot(t.cond.name), cf.labels.at(t.target.name),
                        cf.labels.at(t.target2.name)};
      else if (t.kind == TermKind::Goto)
        cf.jumps[bi].then = cf.labels.at(t.target.name);
      for (size_t vi = 0; vi < b.term.values.size(); ++vi) {
        CompiledFunction::Arg a;
        const Operand& o = b.term.values[vi];
        a.is_var = o.is_var;
        if (o.is_var)
          a.slot = slot(o.name);
        else
          a.constant = literal_constant(o.lit, return_type(ft, bi, vi));
        cf.returns[bi].push_back(std::move(a));
      }
    }
    fns_.push_back(std::move(cf));
  }

  template <typename SlotFn>
  Type pattern_type(const Pattern& p, CompiledFunction& cf, SlotFn& slot) {
    if (!p.is_tuple) return cf.slots.types[slot(p.name)];
    std::vector<Type> elems;
    for (const auto& e : p.elems) elems.push_back(pattern_type(e, cf, slot));
    return Type::tuple(std::move(elems));
  }

  static Value slice(const Array& a, int64_t t) {
    Value v = Value::tensor(a.type);
    size_t bytes = v.data.size();
    if (bytes) std::memcpy(v.data.data(), a.data.data() + t * bytes, bytes);
    return v;
  }

  const Value& arg_value(const Frame& fr, const CompiledFunction::Arg& a) const {
    return a.is_var ? fr.vars[a.slot] : a.constant;
  }

  void bind(Frame& fr, const CompiledFunction& cf, const Pattern& p, Value v) {
    if (!p.is_tuple) {
      fr.vars[cf.slots.at(p.name)] = std::move(v);
      return;
    }
    for (size_t i = 0; i < p.elems.size() && i < v.elems.size(); ++i)
      bind(fr, cf, p.elems[i], std::move(v.elems[i]));
  }

  // Binds the destination of the frame's current instruction.
  void bind_out(Frame& fr, const CompiledFunction& cf, const Instr& in, Value v) {
    size_t s = cf.out_slot[fr.block][fr.instr];
    if (s != CompiledFunction::kTupleOut)
      fr.vars[s] = std::move(v);
    else
      bind(fr, cf, in.out, std::move(v));
  }

  RuntimeError error_at(const Frame& fr, SourceLoc loc, std::string msg) const {
    const Function& f = *fns_[fr.func].f;
    return RuntimeError{loc,    std::move(msg), thread_,
                        batch_, f.name.name,    f.blocks[fr.block].label.name};
  }

  std::optional<RuntimeError> prim(Frame& fr, const CompiledFunction& cf, const Instr& in) {
    const auto& args = cf.args[fr.block][fr.instr];
    const Type& rt = cf.result_types[fr.block][fr.instr];
    if (in.prim == PrimId::Tuple) {
      Value v;
      v.is_tuple = true;
      for (const auto& a : args) v.elems.push_back(arg_value(fr, a));
      bind_out(fr, cf, in, std::move(v));
      return std::nullopt;
    }
    Value result = Value::of_type(rt);
    values_.clear();
    for (const auto& a : args) values_.push_back(&arg_value(fr, a));
    if (auto e = apply_kernel(in.prim, values_, cf.attrs[fr.block][fr.instr], result,
                              opt_.first_thread + thread_, opt_.progress_table))
      return error_at(fr, in.callee.loc, *e);
    bind_out(fr, cf, in, std::move(result));
    return std::nullopt;
  }

  std::optional<RuntimeError> run_thread(size_t entry, std::vector<Value> args,
                                         std::vector<Value>& results) {
    std::vector<Frame> frames;
    auto enter = [&](size_t fi, std::vector<Value> params) {
      Frame fr;
      fr.func = fi;
      const CompiledFunction& cf = fns_[fi];
      fr.vars.resize(cf.slots.size());
      for (size_t i = 0; i < params.size() && i < cf.param_slots.size(); ++i)
        fr.vars[cf.param_slots[i]] = std::move(params[i]);
      frames.push_back(std::move(fr));
    };
    enter(entry, std::move(args));
    bool block_start = true;
    while (true) {
      Frame& fr = frames.back();
      const CompiledFunction& cf = fns_[fr.func];
      const Block& b = cf.f->blocks[fr.block];
      if (block_start) {
        ++steps_;
        if (opt_.max_steps > 0 && ++thread_steps_ > opt_.max_steps)
          return error_at(fr, b.label.loc, max_steps_message(opt_.max_steps));
        if (steps_ > poll_.at) [[unlikely]]
          if (auto msg = poll_.poll(opt_, steps_, thread_, batch_)) {
            const Function& f = *cf.f;
            running_.push_back({opt_.first_thread + thread_, f.name.name, b.label.name, b.label.loc});
            return error_at(fr, b.label.loc, *msg);
          }
        block_start = false;
        size_t pc = offsets_[fr.func] + fr.block;
        uint32_t lane = static_cast<uint32_t>(thread_);
        if (opt_.trace && opt_.trace->on())
          opt_.trace->step(TraceStep{steps_ - 1, static_cast<uint32_t>(pc), &lane, 1, -1,
                                     static_cast<int64_t>(frames.size()), nullptr});
        if (opt_.stats) {
          int64_t prims = 0;
          for (size_t i = fr.instr; i < b.instrs.size() && b.instrs[i].kind != InstrKind::Call; ++i)
            prims += b.instrs[i].kind == InstrKind::Prim;
          if (fr.instr < b.instrs.size() && b.instrs[fr.instr].kind == InstrKind::Call) prims = 0;
          opt_.stats->record_step(pc, 1, 0, prims);
          opt_.stats->peak_stack_depth =
              std::max<int64_t>(opt_.stats->peak_stack_depth, static_cast<int64_t>(frames.size()));
        }
      }
      if (fr.instr < b.instrs.size()) {
        const Instr& in = b.instrs[fr.instr];
        if (in.kind == InstrKind::Copy) {
          bind_out(fr, cf, in, Value(arg_value(fr, cf.args[fr.block][fr.instr][0])));
        } else if (in.kind == InstrKind::Prim) {
          if (auto e = prim(fr, cf, in)) return e;
        } else if (in.kind == InstrKind::Call && cf.tail[fr.block][fr.instr]) {
          // The caller's frame becomes the callee's: no stack, as in the
          // compiled program, where such a call is a jump.
          std::vector<Value> params;
          for (const auto& a : cf.args[fr.block][fr.instr]) params.push_back(arg_value(fr, a));
          for (size_t i = 0; i < params.size() && i < cf.param_slots.size(); ++i)
            fr.vars[cf.param_slots[i]] = std::move(params[i]);
          fr.block = 0;
          fr.instr = 0;
          block_start = true;
          continue;
        } else if (in.kind == InstrKind::Call) {
          if (static_cast<int64_t>(frames.size()) >= opt_.max_stack_depth)
            return error_at(fr, in.callee.loc,
                            stack_depth_message(opt_.max_stack_depth, in.callee.name));
          std::vector<Value> params;
          for (const auto& a : cf.args[fr.block][fr.instr]) params.push_back(arg_value(fr, a));
          size_t callee = cf.callees[fr.block][fr.instr];
          enter(callee, std::move(params));  // invalidates fr
          block_start = true;
          continue;
        }
        ++fr.instr;
        continue;
      }
      const Terminator& t = b.term;
      if (t.kind == TermKind::Branch) {
        const CompiledFunction::Jump& j = cf.jumps[fr.block];
        const Value& c = fr.vars[j.cond];
        bool taken = c.data.size() && static_cast<uint8_t>(c.data.data()[0]) != 0;
        fr.block = taken ? j.then : j.otherwise;
        fr.instr = 0;
        block_start = true;
        continue;
      }
      if (t.kind == TermKind::Goto) {
        fr.block = cf.jumps[fr.block].then;
        fr.instr = 0;
        block_start = true;
        continue;
      }
      // Return: the values go to the caller's call instruction, or out.
      std::vector<Value> vals;
      for (const auto& a : cf.returns[fr.block]) vals.push_back(arg_value(fr, a));
      frames.pop_back();
      if (frames.empty()) {
        results = std::move(vals);
        return std::nullopt;
      }
      Frame& caller = frames.back();
      const CompiledFunction& ccf = fns_[caller.func];
      const Instr& call = ccf.f->blocks[caller.block].instrs[caller.instr];
      bool discarded = call.out.is_tuple && call.out.elems.empty();
      if (!discarded && !vals.empty()) {
        Value v;
        if (vals.size() == 1) {
          v = std::move(vals[0]);
        } else {
          v.is_tuple = true;
          v.elems = std::move(vals);
        }
        bind_out(caller, ccf, call, std::move(v));
      }
      ++caller.instr;
      block_start = true;
    }
  }
};

}  // namespace

RunResult run_reference(const Module& m, const TypeInfo& types, const std::string& entry,
                        const std::vector<Array>& inputs, int64_t batch, const RunOptions& opt) {
  Interpreter interp(m, types, opt);
  return interp.run(entry, inputs, batch);
}

}  // namespace ab
