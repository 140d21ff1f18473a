// Synchronizer's ring-change side: re-routing every key to its owner in a
// new ring epoch (Reroute), re-seeding the keys of a lost owner at their new
// owners, and putting batches an owner refused back in the queue
// (RequeueRefused). Rounds and replies are in synchronizer.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "sync/synchronizer.h"
#include "sync/synchronizer_channel.h"

namespace latentd::sync {

void Synchronizer::RequeueRefused() {
  std::vector<DeltaBatch> refused;
  {
    absl::MutexLock l(&mu_);
    refused.swap(refused_);
  }
  SparseVector v, sum;
  for (const DeltaBatch& b : refused) {
    BlockReader deltas(b.deltas(), table_->dimension());  // built here
    for (int j = 0; j < b.keys_size(); ++j) {
      deltas.Next(&v);
      auto it = key_index_.find(b.keys(j));
      if (it == key_index_.end()) continue;
      const uint32_t i = it->second;
      AddSparse(carry_[i], v, +1, &sum);
      carry_[i].swap(sum);
      if (!queued_[i]) {
        queued_[i] = 1;
        channels_[key_owner_[i]]->candidates.push_back(i);
      }
    }
  }
}

absl::Status Synchronizer::Reroute(
    uint64_t epoch, std::vector<uint32_t> key_owner,
    std::vector<std::unique_ptr<OwnerChannel>> channels,
    const std::vector<std::string>& lost) {
  if (!changes_) {
    return absl::FailedPreconditionError(
        "re-routing keys needs a table that tracks changes (change mode)");
  }
  LATENTD_CHECK(key_owner.size() == key_owner_.size());
  absl::MutexLock l(&mu_);
  rerouting_ = true;
  // Batches awaiting a resend are answered first (or refused): an old
  // owner's answer to one may carry changes older than those the new
  // owners will send, and a key's changes must arrive in order (a count
  // could otherwise go below zero for a while). Bounded: an owner that
  // never answers is left behind (logged).
  auto is_lost = [&lost](const Channel& c) {
    return std::find(lost.begin(), lost.end(), c.owner->name()) != lost.end();
  };
  auto resolved = [this, &is_lost]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& c : channels_) {
      if ((c->busy || c->inflight) && !is_lost(*c)) return false;
    }
    return true;
  };
  if (!mu_.AwaitWithTimeout(absl::Condition(&resolved),
                            options_.reroute_resend_timeout)) {
    options_.log(absl::StrCat(
        "ring epoch ", epoch, ": a batch to resend was not answered within ",
        absl::FormatDuration(options_.reroute_resend_timeout),
        "; re-routing anyway"));
  }
  auto idle = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& c : channels_) {
      if (c->busy) return false;
    }
    return true;
  };
  mu_.Await(absl::Condition(&idle));
  // The new epoch's channels, by name: an owner seen before keeps its
  // channel (sequence, a batch to resend); a new one gets a new channel.
  std::vector<uint32_t> internal(channels.size());
  for (size_t n = 0; n < channels.size(); ++n) {
    const std::string name = channels[n]->name();
    uint32_t found = static_cast<uint32_t>(channels_.size());
    for (const auto& c : channels_) {
      if (c->owner->name() == name && !c->gone) found = c->index;
    }
    if (found == channels_.size()) {
      channels_.push_back(std::make_unique<Channel>());
      channels_.back()->owner = std::move(channels[n]);
      channels_.back()->index = found;
    }
    internal[n] = found;
  }
  const std::vector<uint32_t> old_owner = key_owner_;
  std::vector<uint32_t> candidates;
  for (auto& c : channels_) {
    c->keys.clear();
    candidates.insert(candidates.end(), c->candidates.begin(),
                      c->candidates.end());
    c->candidates.clear();
    c->retired = true;
  }
  for (size_t i = 0; i < key_owner.size(); ++i) {
    LATENTD_CHECK(key_owner[i] < channels.size());
    key_owner_[i] = internal[key_owner[i]];
    Channel* c = channels_[key_owner_[i]].get();
    c->keys.push_back(static_cast<uint32_t>(i));
    c->retired = false;
  }
  for (uint32_t i : candidates) {
    channels_[key_owner_[i]]->candidates.push_back(i);
  }
  // A lost owner left with no key: what it was sent and did not answer
  // goes out by the new ring, and its keys are re-seeded at their new
  // owners, which hold nothing of them.
  for (auto& c : channels_) {
    if (!c->retired || !is_lost(*c)) continue;
    c->gone = true;
    if (c->inflight) {
      refused_.push_back(std::move(*c->inflight));
      c->inflight.reset();
    }
    for (size_t i = 0; i < key_owner_.size(); ++i) {
      if (old_owner[i] != c->index || key_owner_[i] == c->index) continue;
      reseed_[i] = 1;
      if (!queued_[i]) {
        queued_[i] = 1;
        channels_[key_owner_[i]]->candidates.push_back(
            static_cast<uint32_t>(i));
      }
    }
  }
  epoch_.store(epoch, std::memory_order_relaxed);
  rerouting_ = false;
  ++kicks_;  // a round to every owner now
  return absl::OkStatus();
}

}  // namespace latentd::sync
