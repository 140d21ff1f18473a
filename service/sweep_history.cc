#include "service/sweep_history.h"

#include "base/check.h"

namespace latentd::service {

SweepHistory::SweepHistory(size_t capacity) : capacity_(capacity) {
  LATENTD_CHECK(capacity >= 2);
}

void SweepHistory::Add(const SweepPoint& point) {
  absl::MutexLock lock(&mu_);
  latest_ = point;
  const uint64_t index = added_++;
  if (index % stride_ != 0) return;
  if (kept_.size() == capacity_) {
    // Keep the points at even positions: those whose index is a multiple
    // of the doubled stride.
    size_t out = 0;
    for (size_t i = 0; i < kept_.size(); i += 2) kept_[out++] = kept_[i];
    kept_.resize(out);
    stride_ *= 2;
    if (index % stride_ != 0) return;
  }
  kept_.push_back(point);
}

std::vector<SweepPoint> SweepHistory::Points(size_t max_points) const {
  absl::MutexLock lock(&mu_);
  std::vector<SweepPoint> out;
  if (max_points == 0 || !latest_.has_value()) return out;
  std::vector<SweepPoint> all = kept_;
  if (all.empty() || all.back().sweep != latest_->sweep) {
    all.push_back(*latest_);
  }
  if (all.size() <= max_points) return all;
  if (max_points == 1) return {all.back()};
  // max_points positions from 0 to all.size() - 1, both ends included.
  out.reserve(max_points);
  const double step =
      static_cast<double>(all.size() - 1) / static_cast<double>(max_points - 1);
  for (size_t i = 0; i < max_points; ++i) {
    out.push_back(all[static_cast<size_t>(i * step + 0.5)]);
  }
  out.back() = all.back();
  return out;
}

}  // namespace latentd::service
