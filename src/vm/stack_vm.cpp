#include "vm/stack_vm.h"

#include <chrono>
#include <cstring>
#include <map>
#include <set>

#include "ir/lowered_names.h"
#include "ir/printer.h"
#include "passes/sharing.h"
#include "support/log.h"
#include "vm/kernel.h"
#include "vm/lane_stack.h"
#include "vm/literal.h"
#include "vm/slots.h"

namespace ab {

namespace {

constexpr int64_t kChunk = 256;
constexpr uint32_t kHalt = UINT32_MAX;

// One tensor leaf of one variable, stored by its class.
struct Leaf {
  std::string var;
  StorageClass cls = StorageClass::Register;
  bool shared = false;
  bool shared_ready = false;
  TensorType type;
  size_t ebytes = 0;
  Buffer top;                   // register/full: one event per thread; shared: one event
  Buffer scratch;               // temporary/null: one event per lane of a chunk
  std::vector<uint32_t> depth;  // full: stack depth per thread (the top included)
  LaneStack<uint64_t> below;    // full: the values below the top, in 8-byte words
  size_t words = 0;             // words per event
  bool full() const { return cls == StorageClass::Full && !shared; }
  bool in_scratch() const {
    return !shared && (cls == StorageClass::Temporary || cls == StorageClass::Null);
  }
};

struct Ref {
  int32_t leaf = -1;      // a variable's leaf, or
  int32_t constant = -1;  // a literal
};

struct Out {
  int32_t leaf;
  bool in_place;
};

struct Op {
  enum class Kind : uint8_t { Kernel, Copy, Pop };
  Kind kind = Kind::Kernel;
  KernelFn fn = nullptr;
  PrimAttrs attrs;
  std::vector<Ref> args;
  std::vector<Out> outs;
  std::vector<int32_t> pops;
  bool shared = false;  // computes values stored once: runs once
  SourceLoc loc;
};

struct CBlock {
  std::vector<Op> ops;
  TermKind term = TermKind::Halt;
  int32_t cond = -1;  // Branch: the condition's leaf (or constant, negative - 2)
  uint32_t t1 = 0, t2 = 0;
  int64_t prims = 0;
  SourceLoc term_loc;
};

struct Constant {
  TensorType type;
  Buffer data;
};

class StackVM {
 public:
  StackVM(const Program& p, const FunctionTypes& types, const std::vector<Array>& inputs,
          int64_t n_inputs, const RunOptions& opt)
      : p_(p), inputs_(inputs), n_inputs_(n_inputs), opt_(opt) {
    lanes_ = opt.lanes > 0 ? std::min<int64_t>(opt.lanes, n_inputs) : n_inputs;
    for (size_t i = 0; i < p.blocks.size(); ++i)
      label_index_[p.blocks[i].label.name] = static_cast<uint32_t>(i);
    analyze_sharing();
    make_leaves(types);
    compile(types);
  }

  RunResult run() {
    RunResult res;
    // Outputs: one Array per output leaf, a row per input.
    std::vector<TensorType> out_types;
    for (const auto& o : p_.outputs)
      for (int32_t l : var_leaves_.at(o.name)) out_types.push_back(leaves_[l].type);
    for (const auto& t : out_types) outputs_.emplace_back(t, n_inputs_);

    size_t nb = p_.blocks.size();
    wait_.assign(nb, {});
    bits_.assign((nb + 63) / 64, 0);
    pcs_.init(static_cast<size_t>(lanes_), 1);
    lane_input_.assign(static_cast<size_t>(lanes_), 0);
    set_shared_inputs();
    for (int64_t t = 0; t < lanes_; ++t) start_lane(static_cast<uint32_t>(t), next_input_++);
    live_ = lanes_;
    peak_depth_ = lanes_ > 0 ? 1 : 0;  // the entry function's frame
    if (opt_.trace && opt_.trace->on()) {
      std::vector<std::string> names;
      for (const auto& b : p_.blocks) names.push_back(b.label.name);
      opt_.trace->header("stack", lanes_, names);
    }
    if (opt_.stats) {
      std::vector<std::string> names;
      for (const auto& b : p_.blocks) names.push_back(b.label.name);
      opt_.stats->init(names);
    }
    std::vector<uint32_t> cur;
    int64_t step = 0;
    while (live_ > 0) {
      uint32_t b = next_block();
      if (b == kHalt) break;  // every remaining thread is stuck (cannot happen in a sound program)
      cur.swap(wait_[b]);
      wait_[b].clear();
      bits_[b >> 6] &= ~(uint64_t{1} << (b & 63));
      ++step;
      if (opt_.max_steps > 0 && step > opt_.max_steps) {
        res.error = error_at(b, p_.blocks[b].label.loc, cur[0], max_steps_message(opt_.max_steps));
        break;
      }
      if (opt_.trace && opt_.trace->on())
        opt_.trace->step(step - 1, p_.blocks[b].label.name, b, cur.data(), cur.size());
      if (opt_.stats)
        opt_.stats->record_step(b, static_cast<int64_t>(cur.size()), live_, blocks_[b].prims);
      for (size_t s = 0; s < cur.size() && !res.error; s += kChunk) {
        int64_t n = std::min<int64_t>(kChunk, static_cast<int64_t>(cur.size() - s));
        res.error = run_chunk(b, cur.data() + s, n);
      }
      if (res.error) break;
    }
    res.steps = step;
    if (opt_.stats)
      opt_.stats->peak_stack_depth = std::max(opt_.stats->peak_stack_depth, peak_depth_);
    if (!res.error) res.outputs = std::move(outputs_);
    return res;
  }

