// Metrics: counters, gauges and latency histograms rendered in the
// Prometheus text exposition format (version 0.0.4) for GET /metrics.
//
// Metrics are registered once (at startup) and live as long as the
// registry; the returned pointers stay valid. Updates are lock-free atomics
// (relaxed: each value is independent, a scrape may see one metric a little
// ahead of another).
//
// Thread-safety: every method is safe from any thread.
#ifndef LATENTD_SERVICE_METRICS_H_
#define LATENTD_SERVICE_METRICS_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace latentd::service {

class Counter {
 public:
  void Add(uint64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  // For a counter that mirrors a total kept elsewhere (from a collector,
  // see MetricsRegistry::AddCollector): the total, never less than before.
  void SetTotal(uint64_t n) { v_.store(n, std::memory_order_relaxed); }
  uint64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> v_{0};
};

class Gauge {
 public:
  void Set(double v) { v_.store(v, std::memory_order_relaxed); }
  double value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

// Latency histogram in seconds with fixed buckets (0.1 ms .. 10 s).
class Histogram {
 public:
  Histogram();
  void Observe(double seconds);
  static const std::vector<double>& Bounds();
  // Cumulative counts per bound, then +Inf; and the sum.
  void Read(std::vector<uint64_t>* cumulative, double* sum) const;

 private:
  std::unique_ptr<std::atomic<uint64_t>[]> buckets_;  // Bounds().size() + 1
  std::atomic<double> sum_{0};
};

class MetricsRegistry {
 public:
  // `name` is a Prometheus metric name; `labels` is "" or 'k="v",...'.
  // Registering the same name and labels twice returns the same metric.
  // A name registered with several label sets is one family: RenderText
  // prints its HELP and TYPE once (the first registration's help), then
  // all its samples. REQUIRES: every registration of a name has the same
  // kind (counter, gauge or histogram).
  Counter* AddCounter(const std::string& name, const std::string& help,
                      const std::string& labels = "");
  Gauge* AddGauge(const std::string& name, const std::string& help,
                  const std::string& labels = "");
  Histogram* AddHistogram(const std::string& name, const std::string& help,
                          const std::string& labels = "");
  // `collect` runs at the start of every RenderText (outside the
  // registry's lock, one RenderText's collectors after another's), to set
  // metrics that mirror state kept elsewhere. What it uses must outlive the
  // last RenderText. It must not register collectors itself.
  void AddCollector(std::function<void()> collect);
  // The Prometheus text: families in the order their names were first
  // registered, each as HELP, TYPE, then its samples in registration order.
  std::string RenderText() const;

 private:
  enum class Kind { kCounter, kGauge, kHistogram };
  struct Entry {
    Kind kind;
    std::string name, help, labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Histogram> histogram;
  };
  Entry* Find(Kind kind, const std::string& name, const std::string& labels)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The entry of (kind, name, labels), added (with `help`) if new; *added
  // says which.
  Entry& FindOrAdd(Kind kind, const std::string& name, const std::string& help,
                   const std::string& labels, bool* added)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The entries of one name, in registration order.
  struct Family {
    std::string name;
    std::vector<const Entry*> entries;  // into entries_
  };
  static void RenderEntry(const Entry& e, std::string* out);
  mutable absl::Mutex collect_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<std::function<void()>> collectors_ ABSL_GUARDED_BY(collect_mu_);
  mutable absl::Mutex mu_;
  std::deque<Entry> entries_ ABSL_GUARDED_BY(mu_);  // stable addresses
  std::vector<Family> families_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_METRICS_H_
