#include "base/log.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>

#include "absl/strings/str_cat.h"

namespace latentd::log {
namespace {

spdlog::level::level_enum ToSpd(Level level) {
  switch (level) {
    case Level::kDebug:
      return spdlog::level::debug;
    case Level::kInfo:
      return spdlog::level::info;
    case Level::kWarning:
      return spdlog::level::warn;
    case Level::kError:
      return spdlog::level::err;
  }
  return spdlog::level::info;
}

// Built once, on first use (function-local static: thread-safe), and never
// destroyed, so threads still logging at exit find it alive.
spdlog::logger& Logger() {
  static spdlog::logger* logger = [] {
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto* l = new spdlog::logger("latentd", std::move(sink));
    // %l is the level's name, padded to "warning"'s seven characters.
    l->set_pattern("%Y-%m-%dT%H:%M:%S.%eZ %-7l %v",
                   spdlog::pattern_time_type::utc);
    l->set_level(spdlog::level::info);
    l->flush_on(spdlog::level::debug);  // every line reaches the file at once
    return l;
  }();
  return *logger;
}

}  // namespace

void SetLevel(Level level) { Logger().set_level(ToSpd(level)); }

Level GetLevel() {
  switch (Logger().level()) {
    case spdlog::level::trace:
    case spdlog::level::debug:
      return Level::kDebug;
    case spdlog::level::info:
      return Level::kInfo;
    case spdlog::level::warn:
      return Level::kWarning;
    default:
      return Level::kError;
  }
}

absl::StatusOr<Level> ParseLevel(std::string_view name) {
  if (name == "debug") return Level::kDebug;
  if (name == "info") return Level::kInfo;
  if (name == "warning" || name == "warn") return Level::kWarning;
  if (name == "error") return Level::kError;
  return absl::InvalidArgumentError(
      absl::StrCat("log level '", std::string(name),
                   "' is not debug, info, warning or error"));
}

std::string_view LevelName(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarning:
      return "warning";
    case Level::kError:
      return "error";
  }
  return "info";
}

void Write(Level level, std::string_view component, std::string_view message) {
  spdlog::logger& l = Logger();
  const spdlog::level::level_enum lvl = ToSpd(level);
  if (!l.should_log(lvl)) return;
  l.log(lvl, "{}: {}",
        spdlog::string_view_t(component.data(), component.size()),
        spdlog::string_view_t(message.data(), message.size()));
}

int64_t Throttle::Pass() {
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  if (now < next_) {
    ++held_;
    return -1;
  }
  next_ = now + interval_;
  const int64_t held = held_;
  held_ = 0;
  return held;
}

}  // namespace latentd::log
