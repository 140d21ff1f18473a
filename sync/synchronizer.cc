#include "sync/synchronizer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "sync/internal/atomic_max.h"
#include "sync/internal/batch_builder.h"
#include "sync/internal/key_ledger.h"
#include "sync/internal/synchronizer_channel.h"

namespace latentd::sync {

Synchronizer::Synchronizer(SynchronizerOptions options, AbelianTable* table,
                           std::vector<uint32_t> key_owner,
                           std::vector<std::unique_ptr<OwnerChannel>> channels)
    : options_(std::move(options)),
      table_(table),
      grows_(table->GrowsKeys()),
      ledger_(std::make_unique<internal::KeyLedger>(table)),
      builder_(std::make_unique<internal::BatchBuilder>(
          table, ledger_.get(), &counters_, std::move(key_owner),
          channels.size())),
      epoch_(options_.epoch) {
  for (auto& ch : channels) {
    channels_.push_back(std::make_unique<Channel>());
    channels_.back()->owner = std::move(ch);
    channels_.back()->index = static_cast<uint32_t>(channels_.size() - 1);
    route_.push_back(channels_.back()->index);
  }
}

Synchronizer::~Synchronizer() { Stop(); }

void Synchronizer::Start() {
  thread_ = std::thread([this] { Loop(); });
}

void Synchronizer::Stop() {
  {
    absl::MutexLock l(&mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  if (thread_.joinable()) thread_.join();
  absl::MutexLock l(&mu_);
  mu_.Await(absl::Condition(this, &Synchronizer::AllIdle));
}

bool Synchronizer::BackingOff(const Channel& c, absl::Time now) const {
  return !c.busy && !c.available && !c.retired && now < c.next_due;
}

bool Synchronizer::AllIdle() const {
  for (const auto& c : channels_) {
    if (c->busy) return false;
  }
  return true;
}

void Synchronizer::Loop() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    const absl::Time now = absl::Now();
    absl::Time wake = now + absl::Milliseconds(100);
    // By index: Reroute may add channels while a round is being sent.
    for (size_t j = 0; j < channels_.size(); ++j) {
      Channel* c = channels_[j].get();
      if (c->busy || (c->retired && !c->inflight)) continue;
      // While re-routing, only batches awaiting a resend go out.
      if (rerouting_ && !c->inflight) continue;
      // After a failed round, retry_interval passes before the next, kicks
      // and passes or not: an owner that refuses every batch would
      // otherwise get them in a tight loop, and AddKeys (which waits for
      // every channel to be idle at once) would wait forever.
      if (BackingOff(*c, now)) {
        wake = std::min(wake, c->next_due);
        continue;
      }
      const bool pass_due = c->served_pass < pass_requested_;
      const bool kicked = c->served_kick < kicks_;
      if (!pass_due && !kicked && now < c->next_due) {
        wake = std::min(wake, c->next_due);
        continue;
      }
      c->busy = true;
      // A resent batch serves no pass (it may be a budgeted subset); the
      // next fresh round does.
      c->round_pass = (!c->inflight && pass_due) ? pass_requested_ : 0;
      c->round_complete = c->round_pass != 0 ||
                          complete_kick_ > c->served_kick ||
                          now - c->last_complete >= options_.max_key_delay;
      if (!c->inflight) {
        c->served_kick = kicks_;
        if (c->round_complete) c->last_complete = now;
      }
      mu_.Unlock();
      SendRound(c);
      mu_.Lock();
    }
    if (stop_) break;
    auto ready = [this, wake]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      if (stop_) return true;
      for (const auto& c : channels_) {
        if (c->retired && !c->inflight) continue;
        if (rerouting_ && !c->inflight) continue;
        if (BackingOff(*c, absl::Now())) continue;
        if (!c->busy && (c->served_pass < pass_requested_ ||
                         c->served_kick < kicks_ || c->next_due < wake)) {
          return true;
        }
      }
      return false;
    };
    mu_.AwaitWithDeadline(absl::Condition(&ready), wake);
  }
}