 private:
  const Program& p_;
  const std::vector<Array>& inputs_;
  int64_t n_inputs_;
  RunOptions opt_;
  int64_t lanes_ = 0;
  std::map<std::string, uint32_t> label_index_;
  std::map<std::string, bool> shared_var_;
  std::map<std::string, std::vector<int32_t>> var_leaves_;
  std::vector<Leaf> leaves_;
  std::vector<Constant> constants_;
  std::vector<CBlock> blocks_;
  std::vector<std::vector<uint32_t>> wait_;
  std::vector<uint64_t> bits_;
  LaneStack<uint32_t> pcs_;  // program counters: where each frame returns
  std::vector<int64_t> lane_input_;
  std::vector<Array> outputs_;
  int64_t next_input_ = 0;
  int64_t live_ = 0;
  int64_t peak_depth_ = 0;

  // ---- set-up ---------------------------------------------------------

  // Which variables hold one value for every thread (passes/sharing): the
  // roots are the inputs given with batch 1.
  void analyze_sharing() {
    std::vector<std::string> params;
    std::vector<bool> roots;
    for (size_t i = 0; i < p_.inputs.size(); ++i) {
      params.push_back(p_.inputs[i].name);
      roots.push_back(i < inputs_.size() && inputs_[i].batch == 1);
    }
    SharingInfo info = sharing(p_.blocks, params, roots);
    for (const auto& v : p_.vars) shared_var_[v.name.name] = info.shared(v.name.name);
    if (log_enabled(LogLevel::Debug)) {
      std::string names;
      for (const auto& [v, src] : info.source) names += " " + v;
      log_debug("stack VM: " + std::to_string(info.source.size()) + " of " +
                std::to_string(p_.vars.size()) + " variables shared:" + names);
    }
  }

  void make_leaves(const FunctionTypes& types) {
    std::vector<std::string> inputs;
    for (const auto& i : p_.inputs) inputs.push_back(i.name);
    Slots slots = compile_slots(p_.blocks, inputs, types, &p_.vars);
    for (size_t s = 0; s < p_.vars.size(); ++s) {
      const VarDecl& v = p_.vars[s];
      std::vector<int32_t> ids;
      for (uint32_t j = 0; j < slots.leaf_count[s]; ++j) {
        const TensorType& tt = slots.leaf_types[slots.first_leaf[s] + j];
        Leaf l;
        l.var = v.name.name;
        l.cls = v.storage;
        l.shared = shared_var_[v.name.name];
        l.type = tt;
        l.ebytes = static_cast<size_t>(tt.num_elements()) * dtype_size(tt.dtype);
        l.words = (l.ebytes + 7) / 8;
        if (l.shared) {
          l.top.resize(l.ebytes);
        } else if (l.in_scratch()) {
          l.scratch.resize(l.ebytes * kChunk);
        } else {
          l.top.resize(l.ebytes * static_cast<size_t>(lanes_));
          if (l.full()) {
            l.depth.assign(static_cast<size_t>(lanes_), 0);
            l.below.init(static_cast<size_t>(lanes_), l.words);
          }
        }
        ids.push_back(static_cast<int32_t>(leaves_.size()));
        leaves_.push_back(std::move(l));
      }
      var_leaves_[v.name.name] = std::move(ids);
    }
  }

