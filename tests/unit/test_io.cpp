// Unit tests for src/io: --inputs loading (JSON and .npy), dtype
// conversion, the .npy reader's corner cases, output rendering and atomic
// writes. Every error test checks that the message names the file (or
// "inline JSON") and the parameter.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "temp_dir.h"
#include "io/atomic_file.h"
#include "io/inputs.h"
#include "io/json_input.h"
#include "io/npy.h"
#include "io/outputs.h"
#include "io/scalar.h"

namespace fs = std::filesystem;
using namespace ab;

namespace {

// A fresh empty directory, removed at the end of the test, and what it holds.
struct TempDir : ab_test::TempDir {
  TempDir() : ab_test::TempDir("ab_io_test") {}
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }
};

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename T>
std::string errors(const Result<T>& r) {
  REQUIRE_FALSE(r.ok());
  std::string out;
  for (const auto& d : r.diags().items()) out += d.message + "\n";
  return out;
}

ParamSpec untyped(std::string name) { return {std::move(name), std::nullopt}; }
ParamSpec typed(std::string name, DType d, Shape s = {}) {
  return {std::move(name), Type::tensor_of(d, std::move(s))};
}

Result<InputSet> load(std::vector<std::string> args, std::vector<ParamSpec> params,
                      std::optional<int64_t> batch = std::nullopt) {
  return load_inputs(args, params, batch);
}

template <typename T>
std::vector<T> values(const Array& a) {
  REQUIRE(dtype_size(a.type.dtype) == sizeof(T));
  const T* p = a.as<T>();
  return std::vector<T>(p, p + a.batch * a.event_size());
}

std::vector<uint8_t> bools(const Array& a) { return values<uint8_t>(a); }

// A raw .npy file with the given version and header dict (padded like NumPy).
std::string raw_npy(int major, const std::string& dict, const std::string& data) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  size_t n = header.size();
  for (size_t k = 0; k < prefix - 8; ++k) out += static_cast<char>((n >> (8 * k)) & 0xff);
  return out + header + data;
}

template <typename T>
std::string bytes_of(std::vector<T> v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

Array make_array(DType d, Shape event, int64_t batch, const std::string& bytes) {
  Array a(TensorType{d, std::move(event)}, batch);
  REQUIRE(a.byte_size() == bytes.size());
  if (!bytes.empty()) std::memcpy(a.data.data(), bytes.data(), bytes.size());
  return a;
}

}  // namespace

// ---------------------------------------------------------------- inputs: JSON

TEST_CASE("inputs: the README example is four i64 threads") {
  auto r = load({R"({"n": [6, 7, 8, 7]})"}, {untyped("n")});
  REQUIRE(r.ok());
  CHECK(r->batch == 4);
  REQUIRE(r->values.size() == 1);
  CHECK(r->values[0].type == TensorType{DType::I64, {}});
  CHECK(values<int64_t>(r->values[0]) == std::vector<int64_t>{6, 7, 8, 7});
}

TEST_CASE("inputs: inline JSON may start after whitespace; a bare scalar is batch 1") {
  auto r = load({"  \n {\"x\": 2.5}"}, {untyped("x")});
  REQUIRE(r.ok());
  CHECK(r->batch == 1);
  CHECK(r->values[0].batch == 1);
  CHECK(r->values[0].type == TensorType{DType::F64, {}});
  CHECK(values<double>(r->values[0]) == std::vector<double>{2.5});
}

TEST_CASE("inputs: untyped element kinds give the dtype") {
  auto r = load({R"({"i": [1, 2], "f": [1, 2.5], "b": [true, false]})"},
                {untyped("i"), untyped("f"), untyped("b")});
  REQUIRE(r.ok());
  CHECK(r->values[0].type.dtype == DType::I64);
  CHECK(r->values[1].type.dtype == DType::F64);  // one float makes the list f64
  CHECK(values<double>(r->values[1]) == std::vector<double>{1.0, 2.5});
  CHECK(r->values[2].type.dtype == DType::Bool);
  CHECK(bools(r->values[2]) == std::vector<uint8_t>{1, 0});

  auto empty = load({R"({"e": []})"}, {untyped("e")});  // an empty list: zero threads
  REQUIRE(empty.ok());
  CHECK(empty->batch == 0);
  CHECK(empty->values[0].type.dtype == DType::F64);
}

TEST_CASE("inputs: booleans and numbers do not mix") {
  auto e = errors(load({R"({"m": [true, 1]})"}, {untyped("m")}));
  CHECK(e.find("inline JSON") != std::string::npos);
  CHECK(e.find("'m'") != std::string::npos);
  CHECK(e.find("mixes booleans and numbers") != std::string::npos);
}

TEST_CASE("inputs: NaN and infinities are strings") {
  auto r = load({R"({"x": ["NaN", "Infinity", "-Infinity", 1]})"}, {untyped("x")});
  REQUIRE(r.ok());
  auto v = values<double>(r->values[0]);
  CHECK(std::isnan(v[0]));
  CHECK(v[1] == INFINITY);
  CHECK(v[2] == -INFINITY);
  CHECK(v[3] == 1.0);

  auto f = load({R"({"x": ["NaN", "-Infinity"]})"}, {typed("x", DType::F32)});
  REQUIRE(f.ok());
  auto fv = values<float>(f->values[0]);
  CHECK(std::isnan(fv[0]));
  CHECK(fv[1] == -INFINITY);

  auto e = errors(load({R"({"x": ["nan"]})"}, {untyped("x")}));
  CHECK(e.find("'x'") != std::string::npos);
  CHECK(e.find("\"nan\"") != std::string::npos);
  CHECK(e.find("\"NaN\"") != std::string::npos);  // says what is allowed

  auto i = errors(load({R"({"k": ["NaN"]})"}, {typed("k", DType::I64)}));
  CHECK(i.find("NaN is not an integer") != std::string::npos);
}

