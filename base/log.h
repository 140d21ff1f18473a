// Logging for every latentd binary: one timestamped, levelled line per
// event on stderr, e.g.
//
//   2026-11-24T22:30:01.123Z info    latentd: serving (data in
//   /var/lib/latentd) 2026-11-24T22:30:09.020Z warning latentd sync: peer
//   127.0.0.1:7301 ...
//
// Time is UTC with milliseconds; the level is padded to seven characters and
// the component ("latentd", "latentd sync", ...) ends in a colon. Lines go
// to file descriptor 2 as it is at the time of writing, so a daemon that
// redirects stderr to its log file (dup2) logs there without telling this
// module. Backed by spdlog (a thread-safe sink and its formatter).
//
// Thread-safety: every function may be called from any thread; a line is
// written whole, never interleaved with another.
#ifndef LATENTD_BASE_LOG_H_
#define LATENTD_BASE_LOG_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace latentd::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

// Lines below `level` are dropped; the default is kInfo.
void SetLevel(Level level);
Level GetLevel();

// "debug" | "info" | "warning" (or "warn") | "error"; kInvalidArgument
// otherwise.
absl::StatusOr<Level> ParseLevel(std::string_view name);
std::string_view LevelName(Level level);

// Writes "<time> <level> <component>: <message>".
void Write(Level level, std::string_view component, std::string_view message);

// The message may be any string type (Debian's Abseil has its own
// absl::string_view, which Status::message() returns).
inline std::string_view AsView(std::string_view s) { return s; }
inline std::string_view AsView(const std::string& s) { return s; }
inline std::string_view AsView(const char* s) { return s; }
inline std::string_view AsView(absl::string_view s) {
  return std::string_view(s.data(), s.size());
}

template <typename Message>
void Debug(std::string_view component, const Message& message) {
  Write(Level::kDebug, component, AsView(message));
}
template <typename Message>
void Info(std::string_view component, const Message& message) {
  Write(Level::kInfo, component, AsView(message));
}
template <typename Message>
void Warning(std::string_view component, const Message& message) {
  Write(Level::kWarning, component, AsView(message));
}
template <typename Message>
void Error(std::string_view component, const Message& message) {
  Write(Level::kError, component, AsView(message));
}

// Lets at most one line through per `interval` for an event that can repeat
// at any rate (a failing accept loop): the caller asks Pass() before it logs.
//
//   if (int64_t held = throttle.Pass(); held >= 0) log::Warning(..., held);
//
// Thread-safety: Pass may be called from any thread.
class Throttle {
 public:
  explicit Throttle(absl::Duration interval) : interval_(interval) {}
  // -1: hold this line back. Else log it: the value is how many lines were
  // held back since the last one let through.
  int64_t Pass();

 private:
  const absl::Duration interval_;
  absl::Mutex mu_;
  absl::Time next_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int64_t held_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace latentd::log

#endif  // LATENTD_BASE_LOG_H_
