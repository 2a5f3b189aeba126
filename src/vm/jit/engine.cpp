// The JIT's engine and code cache: one LLJIT per process (created on first
// use), the cache of compiled modules keyed by their segments, and
// compile(), which has Gen (gen.h) build a module's functions, optimises
// them and links the machine code into the session.
#include <llvm/ExecutionEngine/Orc/CompileUtils.h>
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Target/TargetMachine.h>
#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "support/env_options.h"
#include "vm/jit/gen.h"
#include "vm/jit/jit.h"
#include "vm/kernels/scalar.h"
#include "vm/lane_stack.h"
#include "vm/tuning.h"

namespace ab::jit {

namespace {

// The chain's window of a deep stack (emit_chain.cpp): `count` entries of
// a lane from `level` on, between the stack (given by the Head its third
// base entry points to) and the chain's local array.
template <typename Word>
void chain_window(const void* head, uint64_t lane, uint64_t level, uint64_t count, void* buf,
                  uint64_t in) {
  const auto* h = static_cast<const typename LaneStack<Word>::Head*>(head);
  const_cast<LaneStack<Word>*>(h->self)->window(static_cast<uint32_t>(lane),
                                                static_cast<uint32_t>(level),
                                                static_cast<uint32_t>(count),
                                                static_cast<Word*>(buf), in != 0);
}

using namespace llvm;
using detail::Gen;
using llvm::Function;
using llvm::Module;
using llvm::Type;
using llvm::Value;

struct Engine {
  std::unique_ptr<orc::LLJIT> jit;
  std::string error;
};

Engine& engine() {
  static Engine e;
  static std::once_flag once;
  std::call_once(once, [] {
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
    InitializeNativeTargetAsmParser();
    auto jtmb = orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      e.error = toString(jtmb.takeError());
      return;
    }
    jtmb->setCodeGenOptLevel(CodeGenOpt::Default);
    auto jit = orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(*jtmb)).create();
    if (!jit) {
      e.error = toString(jit.takeError());
      return;
    }
    // The C library's math functions resolve to this process's libm: the
    // same functions the kernels call.
    auto gen = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
        (*jit)->getDataLayout().getGlobalPrefix());
    if (!gen) {
      e.error = toString(gen.takeError());
      return;
    }
    (*jit)->getMainJITDylib().addGenerator(std::move(*gen));
    // The scalar kernels compiled code calls (ops.def's Jit column Kernel)
    // and the chain's window copies, by their addresses: they are in this
    // executable, not in its dynamic symbol table.
    orc::SymbolMap scalar;
    std::vector<ScalarFunction> calls(scalar_functions().begin(), scalar_functions().end());
    calls.push_back({"ab_chain_window32", reinterpret_cast<void*>(&chain_window<uint32_t>)});
    calls.push_back({"ab_chain_window64", reinterpret_cast<void*>(&chain_window<uint64_t>)});
    for (const ScalarFunction& f : calls)
      scalar[(*jit)->mangleAndIntern(f.name)] =
          JITEvaluatedSymbol(pointerToJITTargetAddress(f.address),
                             JITSymbolFlags::Exported | JITSymbolFlags::Callable);
    if (auto err = (*jit)->getMainJITDylib().define(orc::absoluteSymbols(std::move(scalar)))) {
      e.error = toString(std::move(err));
      return;
    }
    e.jit = std::move(*jit);
  });
  return e;
}

class LlvmCode : public Code {
 public:
  orc::ResourceTrackerSP tracker;
  ~LlvmCode() override {
    if (tracker) consumeError(tracker->remove());
  }
};

std::atomic<uint64_t> module_counter{0};

