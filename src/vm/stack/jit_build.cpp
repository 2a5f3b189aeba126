// The code the stack VM's plan picked: compiling it (build_jit, through
// src/vm/jit/jit.h, in the background when tiered), wiring the compiled
// functions to the blocks (install_code) and binding the compiled blocks to
// this run's arrays (bind_blocks).
#include <cstdio>
#include <set>

#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

void* StackVM::thread_operand(int32_t l) {
  if (l == kRowLeaf) return lane_input_.data();
  return &opt_.first_thread;
}

// Compiled blocks: each one's base (jit.h, BlockFn), for this run's arrays.
void StackVM::bind_blocks() {
  for (CBlock& cb : blocks_)
    for (Seg& s : cb.segs) {
      for (auto [k, l] : s.thread_operands) s.base[k] = thread_operand(l);
      for (size_t c = 0; c < s.calls.size(); ++c) {
        s.calls[c].vm = this;
        s.base[s.call_base + 2 * c] = reinterpret_cast<void*>(&StackVM::seg_call);
        s.base[s.call_base + 2 * c + 1] = &s.calls[c];
      }
    }
  for (CBlock& cb : blocks_) {
    if (cb.mode != ExecMode::WholeBlock && cb.mode != ExecMode::Chained) continue;
    auto& base = cb.block_base;
    base.clear();
    for (int32_t l : cb.block_slots) {
      if (l == kRowLeaf || l == kFirstThreadLeaf) {
        base.push_back(thread_operand(l));
        continue;
      }
      if (l <= kConstLeaf) {  // a tensor literal (get, size)
        base.push_back(const_cast<std::byte*>(constants_[kConstLeaf - l].data.data()));
        continue;
      }
      Leaf& x = leaves_[l];
      base.push_back(x.in_scratch() ? x.scratch.data() : x.top.data());
    }
    for (int32_t l : cb.block_stacks) {
      Leaf& x = leaves_[l];
      base.push_back(x.depth.data());
      base.push_back(const_cast<uint64_t**>(x.below.rows()));
      base.push_back(const_cast<uint32_t*>(x.below.ready_ptr()));
    }
    base.push_back(pc_depth_.data());
    base.push_back(const_cast<uint32_t**>(pcs_.rows()));
    base.push_back(const_cast<uint32_t*>(pcs_.ready_ptr()));
  }
  chain_bases_.clear();
  for (uint32_t b : chain_blocks_) {
    chain_bases_.push_back(blocks_[b].block_base.data());
    // Every row the chain can use, made now: a thread in the chain stops
    // before a level without its row, and each stop costs a block
    // interpreted and a step.
    for (int32_t l : blocks_[b].block_stacks) leaves_[l].below.make_flat_rows();
    pcs_.make_flat_rows();
  }
}

