#include "vm/reference/lowered.h"

#include <cstring>
#include <map>

#include "ir/lowered_names.h"
#include "vm/kernels/kernel.h"
#include "vm/literal.h"
#include "vm/slots.h"
#include "vm/value.h"

namespace ab {
namespace {

constexpr size_t kHalt = SIZE_MAX;

struct Slot {
  bool full = false;
  Type type;
};

class ProgramInterpreter {
 public:
  ProgramInterpreter(const Program& p, const FunctionTypes& types, const RunOptions& opt)
      : p_(p), opt_(opt) {
    for (size_t i = 0; i < p.blocks.size(); ++i) labels_[p.blocks[i].label.name] = i;
    std::vector<std::string> inputs;
    for (const auto& i : p.inputs) inputs.push_back(i.name);
    Slots table = compile_slots(p.blocks, inputs, types, &p.vars);
    index_ = table.index;
    for (size_t i = 0; i < table.size(); ++i) {
      Slot s;
      s.full = i < p.vars.size() && p.vars[i].storage == StorageClass::Full;
      s.type = table.types[i];
      slots_.push_back(s);
    }
    constants_.resize(p.blocks.size());
    attrs_.resize(p.blocks.size());
    arg_slots_.resize(p.blocks.size());
    out_slots_.resize(p.blocks.size());
    out_types_.resize(p.blocks.size());
    jumps_.resize(p.blocks.size());
    for (size_t b = 0; b < p.blocks.size(); ++b) {
      const Block& blk = p.blocks[b];
      for (size_t i = 0; i < blk.instrs.size(); ++i) {
        const Instr& in = blk.instrs[i];
        std::vector<Value> cs;
        for (size_t a = 0; a < in.args.size(); ++a) {
          if (in.args[a].is_var) {
            cs.emplace_back();
            continue;
          }
          cs.push_back(literal_constant(in.args[a].lit, operand_type(types, b, i, a)));
        }
        constants_[b].push_back(std::move(cs));
        std::vector<uint32_t> slots;
        for (const auto& a : in.args) slots.push_back(a.is_var ? index_.at(a.name) : 0);
        for (const auto& n : in.popped) slots.push_back(index_.at(n.name));
        arg_slots_[b].push_back(std::move(slots));
        out_slots_[b].push_back(in.out.is_tuple ? kTupleOut : index_.at(in.out.name));
        out_types_[b].push_back(in.kind == InstrKind::Prim ? pattern_type(in.out) : Type{});
        attrs_[b].push_back(in.kind == InstrKind::Prim ? resolve_attrs(in) : PrimAttrs{});
      }
      const Terminator& t = blk.term;
      Jump& j = jumps_[b];
      if (t.kind == TermKind::Branch) j.cond = index_.at(t.cond.name);
      if (t.kind == TermKind::Branch || t.kind == TermKind::Goto || t.kind == TermKind::PushGoto)
        j.then = labels_.at(t.target.name);
      if (t.kind == TermKind::Branch || t.kind == TermKind::PushGoto)
        j.otherwise = labels_.at(t.target2.name);
    }
  }

  RunResult run(const std::vector<Array>& inputs, int64_t batch) {
    RunResult res;
    std::vector<Type> types;
    for (const auto& o : p_.outputs) types.push_back(slots_[index_.at(o.name)].type);
    std::vector<Array> outputs = make_outputs(result_leaves(types), batch, opt_);
    std::vector<Value> results;
    std::vector<std::string> names;
    std::vector<SourceLoc> locs;
    for (const auto& blk : p_.blocks) {
      names.push_back(blk.label.name);
      locs.push_back(blk.label.loc);
    }
    if (opt_.trace && opt_.trace->on()) opt_.trace->header("reference", batch, names, locs);
    if (opt_.stats) {
      opt_.stats->init(names);
      opt_.stats->batched = false;  // one thread at a time: utilization does not apply
    }
    res.execution = all_interpreted(names, locs, "the reference interpreter runs every block");
    poll_.at = next_check(opt_, 0);
    for (int64_t t = 0; t < batch && !res.error; ++t) {
      thread_ = t;
      batch_ = batch;
      results.clear();
      res.error = run_thread(inputs, results);
      if (!res.error) put_results(outputs, t, results);
      if (res.error && opt_.record_errors) {  // this thread stops; the next one runs
        res.failed.push_back(std::move(*res.error));
        res.error.reset();
      }
    }
    res.steps = steps_;
    res.cancelled = poll_.cancelled;
    res.finished = thread_;
    res.running = running_;
    if (res.error) return res;
    res.outputs = std::move(outputs);
    finish_failed(res.outputs, res.failed);
    return res;
  }