// What identifies a module: every segment, field by field.
std::string cache_key(const std::vector<Segment>& gather, const std::vector<Segment>& dense,
                      const std::vector<Segment>& blocks, const std::vector<uint32_t>* chain) {
  std::string k(1, chain ? 'c' : '-');
  if (chain) {
    k.append(reinterpret_cast<const char*>(chain->data()), chain->size() * sizeof(uint32_t));
    k.push_back(';');
  }
  auto num = [&](uint64_t v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const auto* list : {&gather, &dense, &blocks}) {
    num(list->size());
    for (const Segment& s : *list) {
      num(s.slots.size());
      for (const Slot& sl : s.slots) {
        num(static_cast<uint64_t>(sl.dtype) | static_cast<uint64_t>(sl.kind) << 8 |
            static_cast<uint64_t>(sl.keep) << 16 | static_cast<uint64_t>(sl.tensor) << 24);
        num(sl.shape.size());
        for (int64_t d : sl.shape) num(static_cast<uint64_t>(d));
      }
      num(static_cast<uint64_t>(s.calls));
      num(s.ops.size());
      for (const FOp& o : s.ops) {
        num(static_cast<uint64_t>(o.copy) | static_cast<uint64_t>(o.prim) << 8 |
            static_cast<uint64_t>(o.cast_to) << 24 | static_cast<uint64_t>(o.kind) << 32);
        num(static_cast<uint64_t>(static_cast<int64_t>(o.stack)) << 1 | o.fails);
        num(o.args.size());
        for (const Arg& a : o.args) {
          num(static_cast<uint64_t>(static_cast<int64_t>(a.slot)));
          num(static_cast<uint64_t>(a.dtype));
          num(a.bits);
        }
        num(o.outs.size());
        for (int32_t x : o.outs) num(static_cast<uint64_t>(x));
      }
      num(static_cast<uint64_t>(static_cast<int64_t>(s.cond)));
      num(s.stay_on_true);
      num(static_cast<uint64_t>(static_cast<int64_t>(s.copies)));
      num(static_cast<uint64_t>(s.exit) | static_cast<uint64_t>(s.ret_pc) << 8);
      num(static_cast<uint64_t>(s.stacks));
      num(static_cast<uint64_t>(s.pc) | static_cast<uint64_t>(s.target) << 32);
      num(static_cast<uint64_t>(s.target2) | static_cast<uint64_t>(s.chained) << 32);
      for (const auto* v : {&s.slot_var, &s.stack_var}) {
        num(v->size());
        for (int32_t x : *v) num(static_cast<uint64_t>(static_cast<int64_t>(x)));
      }
    }
  }
  return k;
}

std::shared_ptr<const Code> compile_module(const std::vector<Segment>& gather,
                                           const std::vector<Segment>& dense,
                                           const std::vector<Segment>& blocks,
                                           const std::vector<uint32_t>* chain,
                                           uint32_t chain_frames, std::string* error);

}  // namespace

bool available() { return engine().jit != nullptr; }

namespace {

// A module to compile: its segments and who waits for it.
struct Job {
  std::vector<Segment> gather, dense, blocks;
  std::vector<uint32_t> chain;
  bool chained = false;
  uint32_t frames = 0;
  std::shared_ptr<Pending> pending = std::make_shared<Pending>();
  bool taken = false;  // a thread is compiling it
};

// The code cache, the compilations under way, and the background thread.
// One per process (service()); the mutex is held only to look at or change
// these, never while compiling.
struct Service {
  std::mutex mu;
  std::condition_variable cv;  // the queue changed, a job finished, or stop
  std::map<std::string, std::shared_ptr<const Code>> cache;
  // Queued or being compiled, by key; `queue` holds the keys of the queued
  // ones, oldest first (a key whose job another thread took is skipped).
  std::map<std::string, std::shared_ptr<Job>> in_flight;
  std::deque<std::string> queue;
  std::thread* worker = nullptr;  // started on first use; left alone in a forked child
  bool stop = false, hold = false;
  // A child of fork() made while a thread was compiling: LLVM's locks may be
  // held by a thread the child does not have, so the child never compiles.
  bool forked_mid_compile = false;

  Service();
  ~Service() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
    }
    cv.notify_all();
    if (worker) {
      worker->join();
      delete worker;
    }
  }
  void work();
};

// The process's service. The engine is made first, so that it is destroyed
// after the service (whose destructor joins the thread, which uses it, and
// whose cache's code removes itself from it).
Service& service() {
  engine();
  static Service s;
  return s;
}

Service::Service() {
  // fork(): the child has no background thread, and nothing in flight.
  pthread_atfork([] { service().mu.lock(); }, [] { service().mu.unlock(); },
                 [] {
                   Service& s = service();
                   for (const auto& [key, job] : s.in_flight)
                     s.forked_mid_compile = s.forked_mid_compile || job->taken;
                   s.in_flight.clear();
                   s.queue.clear();
                   s.worker = nullptr;  // the parent's thread: not ours to join
                   s.mu.unlock();
                 });
}

