// import (parse/parser.cpp), the shipped library (parse/shipped.h) and
// inline functions (parse/inline.h): modules combine into one program whose
// messages name the file each function came from.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "autobatch/autobatch.h"
#include "temp_dir.h"

namespace {

namespace fs = std::filesystem;

std::string write(const ab_test::TempDir& dir, const std::string& name, const std::string& text) {
  std::ofstream(dir / name) << text;
  return dir / name;
}

std::string errors_of(const std::string& path) {
  auto p = autobatch::compile_file(path);
  if (!p) return p.rendered();
  double x[1] = {1.0};
  auto r = p->run({autobatch::ArrayView::of(x, 1)});
  return r.rendered();
}

}  // namespace

TEST_CASE("import NAME finds NAME.ab beside the file, then the shipped library") {
  ab_test::TempDir dir("ab_import");
  write(dir, "helpers.ab", "func twice(x) {\n  return 2.0 * x\n}\n");
  std::string main = write(dir, "main.ab",
                           "import helpers\nimport dists\n\nentry func main(x: f64) {\n"
                           "  return twice(x) + normal_lpdf(x, 0.0, 1.0)\n}\n");
  auto p = autobatch::compile_file(main);
  REQUIRE_MESSAGE(p, p.rendered());
  double x[2] = {0.0, 1.0};
  auto r = p->run({autobatch::ArrayView::of(x, 2)});
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  const double* v = r.outputs[0].as<double>();
  CHECK(v[0] == doctest::Approx(-0.9189385332046727));
  CHECK(v[1] == doctest::Approx(2.0 - 0.5 - 0.9189385332046727));
  // The file's own functions only in `check`'s signatures.
  auto sig = p->signature();
  REQUIRE(sig);
  CHECK(sig->size() == 1);
}

TEST_CASE("import errors name what is missing, and messages name the imported file") {
  ab_test::TempDir dir("ab_import");
  std::string missing = write(dir, "m1.ab", "import nosuch\nfunc main(x) {\n  return x\n}\n");
  std::string e = errors_of(missing);
  CHECK(e.find("m1.ab:1:8: error: import: no module 'nosuch'") != std::string::npos);
  CHECK(e.find("it has dists, nuts, transforms") != std::string::npos);

  std::string device = write(dir, "m2.ab", "import \"/dev/zero\"\nfunc main(x) {\n  return x\n}\n");
  CHECK(errors_of(device).find("is not a file that can be read") != std::string::npos);

  write(dir, "lib1.ab", "func helper(x) {\n  return x * 2.0\n}\n");
  std::string twice = write(dir, "m3.ab",
                            "import lib1\nfunc helper(x) {\n  return x\n}\n"
                            "entry func main(x) {\n  return helper(x)\n}\n");
  e = errors_of(twice);
  CHECK(e.find("lib1.ab:1:6: error: function 'helper' is defined twice (first at ") !=
        std::string::npos);
  CHECK(e.find("m3.ab:2)") != std::string::npos);

  write(dir, "lib2.ab", "func bad(x) {\n  return x * undefined_var\n}\n");
  std::string inner = write(dir, "m4.ab", "import lib2\nentry func main(x) {\n  return bad(x)\n}\n");
  CHECK(errors_of(inner).find("lib2.ab:2:14: error: unknown variable 'undefined_var'") !=
        std::string::npos);
  // The public Diagnostic carries the imported file's name and its own line.
  auto c = autobatch::compile_file(inner);
  REQUIRE_FALSE(c);
  CHECK(fs::path(c.diagnostics().at(0).file).filename() == "lib2.ab");
  CHECK(c.diagnostics().at(0).line == 2);

  // A runtime error inside an imported function names its file and line.
  write(dir, "lib3.ab", "func pick(v, i) {\n  return v[i]\n}\n");
  std::string rt = write(dir, "m5.ab",
                         "import lib3\nentry func main(x: f64) {\n  return pick([x, x], 5)\n}\n");
  CHECK(errors_of(rt).find("lib3.ab:2:11: runtime error") != std::string::npos);
  auto prog = autobatch::compile_file(rt);
  REQUIRE(prog);
  double x[1] = {1.0};
  auto r = prog->run({autobatch::ArrayView::of(x, 1)});
  REQUIRE(r.runtime_error);
  CHECK(fs::path(r.runtime_error->file).filename() == "lib3.ab");
  CHECK(r.runtime_error->line == 2);
  CHECK(r.runtime_error->column == 11);
}

TEST_CASE("an inline function is used at several shapes; a plain one cannot be") {
  const char* both =
      "inline func sq_sum(v) {\n  return sum(v * v)\n}\n"
      "entry func main(x: f64) {\n  return sq_sum(x) + sq_sum([x, x, x])\n}\n";
  auto p = autobatch::compile(both);
  REQUIRE(p);
  double x[1] = {2.0};
  auto r = p->run({autobatch::ArrayView::of(x, 1)});
  REQUIRE_MESSAGE(r.ok(), r.rendered());
  CHECK(r.outputs[0].as<double>()[0] == 16.0);

  std::string plain = both;
  plain.erase(0, 7);  // "inline "
  auto q = autobatch::compile(plain);
  REQUIRE(q);
  CHECK_FALSE(q->run({autobatch::ArrayView::of(x, 1)}).ok());

  auto self = autobatch::compile(
      "inline func f(x) {\n  return f(x)\n}\nentry func main(x) {\n  return f(x)\n}\n");
  REQUIRE_FALSE(self);
  CHECK(self.rendered().find("inline function 'f' expands without end") != std::string::npos);

  // Through another inline function: both are named, at their calls, before any copy.
  auto mutual = autobatch::compile(
      "inline func f(x) {\n  return g(x)\n}\ninline func g(x) {\n  return f(x) + 1.0\n}\n"
      "entry func main(x) {\n  return f(x)\n}\n");
  REQUIRE_FALSE(mutual);
  REQUIRE(mutual.diagnostics().size() == 2);
  CHECK(mutual.diagnostics()[0].line == 2);
  CHECK(mutual.diagnostics()[1].line == 5);
  CHECK(mutual.rendered().find("inline function 'g' expands without end") != std::string::npos);

  // No cycle, but 2^15 copies: the bound, named as such.
  std::string doubling;
  for (int k = 0; k < 15; ++k)
    doubling += "inline func f" + std::to_string(k) + "(x) {\n  return f" + std::to_string(k + 1) +
                "(x) + f" + std::to_string(k + 1) + "(x)\n}\n";
  doubling += "inline func f15(x) {\n  return x\n}\nentry func main(x) {\n  return f0(x)\n}\n";
  auto many = autobatch::compile(doubling);
  REQUIRE_FALSE(many);
  CHECK(many.rendered().find("inlining makes more than 10000 copies in function 'main'") !=
        std::string::npos);
}