void Synchronizer::SendRound(Channel* c) {
  if (!c->inflight) {
    // Each round looks at the dirty keys afresh (a fold of the table's
    // log). Sharing one look among the rounds a kick starts saved little
    // CPU and cost quality: news20 K=100 on 3 nodes came out ~0.02
    // nats/token worse, over 19 runs against 11.
    RequeueRefused();
    const uint64_t clock = clock_.load(std::memory_order_relaxed);
    builder_->DistributeDirty(clock);
    DeltaBatch batch;
    batch.set_node_id(options_.node_id);
    batch.set_incarnation(options_.incarnation);
    batch.set_sequence(++c->sequence);
    batch.set_clock(clock);
    batch.set_dimension(table_->dimension());
    batch.set_epoch(epoch_.load(std::memory_order_relaxed));
    batch.set_changes_only(true);
    batch.set_all_keys(grows_);
    batch.set_owner_incarnation(c->owner_incarnation);
    c->inflight_keys.clear();
    internal::BatchBuilder::Round round;
    round.channel = c->index;
    round.clock = clock;
    round.min_weight = c->round_complete ? 0 : options_.min_key_weight;
    // A pass sends everything; a budgeted round the heaviest keys first.
    round.byte_budget = c->round_pass != 0 ? 0 : options_.round_byte_budget;
    round.batch = &batch;
    round.keys = &c->inflight_keys;
    if (c->reseed) {
      c->reseed = false;
      builder_->BuildReseedBatch(&round);
    } else {
      builder_->BuildChangeBatch(&round);
    }
    c->round_quiet = round.quiet;
    counters_.keys_sent.fetch_add(c->inflight_keys.size(),
                                  std::memory_order_relaxed);
    c->inflight = std::move(batch);
  }
  if (c->owner->remote()) {
    counters_.bytes_sent.fetch_add(
        c->inflight->ByteSizeLong() + kFrameHeaderSize,
        std::memory_order_relaxed);
  }
  c->sent_at = std::chrono::steady_clock::now();
  c->owner->Send(*c->inflight, [this, c](absl::StatusOr<DeltaReply> reply) {
    OnReply(c, std::move(reply));
  });
}

absl::Status Synchronizer::CheckReply(const DeltaReply& reply) const {
  if (reply.name_keys_size() != reply.names_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("names ", reply.name_keys_size(), " keys with ",
                     reply.names_size(), " names"));
  }
  for (const std::string& name : reply.names()) {
    if (name.empty()) return absl::InvalidArgumentError("an empty key name");
  }
  return BlockReader(reply.changes(), table_->dimension())
      .Validate(reply.changed_keys_size());
}

