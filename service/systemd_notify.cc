#include "service/systemd_notify.h"

#include <systemd/sd-daemon.h>
#include <time.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"

namespace latentd::service {

absl::Status NotifySystemd(std::string_view state) {
  const char* socket = std::getenv("NOTIFY_SOCKET");
  if (socket == nullptr || *socket == '\0') return absl::OkStatus();
  // sd_notify returns > 0 once sent, 0 without $NOTIFY_SOCKET (unset since
  // the check above: nothing to do), < 0 as -errno when the send failed.
  const std::string message(state);
  const int r = sd_notify(/*unset_environment=*/0, message.c_str());
  if (r >= 0) return absl::OkStatus();
  return absl::ErrnoToStatus(-r, absl::StrCat("sd_notify(\"", message,
                                              "\") to NOTIFY_SOCKET=", socket));
}

absl::Status NotifySystemdReloading() {
  timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  const uint64_t usec = static_cast<uint64_t>(now.tv_sec) * 1000000 +
                        static_cast<uint64_t>(now.tv_nsec) / 1000;
  return NotifySystemd(absl::StrCat("RELOADING=1\nMONOTONIC_USEC=", usec));
}

}  // namespace latentd::service