  void flatten(const Pattern& p, std::vector<Out>& out) const {
    if (p.is_tuple) {
      for (const auto& e : p.elems) flatten(e, out);
      return;
    }
    for (int32_t l : var_leaves_.at(p.name)) out.push_back({l, p.in_place});
  }

  Ref constant(const Literal& lit, const std::optional<Type>& t) {
    Value v = literal_constant(lit, t);
    constants_.push_back({v.type, std::move(v.data)});
    return Ref{-1, static_cast<int32_t>(constants_.size() - 1)};
  }

  void compile(const FunctionTypes& types) {
    for (size_t bi = 0; bi < p_.blocks.size(); ++bi) {
      const Block& b = p_.blocks[bi];
      CBlock cb;
      for (size_t ii = 0; ii < b.instrs.size(); ++ii) {
        const Instr& in = b.instrs[ii];
        Op op;
        op.loc = in.kind == InstrKind::Prim ? in.callee.loc : in.loc;
        if (in.kind == InstrKind::Pop) {
          op.kind = Op::Kind::Pop;
          for (const auto& n : in.popped)
            for (int32_t l : var_leaves_.at(n.name))
              if (leaves_[l].full()) op.pops.push_back(l);
          if (!op.pops.empty()) cb.ops.push_back(std::move(op));
          continue;
        }
        for (size_t a = 0; a < in.args.size(); ++a) {
          const Operand& o = in.args[a];
          if (o.is_var) {
            for (int32_t l : var_leaves_.at(o.name)) op.args.push_back(Ref{l, -1});
          } else {
            op.args.push_back(constant(o.lit, types.operand_types[bi][ii][a]));
          }
        }
        flatten(in.out, op.outs);
        bool is_kernel = in.kind == InstrKind::Prim && in.prim != PrimId::Tuple;
        op.kind = is_kernel ? Op::Kind::Kernel : Op::Kind::Copy;
        if (is_kernel) {
          op.fn = kernel_for(in.prim);
          op.attrs = resolve_attrs(in);
        }
        if (in.kind == InstrKind::Prim) ++cb.prims;
        op.shared = !op.outs.empty();
        for (const auto& o : op.outs) op.shared = op.shared && leaves_[o.leaf].shared;
        cb.ops.push_back(std::move(op));
      }
      const Terminator& t = b.term;
      cb.term = t.kind;
      cb.term_loc = t.loc;
      if (t.kind == TermKind::Branch) {
        cb.cond = var_leaves_.at(t.cond.name).front();
        cb.t1 = label_index_.at(t.target.name);
        cb.t2 = label_index_.at(t.target2.name);
      } else if (t.kind == TermKind::Goto) {
        cb.t1 = label_index_.at(t.target.name);
      } else if (t.kind == TermKind::PushGoto) {
        cb.t1 = label_index_.at(t.target.name);   // where to return
        cb.t2 = label_index_.at(t.target2.name);  // the callee
      }
      blocks_.push_back(std::move(cb));
    }
  }

  void set_shared_inputs() {
    for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i) {
      const auto& ls = var_leaves_.at(p_.inputs[i].name);
      for (int32_t l : ls) {
        Leaf& leaf = leaves_[l];
        if (!leaf.shared) continue;
        if (leaf.ebytes) std::memcpy(leaf.top.data(), inputs_[i].data.data(), leaf.ebytes);
        leaf.shared_ready = true;
      }
    }
  }

  // Lane t begins input `input`: its inputs, empty stacks, halt under its PC.
  void start_lane(uint32_t t, int64_t input) {
    lane_input_[t] = input;
    for (auto& leaf : leaves_)
      if (leaf.full()) {
        leaf.depth[t] = 0;
        leaf.below.clear(t);
      }
    for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i) {
      const Array& a = inputs_[i];
      for (int32_t l : var_leaves_.at(p_.inputs[i].name)) {
        Leaf& leaf = leaves_[l];
        if (leaf.shared || leaf.in_scratch()) continue;
        int64_t row = a.batch == 1 ? 0 : input;
        if (leaf.ebytes)
          std::memcpy(leaf.top.data() + t * leaf.ebytes, a.data.data() + row * leaf.ebytes,
                      leaf.ebytes);
        if (leaf.full()) leaf.depth[t] = 1;
      }
    }
    pcs_.clear(t);
    pcs_.push(t, &kHalt);
    push_lane(0, t);
  }