// Compiles job (without the lock), then, with `lock` held again: the code into
// the cache, the job done, and everyone waiting told.
void run_job(Service& s, const std::string& key, Job& job, std::unique_lock<std::mutex>& lock) {
  lock.unlock();
  std::string error;
  std::shared_ptr<const Code> code = compile_module(
      job.gather, job.dense, job.blocks, job.chained ? &job.chain : nullptr, job.frames, &error);
  lock.lock();
  if (code) s.cache.emplace(key, code);
  auto it = s.in_flight.find(key);
  if (it != s.in_flight.end() && it->second.get() == &job) s.in_flight.erase(it);
  job.pending->finish(std::move(code), std::move(error));
  s.cv.notify_all();
}

void Service::work() {
  const int64_t delay_ms = ab::env_options().jit_delay_ms;
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    cv.wait(lock, [&] { return stop || (!hold && !queue.empty()); });
    if (stop) return;
    const std::string key = std::move(queue.front());
    queue.pop_front();
    auto it = in_flight.find(key);
    if (it == in_flight.end() || it->second->taken) continue;
    std::shared_ptr<Job> job = it->second;
    job->taken = true;
    if (delay_ms > 0) {  // AUTOBATCH_JIT_DELAY_MS: a slow compiler, for tests
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      lock.lock();
    }
    run_job(*this, key, *job, lock);
  }
}

const char* const kForkedMidCompile =
    "this process was forked while the JIT was compiling (its locks may be held): no JIT here";

std::string full_key(const std::vector<Segment>& gather, const std::vector<Segment>& dense,
                     const std::vector<Segment>& blocks, const std::vector<uint32_t>* chain,
                     uint32_t chain_frames) {
  std::string key = cache_key(gather, dense, blocks, chain);
  if (chain) key += "f" + std::to_string(chain_frames);
  return key;
}

std::shared_ptr<Job> make_job(const std::vector<Segment>& gather, const std::vector<Segment>& dense,
                              const std::vector<Segment>& blocks,
                              const std::vector<uint32_t>* chain, uint32_t chain_frames) {
  auto job = std::make_shared<Job>();
  job->gather = gather;
  job->dense = dense;
  job->blocks = blocks;
  job->chained = chain != nullptr;
  if (chain) job->chain = *chain;
  job->frames = chain_frames;
  return job;
}

}  // namespace

std::shared_ptr<const Code> compile(const std::vector<Segment>& gather,
                                    const std::vector<Segment>& dense,
                                    const std::vector<Segment>& blocks,
                                    const std::vector<uint32_t>* chain, uint32_t chain_frames,
                                    std::string* error, bool* cached) {
  Service& s = service();
  const std::string key = full_key(gather, dense, blocks, chain, chain_frames);
  std::unique_lock<std::mutex> lock(s.mu);
  auto hit = s.cache.find(key);
  *cached = hit != s.cache.end();
  if (*cached) return hit->second;
  if (s.forked_mid_compile) {
    *error = kForkedMidCompile;
    return nullptr;
  }
  std::shared_ptr<Job> job;
  if (auto it = s.in_flight.find(key); it != s.in_flight.end()) {
    job = it->second;
    if (job->taken) {
      // Another thread compiles it: wait for its code (as for the cache's).
      lock.unlock();
      job->pending->wait();
      *cached = job->pending->code() != nullptr;
      if (!*cached) *error = job->pending->error();
      return job->pending->code();
    }
    // Queued for the background thread: compiled here, now.
  } else {
    job = make_job(gather, dense, blocks, chain, chain_frames);
    s.in_flight.emplace(key, job);
  }
  job->taken = true;
  run_job(s, key, *job, lock);
  if (!job->pending->code()) *error = job->pending->error();
  return job->pending->code();
}

