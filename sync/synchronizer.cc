#include "sync/synchronizer.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "sync/synchronizer_channel.h"

namespace latentd::sync {
namespace {

class LocalChannel final : public OwnerChannel {
 public:
  LocalChannel(OwnerShard* shard, std::string name)
      : shard_(shard), name_(std::move(name)) {}
  void Send(const DeltaBatch& batch, DoneFn done) override {
    DeltaReply reply;
    absl::Status s = shard_->Apply(batch, &reply);
    if (!s.ok()) {
      done(s);
    } else {
      done(std::move(reply));
    }
  }
  bool remote() const override { return false; }
  std::string name() const override { return name_; }

 private:
  OwnerShard* shard_;
  const std::string name_;
};

class RemoteChannel final : public OwnerChannel {
 public:
  RemoteChannel(Client* client, absl::Duration timeout)
      : client_(client), timeout_(timeout) {}
  void Send(const DeltaBatch& batch, DoneFn done) override {
    client_->Call(MESSAGE_TYPE_DELTA_BATCH, batch.SerializeAsString(), timeout_,
                  [done](absl::StatusOr<Frame> frame) {
                    if (!frame.ok()) {
                      done(frame.status());
                      return;
                    }
                    DeltaReply reply;
                    if (!reply.ParseFromString(frame->payload)) {
                      done(absl::DataLossError("unparsable DeltaReply"));
                      return;
                    }
                    done(std::move(reply));
                  });
  }
  bool remote() const override { return true; }
  std::string name() const override { return client_->peer(); }