  void push_lane(uint32_t block, uint32_t t) {
    wait_[block].push_back(t);
    bits_[block >> 6] |= uint64_t{1} << (block & 63);
  }

  void append_lanes(uint32_t block, const uint32_t* lanes, int64_t n) {
    if (n == 0) return;
    auto& w = wait_[block];
    w.insert(w.end(), lanes, lanes + n);
    bits_[block >> 6] |= uint64_t{1} << (block & 63);
  }

  uint32_t next_block() const {
    for (size_t w = 0; w < bits_.size(); ++w)
      if (bits_[w])
        return static_cast<uint32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(bits_[w])));
    return kHalt;
  }

  RuntimeError error_at(uint32_t block, SourceLoc loc, uint32_t lane, std::string msg) const {
    auto [fn, blk] = split_lowered_label(p_.blocks[block].label.name);
    return RuntimeError{loc, std::move(msg), lane_input_[lane], n_inputs_, fn, blk};
  }

  // ---- one chunk of one block -------------------------------------------

  ArgView view(const Ref& r, const uint32_t* idx) const {
    if (r.constant >= 0) {
      const Constant& c = constants_[r.constant];
      return ArgView{c.data.data(), Access::Shared, nullptr, &c.type};
    }
    const Leaf& l = leaves_[r.leaf];
    if (l.shared) return ArgView{l.top.data(), Access::Shared, nullptr, &l.type};
    if (l.in_scratch()) return ArgView{l.scratch.data(), Access::Dense, nullptr, &l.type};
    return ArgView{l.top.data(), Access::Gather, idx, &l.type};
  }

  OutView out_view(const Out& o, const uint32_t* idx) {
    Leaf& l = leaves_[o.leaf];
    if (l.shared) return OutView{l.top.data(), Access::Dense, nullptr, &l.type};
    if (l.in_scratch()) return OutView{l.scratch.data(), Access::Dense, nullptr, &l.type};
    return OutView{l.top.data(), Access::Gather, idx, &l.type};
  }

  // A push: the current top of each lane moves to the stack below it.
  void spill(Leaf& l, const uint32_t* idx, int64_t n) {
    const size_t eb = l.ebytes;
    if (eb == 0) {
      for (int64_t j = 0; j < n; ++j) ++l.depth[idx[j]];
      return;
    }
    uint64_t buf[64];
    for (int64_t j = 0; j < n; ++j) {
      uint32_t t = idx[j];
      if (l.depth[t]++ == 0) continue;
      if (eb == 8) {
        l.below.push(t, reinterpret_cast<const uint64_t*>(l.top.data()) + t);
      } else if (l.words <= 64) {
        buf[l.words - 1] = 0;
        std::memcpy(buf, l.top.data() + t * eb, eb);
        l.below.push(t, buf);
      } else {
        std::vector<uint64_t> big(l.words, 0);
        std::memcpy(big.data(), l.top.data() + t * eb, eb);
        l.below.push(t, big.data());
      }
    }
  }

  std::optional<RuntimeError> pop(uint32_t b, const Op& op, const uint32_t* idx, int64_t n) {
    for (int32_t li : op.pops) {
      Leaf& l = leaves_[li];
      const size_t eb = l.ebytes;
      uint64_t buf[64];
      for (int64_t j = 0; j < n; ++j) {
        uint32_t t = idx[j];
        uint32_t d = l.depth[t];
        if (d == 0)
          return error_at(
              b, op.loc, t,
              "pop of '" + l.var + "', whose stack is empty (the lowered program is unbalanced)");
        l.depth[t] = --d;
        if (d == 0 || eb == 0) continue;
        if (eb == 8) {
          l.below.pop(t, reinterpret_cast<uint64_t*>(l.top.data()) + t);
        } else if (l.words <= 64) {
          l.below.pop(t, buf);
          std::memcpy(l.top.data() + t * eb, buf, eb);
        } else {
          std::vector<uint64_t> big(l.words);
          l.below.pop(t, big.data());
          std::memcpy(l.top.data() + t * eb, big.data(), eb);
        }
      }
    }
    return std::nullopt;
  }

  static void copy_lanes(const ArgView& src, const OutView& dst, int64_t n, size_t eb) {
    if (eb == 0) return;
    const std::byte* s = static_cast<const std::byte*>(src.data);
    std::byte* d = static_cast<std::byte*>(dst.data);
    if (eb == 8) {
      const uint64_t* s8 = reinterpret_cast<const uint64_t*>(s);
      uint64_t* d8 = reinterpret_cast<uint64_t*>(d);
      const uint32_t* si = src.index;
      const uint32_t* di = dst.index;
      if (dst.access == Access::Gather) {
        if (src.access == Access::Gather)
          for (int64_t j = 0; j < n; ++j) d8[di[j]] = s8[si[j]];
        else if (src.access == Access::Dense)
          for (int64_t j = 0; j < n; ++j) d8[di[j]] = s8[j];
        else
          for (int64_t j = 0; j < n; ++j) d8[di[j]] = s8[0];
      } else {
        if (src.access == Access::Gather)
          for (int64_t j = 0; j < n; ++j) d8[j] = s8[si[j]];
        else if (src.access == Access::Dense)
          for (int64_t j = 0; j < n; ++j) d8[j] = s8[j];
        else
          for (int64_t j = 0; j < n; ++j) d8[j] = s8[0];
      }
      return;
    }
    for (int64_t j = 0; j < n; ++j)
      std::memmove(d + lane_slot(dst.access, dst.index, j) * eb,
                   s + lane_slot(src.access, src.index, j) * eb, eb);
  }

  std::optional<RuntimeError> run_op(uint32_t b, Op& op, const uint32_t* idx, int64_t n) {
    if (op.kind == Op::Kind::Pop) return pop(b, op, idx, n);
    if (op.shared) {
      // Computed once, for every thread.
      bool ready = true;
      for (const auto& o : op.outs) ready = ready && leaves_[o.leaf].shared_ready;
      if (ready) return std::nullopt;
      if (auto e = execute(b, op, nullptr, 1, idx)) return e;
      for (const auto& o : op.outs) leaves_[o.leaf].shared_ready = true;
      return std::nullopt;
    }
    for (const auto& o : op.outs) {
      Leaf& l = leaves_[o.leaf];
      if (l.full() && !o.in_place) spill(l, idx, n);
    }
    return execute(b, op, idx, n, idx);
  }

  // Runs the op on n lanes (idx null: a shared op, once).
  std::optional<RuntimeError> execute(uint32_t b, const Op& op, const uint32_t* idx, int64_t n,
                                      const uint32_t* lanes) {
    // Uninitialised: every used slot is written below.
    alignas(ArgView) unsigned char arg_store[16 * sizeof(ArgView)];
    alignas(OutView) unsigned char out_store[16 * sizeof(OutView)];
    ArgView* args = reinterpret_cast<ArgView*>(arg_store);
    OutView* outs = reinterpret_cast<OutView*>(out_store);
    std::vector<ArgView> big_args;
    std::vector<OutView> big_outs;
    ArgView* av = args;
    OutView* ov = outs;
    if (op.args.size() > 16) {
      big_args.resize(op.args.size());
      av = big_args.data();
    }
    if (op.outs.size() > 16) {
      big_outs.resize(op.outs.size());
      ov = big_outs.data();
    }
    for (size_t a = 0; a < op.args.size(); ++a) av[a] = view(op.args[a], idx);
    for (size_t o = 0; o < op.outs.size(); ++o) ov[o] = out_view(op.outs[o], idx);
    if (op.kind == Op::Kind::Copy) {
      for (size_t o = 0; o < op.outs.size() && o < op.args.size(); ++o)
        copy_lanes(av[o], ov[o], n, leaves_[op.outs[o].leaf].ebytes);
      return std::nullopt;
    }
    KernelCall call;
    call.n = n;
    call.args = av;
    call.nargs = static_cast<int>(op.args.size());
    call.outs = ov;
    call.nouts = static_cast<int>(op.outs.size());
    call.attrs = &op.attrs;
    KernelError err;
    if (!op.fn(call, &err)) {
      int64_t j = err.lane >= 0 && err.lane < n ? err.lane : 0;
      return error_at(b, op.loc, lanes[idx ? j : 0], err.message);
    }
    return std::nullopt;
  }

  std::optional<RuntimeError> run_chunk(uint32_t b, const uint32_t* idx, int64_t n) {
    CBlock& cb = blocks_[b];
    for (auto& op : cb.ops)
      if (auto e = run_op(b, op, idx, n)) return e;
    switch (cb.term) {
      case TermKind::Goto:
        append_lanes(cb.t1, idx, n);
        break;
      case TermKind::Branch: {
        // Split branch-free into two local lists, then append each in bulk.
        uint32_t yes[kChunk], no[kChunk];
        int64_t ny = 0, nn = 0;
        const Leaf& l = leaves_[cb.cond];
        if (l.shared) {
          bool c = static_cast<uint8_t>(*l.top.data()) != 0;
          append_lanes(c ? cb.t1 : cb.t2, idx, n);
          break;
        }
        const uint8_t* cond =
            reinterpret_cast<const uint8_t*>(l.in_scratch() ? l.scratch.data() : l.top.data());
        if (l.in_scratch()) {
          for (int64_t j = 0; j < n; ++j) {
            uint32_t t = idx[j];
            bool c = cond[j] != 0;
            yes[ny] = t;
            no[nn] = t;
            ny += c;
            nn += !c;
          }
        } else {
          for (int64_t j = 0; j < n; ++j) {
            uint32_t t = idx[j];
            bool c = cond[t] != 0;
            yes[ny] = t;
            no[nn] = t;
            ny += c;
            nn += !c;
          }
        }
        append_lanes(cb.t1, yes, ny);
        append_lanes(cb.t2, no, nn);
        break;
      }
      case TermKind::PushGoto: {
        int64_t deepest = 0;
        for (int64_t j = 0; j < n; ++j) {
          uint32_t t = idx[j];
          int64_t depth = pcs_.size(t);  // frames, counting the halt at the bottom
          if (depth > opt_.max_stack_depth) {
            auto [fn, blk] = split_lowered_label(p_.blocks[cb.t2].label.name);
            return error_at(b, cb.term_loc, t, stack_depth_message(opt_.max_stack_depth, fn));
          }
          pcs_.push(t, &cb.t1);
          deepest = std::max(deepest, depth + 1);  // frames now active, the entry's included
        }
        peak_depth_ = std::max(peak_depth_, deepest);
        append_lanes(cb.t2, idx, n);
        break;
      }
      case TermKind::IndirectGoto: {
        // Most lanes of a chunk return to the same few blocks: group them
        // locally and append each group in bulk.
        constexpr int kGroups = 8;
        uint32_t target[kGroups];
        uint32_t lanes[kGroups][kChunk];
        int64_t count[kGroups];
        int groups = 0;
        for (int64_t j = 0; j < n; ++j) {
          uint32_t t = idx[j];
          uint32_t r;
          pcs_.pop(t, &r);
          if (r == kHalt) {
            halt(t);
            continue;
          }
          int g = 0;
          while (g < groups && target[g] != r) ++g;
          if (g == groups) {
            if (groups == kGroups) {
              push_lane(r, t);
              continue;
            }
            target[groups] = r;
            count[groups++] = 0;
          }
          lanes[g][count[g]++] = t;
        }
        for (int g = 0; g < groups; ++g) append_lanes(target[g], lanes[g], count[g]);
        break;
      }
      case TermKind::Halt:
      case TermKind::Return:
        for (int64_t j = 0; j < n; ++j) halt(idx[j]);
        break;
    }
    return std::nullopt;
  }

  // A thread is done: its outputs go to its input's row; in refill mode the
  // lane takes the next input.
  void halt(uint32_t t) {
    int64_t row = lane_input_[t];
    size_t k = 0;
    for (const auto& o : p_.outputs) {
      for (int32_t li : var_leaves_.at(o.name)) {
        const Leaf& l = leaves_[li];
        Array& out = outputs_[k++];
        const std::byte* src = l.shared ? l.top.data() : l.top.data() + t * l.ebytes;
        if (l.ebytes) std::memcpy(out.data.data() + row * l.ebytes, src, l.ebytes);
      }
    }
    if (next_input_ < n_inputs_) {
      start_lane(t, next_input_++);
    } else {
      --live_;
    }
  }
};

}  // namespace

RunResult run_stack(const Program& p, const FunctionTypes& types, const std::vector<Array>& inputs,
                    int64_t batch, const RunOptions& opt) {
  if (batch == 0) {
    RunResult r;
    for (const auto& o : p.outputs) {
      (void)o;
    }
    // No threads: empty outputs of the right types.
    std::vector<TensorType> leaves;
    for (const auto& o : p.outputs) {
      auto it = types.vars.find(o.name);
      if (it != types.vars.end()) it->second.leaves(leaves);
    }
    for (const auto& t : leaves) r.outputs.emplace_back(t, 0);
    return r;
  }
  StackVM vm(p, types, inputs, batch, opt);
  return vm.run();
}

}  // namespace ab