 private:
  const Program& p_;
  RunOptions opt_;
  std::map<std::string, size_t> labels_;
  std::map<std::string, uint32_t> index_;
  std::vector<Slot> slots_;
  std::vector<std::vector<std::vector<Value>>> constants_;
  std::vector<std::vector<PrimAttrs>> attrs_;
  // Names resolved once: [block][instr] the variable operands' slots (0 for a
  // literal) followed by a pop's slots; the destination's slot (kTupleOut for
  // a tuple pattern); [block] a terminator's condition slot and targets (a
  // push_goto's return point is `then`, its callee `otherwise`).
  static constexpr uint32_t kTupleOut = ~uint32_t{0};
  std::vector<std::vector<std::vector<uint32_t>>> arg_slots_;
  std::vector<std::vector<uint32_t>> out_slots_;
  std::vector<std::vector<Type>> out_types_;  // a primitive's result type
  struct Jump {
    uint32_t cond = 0;
    size_t then = 0, otherwise = 0;
  };
  std::vector<Jump> jumps_;
  std::vector<const Value*> args_;  // an instruction's operands (reused)
  std::vector<RunningThread> running_;  // at a stop: the thread that was running
  std::vector<std::vector<Value>> stacks_;  // per slot; non-full slots hold at most one
  int64_t thread_ = 0, batch_ = 0, steps_ = 0;
  Poller poll_;  // cancel and progress
  size_t block_ = 0;

  RuntimeError error(SourceLoc loc, std::string msg) const {
    auto [fn, blk] = lowered_block_source(p_.blocks[block_]);
    return RuntimeError{loc, std::move(msg), thread_, batch_, fn, blk};
  }

  std::optional<RuntimeError> read(const std::string& name, SourceLoc loc, const Value*& out) {
    return read_slot(index_.at(name), name, loc, out);
  }

  std::optional<RuntimeError> read_slot(uint32_t slot, const std::string& name, SourceLoc loc,
                                        const Value*& out) {
    auto& st = stacks_[slot];
    if (st.empty())
      return error(loc, "read of '" + name +
                            "', which holds no value here (the lowered program is unbalanced)");
    out = &st.back();
    return std::nullopt;
  }

  std::optional<RuntimeError> write(const Pattern& p, Value v, SourceLoc loc) {
    if (p.is_tuple) {
      for (size_t i = 0; i < p.elems.size() && i < v.elems.size(); ++i)
        if (auto e = write(p.elems[i], std::move(v.elems[i]), loc)) return e;
      return std::nullopt;
    }
    return write_slot(index_.at(p.name), p, std::move(v), loc);
  }

  // A plain (not tuple) destination `p`, whose slot is `s`.
  std::optional<RuntimeError> write_slot(size_t s, const Pattern& p, Value v, SourceLoc loc) {
    auto& st = stacks_[s];
    if (p.in_place) {
      if (st.empty()) return error(loc, empty_stack_message("in-place update", p.name));
      st.back() = std::move(v);
    } else if (slots_[s].full) {
      if (static_cast<int64_t>(st.size()) >= opt_.max_stack_depth)
        return error(loc, variable_stack_depth_message(opt_.max_stack_depth, p.name));
      st.push_back(std::move(v));
    } else if (st.empty()) {
      st.push_back(std::move(v));
    } else {
      st.back() = std::move(v);
    }
    return std::nullopt;
  }

  std::optional<RuntimeError> operand(size_t b, size_t i, size_t a, const Value*& out) {
    const Instr& in = p_.blocks[b].instrs[i];
    if (!in.args[a].is_var) {
      out = &constants_[b][i][a];
      return std::nullopt;
    }
    return read_slot(arg_slots_[b][i][a], in.args[a].name, in.args[a].loc, out);
  }

  std::optional<RuntimeError> exec(size_t b, size_t i) {
    const Instr& in = p_.blocks[b].instrs[i];
    if (in.kind == InstrKind::Pop) {
      for (size_t k = 0; k < in.popped.size(); ++k) {
        const auto& n = in.popped[k];
        size_t s = arg_slots_[b][i][in.args.size() + k];
        if (!slots_[s].full) continue;
        if (stacks_[s].empty()) return error(n.loc, empty_stack_message("pop", n.name));
        stacks_[s].pop_back();
      }
      return std::nullopt;
    }
    std::vector<const Value*>& args = args_;
    args.resize(in.args.size());
    for (size_t a = 0; a < in.args.size(); ++a)
      if (auto e = operand(b, i, a, args[a])) return e;
    if (in.kind == InstrKind::Copy) return dest(b, i, *args[0]);
    if (in.kind != InstrKind::Prim) return error(in.loc, "'call' cannot run in a lowered program");
    if (in.prim == PrimId::Tuple) {
      Value v;
      v.is_tuple = true;
      for (const Value* a : args) v.elems.push_back(*a);
      return dest(b, i, std::move(v));
    }
    Value result = Value::of_type(out_types_[b][i]);
    if (auto e = apply_kernel(in.prim, args, attrs_[b][i], result, opt_.first_thread + thread_,
                              opt_.progress_table))
      return error(in.callee.loc, *e);
    return dest(b, i, std::move(result));
  }