 private:
  Client* client_;
  absl::Duration timeout_;
};

void AtomicMax(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t cur = a.load(std::memory_order_relaxed);
  while (v > cur && !a.compare_exchange_weak(cur, v)) {
  }
}

size_t SparseBytes(const SparseVector& v) { return 4 + 6 * v.size(); }

// How many keys ahead hash lookups are prefetched.
constexpr int kPrefetchAhead = 8;

}  // namespace

std::unique_ptr<OwnerChannel> MakeLocalChannel(OwnerShard* shard,
                                               std::string name) {
  return std::make_unique<LocalChannel>(shard, std::move(name));
}
std::unique_ptr<OwnerChannel> MakeRemoteChannel(Client* client,
                                                absl::Duration timeout) {
  return std::make_unique<RemoteChannel>(client, timeout);
}

Synchronizer::Synchronizer(SynchronizerOptions options, AbelianTable* table,
                           std::vector<uint32_t> key_owner,
                           std::vector<std::unique_ptr<OwnerChannel>> channels)
    : options_(std::move(options)),
      table_(table),
      grows_(table->GrowsKeys()),
      last_sent_clock_(table->num_keys(), 0),
      key_owner_(std::move(key_owner)),
      carry_(table->num_keys()),
      contributed_(table->num_keys()),
      received_(table->num_keys()),
      reseed_(table->num_keys(), 0),
      named_(grows_ ? table->num_keys() : 0, 0),
      epoch_(options_.epoch),
      queued_(table->num_keys(), 0) {
  LATENTD_CHECK(key_owner_.size() == table->num_keys());
  for (auto& ch : channels) {
    channels_.push_back(std::make_unique<Channel>());
    channels_.back()->owner = std::move(ch);
    channels_.back()->index = static_cast<uint32_t>(channels_.size() - 1);
    route_.push_back(channels_.back()->index);
  }
  key_index_.reserve(key_owner_.size());
  for (size_t i = 0; i < key_owner_.size(); ++i) {
    LATENTD_CHECK(key_owner_[i] < channels_.size());
    channels_[key_owner_[i]]->keys.push_back(static_cast<uint32_t>(i));
    key_index_.emplace(table_->key(i), static_cast<uint32_t>(i));
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

void Synchronizer::AddKey(Channel* c, uint32_t i, const SparseVector& delta,
                          uint64_t clock, DeltaBatch* batch) {
  batch->add_keys(table_->key(i));
  if (grows_ && !named_[i]) {
    named_[i] = 1;
    std::string name = table_->KeyName(i);
    if (!name.empty()) {
      batch->add_name_keys(table_->key(i));
      batch->add_names(std::move(name));
    }
  }
  AppendToBlock(delta, batch->mutable_deltas());
  c->inflight_keys.push_back(i);
  if (!delta.empty()) {
    c->round_quiet = false;
    counters_.nonzero_keys_sent.fetch_add(1, std::memory_order_relaxed);
    const uint64_t st = clock - std::min(clock, last_sent_clock_[i]);
    counters_.staleness_sum.fetch_add(st, std::memory_order_relaxed);
    counters_.staleness_samples.fetch_add(1, std::memory_order_relaxed);
    AtomicMax(counters_.staleness_max, st);
  }
  last_sent_clock_[i] = clock;
}

void Synchronizer::DistributeDirty() {
  dirty_scratch_.clear();
  table_->TakeDirtyList(&dirty_scratch_);
  const uint64_t clock = clock_.load(std::memory_order_relaxed);
  for (uint32_t i : dirty_scratch_) {
    if (i >= queued_.size() || queued_[i]) continue;
    queued_[i] = 1;
    // Its δ began to accumulate about now (a key that is not dirty is not
    // sent, so its previous round may lie far back): staleness counts
    // from here.
    last_sent_clock_[i] = std::max(last_sent_clock_[i], clock);
    channels_[key_owner_[i]]->candidates.push_back(i);
  }
}

void Synchronizer::BuildChangeBatch(Channel* c, uint64_t clock,
                                    DeltaBatch* batch) {
  const uint32_t min_weight = c->round_complete ? 0 : options_.min_key_weight;
  // A pass sends everything; a budgeted round the heaviest keys first.
  const size_t budget = c->round_pass != 0 ? 0 : options_.round_byte_budget;
  if (budget != 0) {
    // Sorted by a snapshot of the weights: a fold for another owner's round
    // may change them meanwhile, and a comparator whose keys move while
    // std::stable_sort runs is undefined behaviour (it crashed).
    std::vector<std::pair<uint32_t, uint32_t>> by_weight;  // (weight, key)
    by_weight.reserve(c->candidates.size());
    for (uint32_t i : c->candidates) {
      by_weight.push_back({table_->DirtyWeight(i), i});
    }
    std::stable_sort(
        by_weight.begin(), by_weight.end(),
        [](const auto& a, const auto& b) { return a.first > b.first; });
    for (size_t j = 0; j < by_weight.size(); ++j) {
      c->candidates[j] = by_weight[j].second;
    }
  }
  SparseVector delta;
  size_t kept = 0, spent = 0;
  for (uint32_t i : c->candidates) {
    if (reseed_[i]) {  // its previous owner was lost (Reroute)
      queued_[i] = 0;
      absl::MutexLock l(&track_mu_);
      if (TakeReseed(i, &delta)) {
        spent += 9 + SparseBytes(delta);
        batch->add_reseeded(static_cast<uint32_t>(batch->keys_size()));
        AddKey(c, i, delta, clock, batch);
        c->round_quiet = false;
      }
      continue;
    }
    const bool over = budget != 0 && spent >= budget;
    if (over || min_weight != 0) {
      const uint32_t w = table_->DirtyWeight(i);
      if (over || (w != 0 && w < min_weight)) {
        c->candidates[kept++] = i;  // stays listed for a later round
        continue;
      }
    }
    queued_[i] = 0;
    table_->TakeChange(i, &delta);
    if (!carry_[i].empty()) {  // a refused batch's change, re-routed
      SparseVector sum;
      AddSparse(delta, carry_[i], +1, &sum);
      delta.swap(sum);
      carry_[i].clear();
    }
    if (delta.empty()) continue;
    spent += 9 + SparseBytes(delta);
    AddKey(c, i, delta, clock, batch);
  }
  c->candidates.resize(kept);
}

bool Synchronizer::TakeReseed(uint32_t i, SparseVector* delta) {
  SparseVector change, sum;
  reseed_[i] = 0;
  table_->TakeChange(i, &change);
  AddSparse(change, carry_[i], +1, &sum);
  carry_[i].clear();
  AddSparse(sum, contributed_[i], +1, delta);
  const bool held =
      !delta->empty() || !contributed_[i].empty() || !received_[i].empty();
  contributed_[i].clear();
  if (!received_[i].empty()) {
    SparseVector& back = received_[i];
    for (SparseEntry& e : back) e.count = -e.count;
    table_->EnqueueCorrection(i, back);
    back.clear();
  }
  return held;
}

void Synchronizer::BuildReseedBatch(Channel* c, uint64_t clock,
                                    DeltaBatch* batch) {
  for (uint32_t i : c->candidates) queued_[i] = 0;
  c->candidates.clear();
  SparseVector delta;
  absl::MutexLock l(&track_mu_);
  // What the earlier process sent of keys the table does not hold goes
  // back too: the new one sends their globals again.
  DropForeignOf(c->index);
  for (uint32_t i : c->keys) {
    if (grows_) named_[i] = 0;  // a new owner process: names again
    // An empty delta still registers the key: the owner answers with its
    // global.
    if (TakeReseed(i, &delta)) {
      batch->add_reseeded(static_cast<uint32_t>(batch->keys_size()));
      AddKey(c, i, delta, clock, batch);
    }
  }
  c->round_quiet = false;
}

void Synchronizer::SendRound(Channel* c) {
  if (!c->inflight) {
    // Each round looks at the dirty keys afresh (a fold of the table's
    // log). Sharing one look among the rounds a kick starts saved little
    // CPU and cost quality: news20 K=100 on 3 nodes came out ~0.02
    // nats/token worse, over 19 runs against 11.
    RequeueRefused();
    DistributeDirty();
    const uint64_t clock = clock_.load(std::memory_order_relaxed);
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
    c->round_quiet = true;
    if (c->reseed) {
      c->reseed = false;
      BuildReseedBatch(c, clock, &batch);
    } else {
      BuildChangeBatch(c, clock, &batch);
    }
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

void Synchronizer::ApplyChanges(Channel* c, const DeltaReply& reply,
                                bool* quiet) {
  SparseVector change, sum;
  absl::MutexLock l(&track_mu_);
  // The deltas sent are now the owner's: contributed.
  BlockReader sent(c->inflight->deltas(), table_->dimension());
  for (uint32_t i : c->inflight_keys) {
    sent.Next(&change);
    if (change.empty()) continue;
    AddSparse(contributed_[i], change, +1, &sum);
    contributed_[i].swap(sum);
  }
  if (grows_) {
    for (int j = 0; j < reply.name_keys_size(); ++j) {
      if (key_index_.contains(reply.name_keys(j))) continue;
      Foreign& f = foreign_[reply.name_keys(j)];
      if (f.name.empty()) f.name = reply.names(j);
      f.channel = c->index;
    }
  }
  BlockReader changes(reply.changes(), table_->dimension());
  const int n = reply.changed_keys_size();
  for (int j = 0; j < n; ++j) {
    // The lookups miss the cache on a large vocabulary: start them early.
    if (j + kPrefetchAhead < n) {
      key_index_.prefetch(reply.changed_keys(j + kPrefetchAhead));
    }
    changes.Next(&change);
    auto it = key_index_.find(reply.changed_keys(j));
    // Only keys this node holds. Not only this owner's: an owner that
    // handed a key off since (Reroute) answers a resent batch with the
    // change its lost reply carried, which no other owner will send.
    // A growing table keeps the others aside until it adds them.
    if (it == key_index_.end()) {
      if (grows_ && !change.empty()) {
        *quiet = false;
        Foreign& f = foreign_[reply.changed_keys(j)];
        auto part =
            std::find_if(f.changes.begin(), f.changes.end(),
                         [c](const auto& p) { return p.first == c->index; });
        if (part == f.changes.end()) {
          f.changes.emplace_back(c->index, change);
        } else {
          AddSparse(part->second, change, +1, &sum);
          part->second.swap(sum);
        }
      }
      continue;
    }
    if (change.empty()) continue;
    *quiet = false;
    table_->EnqueueCorrection(it->second, change);
    AddSparse(received_[it->second], change, +1, &sum);
    received_[it->second].swap(sum);
  }
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
    ApplyChanges(c, *reply, &quiet);
    // The next batch names this incarnation: should the owner restart, it
    // refuses that batch and this node re-seeds it (see the header).
    c->owner_incarnation = reply->owner_incarnation();
    c->inflight.reset();
    const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(
                            std::chrono::steady_clock::now() - c->sent_at)
                            .count();
    counters_.rounds.fetch_add(1, std::memory_order_relaxed);
    counters_.round_micros_total.fetch_add(micros, std::memory_order_relaxed);
    AtomicMax(counters_.round_micros_max, static_cast<uint64_t>(micros));
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
    options_.log(absl::StrCat("owner ", c->owner->name(),
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
    if (!c->epoch_refused) {
      options_.log(
          ok ? absl::StrCat("owner ", c->owner->name(), " is back")
             : absl::StrCat("owner ", c->owner->name(),
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
