// The catalogue of bad inputs (tests/catalogue/cases.tsv): one row per bad
// program, inputs file, .npy file or flag, each with the exit status the
// command must give and the key words its message must hold. Each row runs
// the real binary in a fresh directory holding tests/catalogue/files/ and the
// .npy files made below, so messages name files relatively ("syntax.ab:3:").
// Every row must also fail cleanly: nothing on stdout, no signal, no
// sanitizer report, a message that ends its line.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

namespace fs = std::filesystem;

namespace {

const fs::path kCatalogue = fs::path(AUTOBATCH_SOURCE_DIR) / "tests" / "catalogue";

// A .npy file from its parts: the header dict is written as given and padded
// as NumPy pads it; `data` follows.
std::string npy(const std::string& dict, const std::string& data, int major = 1,
                const char* magic = "\x93NUMPY") {
  std::string header = dict;
  const size_t prefix = 6 + 2 + (major == 1 ? 2 : 4);
  while ((prefix + header.size() + 1) % 64) header += ' ';
  header += '\n';
  std::string out(magic, 6);
  out += static_cast<char>(major);
  out += '\0';
  const uint32_t n = static_cast<uint32_t>(header.size());
  for (size_t k = 0; k < (major == 1 ? 2u : 4u); ++k)
    out += static_cast<char>((n >> (8 * k)) & 0xff);
  return out + header + data;
}

std::string f64s(std::initializer_list<double> xs) {
  std::string out;
  for (double x : xs) out.append(reinterpret_cast<const char*>(&x), sizeof x);
  return out;
}

// The .npy files the rows name, made here so each is exactly as bad as its
// name says.
std::map<std::string, std::string> npy_files() {
  const std::string d3 = f64s({1, 2, 3}), d4 = f64s({1, 2, 3, 4});
  std::map<std::string, std::string> f;
  f["good_x.npy"] = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d3);
  f["good_n.npy"] = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", d3);
  f["good_n4.npy"] = npy("{'descr': '<i8', 'fortran_order': False, 'shape': (4,), }", d4);
  f["x.npy"] = f["good_x.npy"];  // named like a parameter: the hint says x=x.npy
  f["truncated_data.npy"] = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }", d3);
  f["truncated_header.npy"] =
      npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d3).substr(0, 40);
  f["wrong_magic.npy"] =
      npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d3, 1, "\x93NUMPX");
  f["big_endian.npy"] = npy("{'descr': '>f8', 'fortran_order': False, 'shape': (3,), }", d3);
  f["fortran.npy"] = npy("{'descr': '<f8', 'fortran_order': True, 'shape': (3,), }", d3);
  f["complex.npy"] = npy("{'descr': '<c16', 'fortran_order': False, 'shape': (3,), }", d3 + d3);
  f["structured.npy"] =
      npy("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (3,), }", d3);
  f["version4.npy"] = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", d3, 4);
  f["no_shape.npy"] = npy("{'descr': '<f8', 'fortran_order': False, }", d3);
  f["huge_shape.npy"] = npy(
      "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 1000000000000), }", d3);
  f["vec_shape.npy"] = npy("{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", d3 + d3);
  f["empty.npy"] = "";
  return f;
}

struct Case {
  int line = 0;
  std::string name;
  int exit = 0;
  std::vector<std::string> keywords;
  std::vector<std::string> args;
};

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(' '), b = s.find_last_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

// Arguments are separated by spaces; '...' holds one argument with spaces
// (inline JSON), with no escapes.
std::vector<std::string> split_args(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  bool quoted = false, any = false;
  for (char c : s) {
    if (c == '\'') {
      quoted = !quoted;
      any = true;
    } else if (c == ' ' && !quoted) {
      if (any) out.push_back(cur);
      cur.clear();
      any = false;
    } else {
      cur += c;
      any = true;
    }
  }
  REQUIRE_MESSAGE(!quoted, "unbalanced quote in: " << s);
  if (any) out.push_back(cur);
  return out;
}

std::vector<Case> load_cases() {
  std::ifstream in(kCatalogue / "cases.tsv");
  REQUIRE(in.good());
  std::vector<Case> cases;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    auto cols = split(line, '\t');
    if (line.back() == '\t') cols.push_back("");  // no arguments
    REQUIRE_MESSAGE(cols.size() == 4, "cases.tsv:" << n << ": expected 4 tab-separated columns");
    Case c;
    c.line = n;
    c.name = trim(cols[0]);
    c.exit = std::stoi(cols[1]);
    for (auto& k : split(cols[2], ';'))
      if (!trim(k).empty()) c.keywords.push_back(trim(k));
    c.args = split_args(cols[3]);
    cases.push_back(std::move(c));
  }
  return cases;
}

struct Sandbox {
  fs::path dir;
  Sandbox() {
    std::string tmpl = (fs::temp_directory_path() / "ab_catalogue_XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    dir = tmpl;
    fs::copy(kCatalogue / "files", dir, fs::copy_options::recursive);
    for (const auto& [name, bytes] : npy_files()) {
      std::ofstream f(dir / name, std::ios::binary);
      f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    fs::create_directory(dir / "a_directory");
  }
  ~Sandbox() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

TEST_CASE("catalogue: every bad input fails with its exit status and message") {
  const std::vector<Case> cases = load_cases();
  CHECK(cases.size() >= 40);
  Sandbox box;
  std::map<std::string, int> names;
  for (const Case& c : cases) {
    INFO("cases.tsv:" << c.line << ": " << c.name);
    CHECK_MESSAGE(names[c.name]++ == 0, "duplicate case name");
    ab_test::Proc r = ab_test::run_binary(box.dir, c.args, std::nullopt, 60);
    INFO("stderr: " << r.err);
    CHECK(!r.timed_out);
    CHECK(r.code == c.exit);
    CHECK(r.out.empty());
    CHECK(!r.err.empty());
    if (!r.err.empty()) CHECK(r.err.back() == '\n');
    CHECK(r.err.find("Sanitizer") == std::string::npos);
    for (const auto& k : c.keywords)
      CHECK_MESSAGE(r.err.find(k) != std::string::npos, "missing key words '" << k << "'");
  }
}
