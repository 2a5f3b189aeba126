// A small program given as text, its inputs as JSON text, compiled and run
// on the stack VM with chosen options: the helper the JIT's tests share
// (test_jit.cpp, test_jit_prims.cpp, test_stack_vm.cpp).
#pragma once
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "io/inputs.h"
#include "parse/parser.h"
#include "passes/pipeline.h"
#include "passes/verify.h"
#include "vm/stack/stack_vm.h"

namespace ab::stack_harness {

struct Prog {
  Module m;
  InputSet inputs;
  std::vector<std::optional<Type>> types;
  std::string entry;
};

// The program's entry is `entry`, else its first function.
inline Prog load(const std::string& text, const std::string& inputs,
                 const std::string& entry = "") {
  Result<Module> m = parse_text("t.ab", text);
  INFO(text);
  INFO(m.diags().render());
  REQUIRE(m.ok());
  Diagnostics d(m->source);
  verify(*m, d);
  REQUIRE_FALSE(d.has_errors());
  Prog p{m.take(), {}, {}, entry};
  if (p.entry.empty()) p.entry = p.m.funcs.front().name.name;
  const Function* f = p.m.find_func(p.entry);
  REQUIRE(f != nullptr);
  std::vector<ParamSpec> specs;
  for (const auto& q : f->params) specs.push_back({q.name.name, q.type});
  Result<InputSet> in = load_inputs({inputs}, specs, std::nullopt);
  INFO(in.diags().render());
  REQUIRE(in.ok());
  p.inputs = in.take();
  for (const auto& a : p.inputs.values) p.types.push_back(Type{false, a.type, {}});
  return p;
}

// Compiles the program for its entry and runs it on the stack VM.
inline RunResult stack(const Prog& p, RunOptions opt = {}) {
  CompileOptions co;
  co.entry = p.entry;
  co.entry_types = p.types;
  Result<Compiled> c = compile(p.m, co);
  INFO(c.diags().render());
  REQUIRE(c.ok());
  Diagnostics d;
  FunctionTypes ft = infer_program_types(*c->lowered.program, p.types, d, p.m.source);
  REQUIRE_FALSE(d.has_errors());
  return run_stack(*c->lowered.program, ft, p.inputs.values, p.inputs.batch, opt);
}

// Outputs bit for bit: floats too, except that any NaN equals any NaN (the
// sign of a NaN made by the hardware depends on operand order).
inline void same_bits(const RunResult& a, const RunResult& b) {
  REQUIRE_FALSE(a.error);
  REQUIRE_FALSE(b.error);
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    const Array& x = a.outputs[i];
    const Array& y = b.outputs[i];
    REQUIRE(x.byte_size() == y.byte_size());
    // Floats bit for bit, except that any NaN equals any NaN (the sign of a
    // NaN made by the hardware depends on operand order, as in the outputs).
    if (x.type.dtype == DType::F64) {
      for (size_t k = 0; k < x.byte_size() / 8; ++k) {
        double u = x.as<double>()[k], v = y.as<double>()[k];
        if (std::isnan(u) && std::isnan(v)) continue;
        CHECK(std::memcmp(&u, &v, 8) == 0);
      }
    } else if (x.type.dtype == DType::F32) {
      for (size_t k = 0; k < x.byte_size() / 4; ++k) {
        float u = x.as<float>()[k], v = y.as<float>()[k];
        if (std::isnan(u) && std::isnan(v)) continue;
        CHECK(std::memcmp(&u, &v, 4) == 0);
      }
    } else {
      CHECK(std::memcmp(x.data.data(), y.data.data(), x.byte_size()) == 0);
    }
  }
}

}  // namespace ab::stack_harness
