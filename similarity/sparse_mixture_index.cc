#include "similarity/sparse_mixture_index.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <queue>

#include "absl/strings/str_cat.h"

namespace latentd {
namespace {

std::vector<float> SquareRoots(const std::vector<double>& alpha) {
  std::vector<float> out(alpha.size());
  for (size_t k = 0; k < alpha.size(); ++k) {
    out[k] = static_cast<float>(std::sqrt(alpha[k]));
  }
  return out;
}

absl::Status CheckN(size_t n) {
  if (n == 0 || n > SimilarityIndex::kMaxResults) {
    return absl::InvalidArgumentError(absl::StrCat(
        "n must be in 1..", SimilarityIndex::kMaxResults, "; got ", n));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<float> SmoothedMixture(std::span<const TopicCount> counts,
                                   uint64_t total,
                                   std::span<const double> alpha) {
  const double denominator = static_cast<double>(total) +
                             std::accumulate(alpha.begin(), alpha.end(), 0.0);
  std::vector<float> theta(alpha.size());
  for (size_t k = 0; k < alpha.size(); ++k) {
    theta[k] = static_cast<float>(alpha[k] / denominator);
  }
  for (const auto& [k, n] : counts) {
    if (k < alpha.size()) {
      theta[k] =
          static_cast<float>((static_cast<double>(n) + alpha[k]) / denominator);
    }
  }
  return theta;
}

absl::StatusOr<std::unique_ptr<SparseMixtureIndex>> SparseMixtureIndex::Create(
    std::span<const double> alpha) {
  if (alpha.empty() || alpha.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat("a sparse mixture index needs 1..2^32-1 topics' alpha; "
                     "got ",
                     alpha.size()));
  }
  for (size_t k = 0; k < alpha.size(); ++k) {
    if (!std::isfinite(alpha[k]) || alpha[k] <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("alpha of topic ", k, " is ", alpha[k],
                       ": it must be finite and > 0"));
    }
  }
  return std::unique_ptr<SparseMixtureIndex>(
      new SparseMixtureIndex(std::vector<double>(alpha.begin(), alpha.end())));
}

SparseMixtureIndex::SparseMixtureIndex(std::vector<double> alpha)
    : alpha_(std::move(alpha)),
      alpha_sum_(std::accumulate(alpha_.begin(), alpha_.end(), 0.0)),
      sqrt_alpha_(SquareRoots(alpha_)) {}

absl::Status SparseMixtureIndex::Upsert(uint64_t id,
                                        std::span<const TopicCount> counts,
                                        uint64_t total, uint64_t version) {
  uint64_t sum = 0;
  std::vector<Entry> entries;
  entries.reserve(counts.size());
  for (const auto& [topic, count] : counts) {
    if (topic >= alpha_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "topic ", topic, " of a model of ", alpha_.size(), " topics"));
    }
    if (count == 0) continue;
    sum += count;
    const double a = alpha_[topic];
    entries.push_back(
        {topic, static_cast<float>(std::sqrt(static_cast<double>(count) + a) -
                                   std::sqrt(a))});
  }
  if (sum > total) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the counts add up to ", sum, ", more than the total ", total));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.topic < b.topic; });
  for (size_t i = 1; i < entries.size(); ++i) {
    if (entries[i].topic == entries[i - 1].topic) {
      return absl::InvalidArgumentError(
          absl::StrCat("topic ", entries[i].topic, " is listed twice"));
    }
  }
  const float inv = static_cast<float>(
      1.0 / std::sqrt(static_cast<double>(total) + alpha_sum_));
  absl::MutexLock lock(&mu_);
  if (entries_.size() + entries.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::ResourceExhaustedError(
        "a sparse mixture index holds at most 2^32-1 non-zero counts");
  }
  Item item{.id = id,
            .version = version,
            .inv_sqrt_total = inv,
            .first = static_cast<uint32_t>(entries_.size()),
            .count = static_cast<uint32_t>(entries.size())};
  entries_.insert(entries_.end(), entries.begin(), entries.end());
  live_entries_ += entries.size();
  auto [it, added] = slot_.try_emplace(id, items_.size());
  if (added) {
    items_.push_back(item);
  } else {
    live_entries_ -= items_[it->second].count;
    items_[it->second] = item;
  }
  MaybeCompact();
  return absl::OkStatus();
}

absl::Status SparseMixtureIndex::Remove(uint64_t id) {
  absl::MutexLock lock(&mu_);
  auto it = slot_.find(id);
  if (it == slot_.end()) {
    return absl::NotFoundError(absl::StrCat("no item ", id));
  }
  const uint32_t slot = it->second;
  live_entries_ -= items_[slot].count;
  slot_.erase(it);
  if (slot + 1 != items_.size()) {
    items_[slot] = items_.back();
    slot_[items_[slot].id] = slot;
  }
  items_.pop_back();
  MaybeCompact();
  return absl::OkStatus();
}

void SparseMixtureIndex::MaybeCompact() {
  if (entries_.size() < 1024 || live_entries_ * 2 > entries_.size()) return;
  std::vector<Entry> kept;
  kept.reserve(live_entries_);
  for (Item& item : items_) {
    const uint32_t first = static_cast<uint32_t>(kept.size());
    kept.insert(kept.end(), entries_.begin() + item.first,
                entries_.begin() + item.first + item.count);
    item.first = first;
  }
  entries_ = std::move(kept);
}