std::shared_ptr<const Pending> compile_in_background(const std::vector<Segment>& gather,
                                                     const std::vector<Segment>& dense,
                                                     const std::vector<Segment>& blocks,
                                                     const std::vector<uint32_t>* chain,
                                                     uint32_t chain_frames, bool* cached) {
  Service& s = service();
  const std::string key = full_key(gather, dense, blocks, chain, chain_frames);
  std::lock_guard<std::mutex> lock(s.mu);
  auto hit = s.cache.find(key);
  *cached = hit != s.cache.end();
  if (*cached || s.forked_mid_compile) {
    auto ready = std::make_shared<Pending>();
    ready->finish(*cached ? hit->second : nullptr, *cached ? "" : kForkedMidCompile);
    return ready;
  }
  if (auto it = s.in_flight.find(key); it != s.in_flight.end()) return it->second->pending;
  std::shared_ptr<Job> job = make_job(gather, dense, blocks, chain, chain_frames);
  s.in_flight.emplace(key, job);
  s.queue.push_back(key);
  if (!s.worker) s.worker = new std::thread([&s] { s.work(); });
  s.cv.notify_all();
  return job->pending;
}

bool compiling() {
  Service& s = service();
  std::lock_guard<std::mutex> lock(s.mu);
  return !s.in_flight.empty();
}

void hold_background(bool hold) {
  Service& s = service();
  {
    std::lock_guard<std::mutex> lock(s.mu);
    s.hold = hold;
  }
  s.cv.notify_all();
}

void wait_idle() {
  Service& s = service();
  std::unique_lock<std::mutex> lock(s.mu);
  s.cv.wait(lock, [&] { return s.in_flight.empty(); });
}