TEST_CASE("inputs: bare NaN, Infinity and -Infinity, as Python's json.dump writes them") {
  // Inside strings (a key, a value) the words stay as they are.
  auto r =
      load({"{\"x\": [NaN, Infinity,\n -Infinity, 1.5, \"NaN\"], \"NaN Infinity\": [-Infinity]}"},
           {untyped("x"), untyped("NaN Infinity")});
  REQUIRE(r.ok());
  auto v = values<double>(r->values[0]);
  REQUIRE(v.size() == 5);
  CHECK(std::isnan(v[0]));
  CHECK(v[1] == INFINITY);
  CHECK(v[2] == -INFINITY);
  CHECK(v[3] == 1.5);
  CHECK(std::isnan(v[4]));
  CHECK(values<double>(r->values[1])[0] == -INFINITY);
  // Only whole words: NaNa and xInfinity stay invalid, at their own column.
  auto e = errors(load({R"({"x": [NaN, NaNa]})"}, {untyped("x")}));
  CHECK(e.find("inline JSON:1:13: invalid JSON") == 0);
  CHECK(e.find("NaN, Infinity or -Infinity") != std::string::npos);
  auto i = errors(load({R"({"k": [1, NaN]})"}, {typed("k", DType::I64)}));
  CHECK(i.find("NaN is not an integer") != std::string::npos);
}

TEST_CASE("inputs: declared types convert and range-check") {
  SUBCASE("i32 in range") {
    auto r = load({R"({"n": [-2147483648, 2147483647]})"}, {typed("n", DType::I32)});
    REQUIRE(r.ok());
    CHECK(values<int32_t>(r->values[0]) == std::vector<int32_t>{INT32_MIN, INT32_MAX});
  }
  SUBCASE("i32 out of range") {
    auto e = errors(load({R"({"n": [1, 3000000000]})"}, {typed("n", DType::I32)}));
    CHECK(e.find("inline JSON: parameter 'n' (i32)") != std::string::npos);
    CHECK(e.find("n[1]") != std::string::npos);
    CHECK(e.find("3000000000 is out of range for i32") != std::string::npos);
  }
  SUBCASE("integral floats are integers, others are errors") {
    auto r = load({R"({"n": [3.0, -4.0]})"}, {typed("n", DType::I64)});
    REQUIRE(r.ok());
    CHECK(values<int64_t>(r->values[0]) == std::vector<int64_t>{3, -4});
    auto e = errors(load({R"({"n": [1, 2.5]})"}, {typed("n", DType::I64)}));
    CHECK(e.find("'n'") != std::string::npos);
    CHECK(e.find("2.5 is not an integer") != std::string::npos);
  }
  SUBCASE("integers into floats") {
    auto r = load({R"({"x": [1, 2]})"}, {typed("x", DType::F32)});
    REQUIRE(r.ok());
    CHECK(values<float>(r->values[0]) == std::vector<float>{1.0f, 2.0f});
  }
  SUBCASE("f32 range") {
    auto e = errors(load({R"({"x": [1e39]})"}, {typed("x", DType::F32)}));
    CHECK(e.find("out of range for f32") != std::string::npos);
    auto r = load({R"({"x": [3.4028235e38, 0.1]})"}, {typed("x", DType::F32)});
    REQUIRE(r.ok());
    CHECK(values<float>(r->values[0]) == std::vector<float>{FLT_MAX, 0.1f});
  }
  SUBCASE("bool from numbers and numbers from bool are errors") {
    auto e = errors(load({R"({"c": [1, 0]})"}, {typed("c", DType::Bool)}));
    CHECK(e.find("'c' (bool)") != std::string::npos);
    CHECK(e.find("expected a boolean") != std::string::npos);
    auto f = errors(load({R"({"x": [true]})"}, {typed("x", DType::F64)}));
    CHECK(f.find("expected a number") != std::string::npos);
  }
  SUBCASE("integers beyond i64") {
    auto e = errors(load({R"({"n": [18446744073709551615]})"}, {untyped("n")}));
    CHECK(e.find("18446744073709551615 is out of range for i64") != std::string::npos);
    auto r = load({R"({"x": [18446744073709551615]})"}, {typed("x", DType::F64)});
    REQUIRE(r.ok());
    CHECK(values<double>(r->values[0])[0] == 18446744073709551615.0);
    auto big = errors(load({R"({"n": [1e19]})"}, {typed("n", DType::I64)}));
    CHECK(big.find("out of range for i64") != std::string::npos);
    // Below the range: JSON reads these as floats, which round to -2^63.
    for (const char* low : {R"({"n": [-9223372036854775809]})", R"({"n": [-9223372036854776832]})"}) {
      CAPTURE(low);
      CHECK(errors(load({low}, {typed("n", DType::I64)})).find("out of range for i64") !=
            std::string::npos);
    }
    auto least = load({R"({"n": [-9223372036854775808]})"}, {typed("n", DType::I64)});
    REQUIRE(least.ok());
    CHECK(values<int64_t>(least->values[0])[0] == INT64_MIN);
  }
}

TEST_CASE("inputs: the batch dimension is always written") {
  auto r = load({R"({"v": [[1, 2, 3]]})"}, {typed("v", DType::F64, {3})});
  REQUIRE(r.ok());
  CHECK(r->batch == 1);
  CHECK(r->values[0].type == TensorType{DType::F64, {3}});
  CHECK(values<double>(r->values[0]) == std::vector<double>{1, 2, 3});

  auto e = errors(load({R"({"v": [1, 2, 3]})"}, {typed("v", DType::F64, {3})}));
  CHECK(e.find("inline JSON: parameter 'v' (f64[3])") != std::string::npos);
  CHECK(e.find("v[0] is a number where a list of 3 was expected") != std::string::npos);
  CHECK(e.find("(each thread's value has shape [3])") != std::string::npos);
  CHECK(e.find("one thread is written [[1,2,3]]") != std::string::npos);

  auto wrong = errors(load({R"({"v": [[1, 2]]})"}, {typed("v", DType::F64, {3})}));
  CHECK(wrong.find("v[0] has 2 elements, expected 3") != std::string::npos);

  auto scalar = errors(load({R"({"v": 1})"}, {typed("v", DType::F64, {3})}));
  CHECK(scalar.find("parameter 'v' (f64[3]): v is a number, but a value of shape [3] is a list") !=
        std::string::npos);

  auto deep = errors(load({R"({"s": [[1], [2]]})"}, {typed("s", DType::I64)}));
  CHECK(deep.find("s[0] is a list where a number or boolean was expected") != std::string::npos);
}

