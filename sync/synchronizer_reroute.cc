// Synchronizer's ring-change side: re-routing every key to its owner in a
// new ring epoch (Reroute), re-seeding the keys of a lost owner at their new
// owners, putting batches an owner refused back in the queue
// (RequeueRefused), and adding keys to a growing table (AddKeys). Rounds and
// replies are in synchronizer.cc.
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
    int next_reseeded = 0;
    for (int j = 0; j < b.keys_size(); ++j) {
      deltas.Next(&v);
      const bool reseeded =
          next_reseeded < b.reseeded_size() &&
          b.reseeded(next_reseeded) == static_cast<uint32_t>(j);
      next_reseeded += reseeded;
      auto it = key_index_.find(b.keys(j));
      if (it == key_index_.end()) continue;
      const uint32_t i = it->second;
      if (grows_) named_[i] = 0;  // not applied: its name goes again
      AddSparse(carry_[i], v, +1, &sum);
      carry_[i].swap(sum);
      // Still a re-seed (what it had received is taken back already): it
      // goes out as one again, with the carried change.
      if (reseeded) reseed_[i] = 1;
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
  mu_.Await(absl::Condition(this, &Synchronizer::AllIdle));
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
  route_ = internal;
  if (grows_) {  // a key's new owner is told its name
    for (size_t i = 0; i < key_owner_.size(); ++i) {
      if (old_owner[i] != key_owner_[i]) named_[i] = 0;
    }
  }
  // A lost owner left with no key: what it was sent and did not answer
  // goes out by the new ring, and its keys are re-seeded at their new
  // owners, which hold nothing of them.
  for (auto& c : channels_) {
    if (!c->retired || !is_lost(*c)) continue;
    c->gone = true;
    {
      // Keys it sent that the table does not hold: their new owners send
      // them again, re-seeded by the survivors.
      absl::MutexLock t(&track_mu_);
      DropForeignOf(c->index);
    }
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

void Synchronizer::DropForeignOf(uint32_t channel) {
  for (auto it = foreign_.begin(); it != foreign_.end();) {
    Foreign& f = it->second;
    std::erase_if(f.changes,
                  [channel](const auto& p) { return p.first == channel; });
    if (f.changes.empty() && (f.name.empty() || f.channel == channel)) {
      foreign_.erase(it++);
    } else {
      ++it;
    }
  }
}

std::vector<std::pair<Key, std::string>> Synchronizer::ForeignKeys() {
  std::vector<std::pair<Key, std::string>> out;
  absl::MutexLock l(&track_mu_);
  for (const auto& [key, f] : foreign_) {
    if (!f.name.empty()) out.emplace_back(key, f.name);
  }
  return out;
}

absl::Status Synchronizer::AddKeys(const std::function<absl::Status()>& grow,
                                   const std::function<uint32_t(Key)>& owner) {
  // Held throughout: no round starts, and (once idle) none runs, so the
  // per-key state is this call's alone.
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(this, &Synchronizer::AllIdle));
  const size_t before = key_owner_.size();
  LATENTD_RETURN_IF_ERROR(grow());
  const size_t n = table_->num_keys();
  if (n < before) {
    return absl::InternalError(
        absl::StrCat("the table shrank from ", before, " to ", n, " keys"));
  }
  const uint64_t clock = clock_.load(std::memory_order_relaxed);
  last_sent_clock_.resize(n, clock);
  key_owner_.resize(n, 0);
  carry_.resize(n);
  reseed_.resize(n, 0);
  queued_.resize(n, 0);
  named_.resize(n, 0);
  absl::MutexLock t(&track_mu_);
  contributed_.resize(n);
  received_.resize(n);
  for (size_t i = before; i < n; ++i) {
    const Key key = table_->key(i);
    LATENTD_CHECK(key_index_.emplace(key, static_cast<uint32_t>(i)).second);
    const uint32_t r = owner(key);
    LATENTD_CHECK(r < route_.size());
    key_owner_[i] = route_[r];
    Channel* c = channels_[key_owner_[i]].get();
    c->keys.push_back(static_cast<uint32_t>(i));
    c->retired = false;
    auto f = foreign_.find(key);
    if (f == foreign_.end()) continue;
    SparseVector change, sum;
    for (const auto& [channel, part] : f->second.changes) {
      AddSparse(change, part, +1, &sum);
      change.swap(sum);
    }
    if (!change.empty()) {
      table_->EnqueueCorrection(i, change);
      received_[i] = std::move(change);
    }
    foreign_.erase(f);
  }
  ++kicks_;
  return absl::OkStatus();
}

}  // namespace latentd::sync
