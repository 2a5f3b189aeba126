// Large batches end to end (the CLI's .npy path, Program::run, the VMs): an
// input the program never writes is read in place, not copied, and outputs
// of a batch cut into shards come out whole and right. Peak memory is the
// child process's (cli_harness.h), measured against a control program that
// writes its parameter and so must copy it.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "cli_harness.h"
#include "io/atomic_file.h"
#include "io/npy.h"

using namespace ab;

namespace {

namespace fs = std::filesystem;

using ab_test::TempDir;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

ab_test::Proc cli(const std::vector<std::string>& args) {
  return ab_test::run_binary(AUTOBATCH_SOURCE_DIR, args, std::nullopt, 120);
}

}  // namespace

TEST_CASE("large batch: an input the program never writes is read in place by every batched VM") {
  // 65536 threads of f64[64]: a 32 MiB input, one shard (--threads 1, fewer
  // than 2 * 262144 threads), so a copy of it would be one 32 MiB block.
  TempDir dir;
  const int64_t batch = 65536, event = 64;
  Array x(TensorType{DType::F64, {event}}, batch);
  std::vector<double> want(batch), want_doubled(batch);
  for (int64_t t = 0; t < batch; ++t) {
    double s = 0;
    for (int64_t k = 0; k < event; ++k) {
      double v = static_cast<double>((t * 7 + k) % 13) - 6.0;  // small integers: sums are exact
      x.as<double>()[t * event + k] = v;
      s += v;
    }
    want[t] = s;
    want_doubled[t] = 2 * s;
  }
  REQUIRE(write_files_atomically({npy_file(dir / "x.npy", x, batch)}).ok());
  write_text(dir / "read.ab", "func main(x: f64[64]) -> f64 {\n  return sum(x)\n}\n");
  write_text(dir / "write.ab", "func main(x: f64[64]) -> f64 {\n  x = x * 2.0\n  return sum(x)\n}\n");

  auto run = [&](const std::string& program, const std::vector<std::string>& vm) {
    std::vector<std::string> args = {"run", dir / program, "--inputs", "x=" + (dir / "x.npy"),
                                     "--threads", "1", "--output", dir / "out.npy", "-v"};
    args.insert(args.end(), vm.begin(), vm.end());
    ab_test::Proc p = cli(args);
    REQUIRE_MESSAGE(p.code == 0, p.err);
    auto out = read_npy_file(dir / "out.npy");
    REQUIRE(out.ok());
    REQUIRE(out->shape == Shape{batch});
    const auto* got = reinterpret_cast<const double*>(out->data.data());
    const std::vector<double>& expected = program == "read.ab" ? want : want_doubled;
    CHECK(std::equal(got, got + batch, expected.begin()));
    return p;
  };
  for (const auto& vm : std::vector<std::vector<std::string>>{
           {"--vm", "stack", "--jit", "on"},
           {"--vm", "stack", "--jit", "off"},
           {"--vm", "stackless", "--jit", "off"}}) {
    const std::string flags = vm[0] + " " + vm[1] + " " + vm[2] + " " + vm.back();
    CAPTURE(flags);
    ab_test::Proc read_only = run("read.ab", vm);
    // The control: a lane per thread, as the run that reads in place has
    // (its large variable would otherwise give the stack VM fewer lanes).
    std::vector<std::string> one_lane_each = vm;
    if (vm[1] == "stack") one_lane_each.insert(one_lane_each.end(), {"--lanes", "65536"});
    ab_test::Proc written = run("write.ab", one_lane_each);
    CHECK(read_only.err.find("inputs read in place: 33554432 bytes") != std::string::npos);
    CHECK(written.err.find("inputs read in place") == std::string::npos);
    // The control copies its parameter (32 MiB): the run that reads it in
    // place peaks at least 24 MiB lower (not under the sanitizers, whose
    // allocator and shadow memory decide the resident size).
#ifndef AUTOBATCH_TESTS_SANITIZED
    CHECK(written.max_rss_kb - read_only.max_rss_kb > 24 * 1024);
#endif
  }
}

