// Readiness and state notifications to systemd (sd_notify(3)), so that a
// Type=notify unit (ops/systemd/latentd.service) knows when latentd serves,
// reloads and stops.
//
//   NotifySystemd("READY=1");      // once the ports file is written
//   NotifySystemdReloading();      // on SIGHUP, before re-reading config
//   NotifySystemd("READY=1");      // after the reload
//   NotifySystemd("STOPPING=1");   // once a stop signal arrived
//
// The message goes as one datagram to the AF_UNIX socket named by
// $NOTIFY_SOCKET (a path, or '@' for an abstract socket), through libsystemd's
// sd_notify. Without $NOTIFY_SOCKET (not started by systemd, or a unit that
// is not Type=notify) the calls do nothing. A failure is returned for the
// caller to log: it must never stop the daemon.
#ifndef LATENTD_SERVICE_SYSTEMD_NOTIFY_H_
#define LATENTD_SERVICE_SYSTEMD_NOTIFY_H_

#include <string_view>

#include "absl/status/status.h"

namespace latentd::service {

// Sends `state`, newline-separated VARIABLE=value assignments (see
// sd_notify(3): READY=1, RELOADING=1, STOPPING=1, STATUS=text, ...), to the
// service manager. Returns OK when it was sent or when $NOTIFY_SOCKET is
// unset or empty; otherwise the errno-derived status of the failed send
// (e.g. kNotFound when the socket does not exist, kInvalidArgument when
// $NOTIFY_SOCKET is neither an absolute path nor '@name'). The environment
// is left as it is, so later calls reach the same socket.
// Thread-safe: it only reads the environment (do not setenv concurrently).
absl::Status NotifySystemd(std::string_view state);

// NotifySystemd("RELOADING=1\nMONOTONIC_USEC=<now>"): systemd 253 and later
// want the CLOCK_MONOTONIC time of the reload's start with RELOADING=1;
// older ones ignore it. Send NotifySystemd("READY=1") when the reload is done.
absl::Status NotifySystemdReloading();

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_SYSTEMD_NOTIFY_H_