TEST_CASE("inputs: untyped nesting gives the shape; ragged nesting is an error") {
  auto r = load({R"({"m": [[1, 2], [3, 4], [5, 6]]})"}, {untyped("m")});
  REQUIRE(r.ok());
  CHECK(r->batch == 3);
  CHECK(r->values[0].type == TensorType{DType::I64, {2}});
  CHECK(values<int64_t>(r->values[0]) == std::vector<int64_t>{1, 2, 3, 4, 5, 6});

  auto e = errors(load({R"({"m": [[1, 2], [3]]})"}, {untyped("m")}));
  CHECK(e.find("'m'") != std::string::npos);
  CHECK(e.find("m[1] has 1 elements, expected 2 (ragged nesting)") != std::string::npos);

  auto e2 = errors(load({R"({"m": [[1, 2], 3]})"}, {untyped("m")}));
  CHECK(e2.find("m[1] is a number where a list of 2 was expected (ragged nesting)") !=
        std::string::npos);
  auto e3 = errors(load({R"({"m": [1, [2]]})"}, {untyped("m")}));
  CHECK(e3.find("m[1] is a list") != std::string::npos);
  // The indices of an element deep in the nesting, after good ones.
  auto e4 = errors(load({R"({"m": [[[1, 2], [3, 4]], [[5, 6], [7, "x"]]]})"}, {untyped("m")}));
  CHECK(e4.find("m[1][1][1] is the string \"x\"") != std::string::npos);
  auto e5 = errors(load({R"({"m": [[[1, 2], [3, 4]], [[5, 6], [7]]]})"}, {untyped("m")}));
  CHECK(e5.find("m[1][1] has 1 elements, expected 2") != std::string::npos);
}

TEST_CASE("inputs: wrong element kinds") {
  auto e = errors(load({R"({"a": [1, null], "b": [{"x": 1}], "c": ["hello"]})"},
                       {untyped("a"), untyped("b"), untyped("c")}));
  CHECK(e.find("a[1] is null") != std::string::npos);
  CHECK(e.find("b[0] is an object") != std::string::npos);
  CHECK(e.find("c[0] is the string \"hello\"") != std::string::npos);
}

TEST_CASE("inputs: batch-1 inputs broadcast and stay shared") {
  auto r = load({R"({"a": [1, 2, 3], "b": 5, "c": [[7, 8]]})"},
                {untyped("a"), untyped("b"), untyped("c")});
  REQUIRE(r.ok());
  CHECK(r->batch == 3);
  CHECK(r->values[0].batch == 3);
  CHECK(r->values[1].batch == 1);
  CHECK(r->values[2].batch == 1);
  CHECK(r->values[2].type.shape == Shape{2});
}

TEST_CASE("inputs: batch sizes must agree") {
  auto e = errors(load({R"({"a": [1, 2, 3], "b": [1, 2], "c": 1})"},
                       {untyped("a"), untyped("b"), untyped("c")}));
  CHECK(e.find("batch sizes differ") != std::string::npos);
  CHECK(e.find("'a' has 3 (inline JSON)") != std::string::npos);
  CHECK(e.find("'b' has 2 (inline JSON)") != std::string::npos);
  CHECK(e.find("'c'") == std::string::npos);  // batch 1 is never the culprit
}

TEST_CASE("inputs: --batch") {
  SUBCASE("no parameters") {
    auto r = load({}, {}, 16);
    REQUIRE(r.ok());
    CHECK(r->batch == 16);
    CHECK(r->values.empty());
    auto one = load({}, {});
    REQUIRE(one.ok());
    CHECK(one->batch == 1);
  }
  SUBCASE("all inputs shared: --batch sets the number of threads") {
    auto r = load({R"({"x": 1.5})"}, {untyped("x")}, 8);
    REQUIRE(r.ok());
    CHECK(r->batch == 8);
    CHECK(r->values[0].batch == 1);
  }
  SUBCASE("must agree with the inputs") {
    auto ok = load({R"({"x": [1, 2]})"}, {untyped("x")}, 2);
    CHECK(ok.ok());
    auto e = errors(load({R"({"x": [1, 2]})"}, {untyped("x")}, 3));
    CHECK(e.find("--batch 3 disagrees") != std::string::npos);
    CHECK(e.find("'x' has batch size 2 (inline JSON)") != std::string::npos);
  }
  SUBCASE("at least 1") {
    auto e = errors(load({}, {}, 0));
    CHECK(e.find("--batch 0") != std::string::npos);
  }
}

TEST_CASE("inputs: missing, unknown and duplicate inputs") {
  SUBCASE("missing") {
    auto e = errors(load({R"({"a": 1})"}, {untyped("a"), untyped("b")}));
    CHECK(e.find("missing input for parameter 'b'") != std::string::npos);
    CHECK(e.find("inline JSON") != std::string::npos);
    auto none = errors(load({}, {untyped("n")}));
    CHECK(none.find("missing input for parameter 'n' (no --inputs were given)") !=
          std::string::npos);
  }
  SUBCASE("unknown, with a suggestion") {
    auto e = errors(load({R"({"nn": [1], "n": [2]})"}, {untyped("n"), untyped("other")}));
    CHECK(e.find("inline JSON: unknown input 'nn' (did you mean 'n'?)") != std::string::npos);
    CHECK(e.find("'other'") != std::string::npos);  // lists the parameters
    CHECK(e.find("missing input for parameter 'other'") != std::string::npos);
    auto typo = load({R"({"nn": [1]})"}, {untyped("n")});
    REQUIRE_FALSE(typo.ok());
    CHECK(typo.diags().error_count() == 1);  // not also "missing input for 'n'"
  }
  SUBCASE("duplicate key in one object") {
    auto e = errors(load({R"({"n": 1, "n": 2})"}, {untyped("n")}));
    CHECK(e.find("inline JSON: duplicate input 'n'") != std::string::npos);
  }
  SUBCASE("duplicate across --inputs") {
    auto e = errors(load({R"({"n": 1})", R"({"n": 2})"}, {untyped("n")}));
    CHECK(e.find("duplicate input for parameter 'n': given in inline JSON #1 and again in inline "
                 "JSON #2") != std::string::npos);
  }
}