void Synchronizer::OnReply(Channel* c, absl::StatusOr<DeltaReply> reply) {
  if (reply.ok()) {
    absl::Status valid = CheckReply(*reply);
    if (!valid.ok()) {
      reply = absl::DataLossError(absl::StrCat(
          "bad reply from ", c->owner->name(), ": ", valid.message()));
    }
  }
  bool ok = reply.ok();
  bool quiet = c->round_quiet;
  if (ok) {
    if (c->owner->remote()) {
      counters_.bytes_received.fetch_add(
          reply->ByteSizeLong() + kFrameHeaderSize, std::memory_order_relaxed);
    }
    // The deltas sent become contributed, the changes go to the table.
    if (ledger_->ApplyReply(c->index, *c->inflight, c->inflight_keys, *reply,
                            builder_->key_index())) {
      quiet = false;
    }
    // The next batch names this incarnation: should the owner restart, it
    // refuses that batch and this node re-seeds it (see the header).
    c->owner_incarnation = reply->owner_incarnation();
    c->inflight.reset();
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - c->sent_at)
                            .count();
    counters_.rounds.fetch_add(1, std::memory_order_relaxed);
    counters_.round_micros_total.fetch_add(micros, std::memory_order_relaxed);
    internal::AtomicMax(counters_.round_micros_max,
                        static_cast<uint64_t>(micros));
  } else {
    counters_.failed_rounds.fetch_add(1, std::memory_order_relaxed);
  }
  absl::MutexLock l(&mu_);
  if (!ok && c->inflight &&
      reply.status().code() == absl::StatusCode::kFailedPrecondition) {
    // Refused as routed by an older ring: nothing of it was applied. Its
    // changes go out again by the current ring (RequeueRefused).
    refused_.push_back(std::move(*c->inflight));
    c->inflight.reset();
  }
  const bool owner_restarted =
      !ok && c->inflight &&
      reply.status().code() == absl::StatusCode::kAborted &&
      absl::StrContains(reply.status().message(), "owner restarted");
  if (owner_restarted) {
    // Nothing of it was applied there, and what the owner's previous
    // process held is lost: its changes go out again with everything this
    // node contributed to the owner's keys (BuildReseedBatch).
    options_.info(absl::StrCat("owner ", c->owner->name(),
                               " restarted: re-seeding it with this node's "
                               "contributions to its keys"));
    refused_.push_back(std::move(*c->inflight));
    c->inflight.reset();
    c->reseed = true;
    c->owner_incarnation = 0;
  }
  // An owner that refused a batch as routed by another ring epoch is there
  // (a ring change is in progress): nothing to report.
  const bool epoch_refusal =
      !ok && (owner_restarted ||
              reply.status().code() == absl::StatusCode::kFailedPrecondition ||
              (reply.status().code() == absl::StatusCode::kUnavailable &&
               absl::StrContains(reply.status().message(), "ring epoch")));
  if (!ok && c->retired && !c->inflight) {
    c->available = true;  // retired: not reported as unavailable
  } else if (ok != c->available) {
    // Unavailable for now all the same (a pass through it is incomplete),
    // but an expected part of a ring change: not logged, nor its end.
    if (!ok) c->epoch_refused = epoch_refusal;
    if (c->epoch_refused) {
      // (an expected part of a ring change)
    } else if (ok) {
      options_.info(absl::StrCat("owner ", c->owner->name(), " is back"));
    } else {
      options_.log(absl::StrCat("owner ", c->owner->name(),
                                " unavailable: ", reply.status().ToString()));
    }
    c->available = ok;
  }
  if (c->round_pass != 0 || !ok) {
    // A failed round ends any pass waiting on this channel.
    const uint64_t served = ok ? c->round_pass : pass_requested_;
    if (served > c->served_pass) {
      c->served_pass = served;
      c->pass_quiet = ok && quiet;
    }
  }
  c->next_due =
      absl::Now() + (ok ? options_.round_interval : options_.retry_interval);
  c->busy = false;
}

void Synchronizer::NoteOwnerIncarnation(std::string_view name,
                                        uint64_t incarnation) {
  if (incarnation == 0) return;
  absl::MutexLock l(&mu_);
  for (auto& c : channels_) {
    if (c->gone || c->owner->name() != name) continue;
    // A busy channel belongs to its round (whose reply names the owner).
    if (!c->busy && c->owner_incarnation == 0) {
      c->owner_incarnation = incarnation;
    }
    return;
  }
  // Not routed to yet (hand-offs go before the Reroute): its channel
  // starts with it.
  noted_incarnations_[std::string(name)] = incarnation;
}

void Synchronizer::Kick(bool complete) {
  absl::MutexLock l(&mu_);
  ++kicks_;
  if (complete) complete_kick_ = kicks_;
}

Synchronizer::PassResult Synchronizer::Flush() {
  absl::MutexLock l(&mu_);
  const uint64_t gen = ++pass_requested_;
  auto done = [this, gen]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const auto& c : channels_) {
      if (!c->retired && c->served_pass < gen) return false;
    }
    return true;
  };
  mu_.Await(absl::Condition(&done));
  PassResult r;
  for (const auto& c : channels_) {
    if (c->retired) continue;
    if (!c->available) {
      r.unavailable.push_back(c->owner->name());
      r.quiet = false;
    } else if (!c->pass_quiet) {
      r.quiet = false;
    }
  }
  return r;
}

std::vector<std::string> Synchronizer::UnavailableOwners() const {
  absl::MutexLock l(&mu_);
  std::vector<std::string> out;
  for (const auto& c : channels_) {
    if (!c->available && !c->retired) out.push_back(c->owner->name());
  }
  return out;
}

}  // namespace latentd::sync
