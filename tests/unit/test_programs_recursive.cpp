// Recursive example programs on many random inputs: programs/mergesort.ab and
// programs/tree_eval.ab (issue 6). Each test generates its inputs here (a
// fixed seed, so a failure reproduces), writes them to a JSON file in a fresh
// temporary directory, runs the real CLI (AUTOBATCH_BINARY) under every VM
// (the slow per-thread ones on a prefix of the inputs), with refill lanes and
// on the program's lowered text, and compares every output with answers
// computed independently in C++: std::stable_sort and a
// brute-force inversion count for the sort, a plain recursive evaluator doing
// the same IEEE operations in the same order for the trees. Floats are
// compared bit for bit (any NaN equals any NaN), so the order of signed zeros
// after a stable sort and the sign of a zero result count too.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "temp_dir.h"
#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

using ab_test::TempDir;

void write_file(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  REQUIRE(f.good());
}

struct Run {
  int code = -1;
  std::string out, err;
};

// Runs the CLI with `args`, stdin empty, stdout and stderr captured in files of `dir`.
Run run_cli(const fs::path& dir, const std::vector<std::string>& args) {
  ab_test::Proc p = ab_test::run_binary(dir, args, std::nullopt, 1800);
  REQUIRE_FALSE(p.timed_out);
  return Run{p.code, p.out, p.err};
}

// Runs the CLI and returns its "outputs", failing the test on a non-zero exit.
json run_outputs(const fs::path& dir, const std::vector<std::string>& args, json* stats = nullptr) {
  Run r = run_cli(dir, args);
  std::string cmd;
  for (const auto& a : args) cmd += " " + a;
  INFO("autobatch" << cmd << "\nstderr:\n" << r.err);
  REQUIRE(r.code == 0);
  json j = json::parse(r.out);
  REQUIRE(j.contains("outputs"));
  if (stats) *stats = j.value("stats", json());
  return j["outputs"];
}

// A double as JSON: shortest digits that read back exactly, always with a '.'
// or an exponent (so the CLI reads an f64), infinities as the strings of docs/language.md, "Inputs
// and outputs".
std::string json_double(double x) {
  if (std::isnan(x)) return "\"NaN\"";
  if (std::isinf(x)) return x > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, x);
  if (ec != std::errc()) FAIL("to_chars failed");
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

