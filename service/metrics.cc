#include "service/metrics.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace latentd::service {

Histogram::Histogram()
    : buckets_(new std::atomic<uint64_t>[Bounds().size() + 1]) {
  for (size_t i = 0; i <= Bounds().size(); ++i) buckets_[i].store(0);
}

const std::vector<double>& Histogram::Bounds() {
  static const std::vector<double> kBounds = {
      0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
      0.05,   0.1,     0.25,   0.5,   1,      2.5,   10};
  return kBounds;
}

void Histogram::Observe(double seconds) {
  const auto& b = Bounds();
  const size_t i = std::lower_bound(b.begin(), b.end(), seconds) - b.begin();
  buckets_[i].fetch_add(1, std::memory_order_relaxed);
  double cur = sum_.load(std::memory_order_relaxed);
  while (!sum_.compare_exchange_weak(cur, cur + seconds,
                                     std::memory_order_relaxed)) {
  }
}

void Histogram::Read(std::vector<uint64_t>* cumulative, double* sum) const {
  cumulative->clear();
  uint64_t total = 0;
  for (size_t i = 0; i <= Bounds().size(); ++i) {
    total += buckets_[i].load(std::memory_order_relaxed);
    cumulative->push_back(total);
  }
  *sum = sum_.load(std::memory_order_relaxed);
}

MetricsRegistry::Entry* MetricsRegistry::Find(Kind kind,
                                              const std::string& name,
                                              const std::string& labels) {
  for (Entry& e : entries_) {
    if (e.kind == kind && e.name == name && e.labels == labels) return &e;
  }
  return nullptr;
}

MetricsRegistry::Entry& MetricsRegistry::FindOrAdd(Kind kind,
                                                   const std::string& name,
                                                   const std::string& help,
                                                   const std::string& labels,
                                                   bool* added) {
  *added = false;
  if (Entry* e = Find(kind, name, labels)) return *e;
  *added = true;
  Entry& e = entries_.emplace_back();
  e.kind = kind;
  e.name = name;
  e.help = help;
  e.labels = labels;
  auto family = std::find_if(families_.begin(), families_.end(),
                             [&](const Family& f) { return f.name == name; });
  if (family == families_.end()) {
    family = families_.insert(families_.end(), Family{name, {}});
  }
  assert(family->entries.empty() || family->entries[0]->kind == kind);
  family->entries.push_back(&e);
  return e;
}

Counter* MetricsRegistry::AddCounter(const std::string& name,
                                     const std::string& help,
                                     const std::string& labels) {
  absl::MutexLock lock(&mu_);
  bool added;
  Entry& e = FindOrAdd(Kind::kCounter, name, help, labels, &added);
  if (added) e.counter = std::make_unique<Counter>();
  return e.counter.get();
}

Gauge* MetricsRegistry::AddGauge(const std::string& name,
                                 const std::string& help,
                                 const std::string& labels) {
  absl::MutexLock lock(&mu_);
  bool added;
  Entry& e = FindOrAdd(Kind::kGauge, name, help, labels, &added);
  if (added) e.gauge = std::make_unique<Gauge>();
  return e.gauge.get();
}

Histogram* MetricsRegistry::AddHistogram(const std::string& name,
                                         const std::string& help,
                                         const std::string& labels) {
  absl::MutexLock lock(&mu_);
  bool added;
  Entry& e = FindOrAdd(Kind::kHistogram, name, help, labels, &added);
  if (added) e.histogram = std::make_unique<Histogram>();
  return e.histogram.get();
}

void MetricsRegistry::AddCollector(std::function<void()> collect) {
  absl::MutexLock lock(&collect_mu_);
  collectors_.push_back(std::move(collect));
}

std::string MetricsRegistry::RenderText() const {
  {
    absl::MutexLock lock(&collect_mu_);
    for (const auto& collect : collectors_) collect();
  }
  absl::MutexLock lock(&mu_);
  std::string out;
  for (const Family& f : families_) {
    const Entry& first = *f.entries.front();
    const char* type = first.kind == Kind::kCounter ? "counter"
                       : first.kind == Kind::kGauge ? "gauge"
                                                    : "histogram";
    absl::StrAppend(&out, "# HELP ", f.name, " ", first.help, "\n# TYPE ",
                    f.name, " ", type, "\n");
    for (const Entry* e : f.entries) RenderEntry(*e, &out);
  }
  return out;
}

void MetricsRegistry::RenderEntry(const Entry& e, std::string* out) {
  auto braces = [](const std::string& labels) {
    return labels.empty() ? std::string() : absl::StrCat("{", labels, "}");
  };
  switch (e.kind) {
    case Kind::kCounter:
      absl::StrAppend(out, e.name, braces(e.labels), " ", e.counter->value(),
                      "\n");
      break;
    case Kind::kGauge:
      // Prometheus spells not-a-number "NaN" (printf: "nan").
      if (std::isnan(e.gauge->value())) {
        absl::StrAppend(out, e.name, braces(e.labels), " NaN\n");
      } else {
        absl::StrAppendFormat(out, "%s%s %.17g\n", e.name, braces(e.labels),
                              e.gauge->value());
      }
      break;
    case Kind::kHistogram: {
      std::vector<uint64_t> cum;
      double sum;
      e.histogram->Read(&cum, &sum);
      const auto& bounds = Histogram::Bounds();
      const std::string sep = e.labels.empty() ? "" : ",";
      for (size_t i = 0; i < cum.size(); ++i) {
        const std::string le =
            i < bounds.size() ? absl::StrFormat("%g", bounds[i]) : "+Inf";
        absl::StrAppend(out, e.name, "_bucket{", e.labels, sep, "le=\"", le,
                        "\"} ", cum[i], "\n");
      }
      absl::StrAppendFormat(out, "%s_sum%s %.9g\n", e.name, braces(e.labels),
                            sum);
      absl::StrAppend(out, e.name, "_count", braces(e.labels), " ", cum.back(),
                      "\n");
      break;
    }
  }
}

}  // namespace latentd::service