  // Writes instruction i of block b's destination.
  std::optional<RuntimeError> dest(size_t b, size_t i, Value v) {
    const Instr& in = p_.blocks[b].instrs[i];
    uint32_t s = out_slots_[b][i];
    if (s == kTupleOut) return write(in.out, std::move(v), in.loc);
    return write_slot(s, in.out, std::move(v), in.loc);
  }

  Type pattern_type(const Pattern& p) const {
    if (!p.is_tuple) return slots_[index_.at(p.name)].type;
    std::vector<Type> elems;
    for (const auto& e : p.elems) elems.push_back(pattern_type(e));
    return Type::tuple(std::move(elems));
  }

  std::optional<RuntimeError> run_thread(const std::vector<Array>& inputs,
                                         std::vector<Value>& results) {
    stacks_.assign(slots_.size(), {});
    for (size_t i = 0; i < p_.inputs.size() && i < inputs.size(); ++i) {
      const Array& a = inputs[i];
      Value v = Value::tensor(a.type);
      size_t bytes = v.data.size();
      int64_t row = a.batch == 1 ? 0 : thread_;
      if (bytes) std::memcpy(v.data.data(), a.data.data() + row * bytes, bytes);
      stacks_[index_.at(p_.inputs[i].name)].push_back(std::move(v));
    }
    std::vector<size_t> pcs{kHalt};
    block_ = 0;
    int64_t thread_steps = 0;  // blocks this thread started (--max-steps)
    while (true) {
      ++steps_;
      const Block& blk = p_.blocks[block_];
      if (opt_.max_steps > 0 && ++thread_steps > opt_.max_steps)
        return error(blk.label.loc, max_steps_message(opt_.max_steps));
      if (steps_ > poll_.at) [[unlikely]]
        if (auto msg = poll_.poll(opt_, steps_, thread_, batch_)) {
          auto [fn, name] = lowered_block_source(blk);
          running_.push_back({opt_.first_thread + thread_, fn, name, blk.label.loc});
          return error(blk.label.loc, *msg);
        }
      uint32_t lane = static_cast<uint32_t>(thread_);
      if (opt_.trace && opt_.trace->on())
        opt_.trace->step(TraceStep{steps_ - 1, static_cast<uint32_t>(block_), &lane, 1, -1,
                                   static_cast<int64_t>(pcs.size()), nullptr});
      if (opt_.stats) {
        int64_t prims = 0;
        for (const auto& in : blk.instrs) prims += in.kind == InstrKind::Prim;
        opt_.stats->record_step(block_, 1, 0, prims);
        opt_.stats->peak_stack_depth =
            std::max<int64_t>(opt_.stats->peak_stack_depth, static_cast<int64_t>(pcs.size()));
      }
      for (size_t i = 0; i < blk.instrs.size(); ++i)
        if (auto e = exec(block_, i)) return e;
      const Terminator& t = blk.term;
      size_t next = kHalt;
      switch (t.kind) {
        case TermKind::Branch: {
          const Value* c = nullptr;
          if (auto e = read_slot(jumps_[block_].cond, t.cond.name, t.cond.loc, c)) return e;
          bool taken = c->data.size() && static_cast<uint8_t>(c->data.data()[0]) != 0;
          next = taken ? jumps_[block_].then : jumps_[block_].otherwise;
          break;
        }
        case TermKind::Goto:
          next = jumps_[block_].then;
          break;
        case TermKind::PushGoto:
          if (static_cast<int64_t>(pcs.size()) >= opt_.max_stack_depth)
            return error(t.loc,
                         stack_depth_message(opt_.max_stack_depth, owner_function(t.target2.name)));
          pcs.push_back(jumps_[block_].then);
          next = jumps_[block_].otherwise;
          break;
        case TermKind::IndirectGoto:
          next = pcs.back();
          pcs.pop_back();
          break;
        case TermKind::Halt:
        case TermKind::Return:
          next = kHalt;
          break;
      }
      if (next == kHalt) break;
      block_ = next;
    }
    for (const auto& o : p_.outputs) {
      const Value* v = nullptr;
      if (auto e = read(o.name, o.loc, v)) return e;
      results.push_back(*v);
    }
    return std::nullopt;
  }
};

}  // namespace

RunResult run_reference_program(const Program& p, const FunctionTypes& types,
                                const std::vector<Array>& inputs, int64_t batch,
                                const RunOptions& opt) {
  return ProgramInterpreter(p, types, opt).run(inputs, batch);
}

}  // namespace ab
