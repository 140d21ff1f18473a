// ScratchDir: an empty directory for one test case, under the system's
// temporary directory. Tests only. Thread-compatible (two threads must not
// ask for the same name at once).
#ifndef LATENTD_BASE_TESTING_SCRATCH_DIR_H_
#define LATENTD_BASE_TESTING_SCRATCH_DIR_H_

#include <string>
#include <string_view>

namespace latentd::testing {

// "<tmp>/<suite>_<pid>/<name>", removed if it was there and created empty
// (the pid keeps concurrent runs of one test binary apart).
std::string ScratchDir(std::string_view suite, std::string_view name);

}  // namespace latentd::testing

#endif  // LATENTD_BASE_TESTING_SCRATCH_DIR_H_
