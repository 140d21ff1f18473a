// The daemon's log lines under the "latentd" component: one home for the
// service files' Log and LogWarning (base/log.h does the writing).
// Thread-safe, as base/log.h is.
#ifndef LATENTD_SERVICE_INTERNAL_DAEMON_LOG_H_
#define LATENTD_SERVICE_INTERNAL_DAEMON_LOG_H_

#include <string>

#include "base/log.h"

namespace latentd::service::internal {

inline void Log(const std::string& line) { log::Info("latentd", line); }
inline void LogWarning(const std::string& line) {
  log::Warning("latentd", line);
}

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_DAEMON_LOG_H_