TEST_CASE("inputs: a top-level list gives the parameters in order") {
  auto r = load({R"([[1, 2], [true, false]])"}, {untyped("a"), untyped("b")});
  REQUIRE(r.ok());
  CHECK(r->values[0].type.dtype == DType::I64);
  CHECK(r->values[1].type.dtype == DType::Bool);

  auto e = errors(load({"[6, 7, 8]"}, {untyped("n")}));
  CHECK(e.find("the list gives 3 inputs but the entry has 1 parameter ('n')") != std::string::npos);
  CHECK(e.find("{\"name\": [...]}") != std::string::npos);
  CHECK(e.find("missing") == std::string::npos);  // the list is the error, not a missing 'n'

  auto top = errors(load({"  7"}, {untyped("n")}));  // not inline: a file named "  7"
  CHECK(top.find("cannot read the inputs file") != std::string::npos);
}

TEST_CASE("inputs: malformed JSON reports file, line and column") {
  TempDir dir;
  std::string path = dir / "data.json";
  write_file(path, "{\"n\": [1,\n  2x]}\n");
  auto e = errors(load({path}, {untyped("n")}));
  CHECK(e.find(path + ":2:4: invalid JSON") != std::string::npos);

  auto inl = errors(load({"{\"n\": [1, 2"}, {untyped("n")}));
  CHECK(inl.find("inline JSON:1:12: invalid JSON") != std::string::npos);
  CHECK(inl.find("unexpected end of input") != std::string::npos);

  write_file(path, "\"just a string\"");
  auto str = errors(load({path}, {untyped("n")}));
  CHECK(str.find(path + ": expected a JSON object") != std::string::npos);
}

TEST_CASE("inputs: a missing file is named") {
  auto e = errors(load({"/nonexistent/data.json"}, {untyped("n")}));
  CHECK(e.find("/nonexistent/data.json: cannot read the inputs file") != std::string::npos);
  // NAME=PATH only when NAME is an identifier; otherwise a JSON file path.
  TempDir dir;
  auto d = errors(load({dir.path.string()}, {untyped("n")}));
  CHECK(d.find(": cannot read the inputs file: it is a directory") != std::string::npos);
  auto dn = errors(load({"n=" + dir.path.string()}, {untyped("n")}));
  CHECK(dn.find(": cannot open the file: it is a directory") != std::string::npos);
  auto e2 = errors(load({"1a=b.json"}, {untyped("n")}));
  CHECK(e2.find("1a=b.json: cannot read the inputs file") != std::string::npos);
  // A .npy path without NAME= gives the only parameter, or asks for a name.
  auto e3 = errors(load({"1a=b.npy"}, {untyped("n")}));
  CHECK(e3.find("1a=b.npy: parameter 'n': cannot open the file") != std::string::npos);
  auto e4 = errors(load({"mu.npy"}, {untyped("mu"), untyped("s")}));
  CHECK(e4 ==
        "mu.npy: a .npy file gives one parameter: name it, as in --inputs mu=mu.npy (the "
        "entry's parameters are 'mu', 's')\n");
}

TEST_CASE("inputs: tuple-typed parameters are rejected") {
  ParamSpec p{"t", Type::tuple({Type::scalar(DType::F64), Type::scalar(DType::I64)})};
  auto e = errors(load({R"({"t": [1]})"}, {p}));
  CHECK(e.find("parameter 't' has the tuple type (f64, i64)") != std::string::npos);
  CHECK(e.find("missing") == std::string::npos);
}

TEST_CASE("inputs: all errors are reported together") {
  auto r = load({R"({"a": [1.5], "zz": 1})"}, {typed("a", DType::I64), untyped("b")});
  REQUIRE_FALSE(r.ok());
  CHECK(r.diags().error_count() == 3);  // a non-integral, zz unknown, b missing
}

// ---------------------------------------------------------------- inputs: .npy

TEST_CASE("inputs: JSON file and NAME=FILE.npy mixed") {
  TempDir dir;
  std::string json = dir / "data.json";
  write_file(json, R"({"n": [1, 2, 3]})");
  std::string npy = dir / "a.npy";
  write_file(
      npy,
      encode_npy(DType::F64, {3, 2},
                 reinterpret_cast<const std::byte*>(std::vector<double>{1, 2, 3, 4, 5, 6}.data())));
  auto r = load({json, "A=" + npy}, {untyped("n"), untyped("A")});
  REQUIRE(r.ok());
  CHECK(r->batch == 3);
  CHECK(r->values[1].type == TensorType{DType::F64, {2}});
  CHECK(values<double>(r->values[1]) == std::vector<double>{1, 2, 3, 4, 5, 6});

  auto dup = errors(load({R"({"A": 1})", "A=" + npy}, {untyped("A")}));
  CHECK(dup.find("duplicate input for parameter 'A': given in inline JSON and again in " + npy) !=
        std::string::npos);
  auto unk = errors(load({"B=" + npy}, {untyped("A")}));
  CHECK(unk.find("B=" + npy + ": unknown input 'B'") != std::string::npos);
  auto nopath = errors(load({"A="}, {untyped("A")}));
  CHECK(nopath.find("'A'") != std::string::npos);
}

TEST_CASE("inputs: .npy with a declared type converts as JSON does") {
  TempDir dir;
  std::string i8 = dir / "i8.npy", f8 = dir / "f8.npy", f8bad = dir / "f8bad.npy",
              b1 = dir / "b1.npy";
  std::vector<int64_t> ints{1, -2, 3};
  std::vector<double> integral{4, 5}, frac{1, 2.5};
  uint8_t flags[2] = {1, 0};
  write_file(i8, encode_npy(DType::I64, {3}, reinterpret_cast<const std::byte*>(ints.data())));
  write_file(f8, encode_npy(DType::F64, {2}, reinterpret_cast<const std::byte*>(integral.data())));
  write_file(f8bad, encode_npy(DType::F64, {2}, reinterpret_cast<const std::byte*>(frac.data())));
  write_file(b1, encode_npy(DType::Bool, {2}, reinterpret_cast<const std::byte*>(flags)));

  auto r = load({"x=" + i8}, {typed("x", DType::F64)});
  REQUIRE(r.ok());
  CHECK(values<double>(r->values[0]) == std::vector<double>{1, -2, 3});

  auto k = load({"k=" + f8}, {typed("k", DType::I64)});
  REQUIRE(k.ok());
  CHECK(values<int64_t>(k->values[0]) == std::vector<int64_t>{4, 5});

  auto e = errors(load({"k=" + f8bad}, {typed("k", DType::I64)}));
  CHECK(e.find(f8bad + ": parameter 'k' (i64)") != std::string::npos);
  CHECK(e.find("element [1]: 2.5 is not an integer") != std::string::npos);

  auto eb = errors(load({"k=" + b1}, {typed("k", DType::I64)}));
  CHECK(eb.find("|b1") != std::string::npos);
  CHECK(eb.find("expected a number") != std::string::npos);

  auto shape = errors(load({"v=" + i8}, {typed("v", DType::I64, {3})}));
  CHECK(
      shape.find(i8 + ": parameter 'v' (i64[3]): the array has shape (3,), expected (batch, 3)") !=
      std::string::npos);
}