// Compiles the code the plan picked (segments, dense loop bodies, blocks
// compiled whole or chained) and keeps it. If LLVM fails, every block is
// interpreted and the plan says so.
void StackVM::build_jit(std::vector<Candidates>& cand) {
  std::vector<jit::Segment> gsegs, dsegs;
  std::vector<std::pair<uint32_t, size_t>> gwhere;  // (block, segment)
  std::vector<uint32_t> dwhere;
  std::vector<std::vector<int32_t>> dslots;
  size_t nops = 0, fused = 0;
  std::vector<jit::Segment> bsegs;
  std::vector<uint32_t> bwhere;
  bool chain = false;
  for (uint32_t bi = 0; bi < blocks_.size(); ++bi) {
    CBlock& cb = blocks_[bi];
    Candidates& c = cand[bi];
    cb.seg_at.assign(cb.ops.size(), -1);
    nops += cb.ops.size();
    switch (cb.mode) {
      case ExecMode::WholeBlock:
      case ExecMode::Chained:
        chain = chain || cb.mode == ExecMode::Chained;
        c.whole.chained = cb.mode == ExecMode::Chained;
        c.whole.slot_var = c.whole_slots;
        c.whole.stack_var = c.whole_stacks;
        cb.block_slots = std::move(c.whole_slots);
        cb.block_stacks = std::move(c.whole_stacks);
        fused += cb.ops.size();
        bsegs.push_back(std::move(c.whole));
        bwhere.push_back(bi);
        continue;
      case ExecMode::DenseLoop:
      case ExecMode::DenseChunks:
        dsegs.push_back(std::move(c.dense));
        dslots.push_back(std::move(c.dense_slots));
        dwhere.push_back(bi);
        // A body that may fail reruns a chunk op at a time: with segments.
        if (cb.mode == ExecMode::DenseLoop) continue;
        break;
      case ExecMode::Segments:
        break;
      case ExecMode::Interpreted:
        continue;
    }
    for (Seg& s : c.segs) {
      fused += s.last - s.first;
      std::vector<int32_t> sl;
      std::vector<uint32_t> call_ops;
      jit::Segment seg = make_segment(bi, s.first, s.last, false, sl, nullptr, &call_ops);
      for (size_t k = 0; k < seg.slots.size(); ++k) {
        if (sl[k] == kRowLeaf || sl[k] == kFirstThreadLeaf) {  // bound per run (bind_blocks)
          s.thread_operands.push_back({k, sl[k]});
          s.base.push_back(nullptr);
          continue;
        }
        if (sl[k] <= kConstLeaf) {
          s.base.push_back(const_cast<std::byte*>(constants_[kConstLeaf - sl[k]].data.data()));
          continue;
        }
        const Leaf& l = leaves_[sl[k]];
        s.base.push_back(const_cast<std::byte*>(
            seg.slots[k].kind == jit::SlotKind::Scratch ? l.scratch.data() : l.top.data()));
      }
      s.call_base = s.base.size();
      for (uint32_t op : call_ops) {  // bound per run (bind_blocks)
        s.calls.push_back(SegCall{nullptr, bi, op});
        s.base.push_back(nullptr);
        s.base.push_back(nullptr);
      }
      for (const auto& f : seg.ops) s.may_fail = s.may_fail || jit::may_fail(f, seg.slots);
      // What the segment writes, to restore if it fails (values computed
      // once for every thread are not restored: they are written once).
      // Only values the rerun reads before writing them need it: a leaf
      // that some op reads before (or as) the segment first writes it.
      // Nor does a leaf the segment only updates in place by `x = set(x, i,
      // v)`: the rerun writes the same rows again (a chain's draws, a
      // buffer of thousands of rows, are not copied at every step).
      std::set<int32_t> written, read_first, set_in_place, read_otherwise;
      for (size_t i = s.first; i < s.last; ++i) {
        const Op& op = cb.ops[i];
        for (size_t k = 0; k < op.args.size(); ++k) {
          const auto& a = op.args[k];
          if (a.leaf < 0) continue;
          if (!written.count(a.leaf)) read_first.insert(a.leaf);
          const bool in_place = op.kind != Op::Kind::Pop && op.prim == PrimId::Set && k == 0 &&
                                op.outs.size() == 1 && op.outs[0].leaf == a.leaf;
          (in_place ? set_in_place : read_otherwise).insert(a.leaf);
        }
        for (const auto& o : op.outs) written.insert(o.leaf);
      }
      for (int32_t l : set_in_place)
        if (!read_otherwise.count(l)) read_first.erase(l);
      for (size_t i = s.first; i < s.last; ++i) {
        const Op& op = cb.ops[i];
        if (op.kind == Op::Kind::Pop) {  // undone by its tops and depths
          for (int32_t l : op.pops) {
            if (std::find(s.popped.begin(), s.popped.end(), l) == s.popped.end())
              s.popped.push_back(l);
            if (std::find(s.thread_out.begin(), s.thread_out.end(), l) == s.thread_out.end())
              s.thread_out.push_back(l);
          }
          continue;
        }
        if (op.shared) continue;
        for (const auto& o : op.outs) {
          const Leaf& l = leaves_[o.leaf];
          if (l.shared || !read_first.count(o.leaf)) continue;
          std::vector<int32_t>& dst = l.in_scratch() ? s.scratch_out : s.thread_out;
          if (std::find(dst.begin(), dst.end(), o.leaf) == dst.end()) dst.push_back(o.leaf);
        }
      }
      cb.seg_at[s.first] = static_cast<int32_t>(cb.segs.size());
      gwhere.push_back({bi, cb.segs.size()});
      cb.segs.push_back(std::move(s));
      gsegs.push_back(std::move(seg));
    }
  }
  if (gsegs.empty() && dsegs.empty() && bsegs.empty()) {
    jit_log_ = "jit: nothing to compile";
    return;
  }
  std::vector<uint32_t> return_to;  // the blocks calls return to
  for (const auto& cb : blocks_)
    if (cb.term == TermKind::PushGoto) return_to.push_back(cb.t1);
  std::sort(return_to.begin(), return_to.end());
  return_to.erase(std::unique(return_to.begin(), return_to.end()), return_to.end());
  auto frames = static_cast<uint32_t>(
      std::clamp<int64_t>(opt_.max_stack_depth, 0, int64_t{~jit::kChainCounts}));
  if (chain && opt_.stats) frames |= jit::kChainCounts;  // --stats counts the chain's runs
  char line[192];
  std::snprintf(line, sizeof line,
                "%zu of %zu instructions fused into %zu segments and %zu blocks, "
                "%zu loop blocks compiled whole",
                fused, nops, gsegs.size(), bsegs.size(), dsegs.size());
  wiring_.what = line;
  wiring_.gather = std::move(gwhere);
  wiring_.dense = std::move(dwhere);
  wiring_.dense_slots = std::move(dslots);
  wiring_.whole = std::move(bwhere);
  wiring_.chain = chain;
  wiring_.dense_segs = dsegs;
  // Tiered (docs/engine.md, "Tiered execution"): unless the run counts its
  // steps (which must not depend on when the code is ready), it starts at
  // once, interpreted, and switches when the code compiled in the background
  // is ready; code already in the cache comes in before the first step.
  if (!opt_.jit_wait && !counts_steps()) {
    auto pending = jit::compile_in_background(gsegs, dsegs, bsegs, chain ? &return_to : nullptr,
                                              frames, &cached_);
    if (pending->ready() && opt_.jit_switch_at < 0) {
      install_code(pending->code(), pending->error());
      return;
    }
    pending_ = std::move(pending);
    tiered_ = tier_ = true;
    for (CBlock& cb : blocks_) cb.mode = ExecMode::Interpreted;
    return;
  }
  std::string err;
  auto code =
      jit::compile(gsegs, dsegs, bsegs, chain ? &return_to : nullptr, frames, &err, &cached_);
  install_code(code, err);
}