template <class T, class F>
std::string json_rows(const std::vector<T>& rows, F&& elem) {
  std::string s = "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    s += i ? ",\n [" : "[";
    for (size_t k = 0; k < rows[i].size(); ++k) s += (k ? ", " : "") + elem(rows[i][k]);
    s += "]";
  }
  return s + "]";
}

double as_double(const json& j) {
  if (j.is_number()) return j.get<double>();
  REQUIRE(j.is_string());
  const std::string s = j.get<std::string>();
  if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  if (s == "Infinity") return std::numeric_limits<double>::infinity();
  REQUIRE(s == "-Infinity");
  return -std::numeric_limits<double>::infinity();
}

bool same_double(double a, double b) {
  return (std::isnan(a) && std::isnan(b)) ||
         std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

std::string show(double x) { return json_double(x); }

const std::string kPrograms = std::string(AUTOBATCH_SOURCE_DIR) + "/programs/";

// Every way of running `prog` (each returns the "outputs" JSON): the batched
// stack VM on all `n_all` threads, plain, with refill lanes and on the
// lowered text; the reference interpreter and the stackless VM (for now a
// fallback to the reference) on the first `n_few` threads only, since the
// reference interpreter takes about 15 ms per sort or tree in a Debug+ASan
// build. `inputs(n)` writes the first n threads to a JSON file and returns its
// path; `check(how, out, n)` compares the outputs of n threads.
template <class Inputs, class Check>
void run_everywhere(const TempDir& tmp, const std::string& prog, size_t n_all, size_t n_few,
                    Inputs&& inputs, Check&& check) {
  const std::string src = kPrograms + prog;
  const std::string all = inputs(n_all), few = inputs(n_few);
  for (std::string vm : {"stack", "reference", "stackless"}) {
    const bool batched = vm == "stack";
    json stats;
    json out = run_outputs(
        tmp.path,
        {"run", src, "--entry", "main", "--inputs", batched ? all : few, "--vm", vm, "--stats"},
        &stats);
    REQUIRE(stats.is_object());
    if (vm == "reference") {
      // One thread at a time: utilization does not apply (docs/engine.md, "Traces and statistics",
      // issue 13).
      CHECK(stats["mean_utilization"].is_null());
    } else {
      const double u = stats.value("mean_utilization", -1.0);
      CHECK(u > 0.0);
      CHECK(u <= 1.0);
    }
    check("--vm " + vm, out, batched ? n_all : n_few);
  }
  check("--vm stack --lanes 64",
        run_outputs(tmp.path, {"run", src, "--entry", "main", "--inputs", all, "--vm", "stack",
                               "--lanes", "64"}),
        n_all);

  Run lowered = run_cli(tmp.path, {"lower", src, "--entry", "main", "--inputs", all});
  INFO("autobatch lower stderr:\n" << lowered.err);
  REQUIRE(lowered.code == 0);
  const std::string lowered_path = (tmp.path / "lowered.ab").string();
  write_file(lowered_path, lowered.out);
  check("lowered, --vm stack",
        run_outputs(tmp.path, {"run", lowered_path, "--inputs", all, "--vm", "stack"}), n_all);
}

// ---------------------------------------------------------------------------------------
// mergesort

constexpr size_t kSortLen = 32;  // programs/mergesort.ab sorts f64[32]
using SortRow = std::vector<double>;

std::vector<SortRow> make_sort_inputs(size_t count, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> wide(-1e3, 1e3);
  std::normal_distribution<double> gauss(0.0, 5.0);
  std::uniform_int_distribution<int> small(0, 4);
  std::uniform_int_distribution<size_t> pos(0, kSortLen - 1);
  const double inf = std::numeric_limits<double>::infinity();
  const std::array<double, 10> special{-0.0,   0.0,    inf,     -inf, 1e308,
                                       -1e308, 5e-324, -5e-324, 1.0,  -1.0};
  std::uniform_int_distribution<size_t> pick_special(0, special.size() - 1);
  std::vector<SortRow> rows;
  for (size_t t = 0; t < count; ++t) {
    SortRow r(kSortLen);
    switch (t % 8) {
      case 0:  // random doubles, all digits
        for (auto& x : r) x = wide(rng);
        break;
      case 1:  // five distinct values: long runs of duplicates
        for (auto& x : r) x = small(rng);
        break;
      case 2:  // already sorted
        for (auto& x : r) x = wide(rng);
        std::sort(r.begin(), r.end());
        break;
      case 3:  // reversed
        for (auto& x : r) x = wide(rng);
        std::sort(r.begin(), r.end(), [](double a, double b) { return a > b; });
        break;
      case 4:  // all equal
        std::fill(r.begin(), r.end(), wide(rng));
        break;
      case 5:  // sorted with a few swaps
        for (auto& x : r) x = wide(rng);
        std::sort(r.begin(), r.end());
        for (int k = 0; k < 3; ++k) std::swap(r[pos(rng)], r[pos(rng)]);
        break;
      case 6:  // signed zeros, infinities, extremes (stability decides where -0.0 and 0.0 go)
        for (auto& x : r) x = special[pick_special(rng)];
        break;
      default:  // normal, rounded to one decimal: duplicates among negatives and positives
        for (auto& x : r) x = std::round(gauss(rng) * 10.0) / 10.0;
        break;
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

int64_t brute_force_inversions(const SortRow& r) {
  int64_t n = 0;
  for (size_t i = 0; i < r.size(); ++i)
    for (size_t j = i + 1; j < r.size(); ++j) n += r[i] > r[j];
  return n;
}

TEST_CASE("programs: mergesort sorts 500 random arrays under every VM, with lanes and lowered") {
  std::mt19937_64 rng(0x5eed'0006'0004ull);
  const std::vector<SortRow> rows = make_sort_inputs(500, rng);
  std::vector<SortRow> sorted = rows;
  std::vector<int64_t> inversions;
  for (auto& r : sorted) std::stable_sort(r.begin(), r.end());
  for (const auto& r : rows) inversions.push_back(brute_force_inversions(r));

  TempDir tmp;
  auto inputs = [&](size_t n) {
    const std::string path = (tmp.path / ("inputs" + std::to_string(n) + ".json")).string();
    write_file(
        path,
        "{\"a\": " + json_rows(std::vector<SortRow>(rows.begin(), rows.begin() + n), json_double) +
            "}\n");
    return path;
  };
  run_everywhere(tmp, "mergesort.ab", rows.size(), 32, inputs,
                 [&](const std::string& how, const json& out, size_t n) {
                   INFO(how);
                   REQUIRE(out.is_array());
                   REQUIRE(out.size() == 2);
                   REQUIRE(out[0].size() == n);
                   REQUIRE(out[1].size() == n);
                   size_t bad = 0;
                   for (size_t t = 0; t < n; ++t) {
                     REQUIRE(out[0][t].size() == kSortLen);
                     bool ok = out[1][t].get<int64_t>() == inversions[t];
                     for (size_t k = 0; k < kSortLen; ++k)
                       ok = ok && same_double(as_double(out[0][t][k]), sorted[t][k]);
                     if (!ok && bad++ < 3) {
                       std::string got, want;
                       for (const auto& x : out[0][t]) got += " " + show(as_double(x));
                       for (double x : sorted[t]) want += " " + show(x);
                       FAIL_CHECK("thread " << t << ": got" << got << " inversions " << out[1][t]
                                            << "\n want" << want << " inversions "
                                            << inversions[t]);
                     }
                   }
                   CHECK(bad == 0);
                 });
}

// ---------------------------------------------------------------------------------------
// tree_eval

constexpr int64_t kConst = 0, kAdd = 1, kSub = 2, kMul = 3, kDiv = 4, kNeg = 5, kMax = 6;
constexpr size_t kSlots = 64;  // nodes per tree, unused slots hold garbage never visited
constexpr int kMaxDepth = 12;

struct Tree {
  std::vector<int64_t> op, left, right;
  std::vector<double> val;
};

// Builds trees into the slots of one Tree in a shuffled order (the root is slot 0),
// so children sit before or after their parents anywhere in the arrays.
class TreeBuilder {
 public:
  TreeBuilder(std::mt19937_64& rng) : rng_(rng) {
    t_.op.assign(kSlots, 0);
    t_.left.assign(kSlots, 0);
    t_.right.assign(kSlots, 0);
    t_.val.assign(kSlots, 0.0);
    for (size_t i = 1; i < kSlots; ++i) order_.push_back(static_cast<int64_t>(i));
    std::shuffle(order_.begin(), order_.end(), rng_);
  }
  size_t used() const { return next_; }
  int64_t alloc() {
    REQUIRE(next_ < kSlots);
    return next_++ == 0 ? 0 : order_[next_ - 2];
  }
  int64_t leaf() {
    int64_t i = alloc();
    t_.val[i] = leaf_value();
    return i;
  }
  int64_t node(int64_t op, int64_t l, int64_t r, int64_t at) {
    t_.op[at] = op;
    t_.left[at] = l;
    t_.right[at] = r;
    return at;
  }
  int64_t binary_op() {
    static constexpr std::array<int64_t, 5> ops{kAdd, kSub, kMul, kDiv, kMax};
    return ops[std::uniform_int_distribution<size_t>(0, ops.size() - 1)(rng_)];
  }
  // A random subtree of at most `budget` slots and depth at most `depth`.
  int64_t random(int depth, size_t budget, double p_leaf) {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    if (depth == 0 || budget < 2 || coin(rng_) < p_leaf) return leaf();
    int64_t at = alloc();
    if (budget < 3 || coin(rng_) < 0.15)
      return node(kNeg, random(depth - 1, budget - 1, p_leaf), 0, at);
    size_t before = used();
    size_t left_budget = std::uniform_int_distribution<size_t>(1, budget - 2)(rng_);
    int64_t l = random(depth - 1, left_budget, p_leaf);
    size_t left_used = used() - before;
    int64_t r = random(depth - 1, budget - 1 - left_used, p_leaf);
    return node(binary_op(), l, r, at);
  }
  int64_t balanced(int depth) {
    if (depth == 0) return leaf();
    int64_t at = alloc();
    int64_t l = balanced(depth - 1);
    int64_t r = balanced(depth - 1);
    return node(binary_op(), l, r, at);
  }
  // Fills the unused slots with garbage that evaluation must never look at.
  Tree finish() {
    std::uniform_int_distribution<int64_t> any_op(0, 6), any_slot(0, kSlots - 1);
    for (size_t k = next_; k < kSlots; ++k) {
      int64_t i = order_[k - 1];
      t_.op[i] = any_op(rng_);
      t_.left[i] = any_slot(rng_);
      t_.right[i] = any_slot(rng_);
      t_.val[i] = 1e6 + static_cast<double>(k);
    }
    return t_;
  }
  Tree& tree() { return t_; }

 private:
  double leaf_value() {
    // Small integers (zero among them: x / 0 and 0 / 0 happen), halves, and wider values.
    switch (std::uniform_int_distribution<int>(0, 2)(rng_)) {
      case 0:
        return static_cast<double>(std::uniform_int_distribution<int>(-3, 3)(rng_));
      case 1:
        return std::uniform_int_distribution<int>(-8, 8)(rng_) * 0.5;
      default:
        return std::uniform_real_distribution<double>(-10.0, 10.0)(rng_);
    }
  }
  std::mt19937_64& rng_;
  Tree t_;
  std::vector<int64_t> order_;
  size_t next_ = 0;
};

std::vector<Tree> make_trees(size_t count, std::mt19937_64& rng) {
  std::vector<Tree> trees;
  std::uniform_int_distribution<int> depth(0, kMaxDepth);
  for (size_t n = 0; n < count; ++n) {
    TreeBuilder b(rng);
    switch (n % 10) {
      case 0:  // a single leaf
        b.leaf();
        break;
      case 1: {  // a chain of negations
        int d = depth(rng);
        std::vector<int64_t> at;
        for (int k = 0; k < d; ++k) at.push_back(b.alloc());
        int64_t child = b.leaf();
        for (int k = d - 1; k >= 0; --k) child = b.node(kNeg, child, 0, at[k]);
        break;
      }
      case 2:    // a left comb (((x op y) op z) ...), depth 12
      case 3: {  // a right comb x op (y op (z ...)), depth 12
        std::vector<int64_t> at;
        for (int k = 0; k < kMaxDepth; ++k) at.push_back(b.alloc());
        int64_t child = b.leaf();
        for (int k = kMaxDepth - 1; k >= 0; --k) {
          int64_t other = b.leaf();
          child = n % 10 == 2 ? b.node(b.binary_op(), child, other, at[k])
                              : b.node(b.binary_op(), other, child, at[k]);
        }
        break;
      }
      case 4:  // a full balanced tree of depth 5 (63 slots)
        b.balanced(5);
        break;
      case 5: {  // a DAG: node k's children are both node k+1, so 2^(d+1) - 1 calls
        int d = std::uniform_int_distribution<int>(1, 10)(rng);
        std::vector<int64_t> at;
        for (int k = 0; k < d; ++k) at.push_back(b.alloc());
        int64_t child = b.leaf();
        for (int k = d - 1; k >= 0; --k) child = b.node(b.binary_op(), child, child, at[k]);
        break;
      }
      default: {  // random shapes
        static constexpr std::array<double, 3> p_leaf{0.1, 0.3, 0.5};
        b.random(depth(rng), kSlots, p_leaf[n % 3]);
        break;
      }
    }
    trees.push_back(b.finish());
  }
  return trees;
}

// The same operations as programs/tree_eval.ab, in the same order. max is the
// tool's (NumPy's) maximum: NaN if either operand is NaN, else the first
// operand unless it is smaller (so max(-0.0, 0.0) is -0.0).
double native_max(double x, double y) { return (x >= y || x != x) ? x : y; }

std::pair<double, int64_t> native_eval(const Tree& t, int64_t i) {
  const int64_t o = t.op[i];
  if (o == kConst) return {t.val[i], 0};
  auto [x, dx] = native_eval(t, t.left[i]);
  if (o == kNeg) return {-x, dx + 1};
  auto [y, dy] = native_eval(t, t.right[i]);
  double v = 0;
  switch (o) {
    case kAdd:
      v = x + y;
      break;
    case kSub:
      v = x - y;
      break;
    case kMul:
      v = x * y;
      break;
    case kDiv:
      v = x / y;
      break;
    case kMax:
      v = native_max(x, y);
      break;
    default:
      FAIL("bad op " << o);
  }
  return {v, std::max(dx, dy) + 1};
}

TEST_CASE("programs: tree_eval evaluates 300 random trees under every VM, with lanes and lowered") {
  std::mt19937_64 rng(0x7eee'0006'0006ull);
  const std::vector<Tree> trees = make_trees(300, rng);
  std::vector<std::pair<double, int64_t>> want;
  for (const auto& t : trees) want.push_back(native_eval(t, 0));

  // The inputs reach every shape they are meant to: all depths 0..12, NaN, infinities, -0.0.
  std::vector<bool> depth_seen(kMaxDepth + 1);
  bool nan = false, inf = false, negzero = false;
  for (auto [v, d] : want) {
    REQUIRE(d <= kMaxDepth);
    depth_seen[static_cast<size_t>(d)] = true;
    nan = nan || std::isnan(v);
    inf = inf || std::isinf(v);
    negzero = negzero || std::bit_cast<uint64_t>(v) == std::bit_cast<uint64_t>(-0.0);
  }
  CHECK(std::all_of(depth_seen.begin(), depth_seen.end(), [](bool b) { return b; }));
  CHECK(nan);
  CHECK(inf);
  CHECK(negzero);

  TempDir tmp;
  auto inputs = [&](size_t n) {
    std::vector<std::vector<int64_t>> op, left, right;
    std::vector<std::vector<double>> val;
    for (size_t t = 0; t < n; ++t) {
      op.push_back(trees[t].op);
      left.push_back(trees[t].left);
      right.push_back(trees[t].right);
      val.push_back(trees[t].val);
    }
    auto ints = [](int64_t v) { return std::to_string(v); };
    const std::string path = (tmp.path / ("inputs" + std::to_string(n) + ".json")).string();
    write_file(path, "{\"op\": " + json_rows(op, ints) + ",\n\"left\": " + json_rows(left, ints) +
                         ",\n\"right\": " + json_rows(right, ints) +
                         ",\n\"val\": " + json_rows(val, json_double) + "}\n");
    return path;
  };
  run_everywhere(tmp, "tree_eval.ab", trees.size(), 30, inputs,
                 [&](const std::string& how, const json& out, size_t n) {
                   INFO(how);
                   REQUIRE(out.is_array());
                   REQUIRE(out.size() == 2);
                   REQUIRE(out[0].size() == n);
                   REQUIRE(out[1].size() == n);
                   size_t bad = 0;
                   for (size_t t = 0; t < n; ++t) {
                     const double v = as_double(out[0][t]);
                     const int64_t d = out[1][t].get<int64_t>();
                     if ((!same_double(v, want[t].first) || d != want[t].second) && bad++ < 5)
                       FAIL_CHECK("tree " << t << ": got " << show(v) << " depth " << d << ", want "
                                          << show(want[t].first) << " depth " << want[t].second);
                   }
                   CHECK(bad == 0);
                 });
}

}  // namespace
