// The stack VM's storage plan: which variables are shared (one value for
// every thread), each variable's leaves and their storage by class, inputs
// read in place, and register variables coalesced into one storage.
#include "vm/stack/stack_vm_impl.h"
#include "vm/stack/stack_vm.h"

namespace ab::stack {

// Which variables hold one value for every thread (passes/sharing): the
// roots are the inputs given with batch 1.
void StackVM::analyze_sharing() {
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

// The variables some instruction writes: an output (in place or not) or a
// pop. (Terminators write no variable; a push happens only where a full
// variable is written.)
std::set<std::string> StackVM::written_vars() const {
  std::set<std::string> w;
  auto add = [&w](const Pattern& pt, auto& self) -> void {
    if (!pt.is_tuple) {
      w.insert(pt.name);
      return;
    }
    for (const auto& e : pt.elems) self(e, self);
  };
  for (const auto& b : p_.blocks)
    for (const auto& in : b.instrs) {
      if (in.kind == InstrKind::Pop)
        for (const auto& n : in.popped) w.insert(n.name);
      else
        add(in.out, add);
    }
  return w;
}

// Inputs read in place (a large input is not copied). A leaf of
// an entry parameter that no instruction writes needs no storage of its
// own: its `top` borrows the caller's array. A shared leaf (batch-1 input)
// borrows the one row; a per-thread leaf borrows the whole batch when
// lane t always runs input t, that is without refill lanes (lanes_ ==
// n_inputs_: start_lane gives lane t input t and no lane is restarted), so
// the gathers by lane read row t. The array must have the leaf's type and
// be aligned for its dtype (kernels and the JIT read it typed); otherwise,
// and with refill lanes, the input is copied per lane as before.
const Array* StackVM::borrowable_input(const std::string& var, const TensorType& tt, bool shared,
                                       const std::set<std::string>& written) const {
  if (written.count(var)) return nullptr;
  for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i) {
    if (p_.inputs[i].name != var) continue;
    const Array& a = inputs_[i];
    // One leaf per parameter: a tuple parameter's leaves are not one array.
    if (var_leaf_count(var) != 1) return nullptr;
    if (a.type.dtype != tt.dtype || a.event_size() != tt.num_elements()) return nullptr;
    size_t ebytes = static_cast<size_t>(tt.num_elements()) * dtype_size(tt.dtype);
    int64_t rows = shared ? 1 : n_inputs_;
    if (shared ? a.batch != 1 : (a.batch != n_inputs_ || lanes_ != n_inputs_)) return nullptr;
    if (a.byte_size() < ebytes * static_cast<size_t>(rows) || !a.data.data()) return nullptr;
    if (reinterpret_cast<uintptr_t>(a.data.data()) % dtype_size(tt.dtype) != 0) return nullptr;
    return &a;
  }
  return nullptr;
}

size_t StackVM::var_leaf_count(const std::string& var) const {
  auto it = slots_leaf_count_.find(var);
  return it == slots_leaf_count_.end() ? 0 : it->second;
}

void StackVM::make_leaves(const FunctionTypes& types) {
  std::vector<std::string> inputs;
  for (const auto& i : p_.inputs) inputs.push_back(i.name);
  Slots slots = compile_slots(p_.blocks, inputs, types, &p_.vars);
  for (size_t s = 0; s < p_.vars.size(); ++s)
    slots_leaf_count_[p_.vars[s].name.name] = slots.leaf_count[s];
  const std::set<std::string> written = written_vars();
  const std::map<std::string, std::string> alias = storage_aliases(slots);
  // The lanes (Tuning::lane_bytes_budget): from the bytes each lane's own
  // variables take, a full variable's top and one level of its stack. An
  // input read in place is not counted: it stays in place while the lanes
  // are the threads (and a program whose other variables are small keeps
  // them so).
  if (opt_.lanes <= 0) {
    int64_t bytes = 0;
    bool stacks = false;
    for (size_t s = 0; s < p_.vars.size(); ++s) {
      const VarDecl& v = p_.vars[s];
      if (alias.count(v.name.name) || shared_var_[v.name.name]) continue;
      if (v.storage == StorageClass::Temporary || v.storage == StorageClass::Null) continue;
      for (uint32_t j = 0; j < slots.leaf_count[s]; ++j) {
        const TensorType& tt = slots.leaf_types[slots.first_leaf[s] + j];
        if (borrowable_input(v.name.name, tt, false, written)) continue;
        const int64_t eb = tt.num_elements() * static_cast<int64_t>(dtype_size(tt.dtype));
        bytes += v.storage == StorageClass::Full ? 2 * eb : eb;
        stacks = stacks || v.storage == StorageClass::Full;
      }
    }
    lanes_ = stack_auto_lanes(n_inputs_, bytes, stacks);
    if (lanes_ < n_inputs_)
      lanes_note_ = std::to_string(n_inputs_) + " threads on " + std::to_string(lanes_) +
                    " lanes (their variables take " + std::to_string(bytes) +
                    " bytes per lane), each taking the next input when its thread halts";
  }
  std::set<std::string> given;  // parameters with an input: start_all_lanes copies it in
  for (size_t i = 0; i < p_.inputs.size() && i < inputs_.size(); ++i) given.insert(p_.inputs[i].name);
  for (size_t s = 0; s < p_.vars.size(); ++s) {
    const VarDecl& v = p_.vars[s];
    if (alias.count(v.name.name)) continue;
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
      const Array* in = l.in_scratch() ? nullptr : borrowable_input(l.var, tt, l.shared, written);
      if (in) {
        l.top = Buffer::borrow(in->data.data(), in->byte_size());
        l.borrowed = true;
        in_place_bytes_ += static_cast<int64_t>(in->byte_size());
        if (l.full()) {
          l.depth.assign(static_cast<size_t>(lanes_), 0);
          l.below.init(static_cast<size_t>(lanes_), l.words);
        }
      } else if (l.shared) {
        l.top.resize(l.ebytes);
      } else if (l.in_scratch()) {
        l.scratch.resize(l.ebytes * static_cast<size_t>(chunk_lanes()));
      } else {
        // An input's leaf is written whole before the run (start_all_lanes
        // copies the input in): zeroing it first would write a large
        // batch's input twice.
        if (given.count(l.var))
          l.top = Buffer::for_overwrite(l.ebytes * static_cast<size_t>(lanes_));
        else
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
  for (const auto& [v, rep] : alias) var_leaves_[v] = var_leaves_.at(rep);
  if (log_enabled(LogLevel::Debug)) {  // where the memory goes: the largest per-lane leaves
    std::vector<std::pair<size_t, std::string>> big;
    for (const Leaf& l : leaves_)
      if (!l.shared && !l.borrowed && !l.in_scratch()) big.emplace_back(l.ebytes, l.var);
    std::sort(big.rbegin(), big.rend());
    std::string names;
    for (size_t i = 0; i < big.size() && i < 8; ++i)
      names += " " + big[i].second + " (" + std::to_string(big[i].first) + ")";
    log_debug("stack VM: the largest variables of each lane, bytes per lane:" + names);
    big.clear();
    names.clear();
    size_t total = 0;
    for (const Leaf& l : leaves_)
      if (l.shared && !l.borrowed) {
        big.emplace_back(l.ebytes, l.var);
        total += l.ebytes;
      }
    std::sort(big.rbegin(), big.rend());
    for (size_t i = 0; i < big.size() && i < 8; ++i)
      names += " " + big[i].second + " (" + std::to_string(big[i].first) + ")";
    log_debug("stack VM: shared variables take " + std::to_string(total) + " bytes; the largest:" +
              names);
  }
  if (!alias.empty() && log_enabled(LogLevel::Debug)) {
    std::string names;
    for (const auto& [v, rep] : alias) names += " " + v + "->" + rep;
    log_debug("stack VM: " + std::to_string(alias.size()) + " variables share storage:" + names);
  }
}

// Register variables joined by copies that can share one storage
// (vm/coalesce.h): each thread's own, neither an input nor an output, with
// the same leaves.
std::map<std::string, std::string> StackVM::storage_aliases(const Slots& slots) const {
  // AUTOBATCH_COALESCE=0: every variable its own storage (for experiments).
  if (!env_options().coalesce) return {};
  std::set<std::string> ends;
  for (const auto& i : p_.inputs) ends.insert(i.name);
  for (const auto& o : p_.outputs) ends.insert(o.name);
  // Slot s of a declared variable is declaration s (compile_slots).
  auto eligible = [&](const std::string& v) {
    auto it = slots.index.find(v);
    if (it == slots.index.end() || it->second >= p_.vars.size() || ends.count(v)) return false;
    auto sh = shared_var_.find(v);
    return p_.vars[it->second].storage == StorageClass::Register &&
           (sh == shared_var_.end() || !sh->second);
  };
  auto compatible = [&](const std::string& a, const std::string& b) {
    uint32_t sa = slots.at(a), sb = slots.at(b);
    if (slots.leaf_count[sa] != slots.leaf_count[sb]) return false;
    for (uint32_t j = 0; j < slots.leaf_count[sa]; ++j)
      if (!(slots.leaf_types[slots.first_leaf[sa] + j] ==
            slots.leaf_types[slots.first_leaf[sb] + j]))
        return false;
    return true;
  };
  return coalesce_copies(p_, eligible, compatible);
}

}  // namespace ab::stack

namespace ab {

// Tuning::lane_bytes_budget's rule: lanes for n threads whose own variables
// take `bytes` per lane.
int64_t stack_auto_lanes(int64_t n, int64_t bytes, bool stacks) {
  const Tuning& t = kTuning;
  if ((!stacks && bytes < t.lane_bytes_min) || n * bytes <= t.lane_bytes_budget) return n;
  int64_t lanes = t.lane_bytes_budget / bytes / t.chunk * t.chunk;
  lanes = std::max(lanes, t.min_auto_lanes);
  return std::min(lanes, n);
}

}  // namespace ab