absl::Status SparseMixtureIndex::PrepareQuery(std::span<const float> theta,
                                              std::vector<float>* sqrt_p,
                                              double* background) const {
  if (theta.size() != alpha_.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the mixture has ", theta.size(), " entries, not ", alpha_.size()));
  }
  double sum = 0;
  for (size_t k = 0; k < theta.size(); ++k) {
    if (!std::isfinite(theta[k]) || theta[k] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("entry ", k, " of the mixture is ", theta[k],
                       ": each must be finite and >= 0"));
    }
    sum += theta[k];
  }
  if (sum <= 0) return absl::InvalidArgumentError("the mixture sums to 0");
  sqrt_p->resize(theta.size());
  double b = 0;
  for (size_t k = 0; k < theta.size(); ++k) {
    const float r = static_cast<float>(std::sqrt(theta[k] / sum));
    (*sqrt_p)[k] = r;
    b += static_cast<double>(r) * sqrt_alpha_[k];
  }
  *background = b;
  return absl::OkStatus();
}

SimilarityAnswer SparseMixtureIndex::Scan(
    const std::vector<float>& sqrt_p, double background, size_t n,
    std::optional<uint64_t> exclude) const {
  SimilarityAnswer answer;
  answer.exact = true;
  // Nearest last: the heap's top is the farthest kept (ties: larger id).
  auto farther = [](const SimilarItem& a, const SimilarItem& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  };
  std::priority_queue<SimilarItem, std::vector<SimilarItem>, decltype(farther)>
      kept(farther);
  uint64_t min_version = std::numeric_limits<uint64_t>::max();
  uint64_t max_version = 0;
  for (const Item& item : items_) {
    min_version = std::min(min_version, item.version);
    max_version = std::max(max_version, item.version);
    if (exclude.has_value() && item.id == *exclude) continue;
    double dot = background;
    const Entry* e = entries_.data() + item.first;
    for (uint32_t i = 0; i < item.count; ++i) {
      dot += static_cast<double>(sqrt_p[e[i].topic]) * e[i].weight;
    }
    const double bc = dot * item.inv_sqrt_total;
    const SimilarItem candidate{
        .id = item.id,
        .distance = static_cast<float>(std::sqrt(std::max(0.0, 1.0 - bc))),
        .version = item.version};
    if (kept.size() < n) {
      kept.push(candidate);
    } else if (farther(candidate, kept.top())) {
      kept.pop();
      kept.push(candidate);
    }
  }
  answer.items.resize(kept.size());
  for (size_t i = kept.size(); i > 0; --i) {
    answer.items[i - 1] = kept.top();
    kept.pop();
  }
  if (!items_.empty()) {
    answer.index_min_version = min_version;
    answer.index_max_version = max_version;
  }
  if (!answer.items.empty()) {
    answer.oldest_version = answer.items[0].version;
    for (const SimilarItem& item : answer.items) {
      answer.oldest_version = std::min(answer.oldest_version, item.version);
    }
  }
  return answer;
}

absl::StatusOr<SimilarityAnswer> SparseMixtureIndex::Query(
    std::span<const float> theta, size_t n) const {
  if (absl::Status s = CheckN(n); !s.ok()) return s;
  std::vector<float> sqrt_p;
  double background = 0;
  if (absl::Status s = PrepareQuery(theta, &sqrt_p, &background); !s.ok()) {
    return s;
  }
  absl::ReaderMutexLock lock(&mu_);
  return Scan(sqrt_p, background, n, std::nullopt);
}

absl::StatusOr<SimilarityAnswer> SparseMixtureIndex::QueryById(uint64_t id,
                                                               size_t n) const {
  if (absl::Status s = CheckN(n); !s.ok()) return s;
  absl::ReaderMutexLock lock(&mu_);
  auto it = slot_.find(id);
  if (it == slot_.end()) {
    return absl::NotFoundError(absl::StrCat("no item ", id));
  }
  // The item's own mixture, densified: θ_k = (n_k + α_k) / (n + A).
  const Item& item = items_[it->second];
  const double scale = static_cast<double>(item.inv_sqrt_total);
  std::vector<float> sqrt_p(alpha_.size());
  double background = 0;
  for (size_t k = 0; k < alpha_.size(); ++k) {
    sqrt_p[k] = static_cast<float>(sqrt_alpha_[k] * scale);
  }
  const Entry* e = entries_.data() + item.first;
  for (uint32_t i = 0; i < item.count; ++i) {
    sqrt_p[e[i].topic] = static_cast<float>(
        (static_cast<double>(sqrt_alpha_[e[i].topic]) + e[i].weight) * scale);
  }
  for (size_t k = 0; k < alpha_.size(); ++k) {
    background += static_cast<double>(sqrt_p[k]) * sqrt_alpha_[k];
  }
  return Scan(sqrt_p, background, n, id);
}

size_t SparseMixtureIndex::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return items_.size();
}

size_t SparseMixtureIndex::bytes() const {
  absl::ReaderMutexLock lock(&mu_);
  return items_.capacity() * sizeof(Item) +
         entries_.capacity() * sizeof(Entry) +
         slot_.capacity() * (sizeof(uint64_t) + sizeof(uint32_t) + 1);
}

}  // namespace latentd
