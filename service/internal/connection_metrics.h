// The connection metrics every API listener reports, labelled by listener
// ("http", "tcp"; the cluster's sync port "sync"):
//   latentd_connections{listener}                   open now (gauge)
//   latentd_connections_max{listener}               the cap (gauge)
//   latentd_connections_max_per_address{listener}   the per-client cap
//   latentd_connections_refused_total{listener,reason}
//       closed at once: reason="max_connections" or "per_address"
//   latentd_connections_timed_out_total{listener}   closed as idle (HTTP:
//       also a request or an answer stalled past its timeout)
//   latentd_accept_failures_total{listener}         accepts that failed (out
//       of file descriptors); each backs the accept loop off
//   latentd_request_bytes_in_flight{listener}       framed listeners: payload
//       bytes buffered for frames still arriving (gauge)
//   latentd_frames_over_budget_total{listener}      framed listeners: frames
//       whose connection was closed as the budget for those bytes was spent
// A cap of 0 means none.
//
// Thread-safety: the pointers are the registry's metrics (atomics).
#ifndef LATENTD_SERVICE_INTERNAL_CONNECTION_METRICS_H_
#define LATENTD_SERVICE_INTERNAL_CONNECTION_METRICS_H_

#include <string>

#include "absl/strings/str_cat.h"
#include "service/metrics.h"
#include "sync/transport/transport.h"

namespace latentd::service::internal {

struct ConnectionMetrics {
  ConnectionMetrics(MetricsRegistry* m, const std::string& listener,
                    int max_cap, int per_address_cap) {
    const std::string l = absl::StrCat("listener=\"", listener, "\"");
    open = m->AddGauge("latentd_connections",
                       "Connections open now, per listener", l);
    max =
        m->AddGauge("latentd_connections_max",
                    "Connections a listener keeps open at once (0: no cap)", l);
    max_per_address =
        m->AddGauge("latentd_connections_max_per_address",
                    "Connections a listener keeps open from one client "
                    "address (0: no cap)",
                    l);
    SetCaps(max_cap, per_address_cap);
    refused_max = m->AddCounter(
        "latentd_connections_refused_total",
        "Connections closed at once by a cap (reason: max_connections, "
        "per_address)",
        absl::StrCat(l, ",reason=\"max_connections\""));
    refused_per_address =
        m->AddCounter("latentd_connections_refused_total", "",
                      absl::StrCat(l, ",reason=\"per_address\""));
    timed_out =
        m->AddCounter("latentd_connections_timed_out_total",
                      "Connections closed after a timeout (idle; HTTP: also a "
                      "request or an answer stalled)",
                      l);
    accept_failures = m->AddCounter(
        "latentd_accept_failures_total",
        "Accepts that failed (out of file descriptors); the listener backs "
        "off, the clients wait in the backlog",
        l);
    bytes_in_flight = m->AddGauge(
        "latentd_request_bytes_in_flight",
        "Payload bytes buffered for frames still arriving (framed listeners)",
        l);
    over_budget = m->AddCounter(
        "latentd_frames_over_budget_total",
        "Frames whose connection was closed because the listener's budget "
        "for request bytes in flight was spent",
        l);
  }

  // The caps reported (for a listener whose options come after its
  // metrics are registered, as the sync port's).
  void SetCaps(int max_cap, int per_address_cap) const {
    max->Set(max_cap);
    max_per_address->Set(per_address_cap);
  }

  // Mirrors a sync::Server's counters (call from a metrics collector).
  void MirrorFrom(const sync::TransportStats& s) const {
    open->Set(static_cast<double>(
        s.connections_open.load(std::memory_order_relaxed)));
    refused_max->SetTotal(
        s.connections_refused_max.load(std::memory_order_relaxed));
    refused_per_address->SetTotal(
        s.connections_refused_per_address.load(std::memory_order_relaxed));
    timed_out->SetTotal(
        s.connections_idle_closed.load(std::memory_order_relaxed));
    accept_failures->SetTotal(
        s.accept_failures.load(std::memory_order_relaxed));
    bytes_in_flight->Set(static_cast<double>(
        s.request_bytes_in_flight.load(std::memory_order_relaxed)));
    over_budget->SetTotal(s.frames_over_budget.load(std::memory_order_relaxed));
  }

  Gauge* open;
  Gauge* max;
  Gauge* max_per_address;
  Counter* refused_max;
  Counter* refused_per_address;
  Counter* timed_out;
  Counter* accept_failures;
  Gauge* bytes_in_flight;
  Counter* over_budget;
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_CONNECTION_METRICS_H_
