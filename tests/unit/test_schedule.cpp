// The stack VM's order of blocks (src/vm/stack/scheduler.cpp): deepest
// frames first, and within a depth a block waits for the blocks whose
// threads may still join it. Checked by its step counts against the
// stackless VM's on the shapes that used to split a batch: mutual recursion
// whose threads return at different depths, a loop that calls a function
// and has an `if` with no join before the loop goes round, a loop whose
// exit calls a function, a recursion over a tree. With one lane per thread
// (no refill of lanes), the stack VM takes no more steps, interpreted or
// compiled, and gives the same outputs.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"

namespace {

struct Case {
  const char* name;
  const char* text;
};

const Case kCases[] = {
    {"even_odd",
     R"(func is_even(n: i64) -> bool {
  if n == 0 { return true }
  return is_odd(n - 1)
}
func is_odd(n: i64) -> bool {
  if n == 0 { return false }
  return is_even(n - 1)
}
entry func main(n: i64) -> bool { return is_even(n) }
)"},
    {"loop_calls_with_if",
     R"(func f(x: f64) -> f64 { return x * 0.5 + 1.0 }
entry func main(n: i64) -> (f64, i64) {
  x = 0.0
  k = 0
  i = 0
  while i < n {
    y = f(x)
    if y > 1.5 { k = k + 1 }
    if i % 3 == 0 { x = y } else { x = y - 0.25 }
    i = i + 1
  }
  return x, k
}
)"},
    {"exit_calls",
     R"(func g(x: f64) -> f64 { return x + 1.0 }
func h(x: f64) -> f64 { return x * 2.0 }
entry func main(n: i64) -> f64 {
  x = 0.0
  i = 0
  while i < n {
    x = g(x)
    i = i + 1
  }
  return h(x)
}
)"},
    {"tree",
     R"(func count(d: i64, seed: i64) -> i64 {
  if d <= 0 { return 1 }
  if seed % 3 == 0 { return 1 + count(d - 1, seed / 3) }
  return count(d - 1, seed / 2) + count(d - 2, seed + 7)
}
entry func main(n: i64) -> i64 { return count(n, n * 7919) }
)"},
};

int64_t steps(const autobatch::Program& p, const std::vector<int64_t>& n, const char* vm, bool jit,
              std::vector<autobatch::Array>* out) {
  autobatch::RunOptions o;
  o.vm = vm;
  o.jit = jit;
  o.jit_wait = true;
  o.threads = 1;
  o.stats = true;
  autobatch::RunResult r =
      p.run({autobatch::ArrayView::of(n.data(), static_cast<int64_t>(n.size()))}, o);
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  REQUIRE(r.stats);
  *out = std::move(r.outputs);
  return r.stats->steps;
}

}  // namespace

TEST_CASE("schedule: the stack VM takes no more steps than the stackless VM") {
  std::vector<int64_t> n;
  for (int64_t t = 0; t < 200; ++t) n.push_back((t * 37) % 23);
  for (const Case& c : kCases) {
    const std::string name = c.name;
    CAPTURE(name);
    auto p = autobatch::compile(c.text);
    REQUIRE_MESSAGE(p, p.rendered());
    std::vector<autobatch::Array> want, got;
    const int64_t stackless = steps(*p, n, "stackless", false, &want);
    for (bool jit : {false, true}) {
      CAPTURE(jit);
      const int64_t stack = steps(*p, n, "stack", jit, &got);
      CHECK(stack <= stackless);
      REQUIRE(got.size() == want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        REQUIRE(got[i].byte_size() == want[i].byte_size());
        CHECK(std::memcmp(got[i].data(), want[i].data(), got[i].byte_size()) == 0);
      }
    }
  }
}