namespace {

// Modules without a dense loop: instruction selection by FastISel (opt level
// None) and a short pass pipeline. On programs/nuts.ab (22 segments) this
// takes the JIT from 75-90 ms of CPU to about 9; the segments' share of run
// time is small (measured with callgrind on nuts and random_walk: fewer
// instructions in total, compile included). Knobs for experiments:
// AUTOBATCH_JIT_LIGHT_CG=none|less|default, AUTOBATCH_JIT_LIGHT_PIPELINE=<new
// pass manager pipeline text, e.g. default<O1>>.
CodeGenOpt::Level codegen_level(bool light) {
  if (!light) return CodeGenOpt::Default;
  const std::string& s = ab::env_options().jit_light_cg;
  if (s == "less") return CodeGenOpt::Less;
  if (s == "default") return CodeGenOpt::Default;
  return CodeGenOpt::None;
}
std::string light_pipeline() {
  if (const std::string& v = ab::env_options().jit_light_pipeline; !v.empty()) return v;
  return "function(sroa,early-cse,instcombine,simplifycfg)";
}

std::shared_ptr<const Code> compile_module(const std::vector<Segment>& gather,
                                           const std::vector<Segment>& dense,
                                           const std::vector<Segment>& blocks,
                                           const std::vector<uint32_t>* chain,
                                           uint32_t chain_frames, std::string* error) {
  auto cpu_ms = [] {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
  };
  const double cpu0 = cpu_ms();
  auto t0 = std::chrono::steady_clock::now();
  auto ms = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() * 1e3;
  };
  Engine& e = engine();
  double t_init = ms();
  if (!e.jit) {
    *error = "LLVM could not be initialised: " + e.error;
    return nullptr;
  }
  // Two modules, each with its own code generation: the segments and loop
  // bodies (m), and the blocks compiled whole (mb). Modules of gather
  // segments only (no dense loop) get cheap code generation (see
  // codegen_level); the whole blocks always get the full one, which makes
  // their loops about twice as fast (fib) and costs little, their code being
  // short. Each module has its own context, so that the two are optimised
  // and compiled to machine code at once, on two threads.
  auto ctx = std::make_unique<LLVMContext>();
  auto ctxb = std::make_unique<LLVMContext>();
  auto m = std::make_unique<Module>("autobatch", *ctx);
  auto mb = std::make_unique<Module>("autobatch_blocks", *ctxb);
  const bool light = dense.empty();
  auto machine = [&](CodeGenOpt::Level level) -> std::unique_ptr<TargetMachine> {
    auto jtmb = orc::JITTargetMachineBuilder::detectHost();
    if (!jtmb) {
      *error = toString(jtmb.takeError());
      return nullptr;
    }
    jtmb->setCodeGenOptLevel(level);
    auto tm = jtmb->createTargetMachine();
    if (!tm) {
      *error = toString(tm.takeError());
      return nullptr;
    }
    return std::move(*tm);
  };
  std::unique_ptr<TargetMachine> tm = machine(codegen_level(light));
  std::unique_ptr<TargetMachine> tmb = blocks.empty() ? nullptr : machine(CodeGenOpt::Default);
  if (!tm || (!blocks.empty() && !tmb)) return nullptr;
  for (Module* x : {m.get(), mb.get()}) {
    x->setDataLayout(e.jit->getDataLayout());
    x->setTargetTriple(tm->getTargetTriple().str());
  }
  const std::string prefix = "ab" + std::to_string(module_counter++) + "_";
  std::vector<std::string> gnames, dnames, mnames, snames, bnames;
  std::string cname;
  size_t copy_sites = 0;
  uint32_t chain_levels = kFlatLevels;
  {
    Gen gb(*ctxb, *mb);
    std::vector<Segment> chained;
    for (size_t i = 0; i < blocks.size(); ++i) {
      if (chain && blocks[i].chained) {
        chained.push_back(blocks[i]);
        continue;
      }
      bnames.push_back(prefix + "b" + std::to_string(i));
      gb.block(blocks[i], bnames.back());
    }
    if (chain && !chained.empty()) {
      cname = prefix + "chain";
      gb.chain(chained, *chain, chain_frames & ~kChainCounts, cname,
               (chain_frames & kChainCounts) != 0);
      copy_sites = gb.copy_sites_;
      chain_levels = gb.chain_levels_;
    }
    Gen g(*ctx, *m);
    for (size_t i = 0; i < gather.size(); ++i) {
      gnames.push_back(prefix + "g" + std::to_string(i));
      g.gather(gather[i], gnames.back());
    }
    for (size_t i = 0; i < dense.size(); ++i) {
      dnames.push_back(prefix + "d" + std::to_string(i));
      g.dense(dense[i], dnames.back());
      mnames.push_back(dense[i].copies > 1 ? prefix + "m" + std::to_string(i) : "");
      if (!mnames.back().empty()) g.dense_multi(dense[i], mnames.back());
      snames.push_back(dense[i].copies > 1 ? prefix + "s" + std::to_string(i) : "");
      if (!snames.back().empty()) g.dense_solo(dense[i], snames.back());
    }
  }
  const std::string cpu = tm->getTargetCPU().str();
  const std::string features = tm->getTargetFeatureString().str();
  const bool wide = features.find("+avx512f") != std::string::npos;
  for (Module* x : {m.get(), mb.get()})
    for (Function& f : *x) {
      if (f.isDeclaration()) continue;
      f.addFnAttr("target-cpu", cpu);
      f.addFnAttr("target-features", features);
      if (wide) f.addFnAttr("prefer-vector-width", std::to_string(ab::kTuning.vector_bits));
    }
  for (Module* x : {m.get(), mb.get()}) {
    std::string verr;
    raw_string_ostream vs(verr);
    if (verifyModule(*x, &vs)) {
      *error = "internal error: generated code does not verify: " + vs.str();
      return nullptr;
    }
  }
  double t_gen = ms();
  // The IR passes (O2 for loop bodies, to vectorise them, else a short
  // pipeline) and the machine code, with each module's own target machine
  // (its opt level); the blocks' module on a second thread when there is
  // one. Then both are linked into the session as objects.
  struct Unit {
    Module* module = nullptr;
    TargetMachine* target = nullptr;
    bool short_pipeline = true;
    std::unique_ptr<MemoryBuffer> object;
    std::string error;
    double cpu = 0;  // ms of this unit's thread
  };
  auto build = [&](Unit& u) {
    const double c0 = cpu_ms();
    LoopAnalysisManager lam;
    FunctionAnalysisManager fam;
    CGSCCAnalysisManager cgam;
    ModuleAnalysisManager mam;
    PassBuilder pb(u.target);
    pb.registerModuleAnalyses(mam);
    pb.registerCGSCCAnalyses(cgam);
    pb.registerFunctionAnalyses(fam);
    pb.registerLoopAnalyses(lam);
    pb.crossRegisterProxies(lam, fam, cgam, mam);
    if (u.short_pipeline) {
      ModulePassManager mpm;
      if (auto err = pb.parsePassPipeline(mpm, light_pipeline())) {
        u.error = "internal error: " + toString(std::move(err));
        return;
      }
      mpm.run(*u.module, mam);
    } else {
      pb.buildPerModuleDefaultPipeline(OptimizationLevel::O2).run(*u.module, mam);
    }
    auto object = orc::SimpleCompiler(*u.target)(*u.module);
    if (!object) {
      u.error = toString(object.takeError());
      return;
    }
    u.object = std::move(*object);
    u.cpu = cpu_ms() - c0;
  };
  Unit um{m.get(), tm.get(), light, nullptr, "", 0};
  // The blocks' module gets the O2 pipeline when the chain holds loops (a
  // backward goto or branch): their code is run many times per thread, and
  // LLVM then computes loop-invariant values once and simplifies the
  // loops' counters (the AR(5) log density: 2.1x faster).
  bool loops = false;
  for (const Segment& b : blocks)
    if (b.exit == Exit::Goto || b.exit == Exit::Branch)
      loops = loops || b.target <= b.pc || (b.exit == Exit::Branch && b.target2 <= b.pc);
  Unit ub{mb.get(), tmb.get(), !(chain && loops), nullptr, "", 0};
  if (tmb) {
    std::thread second([&] { build(ub); });
    build(um);
    second.join();
  } else {
    build(um);
  }
  double t_opt = ms();
  for (Unit* u : {&um, &ub})
    if (!u->error.empty()) {
      *error = u->error;
      return nullptr;
    }
  // AUTOBATCH_JIT_DUMP=1 prints the optimised modules (to see what vectorised).
  if (ab::env_options().jit_dump) {
    m->print(errs(), nullptr);
    if (tmb) mb->print(errs(), nullptr);
  }
  auto code = std::make_unique<LlvmCode>();
  code->tracker = e.jit->getMainJITDylib().createResourceTracker();
  for (Unit* u : {&um, &ub}) {
    if (!u->object) continue;
    if (auto err = e.jit->addObjectFile(code->tracker, std::move(u->object))) {
      *error = toString(std::move(err));
      return nullptr;
    }
  }
  // One lookup for every function: the module is compiled once, as a whole.
  orc::SymbolLookupSet names;
  for (const auto* list : {&gnames, &dnames, &mnames, &snames, &bnames})
    for (const auto& n : *list)
      if (!n.empty()) names.add(e.jit->mangleAndIntern(n));
  if (!cname.empty()) names.add(e.jit->mangleAndIntern(cname));
  auto syms = e.jit->getExecutionSession().lookup(
      orc::makeJITDylibSearchOrder(&e.jit->getMainJITDylib()), std::move(names));
  if (!syms) {
    *error = toString(syms.takeError());
    return nullptr;
  }
  auto address = [&](const std::string& n) {
    return (*syms)[e.jit->mangleAndIntern(n)].getAddress();
  };
  for (const auto& n : gnames) code->gather.push_back(reinterpret_cast<GatherFn>(address(n)));
  for (const auto& n : bnames) code->block.push_back(reinterpret_cast<BlockFn>(address(n)));
  if (!cname.empty()) code->chain = reinterpret_cast<ChainFn>(address(cname));
  code->chain_copy_sites = copy_sites;
  code->chain_levels = chain_levels;
  for (const auto& n : dnames) code->dense.push_back(reinterpret_cast<DenseFn>(address(n)));
  for (const auto& n : mnames)
    code->dense_multi.push_back(n.empty() ? nullptr : reinterpret_cast<DenseMultiFn>(address(n)));
  for (const auto& n : snames)
    code->dense_solo.push_back(n.empty() ? nullptr : reinterpret_cast<DenseSoloFn>(address(n)));
  code->seconds = ms() / 1e3;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "%.1f ms of CPU; IR %.1f ms, optimise and machine code %.1f ms (segments "
                "%.1f ms of CPU, blocks %.1f on a second thread), linking %.1f ms",
                cpu_ms() - cpu0 + ub.cpu, t_gen - t_init, t_opt - t_gen, um.cpu, ub.cpu,
                ms() - t_opt);
  code->detail = buf;
  return code;
}

}  // namespace

}  // namespace ab::jit