TEST_CASE("inputs: a 0-d .npy is one thread") {
  TempDir dir;
  std::string p = dir / "s.npy";
  double v = 2.5;
  write_file(p, encode_npy(DType::F64, {}, reinterpret_cast<const std::byte*>(&v)));
  auto r = load({"s=" + p, R"({"n": [1, 2]})"}, {typed("s", DType::F64), untyped("n")});
  REQUIRE(r.ok());
  CHECK(r->batch == 2);
  CHECK(r->values[0].batch == 1);
  CHECK(values<double>(r->values[0]) == std::vector<double>{2.5});
  auto untyped_r = load({"s=" + p}, {untyped("s")});
  REQUIRE(untyped_r.ok());
  CHECK(untyped_r->values[0].batch == 1);
  CHECK(untyped_r->values[0].type.shape.empty());
}

TEST_CASE("inputs: a bad .npy names the file and the parameter") {
  TempDir dir;
  std::string p = dir / "bad.npy";
  write_file(p, "{\"n\": 1}");
  auto e = errors(load({"n=" + p}, {untyped("n")}));
  CHECK(e.find(p + ": parameter 'n': not a .npy file") != std::string::npos);
  auto missing = errors(load({"n=" + dir / "nope.npy"}, {untyped("n")}));
  CHECK(missing.find("nope.npy: parameter 'n': cannot open the file") != std::string::npos);
}

// ---------------------------------------------------------------- .npy format

TEST_CASE("npy: every dtype round-trips through our writer and reader") {
  std::vector<std::pair<DType, std::string>> cases = {
      {DType::Bool, bytes_of<uint8_t>({1, 0, 1, 1, 0, 0})},
      {DType::I32, bytes_of<int32_t>({1, -2, INT32_MAX, INT32_MIN, 0, 5})},
      {DType::I64, bytes_of<int64_t>({1, -2, INT64_MAX, INT64_MIN, 0, 5})},
      {DType::F32, bytes_of<float>({0.1f, -0.0f, INFINITY, NAN, FLT_MIN, FLT_MAX})},
      {DType::F64, bytes_of<double>({0.1, -0.0, -INFINITY, NAN, DBL_MIN, DBL_MAX})},
  };
  for (const auto& c : cases) {  // no structured binding: CAPTURE is a lambda (clang 15)
    const DType dtype = c.first;
    const std::string& data = c.second;
    CAPTURE(dtype_name(dtype));
    std::string file = encode_npy(dtype, {2, 3}, reinterpret_cast<const std::byte*>(data.data()));
    CHECK((file.size() - data.size()) % 64 == 0);  // data aligned to 64 bytes
    CHECK(file[6] == 1);                           // version 1.0
    auto r = parse_npy(file, "t.npy");
    REQUIRE(r.ok());
    CHECK(r->dtype == dtype);
    CHECK(r->shape == Shape{2, 3});
    CHECK(std::memcmp(r->data.data(), data.data(), data.size()) == 0);
  }
}

TEST_CASE("npy: a file of an odd size round-trips through the file reader and writer") {
  // 100003 threads of i32[3] (1.2 MB, not a multiple of any page or chunk):
  // written as a header plus the array's own bytes (npy_file), read back
  // whole (read_npy_file: straight into the array's memory) and by rows.
  TempDir dir;
  const int64_t batch = 100003;
  Array a(TensorType{DType::I32, {3}}, batch);
  for (int64_t k = 0; k < batch * 3; ++k) a.as<int32_t>()[k] = static_cast<int32_t>(k * 7 - 5);
  PendingFile f = npy_file(dir / "odd.npy", a, batch);
  CHECK(f.data == a.data.data());  // the rows are written from the array, not copied
  CHECK(f.data_bytes == a.byte_size());
  CHECK(f.contents.size() % 64 == 0);
  REQUIRE(write_files_atomically({f}).ok());
  CHECK(read_whole(dir / "odd.npy") ==
        encode_npy(DType::I32, {batch, 3}, a.data.data()));  // the same bytes as encode_npy
  auto back = read_npy_file(dir / "odd.npy");
  REQUIRE(back.ok());
  CHECK(back->dtype == DType::I32);
  CHECK(back->shape == Shape{batch, 3});
  REQUIRE(back->data.size() == a.byte_size());
  CHECK(std::memcmp(back->data.data(), a.data.data(), a.byte_size()) == 0);
  auto header = read_npy_header(dir / "odd.npy");
  REQUIRE(header.ok());
  auto rows = read_npy_rows(dir / "odd.npy", *header, 99999, 4);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4 * 3 * sizeof(int32_t));
  CHECK(std::memcmp(rows->data(), a.as<int32_t>() + 99999 * 3, rows->size()) == 0);
  // A shared (batch-1) array is repeated into the file's contents.
  Array one = make_array(DType::F64, {}, 1, bytes_of<double>({2.5}));
  PendingFile g = npy_file(dir / "one.npy", one, 5);
  CHECK(g.data_bytes == 0);
  REQUIRE(write_files_atomically({g}).ok());
  auto wide = read_npy_file(dir / "one.npy");
  REQUIRE(wide.ok());
  CHECK(wide->shape == Shape{5});
  CHECK(wide->data.size() == 5 * sizeof(double));
  // A file cut short after its header was read is an error, not garbage.
  std::string whole = read_whole(dir / "odd.npy");
  write_file(dir / "cut.npy", whole.substr(0, whole.size() - 1));
  CHECK(errors(read_npy_file(dir / "cut.npy")).find("truncated data") != std::string::npos);
}

