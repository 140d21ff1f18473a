#include "ops/bench/elastic_timeline.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>

#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace latentd::bench {

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double NowMs() { return absl::ToUnixMicros(absl::Now()) / 1000.0; }

sync::LogFn LogLines::fn() {
  return [this](std::string_view line) {
    absl::MutexLock l(&mu_);
    lines_.emplace_back(NowMs(), std::string(line));
  };
}

std::vector<std::pair<double, std::string>> LogLines::Take() {
  absl::MutexLock l(&mu_);
  return std::move(lines_);
}

CpuMonitor::CpuMonitor() : thread_([this] { Loop(); }) {}

CpuMonitor::~CpuMonitor() { Stop(); }

void CpuMonitor::Stop() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void CpuMonitor::Loop() {
  while (!stop_.load(std::memory_order_relaxed)) {
    {
      absl::MutexLock l(&mu_);
      samples_.emplace_back(NowMs(), ProcessCpuSeconds());
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
}

double CpuMonitor::Cores(double from_ms, double to_ms) const {
  absl::MutexLock l(&mu_);
  if (samples_.size() < 2 || to_ms <= from_ms) return 0;
  const auto at = [this](double ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    auto it = std::lower_bound(samples_.begin(), samples_.end(), ms,
                               [](const std::pair<double, double>& s,
                                  double t) { return s.first < t; });
    return it == samples_.end() ? samples_.back() : *it;
  };
  const auto a = at(from_ms), b = at(to_ms);
  return b.first > a.first ? (b.second - a.second) * 1000 / (b.first - a.first)
                           : 0;
}

namespace {
// Σ over nodes of (tokens / seconds) of each node's sweeps in `spans`.
double ClusterRate(const std::vector<const SweepSpan*>& spans) {
  std::vector<std::pair<double, double>> node(8);  // tokens, seconds
  for (const SweepSpan* s : spans) {
    if (static_cast<size_t>(s->node) >= node.size()) node.resize(s->node + 1);
    node[s->node].first += static_cast<double>(s->tokens);
    node[s->node].second += (s->end_ms - s->start_ms) / 1000;
  }
  double rate = 0;
  for (const auto& [tokens, seconds] : node) {
    if (seconds > 0) rate += tokens / seconds;
  }
  return rate;
}

}  // namespace

Rates MeasureRates(std::vector<SweepSpan> spans, double from_ms, double to_ms) {
  std::sort(spans.begin(), spans.end(),
            [](const SweepSpan& a, const SweepSpan& b) {
              return a.start_ms < b.start_ms;
            });
  std::vector<const SweepSpan*> before, during, after;
  std::vector<int> seen_after(8, 0);
  std::vector<double> before_ms;
  for (const SweepSpan& s : spans) {
    if (static_cast<size_t>(s.node) >= seen_after.size()) {
      seen_after.resize(s.node + 1, 0);
    }
    if (s.end_ms <= from_ms) {
      before.push_back(&s);
    } else if (s.start_ms < to_ms) {
      during.push_back(&s);
    } else if (seen_after[s.node]++ < kWindowSweeps) {
      after.push_back(&s);
    }
  }
  // Keep each node's last kWindowSweeps sweeps before the move.
  std::vector<int> kept(seen_after.size(), 0);
  std::vector<const SweepSpan*> last;
  for (auto it = before.rbegin(); it != before.rend(); ++it) {
    if (kept[(*it)->node]++ < kWindowSweeps) last.push_back(*it);
  }
  Rates r;
  r.before_from_ms = from_ms;
  for (const SweepSpan* s : last) {
    before_ms.push_back(s->end_ms - s->start_ms);
    r.before_from_ms = std::min(r.before_from_ms, s->start_ms);
  }
  r.before = ClusterRate(last);
  r.during = ClusterRate(during);
  r.after = ClusterRate(after);
  double longest = 0;
  for (const SweepSpan* s : during) {
    longest = std::max(longest, s->end_ms - s->start_ms);
  }
  if (!before_ms.empty()) {
    std::nth_element(before_ms.begin(),
                     before_ms.begin() + before_ms.size() / 2, before_ms.end());
    r.stall = longest / before_ms[before_ms.size() / 2];
  }
  return r;
}

void PrintTimeline(const std::vector<SweepSpan>& spans, const CpuMonitor& cpu,
                   double from_ms, double to_ms) {
  constexpr double kBin = 250;
  double first = to_ms, last = from_ms;  // the sweeps' extent
  for (const SweepSpan& s : spans) {
    first = std::min(first, s.start_ms);
    last = std::max(last, s.end_ms);
  }
  const double t0 = std::max(from_ms - 1500, first);
  const double t1 = std::min(to_ms + 1500, last);
  const int bins = std::min(80, static_cast<int>((t1 - t0) / kBin) + 1);
  for (int b = 0; b < bins; ++b) {
    const double lo = t0 + b * kBin, hi = lo + kBin;
    double tokens = 0;
    for (const SweepSpan& s : spans) {
      const double overlap = std::min(hi, s.end_ms) - std::max(lo, s.start_ms);
      if (overlap > 0 && s.end_ms > s.start_ms) {
        tokens += s.tokens * overlap / (s.end_ms - s.start_ms);
      }
    }
    std::fprintf(stderr, "    %+7.0f ms  %6.2f M tok/s  %4.2f cores%s\n",
                 lo - from_ms, tokens / kBin / 1000, cpu.Cores(lo, hi),
                 lo < to_ms && hi > from_ms ? "  (move)" : "");
  }
}

}  // namespace latentd::bench
