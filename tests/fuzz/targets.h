// The bodies of the libFuzzer targets (tests/fuzz/fuzz_*.cpp), shared with
// the unit test that replays the seed corpora and every regression case
// (tests/unit/test_fuzz_regressions.cpp), so a case found once is checked in
// every ordinary test run, without libFuzzer. Each body must return normally
// for any bytes: bad input is a diagnostic, never a crash, a hang or an
// exception. An invariant that fails calls fuzz_fail (abort: libFuzzer saves
// the input).
//
// Only the library's stable entry points are called: parse_text,
// verify_module, infer_types, compile, the stack VM, load_inputs and the
// .npy reader/writer.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/inputs.h"
#include "io/npy.h"
#include "ir/printer.h"
#include "parse/parser.h"
#include "passes/pipeline.h"
#include "passes/verify.h"
#include "vm/stack/stack_vm.h"

namespace ab::fuzz {

[[noreturn]] inline void fuzz_fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz invariant failed: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Bounds that keep one input cheap: a fuzz input that asks for more is
// skipped, not run.
constexpr size_t kMaxProgramBytes = 1 << 16;
constexpr int64_t kMaxSteps = 2000;
constexpr int64_t kMaxStackDepth = 64;
constexpr int64_t kBatch = 3;

// Program text through parse, print/reparse, verify and type inference.
inline void front_end(std::string_view bytes) {
  if (bytes.size() > kMaxProgramBytes) return;
  Result<Module> m = parse_text("fuzz.ab", std::string(bytes));
  if (!m) {
    (void)m.diags().render();  // messages must render for any input
    return;
  }
  // `fmt` output is a program: it parses again and prints the same.
  const std::string printed = print_module(*m);
  Result<Module> again = parse_text("fmt.ab", printed);
  if (!again) fuzz_fail("the printed module does not parse", printed + again.diags().render());
  if (print_module(*again) != printed) fuzz_fail("printing is not idempotent", printed);

  Diagnostics d(m->source);
  verify(*m, d);
  (void)d.render();
  if (d.has_errors() || m->program) return;
  Diagnostics quiet(m->source);
  const Function* entry = find_entry(*m, "", quiet);
  if (!entry) entry = &m->funcs.front();
  std::vector<std::optional<Type>> params(entry->params.size());
  for (size_t i = 0; i < params.size(); ++i) params[i] = entry->params[i].type;
  Diagnostics td(m->source);
  (void)infer_types(*m, entry->name.name, params, td);
  (void)td.render();
}

// Zero inputs for the entry's declared parameter types (batch kBatch), or
// nothing if a parameter has no declared tensor type.
inline std::optional<std::vector<Array>> zero_inputs(const std::vector<std::optional<Type>>& ts) {
  std::vector<Array> out;
  for (const auto& t : ts) {
    if (!t || t->is_tuple || t->tensor.num_elements() > 4096) return std::nullopt;
    out.emplace_back(t->tensor, kBatch);
  }
  return out;
}

// The whole pipeline: parse, verify, compile (every pass through lower) and
// a short bounded run on the stack VM with zero inputs of the declared types
// (under --on-error record for inputs of odd length).
inline void pipeline(std::string_view bytes) {
  if (bytes.size() > kMaxProgramBytes) return;
  Result<Module> m = parse_text("fuzz.ab", std::string(bytes));
  if (!m) return;
  Diagnostics d(m->source);
  verify(*m, d);
  if (d.has_errors() || m->program) return;
  Diagnostics quiet(m->source);
  const Function* entry = find_entry(*m, "", quiet);
  if (!entry) return;
  CompileOptions co;
  co.entry = entry->name.name;
  for (const auto& p : entry->params) co.entry_types.push_back(p.type);
  Result<Compiled> c = compile(*m, co);
  if (!c) {
    (void)c.diags().render();
    return;
  }
  auto inputs = zero_inputs(co.entry_types);
  if (!inputs) return;
  const Program& p = *c->lowered.program;
  Diagnostics pd(m->source);
  FunctionTypes ft = infer_program_types(p, co.entry_types, pd, m->source);
  if (pd.has_errors()) return;
  RunOptions ro;
  ro.max_steps = kMaxSteps;
  ro.max_stack_depth = kMaxStackDepth;
  // Half the inputs run under --on-error record: failed threads drop out.
  ro.record_errors = bytes.size() % 2 == 1;
  RunResult r = run_stack(p, ft, *inputs, kBatch, ro);
  if (r.error) (void)render_runtime_error(m->source.get(), *r.error);
  int64_t last = -1;
  for (const RuntimeError& e : r.failed) {
    if (e.thread <= last || e.thread >= kBatch)
      fuzz_fail("failed threads not distinct, sorted and in the batch", std::string(bytes));
    last = e.thread;
    (void)render_thread_error(m->source.get(), e);
  }
  if (!ro.record_errors && !r.failed.empty()) fuzz_fail("a failed thread under abort", "");
}

// JSON inputs through load_inputs, against one of a few parameter lists (the
// first byte picks it). Only inline JSON: text that does not start with '{'
// or '[' would be read as a file name.
inline void json_inputs(std::string_view bytes) {
  if (bytes.empty()) return;
  const auto pick = static_cast<uint8_t>(bytes[0]) % 4;
  std::string text(bytes.substr(1));
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || (text[first] != '{' && text[first] != '[')) return;
  auto t = [](DType dt, Shape s) { return Type{false, TensorType{dt, std::move(s)}, {}}; };
  std::vector<ParamSpec> params;
  switch (pick) {
    case 0:  // types from the values
      params = {{"x", std::nullopt}, {"y", std::nullopt}};
      break;
    case 1:
      params = {{"x", t(DType::I64, {})}, {"y", t(DType::F64, {2})}};
      break;
    case 2:
      params = {{"x", t(DType::I32, {2, 2})}, {"y", t(DType::Bool, {})}};
      break;
    default:
      params = {{"x", t(DType::F32, {})}, {"y", std::nullopt}};
      break;
  }
  std::optional<int64_t> batch;
  if (pick == 3) batch = 2;
  Result<InputSet> r = load_inputs({text}, params, batch);
  if (!r) {
    (void)r.diags().render();
    return;
  }
  for (const Array& a : r->values) {
    if (a.batch != 1 && a.batch != r->batch) fuzz_fail("input batch differs from the set's", text);
    if (a.byte_size() != static_cast<size_t>(a.batch * a.event_size()) * dtype_size(a.type.dtype))
      fuzz_fail("input buffer size does not match its type", text);
  }
}

// The .npy reader; what it accepts must survive a write and a second read.
inline void npy(std::string_view bytes) {
  Result<NpyArray> a = parse_npy(bytes, "fuzz.npy");
  if (!a) {
    (void)a.diags().render();
    return;
  }
  std::string again = encode_npy(a->dtype, a->shape, a->data.data());
  Result<NpyArray> b = parse_npy(again, "again.npy");
  if (!b) fuzz_fail("an encoded array does not parse", b.diags().render());
  if (b->dtype != a->dtype || b->shape != a->shape || b->data.size() != a->data.size())
    fuzz_fail("the .npy round trip changed the array", "");
  Array arr = npy_to_array(a.take());
  if (arr.byte_size() !=
      static_cast<size_t>(arr.batch * arr.event_size()) * dtype_size(arr.type.dtype))
    fuzz_fail("npy_to_array: buffer size does not match its type", "");
}

}  // namespace ab::fuzz