TEST_CASE("npy: header shapes") {
  auto zero_d = parse_npy(
      encode_npy(DType::I64, {}, reinterpret_cast<const std::byte*>(bytes_of<int64_t>({7}).data())),
      "z");
  REQUIRE(zero_d.ok());
  CHECK(zero_d->shape.empty());
  Array a = npy_to_array(zero_d.take());
  CHECK(a.batch == 1);
  CHECK(a.type.shape.empty());

  auto empty = parse_npy(encode_npy(DType::F64, {0, 4}, nullptr), "e");
  REQUIRE(empty.ok());
  CHECK(empty->shape == Shape{0, 4});
  CHECK(npy_to_array(empty.take()).batch == 0);

  std::string one = encode_npy(
      DType::F32, {3}, reinterpret_cast<const std::byte*>(bytes_of<float>({1, 2, 3}).data()));
  CHECK(one.find("'shape': (3,)") != std::string::npos);
  CHECK(one.find("'descr': '<f4'") != std::string::npos);
}

TEST_CASE("npy: versions 2.0 and 3.0, and Python-2 style headers") {
  std::string data = bytes_of<double>({1.5, 2.5});
  for (int major : {2, 3}) {
    auto r = parse_npy(
        raw_npy(major, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", data), "v");
    REQUIRE(r.ok());
    CHECK(r->shape == Shape{2});
  }
  auto py2 =
      parse_npy(raw_npy(1, "{'descr': '<f8', 'shape': (2L,), 'fortran_order': False}", data), "v");
  REQUIRE(py2.ok());
  CHECK(py2->shape == Shape{2});
  auto dq = parse_npy(
      raw_npy(1, "{\"descr\": \"<f8\", \"fortran_order\": False, \"shape\": (1, 2)}", data), "v");
  CHECK(dq.ok());
}

TEST_CASE("npy: big headers are written as version 2.0") {
  Shape shape(30000, 1);  // a rank-30000 shape needs a header over 64 KiB
  double v = 3;
  std::string file = encode_npy(DType::F64, shape, reinterpret_cast<const std::byte*>(&v));
  CHECK(file[6] == 2);
  CHECK((file.size() - 8) % 64 == 0);
  auto r = parse_npy(file, "big");
  REQUIRE(r.ok());
  CHECK(r->shape.size() == 30000);
}

TEST_CASE("npy: malformed files are errors that say what is wrong") {
  const std::string data = bytes_of<double>({1, 2});
  const std::string good_dict = "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  auto err = [](const std::string& bytes) { return errors(parse_npy(bytes, "a.npy")); };

  CHECK(err("").find("a.npy: not a .npy file") != std::string::npos);
  CHECK(err("PK\x03\x04garbage").find("not a .npy file") != std::string::npos);
  CHECK(err(std::string("\x93NUMPY", 6)).find("truncated .npy header") != std::string::npos);
  CHECK(err(std::string("\x93NUMPY\x01\x00\x05", 9)).find("truncated .npy header") !=
        std::string::npos);
  CHECK(err(std::string("\x93NUMPY\x01\x00\xff\x00{", 11)).find("truncated .npy header") !=
        std::string::npos);

  std::string v4 = raw_npy(1, good_dict, data);
  v4[6] = 4;
  CHECK(err(v4).find("format version 4.0 is not supported") != std::string::npos);

  CHECK(err(raw_npy(1, "{'descr': '>f8', 'fortran_order': False, 'shape': (2,), }", data)) ==
        "a.npy: dtype '>f8' is not supported (supported: |b1 <i4 <i8 <f4 <f8)\n");
  CHECK(err(raw_npy(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", data))
            .find("dtype '|u1' is not supported") != std::string::npos);
  CHECK(err(raw_npy(1, "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }", data))
            .find("structured dtypes are not supported") != std::string::npos);
  CHECK(err(raw_npy(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2,), }", data))
            .find("Fortran-order arrays are not supported") != std::string::npos);
  CHECK(err(raw_npy(1, "{'descr': '<f8', 'shape': (2,), }", data))
            .find("needs the keys 'descr', 'fortran_order' and 'shape'") != std::string::npos);
  CHECK(err(raw_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'x': 1}", data))
            .find("unexpected key 'x'") != std::string::npos);
  CHECK(err(raw_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (-2,), }", data))
            .find("shape must be a tuple of non-negative integers") != std::string::npos);
  CHECK(
      err(raw_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                  data))
          .find("malformed") != std::string::npos);
  CHECK(err(raw_npy(1, "not a dict", data)).find("malformed .npy header") != std::string::npos);
  CHECK(err(raw_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", data))
            .find("truncated data: shape [3] needs 24 bytes, the file has 16") !=
        std::string::npos);
  CHECK(err(raw_npy(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (1,), }", data))
            .find("unexpected 8 bytes after the data") != std::string::npos);
  // A shape whose element count overflows 64 bits must not wrap around.
  CHECK(
      err(raw_npy(
              1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 2), }",
              data))
          .find("truncated data") != std::string::npos);
}

TEST_CASE("npy: every truncation and every corrupted header byte is handled") {
  std::string file =
      encode_npy(DType::I32, {2, 2},
                 reinterpret_cast<const std::byte*>(bytes_of<int32_t>({1, 2, 3, 4}).data()));
  for (size_t n = 0; n < file.size(); ++n) CHECK_FALSE(parse_npy(file.substr(0, n), "t").ok());
  for (size_t at = 0; at < 64; ++at) {
    for (int bits : {0x01, 0x80, 0xff}) {
      std::string bad = file;
      bad[at] = static_cast<char>(bad[at] ^ bits);
      auto r = parse_npy(bad, "t");  // may succeed (a padding byte), must not crash
      if (r.ok()) CHECK(r->data.size() <= file.size());
    }
  }
}

TEST_CASE("npy: bool bytes are normalised to 0 and 1") {
  auto r = parse_npy(raw_npy(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                             std::string("\x00\x02\xff", 3)),
                     "b");
  REQUIRE(r.ok());
  const auto* b = reinterpret_cast<const uint8_t*>(r->data.data());
  CHECK((b[0] == 0 && b[1] == 1 && b[2] == 1));
}

// ---------------------------------------------------------------- outputs

TEST_CASE("outputs: the README example") {
  Array a = make_array(DType::I64, {}, 4, bytes_of<int64_t>({13, 21, 34, 21}));
  CHECK(render_outputs_json({a}, 4) == R"({"outputs": [[13, 21, 34, 21]], "names": ["out0"]})");
  CHECK(render_outputs_json({}, 4) == R"({"outputs": [], "names": []})");
}

TEST_CASE("outputs: number formats") {
  Array f64 =
      make_array(DType::F64, {}, 8,
                 bytes_of<double>({0.1, 1.0, -0.0, 1e30, 1.0 / 3, NAN, INFINITY, -INFINITY}));
  CHECK(
      render_outputs_json({f64}, 8) ==
      R"({"outputs": [[0.1, 1.0, -0.0, 1e+30, 0.3333333333333333, "NaN", "Infinity", "-Infinity"]], "names": ["out0"]})");
  Array f32 = make_array(DType::F32, {}, 4, bytes_of<float>({0.1f, 1.0f / 3, 16777216.0f, NAN}));
  CHECK(render_outputs_json({f32}, 4) == R"({"outputs": [[0.1, 0.33333334, 16777216.0, "NaN"]], "names": ["out0"]})");
  Array i32 = make_array(DType::I32, {}, 2, bytes_of<int32_t>({INT32_MIN, 7}));
  Array b = make_array(DType::Bool, {}, 2, bytes_of<uint8_t>({1, 0}));
  CHECK(render_outputs_json({i32, b}, 2) == R"({"outputs": [[-2147483648, 7], [true, false]], "names": ["out0", "out1"]})");
  Array i64 = make_array(DType::I64, {}, 1, bytes_of<int64_t>({INT64_MIN}));
  CHECK(render_outputs_json({i64}, 1) == R"({"outputs": [[-9223372036854775808]], "names": ["out0"]})");
}

TEST_CASE("outputs: written floats read back exactly") {
  std::vector<double> d{0.1, 5e-324, DBL_MAX, 123456789.123, -2.5e-300, 1e21, 1e22};
  Array a = make_array(DType::F64, {}, static_cast<int64_t>(d.size()), bytes_of<double>(d));
  std::string text = render_outputs_json({a}, a.batch);
  size_t first = text.find('['), last = text.find("], \"names\"");
  auto back = load({"{\"x\": " + text.substr(first + 1, last - first - 1) + "}"}, {untyped("x")});
  REQUIRE(back.ok());
  CHECK(values<double>(back->values[0]) == d);
}

TEST_CASE("outputs: nested results and shared results") {
  Array m = make_array(DType::I64, {2, 2}, 2, bytes_of<int64_t>({1, 2, 3, 4, 5, 6, 7, 8}));
  Array shared = make_array(DType::F64, {2}, 1, bytes_of<double>({0.5, 1.5}));
  CHECK(render_outputs_json({m, shared}, 2) ==
        R"({"outputs": [[[[1, 2], [3, 4]], [[5, 6], [7, 8]]], [[0.5, 1.5], [0.5, 1.5]]], "names": ["out0", "out1"]})");
  Array empty_event = make_array(DType::F64, {0}, 2, "");
  CHECK(render_outputs_json({empty_event}, 2) == R"({"outputs": [[[], []]], "names": ["out0"]})");
}

TEST_CASE("outputs: extra members follow the outputs") {
  Array a = make_array(DType::I64, {}, 1, bytes_of<int64_t>({1}));
  nlohmann::json extra = {{"stats", {{"steps", 3}, {"utilization", 0.5}, {"blocks", {"a", "b"}}}}};
  CHECK(render_outputs_json({a}, 1, extra) ==
        R"({"outputs": [[1]], "names": ["out0"], "stats": {"blocks": ["a", "b"], "steps": 3, "utilization": 0.5}})");
}

TEST_CASE("outputs: --output targets") {
  CHECK(parse_output_target("")->kind == OutputTarget::Kind::Stdout);
  CHECK(parse_output_target("-")->kind == OutputTarget::Kind::Stdout);
  CHECK(parse_output_target("r.json")->kind == OutputTarget::Kind::JsonFile);
  CHECK(parse_output_target("r.npy")->kind == OutputTarget::Kind::NpyFile);
  auto d = parse_output_target("out//");
  REQUIRE(d.ok());
  CHECK(d->kind == OutputTarget::Kind::Directory);
  CHECK(d->path == "out");
  auto e = errors(parse_output_target("r.txt"));
  CHECK(e.find("--output 'r.txt': expected FILE.json, FILE.npy or DIR/") != std::string::npos);
  TempDir dir;
  auto e2 = errors(parse_output_target(dir.path.string()));
  CHECK(e2.find("is a directory: write '") != std::string::npos);
}

TEST_CASE("outputs: stdout, JSON file, .npy file and directory") {
  TempDir dir;
  Array a = make_array(DType::F32, {2}, 2, bytes_of<float>({1, 2, 3, 4}));
  Array s = make_array(DType::Bool, {}, 1, bytes_of<uint8_t>({1}));
  nlohmann::json extra = {{"stats", {{"steps", 1}}}};

  std::ostringstream out;
  auto w = write_outputs({a}, 2, *parse_output_target("-"), nullptr, out);
  REQUIRE(w.ok());
  CHECK(w->empty());
  CHECK(out.str() == "{\"outputs\": [[[1.0, 2.0], [3.0, 4.0]]], \"names\": [\"out0\"]}\n");

  auto j = write_outputs({a}, 2, *parse_output_target(dir / "r.json"), extra, out);
  REQUIRE(j.ok());
  CHECK(read_whole(dir / "r.json") ==
        "{\"outputs\": [[[1.0, 2.0], [3.0, 4.0]]], \"names\": [\"out0\"], \"stats\": {\"steps\": 1}}\n");

  std::ostringstream stats;
  auto n = write_outputs({a}, 2, *parse_output_target(dir / "r.npy"), extra, stats);
  REQUIRE(n.ok());
  CHECK(stats.str() == "{\"stats\": {\"steps\": 1}}\n");  // stats still shown
  auto back = parse_npy(read_whole(dir / "r.npy"), "r.npy");
  REQUIRE(back.ok());
  CHECK(back->shape == Shape{2, 2});

  auto many = write_outputs({a, s}, 2, *parse_output_target(dir / "sub/deeper/"), nullptr, out);
  REQUIRE(many.ok());
  CHECK(many->size() == 2);
  auto shared = parse_npy(read_whole(dir / "sub/deeper/out1.npy"), "out1.npy");
  REQUIRE(shared.ok());
  CHECK(shared->shape == Shape{2});  // the shared result is repeated per thread
  CHECK(shared->dtype == DType::Bool);
  CHECK(dir.entries() == std::vector<std::string>{"r.json", "r.npy", "sub"});  // no temporaries
}

TEST_CASE("outputs: names in the JSON and as the directory's file names") {
  TempDir dir;
  Array a = make_array(DType::I64, {}, 1, bytes_of<int64_t>({1}));
  CHECK(render_outputs_json({a, a}, 1, nullptr, {"total", "p.0"}) ==
        R"({"outputs": [[1], [1]], "names": ["total", "p.0"]})");
  // Names that are not one per result give way to out<k>.
  CHECK(render_outputs_json({a, a}, 1, nullptr, {"total"}) ==
        R"({"outputs": [[1], [1]], "names": ["out0", "out1"]})");
  std::ostringstream out;
  auto w = write_outputs({a, a}, 1, *parse_output_target(dir / "d/"), nullptr, out, {},
                         {"total", "p.0"});
  REQUIRE(w.ok());
  CHECK(fs::exists(dir / "d/total.npy"));
  CHECK(fs::exists(dir / "d/p.0.npy"));
}

TEST_CASE("outputs: a .npy file holds exactly one result") {
  TempDir dir;
  Array a = make_array(DType::I64, {}, 1, bytes_of<int64_t>({1}));
  std::ostringstream out;
  auto e = errors(write_outputs({a, a}, 1, *parse_output_target(dir / "r.npy"), nullptr, out));
  CHECK(e.find("a .npy file holds exactly one result, but the entry returns 2") !=
        std::string::npos);
  CHECK(dir.entries().empty());
}

TEST_CASE("outputs: a failing write leaves nothing behind") {
  TempDir dir;
  Array big(TensorType{DType::F64, {}}, 100000);
  std::ostringstream out;
  SUBCASE("file size limit hit while writing: the old file survives intact") {
    write_file(dir / "r.json", "old");
    write_file(dir / "r.npy", "old");
    struct rlimit saved;
    REQUIRE(getrlimit(RLIMIT_FSIZE, &saved) == 0);
    auto old_handler = signal(SIGXFSZ, SIG_IGN);
    struct rlimit limited = saved;
    limited.rlim_cur = 4096;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &limited) == 0);
    auto j = write_outputs({big}, big.batch, *parse_output_target(dir / "r.json"), nullptr, out);
    auto n = write_outputs({big}, big.batch, *parse_output_target(dir / "r.npy"), nullptr, out);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old_handler);
    CHECK(errors(j).find("cannot write '" + dir / "r.json" + "'") != std::string::npos);
    CHECK(errors(n).find("cannot write '" + dir / "r.npy" + "'") != std::string::npos);
    CHECK(read_whole(dir / "r.json") == "old");
    CHECK(read_whole(dir / "r.npy") == "old");
    CHECK(dir.entries() == std::vector<std::string>{"r.json", "r.npy"});
  }
  SUBCASE("one file of a directory cannot be written: none is") {
    fs::create_directories(dir / "d/out1.npy");
    auto e = errors(
        write_outputs({big, big}, big.batch, *parse_output_target(dir / "d/"), nullptr, out));
    CHECK(e.find("out1.npy") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "d/out0.npy"));
    CHECK(std::distance(fs::directory_iterator(dir / "d"), fs::directory_iterator{}) == 1);
  }
  SUBCASE("the target directory does not exist") {
    auto e = errors(
        write_outputs({big}, big.batch, *parse_output_target(dir / "nope/r.json"), nullptr, out));
    CHECK(e.find("nope/r.json") != std::string::npos);
    CHECK(dir.entries().empty());
  }
  SUBCASE("the output directory is a file") {
    write_file(dir / "f", "x");
    auto e =
        errors(write_outputs({big}, big.batch, *parse_output_target(dir / "f/"), nullptr, out));
    CHECK(e.find("cannot create the directory") != std::string::npos);
  }
}

