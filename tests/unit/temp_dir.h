// A test's scratch directory: made fresh and empty (mkdtemp, so that tests
// running at once never share one), removed with everything in it when it
// goes out of scope.
#pragma once

#include <doctest/doctest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ab_test {

struct TempDir {
  std::filesystem::path path;

  explicit TempDir(const std::string& prefix = "ab_test") {
    std::string tmpl = (std::filesystem::temp_directory_path() / (prefix + "_XXXXXX")).string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // The path of `name` in the directory.
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

}  // namespace ab_test
