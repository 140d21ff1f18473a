// Synchronizer's ring-change side: re-routing every key to its owner in a
// new ring epoch (Reroute), re-seeding the keys of a lost owner at their new
// owners, putting batches an owner refused back in the queue
// (RequeueRefused), and adding keys to a growing table (AddKeys); the
// per-key work is BatchBuilder's and KeyLedger's. Rounds and replies are in
// synchronizer.cc.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/status_macros.h"
#include "sync/internal/batch_builder.h"
#include "sync/internal/key_ledger.h"
#include "sync/internal/synchronizer_channel.h"
#include "sync/synchronizer.h"

namespace latentd::sync {

void Synchronizer::RequeueRefused() {
  std::vector<DeltaBatch> refused;
  {
    absl::MutexLock l(&mu_);
    refused.swap(refused_);
  }
  for (const DeltaBatch& b : refused) builder_->Requeue(b);
}

absl::Status Synchronizer::Reroute(
    uint64_t epoch, std::vector<uint32_t> key_owner,
    std::vector<std::unique_ptr<OwnerChannel>> channels,
    const std::vector<std::string>& lost) {
  LATENTD_CHECK(key_owner.size() == builder_->num_keys());
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
      if (auto it = noted_incarnations_.find(name);
          it != noted_incarnations_.end()) {
        channels_.back()->owner_incarnation = it->second;
        noted_incarnations_.erase(it);
      }
    }
    internal[n] = found;
  }
  for (size_t i = 0; i < key_owner.size(); ++i) {
    LATENTD_CHECK(key_owner[i] < channels.size());
    key_owner[i] = internal[key_owner[i]];
  }
  const std::vector<uint32_t> old_owner =
      builder_->Reroute(key_owner, channels_.size());
  for (auto& c : channels_) c->retired = !builder_->HasKeys(c->index);
  route_ = internal;
  // A lost owner left with no key: what it was sent and did not answer
  // goes out by the new ring, and its keys are re-seeded at their new
  // owners, which hold nothing of them.
  for (auto& c : channels_) {
    if (!c->retired || !is_lost(*c)) continue;
    c->gone = true;
    // Keys it sent that the table does not hold: their new owners send
    // them again, re-seeded by the survivors.
    ledger_->DropForeignOf(c->index);
    if (c->inflight) {
      refused_.push_back(std::move(*c->inflight));
      c->inflight.reset();
    }
    builder_->ReseedMovedFrom(c->index, old_owner);
  }
  epoch_.store(epoch, std::memory_order_relaxed);
  rerouting_ = false;
  ++kicks_;  // a round to every owner now
  return absl::OkStatus();
}

std::vector<std::pair<Key, std::string>> Synchronizer::ForeignKeys() {
  return ledger_->ForeignKeys();
}

absl::Status Synchronizer::AddKeys(const std::function<absl::Status()>& grow,
                                   const std::function<uint32_t(Key)>& owner) {
  // Held throughout: no round starts, and (once idle) none runs, so the
  // per-key state is this call's alone.
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(this, &Synchronizer::AllIdle));
  const size_t before = builder_->num_keys();
  LATENTD_RETURN_IF_ERROR(grow());
  const size_t n = table_->num_keys();
  if (n < before) {
    return absl::InternalError(
        absl::StrCat("the table shrank from ", before, " to ", n, " keys"));
  }
  builder_->AddKeys(clock_.load(std::memory_order_relaxed), [&](Key key) {
    const uint32_t r = owner(key);
    LATENTD_CHECK(r < route_.size());
    return route_[r];
  });
  for (auto& c : channels_) {
    if (builder_->HasKeys(c->index)) c->retired = false;
  }
  ledger_->AddKeys();
  ++kicks_;
  return absl::OkStatus();
}

}  // namespace latentd::sync