TEST_CASE("atomic: writes every file or none") {
  TempDir dir;
  auto ok = write_files_atomically({{dir / "a", "1"}, {dir / "b", "22"}});
  REQUIRE(ok.ok());
  CHECK(read_whole(dir / "a") == "1");
  CHECK(read_whole(dir / "b") == "22");
  auto bad = write_files_atomically({{dir / "c", "3"}, {dir / "missing/d", "4"}});
  CHECK_FALSE(bad.ok());
  CHECK(dir.entries() == std::vector<std::string>{"a", "b"});
}

// ---------------------------------------------------------------- conversion

TEST_CASE("scalar: store_scalar edges") {
  int64_t i64 = 0;
  int32_t i32 = 0;
  float f = 0;
  // -2^63 as an integer fits; as a float it came from JSON text below the
  // range (-9223372036854775809 rounds to it), so it is out of range.
  CHECK_FALSE(store_scalar(InputScalar::of_int(INT64_MIN), DType::I64, &i64));
  CHECK(i64 == INT64_MIN);
  CHECK(store_scalar(InputScalar::of_float(-9223372036854775808.0), DType::I64, &i64));
  CHECK(store_scalar(InputScalar::of_float(9223372036854775808.0), DType::I64, &i64));
  CHECK(store_scalar(InputScalar::of_float(INFINITY), DType::I64, &i64));
  CHECK_FALSE(store_scalar(InputScalar::of_float(-2147483648.0), DType::I32, &i32));
  CHECK(store_scalar(InputScalar::of_float(2147483648.0), DType::I32, &i32));
  CHECK(store_scalar(InputScalar::of_uint(9223372036854775808ull), DType::I64, &i64));
  CHECK_FALSE(store_scalar(InputScalar::of_float(-1e39), DType::F32, &f) == std::nullopt);
  CHECK(
      store_scalar(InputScalar::of_float(3.4028235677973366e38), DType::F32, &f));  // rounds to inf
  CHECK_FALSE(store_scalar(InputScalar::of_float(3.4028235677973362e38), DType::F32, &f));
  CHECK(f == FLT_MAX);
  CHECK_FALSE(store_scalar(InputScalar::of_float(-INFINITY), DType::F32, &f));
  CHECK(f == -INFINITY);
  CHECK(index_str({2, 3}, 5) == "[1][2]");
}
