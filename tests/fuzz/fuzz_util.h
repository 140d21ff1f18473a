// Shared by the libFuzzer harnesses of tests/fuzz/: a scratch directory
// per fuzzer process, for the readers that take a path.
//
// Thread-safety: libFuzzer calls a harness from one thread; so do these.
#ifndef LATENTD_TESTS_FUZZ_FUZZ_UTIL_H_
#define LATENTD_TESTS_FUZZ_FUZZ_UTIL_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

// An invariant of what the code under test accepted: a violation is a
// finding, so the process aborts (libFuzzer saves the input).
#define LATENTD_FUZZ_CHECK(cond)                                          \
  do {                                                                    \
    if (!(cond)) ::latentd::fuzz::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (0)

namespace latentd::fuzz {

[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);

// A directory of this process's own under $TMPDIR (else /dev/shm if
// writable, else /tmp), created on the first call and removed at exit.
const std::string& ScratchDir();

// The input of the harnesses that take a sequence of messages: each is
// one op byte, a u16 little-endian length, then that many bytes (cut short
// at the end of the input). make_fuzz_seeds writes their seeds this way.
struct Message {
  uint8_t op = 0;
  std::string_view body;
};
// Splits `input` into messages (at most `max` of them).
std::vector<Message> SplitMessages(std::string_view input, size_t max = 64);
// Appends one message to *out (bodies longer than 65535 bytes are cut).
void AppendMessage(uint8_t op, std::string_view body, std::string* out);

// Writes `bytes` to ScratchDir()/name (replacing it) and returns the path.
// Aborts (a harness bug, not a finding in the code under test) if the
// file cannot be written.
std::string WriteScratchFile(std::string_view name, std::string_view bytes);

// Quiets what the code under test logs for every bad input (protobuf's
// UTF-8 complaints, latentd's own log lines), so that a fuzzer's output is
// its progress and its findings.
void QuietLogs();

}  // namespace latentd::fuzz

#endif  // LATENTD_TESTS_FUZZ_FUZZ_UTIL_H_