TEST_CASE("large batch: one OS thread runs a batch in shards, outputs whole, in every VM") {
  // 2 * 262144 + 3 threads: shards on one OS thread (api/shards.h), each
  // writing its rows of the batch's output in place; collatz steps of
  // n = t + 1 against a plain loop.
  TempDir dir;
  const int64_t batch = 2 * 262144 + 3;
  Array n(TensorType{DType::I64, {}}, batch);
  for (int64_t t = 0; t < batch; ++t) n.as<int64_t>()[t] = t % 1000 + 1;
  REQUIRE(write_files_atomically({npy_file(dir / "n.npy", n, batch)}).ok());
  for (const auto& vm : std::vector<std::vector<std::string>>{
           {"--vm", "stack", "--threads", "1"},
           {"--vm", "stack", "--jit", "off", "--threads", "1"},
           {"--vm", "stackless", "--threads", "1"},
           {"--vm", "stack", "--threads", "2"}}) {
    const std::string flags = vm[0] + " " + vm[1] + " " + vm[2] + " " + vm.back();
    CAPTURE(flags);
    std::vector<std::string> args = {"run", "programs/collatz.ab", "--inputs",
                                     "n=" + (dir / "n.npy"), "--output", dir / "out/", "-q"};
    args.insert(args.end(), vm.begin(), vm.end());
    ab_test::Proc p = cli(args);
    REQUIRE_MESSAGE(p.code == 0, p.err);
    auto out = read_npy_file(dir / "out/steps.npy");
    REQUIRE(out.ok());
    REQUIRE(out->shape == Shape{batch});
    const auto* got = reinterpret_cast<const int64_t*>(out->data.data());
    int64_t wrong = 0;
    for (int64_t t = 0; t < batch; ++t) {
      int64_t v = t % 1000 + 1, steps = 0;
      while (v > 1) {
        v = v % 2 ? 3 * v + 1 : v / 2;
        ++steps;
      }
      wrong += got[t] != steps;
    }
    CHECK(wrong == 0);
  }
}

TEST_CASE("large batch: a temporary the size of shared data takes a row per lane, not 256") {
  // Two threads scale a shared 400 x 500 matrix (1.6 MB) and sum it: the
  // product is a temporary of each thread. Its scratch has a row per lane a
  // chunk can hold (2 here); with a row per slot of a 256-lane chunk it took
  // 410 MB (the process peaked at 468 MB; 65 MB now).
  TempDir dir;
  Array k(TensorType{DType::F64, {}}, 2);
  k.as<double>()[0] = 1.0;
  k.as<double>()[1] = 2.0;
  Array x(TensorType{DType::F64, {400, 500}}, 1);
  for (int64_t i = 0; i < 400 * 500; ++i) x.as<double>()[i] = 1.0;
  REQUIRE(write_files_atomically({npy_file(dir / "k.npy", k, 2), npy_file(dir / "X.npy", x, 1)})
              .ok());
  write_text(dir / "scale.ab",
             "func main(k: f64, X: f64[400, 500]) -> f64 {\n  return sum(X * k)\n}\n");
  for (const char* jit : {"on", "off"}) {
    CAPTURE(jit);
    ab_test::Proc p = cli({"run", dir / "scale.ab", "--inputs", "k=" + (dir / "k.npy"), "--inputs",
                           "X=" + (dir / "X.npy"), "--threads", "1", "--jit", jit});
    REQUIRE_MESSAGE(p.code == 0, p.err);
    CHECK(p.out.find("[[2e+05, 4e+05]]") != std::string::npos);
    // (Not under the sanitizers: the child's peak counts the resident pages
    // it shared with the test process before exec, over a gigabyte there.)
#ifndef AUTOBATCH_TESTS_SANITIZED
    CHECK(p.max_rss_kb < 250 * 1024);
#endif
  }
}
