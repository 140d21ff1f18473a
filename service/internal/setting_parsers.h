// The parsers of the settings table's rows (service/daemon_settings_table.cc
// and the files that hold a group of its settings): each turns a setting's
// text into a DaemonConfig field, or a Status naming the setting, the value
// and what was wanted. Internal to the settings table.
//
// Thread-safety: plain functions; the Apply objects they return keep copies
// of their arguments.
#ifndef LATENTD_SERVICE_INTERNAL_SETTING_PARSERS_H_
#define LATENTD_SERVICE_INTERNAL_SETTING_PARSERS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/absl_compat.h"
#include "service/daemon_settings.h"
#include "sync/transport/transport.h"

namespace latentd::service::internal {

using ::latentd::internal::ToAbsl;
using Apply = std::function<absl::Status(std::string_view, DaemonConfig*)>;

inline absl::Status Bad(std::string_view name, std::string_view value,
                        std::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat("setting ", ToAbsl(name),
                                                 ": '", ToAbsl(value),
                                                 "' is not ", ToAbsl(want)));
}

inline absl::StatusOr<int64_t> IntIn(std::string_view name, std::string_view v,
                                     int64_t lo, int64_t hi) {
  int64_t x;
  if (!absl::SimpleAtoi(ToAbsl(v), &x) || x < lo || x > hi) {
    return Bad(name, v, absl::StrCat("an integer in ", lo, "..", hi));
  }
  return x;
}

template <typename T>
Apply Int(std::string name, int64_t lo, int64_t hi,
          std::function<T*(DaemonConfig*)> field) {
  return [=](std::string_view v, DaemonConfig* c) -> absl::Status {
    absl::StatusOr<int64_t> x = IntIn(name, v, lo, hi);
    if (x.ok()) *field(c) = static_cast<T>(*x);
    return x.status();
  };
}

// Whole seconds in lo..hi, stored as a duration.
inline Apply Seconds(std::string name, int64_t lo, int64_t hi,
                     std::function<absl::Duration*(DaemonConfig*)> field) {
  return [=](std::string_view v, DaemonConfig* c) -> absl::Status {
    absl::StatusOr<int64_t> x = IntIn(name, v, lo, hi);
    if (x.ok()) *field(c) = absl::Seconds(*x);
    return x.status();
  };
}

inline Apply Double(std::string name, double lo, double hi,
                    std::function<double*(DaemonConfig*)> field) {
  return [=](std::string_view v, DaemonConfig* c) -> absl::Status {
    double x;
    if (!absl::SimpleAtod(ToAbsl(v), &x) || !(x >= lo) || !(x <= hi)) {
      return Bad(name, v, absl::StrCat("a number in ", lo, "..", hi));
    }
    *field(c) = x;
    return absl::OkStatus();
  };
}

inline Apply Bool(std::string name, std::function<bool*(DaemonConfig*)> field) {
  return [=](std::string_view v, DaemonConfig* c) -> absl::Status {
    if (v == "on" || v == "true") {
      *field(c) = true;
    } else if (v == "off" || v == "false") {
      *field(c) = false;
    } else {
      return Bad(name, v, "on or off");
    }
    return absl::OkStatus();
  };
}

inline Apply String(std::function<std::string*(DaemonConfig*)> field) {
  return [=](std::string_view v, DaemonConfig* c) {
    *field(c) = std::string(v);
    return absl::OkStatus();
  };
}

// "host:port" (port 0 = pick one) or "" / "off" where `allow_off`.
inline Apply Address(std::string name, bool allow_off,
                     std::function<void(DaemonConfig*, std::string, int)> set) {
  return [=](std::string_view v, DaemonConfig* c) -> absl::Status {
    if (allow_off && (v.empty() || v == "off")) {
      set(c, "", -1);
      return absl::OkStatus();
    }
    std::string host;
    uint16_t port = 0;
    if (!sync::SplitHostPort(std::string(v), &host, &port).ok()) {
      return Bad(name, v, "host:port");
    }
    set(c, host, port);
    return absl::OkStatus();
  };
}

// Adds one row: name, default, bounds, help, parser.
using AddFn = std::function<void(std::string, std::string, std::string,
                                 std::string, Apply)>;

// The graph model's settings (service/daemon_settings_graph.cc).
void AddGraphSettings(const AddFn& add);

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_SETTING_PARSERS_H_
