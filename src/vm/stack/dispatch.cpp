// Compiled dispatch: a chunk of a block compiled whole (jit::BlockFn) or
// run through the chain of such blocks (jit::ChainFn), the lanes the
// compiled code cannot take left to the interpreter.
#include "vm/stack/stack_vm_impl.h"

namespace ab::stack {

// Block b compiled whole, on the chunk's lanes, up to the first that needs
// a new stack row (*done: the lanes it ran, which go on to their blocks).
std::optional<RuntimeError> StackVM::run_block(uint32_t b, uint32_t* idx, int64_t n,
                                               int64_t* done) {
  const CBlock& cb = blocks_[b];
  uint32_t a[kChunk], c[kChunk];
  const int64_t r = cb.block_fn(cb.block_base.data(), idx, n, a, c, done);
  const int64_t m = *done;
  switch (cb.term) {
    case TermKind::Goto:
      append_lanes(cb.t1, idx, m);
      break;
    case TermKind::Branch:
      append_lanes(cb.t1, a, r);
      append_lanes(cb.t2, c, m - r);
      break;
    case TermKind::PushGoto:
      if (m > 0) return called(b, idx, m, static_cast<uint32_t>(r));
      break;
    case TermKind::IndirectGoto:
      returned(idx, a, m);
      break;
    default:
      break;
  }
  return std::nullopt;
}

// The chain from block b: each lane runs on through the blocks compiled
// whole (jit::ChainFn) and then joins the list of the block it reached;
// a lane stuck at a block (it needs a new stack row, or would fail) has
// that block interpreted for it at once, with the others stuck there.
std::optional<RuntimeError> StackVM::run_chain(uint32_t b, uint32_t* idx, int64_t n) {
  uint32_t out[kChunk], stuck[kChunk], at[kChunk];
  {
    // Lanes whose window of the pc stack would pass the frames allowed
    // (jit.h: deeper than Code::chain_levels, by half of it) would be
    // handed back at once: the interpreter runs the block for them.
    int64_t m = 0, k = 0;
    const int64_t levels = code_->chain_levels;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t d = pc_depth_[idx[j]];
      if (d > levels && d + levels / 2 > opt_.max_stack_depth)
        stuck[k++] = idx[j];
      else
        idx[m++] = idx[j];
    }
    if (k > 0) {
      n = m;
      if (auto e = interpret(b, stuck, k)) return e;
      if (n == 0) return std::nullopt;
    }
  }
  // --stats: each block's runs by lanes that went on into it (jit.h,
  // kChainCounts), added to the work the steps count.
  if (opt_.stats) chain_counts_.assign(chain_blocks_.size() + 1, 0);
  const int64_t limits[2] = {kTuning.chain_budget,
                             static_cast<int64_t>(reinterpret_cast<uintptr_t>(chain_counts_.data()))};
  chain_runs_ += code_->chain(chain_bases_.data(), idx, n, b, out, limits);
  ++chain_calls_;
  if (opt_.stats)
    for (size_t k = 0; k < chain_blocks_.size(); ++k)
      opt_.stats->lane_operations += chain_counts_[k] * blocks_[chain_blocks_[k]].prims;
  if (opt_.stats) peak_depth_ = std::max(peak_depth_, chain_counts_.back());
  // One step may hold many chain calls (a list of many chunks, each
  // running whole recursions): the cancel flag and the progress callback
  // are also looked at every Tuning::chain_poll of budget used in the chain, some
  // milliseconds (progress then hears the same step again, with more
  // threads finished).
  if (opt_.polled() && chain_runs_ >= chain_poll_at_) {
    chain_poll_at_ = chain_runs_ + kTuning.chain_poll;
    if (auto e = checkpoint(b, idx[0])) return e;
  }
  int64_t m = 0, ns = 0;
  for (int64_t j = 0; j < n; ++j) {
    const uint32_t r = out[j];
    if (r != kHalt && (r & jit::kChainStuck)) {
      ++chain_stuck_;
      stuck[ns] = idx[j];
      at[ns++] = r & ~jit::kChainStuck;
    } else {
      chain_spent_ += r != kHalt && blocks_[r].mode == ExecMode::Chained;  // stopped by its budget
      idx[m] = idx[j];
      out[m++] = r;
    }
  }
  returned(idx, out, m);
  while (ns > 0) {  // by block, in the order first met
    const uint32_t x = at[0];
    uint32_t here[kChunk];
    int64_t k = 0, rest = 0;
    for (int64_t j = 0; j < ns; ++j) {
      if (at[j] == x) {
        here[k++] = stuck[j];
      } else {
        stuck[rest] = stuck[j];
        at[rest++] = at[j];
      }
    }
    ns = rest;
    if (auto e = interpret(x, here, k)) return e;
  }
  return std::nullopt;
}

std::optional<RuntimeError> StackVM::run_chunk(uint32_t b, uint32_t* idx, int64_t n) {
  CBlock& cb = blocks_[b];
  if (cb.mode == ExecMode::Chained) return run_chain(b, idx, n);
  if (cb.mode == ExecMode::WholeBlock) {
    int64_t done = 0;
    auto e = run_block(b, idx, n, &done);
    if (e || done == n) return e;
    idx += done;  // the rest, interpreted: a lane needs a new stack row
    n -= done;
  }
  return interpret(b, idx, n);
}

}  // namespace ab::stack
