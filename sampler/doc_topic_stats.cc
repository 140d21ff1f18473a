#include "sampler/doc_topic_stats.h"

#include <cmath>

#include "base/log_gamma.h"

namespace latentd {

DocTopicStats::DocTopicStats(std::vector<double> alpha)
    : alpha_(std::move(alpha)),
      n_dk_(alpha_.size(), 0),
      topic_histogram_(alpha_.size()) {
  lgamma_alpha_.reserve(alpha_.size());
  for (double a : alpha_) {
    alpha_sum_ += a;
    lgamma_alpha_.push_back(LogGamma(a));
  }
}

void DocTopicStats::AddDocument(std::span<const TopicId> topics) {
  for (TopicId t : topics) {
    if (n_dk_[t]++ == 0) touched_.push_back(t);
  }
  double ll = LogGamma(alpha_sum_) -
              LogGamma(static_cast<double>(topics.size()) + alpha_sum_);
  for (TopicId k : touched_) {
    const Count n = n_dk_[k];
    ll += LogGamma(n + alpha_[k]) - lgamma_alpha_[k];
    std::vector<uint32_t>& hist = topic_histogram_[k];
    if (hist.size() <= static_cast<size_t>(n)) hist.resize(n + 1, 0);
    ++hist[n];
    n_dk_[k] = 0;
  }
  touched_.clear();
  log_likelihood_ += ll;
  if (length_histogram_.size() <= topics.size()) {
    length_histogram_.resize(topics.size() + 1, 0);
  }
  ++length_histogram_[topics.size()];
  ++documents_;
  tokens_ += topics.size();
}

}  // namespace latentd
