// The API pieces a batch split over processes uses (src/mpi), without MPI:
// .npy inputs left on disk and read by rows (load_inputs(..., defer_npy),
// read_rows), runs on a part of a batch that name threads as in the whole
// batch (RunOptions::first_thread, total_batch), Array::copy_of.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "temp_dir.h"
#include "autobatch/autobatch.h"
#include "io/npy.h"

namespace {

namespace fs = std::filesystem;

struct TempDir : ab_test::TempDir {
  TempDir() : ab_test::TempDir("ab_parts") {}
  std::string write_npy(const std::string& name, ab::DType dtype, const ab::Shape& shape,
                        const void* data) {
    std::string file = (path / name).string();
    std::ofstream(file, std::ios::binary)
        << ab::encode_npy(dtype, shape, static_cast<const std::byte*>(data));
    return file;
  }
};

const char* kAffine = R"(func f(x: i64, k: i64) -> i64 {
  return x * k + 1
}
)";

const char* kDivide = R"(func divide(a: i64, b: i64) -> i64 {
  return a / b
}
)";

}  // namespace

TEST_CASE("load_inputs with defer_npy leaves batched .npy inputs on disk; read_rows reads parts") {
  TempDir dir;
  double xs[6] = {0, 1, 2, 3, 4, 5};  // f64 in the file, i64 parameter: converted per part
  std::string file = dir.write_npy("x.npy", ab::DType::F64, {6}, xs);
  auto p = autobatch::compile(kAffine);
  REQUIRE(p);
  auto in = p->load_inputs({"x=" + file, R"({"k": 10})"}, std::nullopt, true);
  REQUIRE_MESSAGE(in, in.rendered());
  CHECK(in->batch == 6);
  REQUIRE(in->on_disk.size() == 2);
  REQUIRE(in->on_disk[0]);
  CHECK_FALSE(in->on_disk[1]);  // JSON: in memory
  CHECK(in->arrays[0].data() == nullptr);
  CHECK(in->arrays[0].shape() == std::vector<int64_t>{6});
  const autobatch::NpyInput& x = *in->on_disk[0];
  CHECK(x.file_dtype == autobatch::DType::F64);
  CHECK(x.dtype == autobatch::DType::I64);
  CHECK(x.data_offset % 64 == 0);

  auto rows = autobatch::read_rows(x, 2, 3);
  REQUIRE(rows);
  CHECK(rows->shape() == std::vector<int64_t>{3});
  CHECK(rows->as<int64_t>()[0] == 2);
  CHECK(rows->as<int64_t>()[2] == 4);
  CHECK_FALSE(autobatch::read_rows(x, 4, 3));  // past the end

  // Without defer_npy the same inputs load whole, as before.
  auto whole = p->load_inputs({"x=" + file, R"({"k": 10})"});
  REQUIRE(whole);
  CHECK(whole->on_disk.empty());
  CHECK(whole->arrays[0].as<int64_t>()[5] == 5);

  // A value that does not convert is found in the part that reads it.
  xs[4] = 4.5;
  std::string bad = dir.write_npy("bad.npy", ab::DType::F64, {6}, xs);
  auto deferred = p->load_inputs({"x=" + bad, R"({"k": 10})"}, std::nullopt, true);
  REQUIRE(deferred);
  CHECK(autobatch::read_rows(*deferred->on_disk[0], 0, 3));
  auto r = autobatch::read_rows(*deferred->on_disk[0], 3, 3);
  REQUIRE_FALSE(r);
  CHECK(r.rendered().find("in rows 3..6") != std::string::npos);
  CHECK(r.rendered().find("4.5 is not an integer") != std::string::npos);

  // A wrong event shape is still an error at load time.
  int64_t m[4] = {1, 2, 3, 4};
  std::string matrix = dir.write_npy("m.npy", ab::DType::I64, {2, 2}, m);
  auto wrong = p->load_inputs({"x=" + matrix, R"({"k": 10})"}, std::nullopt, true);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.rendered().find("expected (batch)") != std::string::npos);
}

TEST_CASE("a truncated .npy file is rejected from its header alone") {
  TempDir dir;
  int64_t v[4] = {1, 2, 3, 4};
  std::string file = dir.write_npy("v.npy", ab::DType::I64, {4}, v);
  fs::resize_file(file, fs::file_size(file) - 8);
  auto p = autobatch::compile(kAffine);
  REQUIRE(p);
  auto in = p->load_inputs({"x=" + file, R"({"k": 1})"}, std::nullopt, true);
  REQUIRE_FALSE(in);
  CHECK(in.rendered().find("truncated data") != std::string::npos);
}

TEST_CASE("a run on a part of a batch names threads as in the whole batch") {
  auto p = autobatch::compile(kDivide);
  REQUIRE(p);
  int64_t a[3] = {1, 2, 3}, b[3] = {1, 0, 1};
  autobatch::RunOptions o;
  o.first_thread = 100;
  o.total_batch = 1000;
  auto r = p->run({autobatch::ArrayView::of(a, 3), autobatch::ArrayView::of(b, 3)}, o);
  REQUIRE(r.runtime_error);
  CHECK(r.runtime_error->thread == 101);
  CHECK(r.runtime_error->batch == 1000);
  CHECK(r.runtime_error->rendered.find("in thread 101 of 1000") != std::string::npos);
  o.threads = 2;  // the shard's start adds to first_thread
  int64_t b2[3] = {1, 1, 0};
  r = p->run({autobatch::ArrayView::of(a, 3), autobatch::ArrayView::of(b2, 3)}, o);
  REQUIRE(r.runtime_error);
  CHECK(r.runtime_error->thread == 102);
  // --on-error record: the failed threads too (both shards).
  o.on_error = autobatch::OnError::Record;
  int64_t b3[3] = {0, 1, 0};
  r = p->run({autobatch::ArrayView::of(a, 3), autobatch::ArrayView::of(b3, 3)}, o);
  REQUIRE_FALSE(r.runtime_error);
  REQUIRE(r.errors.size() == 2);
  CHECK(r.errors[0].thread == 100);
  CHECK(r.errors[1].thread == 102);
  CHECK(r.errors[1].error.thread == 102);
  CHECK(r.errors[1].error.batch == 1000);
  CHECK(r.errors[1].error.rendered.find("in thread 102 of 1000") != std::string::npos);
  CHECK(r.outputs[0].batch() == 3);
  o.first_thread = -1;
  CHECK_FALSE(p->check(o));
}

TEST_CASE("Array::copy_of owns a copy") {
  double d[4] = {1, 2, 3, 4};
  autobatch::Array a = autobatch::Array::copy_of({autobatch::DType::F64, {2, 2}, d});
  d[0] = 9;
  CHECK(a.shape() == std::vector<int64_t>{2, 2});
  CHECK(a.batch() == 2);
  CHECK(a.as<double>()[0] == 1);
  CHECK(a.as<double>()[3] == 4);
}
