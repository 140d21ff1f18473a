// main() of every latentd GoogleTest binary: GoogleTest's own, except that a
// run in which nothing failed and some test was skipped (GTEST_SKIP, e.g.
// LATENTD_REQUIRE_DATA of tests/data_dir.h without the real corpora) exits
// with 77, which ctest reports as skipped (SKIP_RETURN_CODE, set by
// cmake/LatentdHelpers.cmake) instead of passed. A failure still exits 1.
#include "gtest/gtest.h"

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  if (rc == 0 && testing::UnitTest::GetInstance()->skipped_test_count() > 0) {
    return 77;
  }
  return rc;
}