// The compiled functions wired to the blocks the plan compiles, and each
// block switched to its planned mode: before the run, or (tiered) at a step
// boundary, where every thread waits in a block's list and every value is
// in its variable (no dense window, no chain under way), so that the
// compiled modes find the state they expect (bind_blocks then binds them to
// this run's arrays). If LLVM failed (null code), every block is
// interpreted and the plan says so.
void StackVM::install_code(const std::shared_ptr<const jit::Code>& code, const std::string& error) {
  if (!code) {
    jit_log_ = "jit: " + error + "; interpreting";
    for (size_t b = 0; b < blocks_.size(); ++b) {
      blocks_[b].seg_at.clear();
      blocks_[b].mode = plan_[b].mode = ExecMode::Interpreted;
      plan_[b].reason = "the JIT failed (" + error + "): op at a time";
    }
    return;
  }
  code_ = code;
  const Wiring& w = wiring_;
  // The blocks planned Chained form the chain; the other blocks compiled
  // whole (all of them, without a chain) have a BlockFn each, in order.
  chain_blocks_.clear();
  size_t next_fn = 0;
  for (uint32_t b : w.whole) {
    if (w.chain && plan_[b].mode == ExecMode::Chained)
      chain_blocks_.push_back(b);
    else
      blocks_[b].block_fn = code_->block[next_fn++];
  }
  for (size_t k = 0; k < w.gather.size(); ++k)
    blocks_[w.gather[k].first].segs[w.gather[k].second].fn = code_->gather[k];
  size_t max_slots = 0;
  for (size_t k = 0; k < w.dense.size(); ++k) {
    const jit::Segment& seg = w.dense_segs[k];
    DenseLoop& d = blocks_[w.dense[k]].dense;
    d.fn = code_->dense[k];
    d.multi = code_->dense_multi[k];
    d.solo = code_->dense_solo[k];
    d.copies = seg.copies;
    d.slot_leaf = w.dense_slots[k];
    d.kind.clear();
    d.tensor.clear();
    for (size_t s = 0; s < seg.slots.size(); ++s) {
      d.kind.push_back(seg.slots[s].kind);
      d.tensor.push_back(seg.slots[s].tensor && seg.slots[s].kind == jit::SlotKind::Thread);
    }
    d.written.assign(d.slot_leaf.size(), false);
    d.may_fail = false;
    for (const auto& f : seg.ops) {
      for (int32_t o : f.outs) d.written[o] = true;
      d.may_fail = d.may_fail || jit::may_fail(f, seg.slots);
    }
    max_slots = std::max(max_slots, d.slot_leaf.size());
  }
  dense_.assign(max_slots, std::vector<uint64_t>(kChunk));
  for (size_t b = 0; b < blocks_.size(); ++b) blocks_[b].mode = plan_[b].mode;
  char line[64];
  std::snprintf(line, sizeof line, ", in %.1f ms (", code_->seconds * 1e3);
  jit_log_ = "jit: " + w.what + line + code_->detail + (cached_ ? "; cached)" : ")");
  size_t multi = 0;
  for (const auto& seg : w.dense_segs) multi += seg.copies > 1;
  if (multi)
    jit_log_ += "; " + std::to_string(multi) + " loop blocks run several iterations per call";
  if (w.chain)
    jit_log_ += "; the " + std::to_string(w.whole.size()) + " blocks compiled whole are chained (" +
                std::to_string(code_->chain_copy_sites) +
                " call sites jump to copies of their callee's first blocks)";
}

}  // namespace ab::stack
