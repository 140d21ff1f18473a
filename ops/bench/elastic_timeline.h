// What elastic_bench measures around a cluster move: each node's sweeps on
// the wall clock, this process's CPU time, the nodes' log lines, and the
// cluster's tokens/s before, during and after a time window.
//
// Times are unix milliseconds (NowMs), the clock of the move record's
// Redis TIME stamps when Redis runs on the same host.
//
// Thread-safety: LogLines and CpuMonitor are thread-safe; the functions are
// pure.
#ifndef LATENTD_OPS_BENCH_ELASTIC_TIMELINE_H_
#define LATENTD_OPS_BENCH_ELASTIC_TIMELINE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "sync/transport/transport.h"

namespace latentd::bench {

// CPU seconds of every thread of this process so far (getrusage).
double ProcessCpuSeconds();

// Unix milliseconds, now.
double NowMs();

// Collects the nodes' log lines (ClusterLinkOptions::log) with the time
// each was written.
class LogLines {
 public:
  // A LogFn that appends here. REQUIRES: this outlives its callers.
  sync::LogFn fn();
  // The lines so far, (unix ms, text); the collection starts empty again.
  std::vector<std::pair<double, std::string>> Take();

 private:
  absl::Mutex mu_;
  std::vector<std::pair<double, std::string>> lines_ ABSL_GUARDED_BY(mu_);
};

// Samples this process's CPU time every 50 ms on its own thread, from
// construction to Stop().
class CpuMonitor {
 public:
  CpuMonitor();
  ~CpuMonitor();  // Stop()
  void Stop();    // idempotent
  // CPU seconds per wall second over [from_ms, to_ms], between the
  // samples nearest after each end (0 without two samples).
  double Cores(double from_ms, double to_ms) const;

 private:
  void Loop();
  mutable absl::Mutex mu_;
  std::vector<std::pair<double, double>> samples_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> stop_{false};  // relaxed: only ends the loop
  std::thread thread_;
};

// One sweep of one node: wall span and tokens sampled.
struct SweepSpan {
  int node = 0;
  double start_ms = 0;
  double end_ms = 0;
  uint64_t tokens = 0;
};

// Sweeps per node in the `before` and `after` windows.
inline constexpr int kWindowSweeps = 5;

// The cluster's tokens/s around a window [from_ms, to_ms]: Σ over nodes of
// (tokens / wall seconds) of the node's sweeps that qualify.
struct Rates {
  double before = 0;  // each node's last kWindowSweeps sweeps ending by from
  double during = 0;  // the sweeps overlapping the window
  double after = 0;   // each node's first kWindowSweeps sweeps after to
  double stall = 0;   // longest sweep during / median sweep before (0: none)
  double before_from_ms = 0;  // the earliest start of a `before` sweep
};
Rates MeasureRates(std::vector<SweepSpan> spans, double from_ms, double to_ms);

// Prints to stderr, in 250 ms bins from 1.5 s before the window to 1.5 s
// after it (within the sweeps' extent), the cluster's tokens/s (each sweep's
// tokens spread evenly over it) and the CPU cores this process used.
void PrintTimeline(const std::vector<SweepSpan>& spans, const CpuMonitor& cpu,
                   double from_ms, double to_ms);

}  // namespace latentd::bench

#endif  // LATENTD_OPS_BENCH_ELASTIC_TIMELINE_H_
