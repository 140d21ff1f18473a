// The real corpora of the tests labelled `data`: files under the directory
// $LATENTD_DATA_DIR, which ctest sets from the CMake cache variable
// LATENTD_DATA_DIR (ops/test.sh passes its own LATENTD_DATA_DIR on). Only
// tests labelled `data` get the variable. A test that needs a file starts
// with LATENTD_REQUIRE_DATA("blei-ap/ap.dat.zst", ...): when the directory
// or a file is missing the test is skipped with a message naming the path,
// and tests/gtest_main.cc makes the binary exit 77, which ctest reports as
// skipped.
#ifndef LATENTD_TESTS_DATA_DIR_H_
#define LATENTD_TESTS_DATA_DIR_H_

#include <cstdlib>
#include <filesystem>
#include <initializer_list>
#include <string>
#include <string_view>
#include <system_error>

#include "gtest/gtest.h"

namespace latentd::testing {

// $LATENTD_DATA_DIR, or "" when it is unset or empty.
inline std::string RealDataDir() {
  const char* dir = std::getenv("LATENTD_DATA_DIR");
  return dir != nullptr ? dir : "";
}

// The path of `relative` (e.g. "blei-ap/ap.dat.zst") under RealDataDir().
inline std::string RealDataPath(std::string_view relative) {
  return RealDataDir() + "/" + std::string(relative);
}

// Why the files `relative` cannot be read ("SKIP: ..." naming the first
// missing path), or "" when they all exist.
inline std::string MissingRealData(
    std::initializer_list<std::string_view> relative) {
  if (RealDataDir().empty()) {
    return "SKIP: LATENTD_DATA_DIR is not set (the real corpora; ctest sets "
           "it for the tests labelled data)";
  }
  for (std::string_view r : relative) {
    const std::string path = RealDataPath(r);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) {
      return "SKIP: real data " + path +
             " is missing (LATENTD_DATA_DIR; ctest label data)";
    }
  }
  return "";
}

}  // namespace latentd::testing

// Skips the current test (in a TEST body or a fixture's SetUp) unless every
// file named exists under $LATENTD_DATA_DIR.
#define LATENTD_REQUIRE_DATA(...)                                    \
  do {                                                               \
    const std::string latentd_missing_ =                             \
        ::latentd::testing::MissingRealData({__VA_ARGS__});          \
    if (!latentd_missing_.empty()) GTEST_SKIP() << latentd_missing_; \
  } while (0)

#endif  // LATENTD_TESTS_DATA_DIR_H_
