#include "sync/owner_replicator.h"

#include <algorithm>
#include <random>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "sync/replica_store.h"

namespace latentd::sync {

struct OwnerReplicator::Waiter {
  size_t remaining = 0;
  OwnerChannel::DoneFn done;  // null once answered (kUnavailable)
  absl::Time deadline;
  DeltaReply reply;
  std::tuple<std::string, uint64_t, uint64_t> batch;
};

class OwnerReplicator::Channel final : public OwnerChannel {
 public:
  Channel(OwnerReplicator* r, std::string name)
      : r_(r), name_(std::move(name)) {}
  void Send(const DeltaBatch& batch, DoneFn done) override {
    r_->Send(batch, std::move(done));
  }
  bool remote() const override { return false; }
  std::string name() const override { return name_; }

 private:
  OwnerReplicator* const r_;
  const std::string name_;
};

namespace {

uint64_t DrawStreamId() {
  std::random_device rd;
  const uint64_t r = (uint64_t{rd()} << 32) ^ rd();
  return r ^ static_cast<uint64_t>(absl::ToUnixMicros(absl::Now()));
}

}  // namespace

OwnerReplicator::OwnerReplicator(OwnerReplicatorOptions options,
                                 OwnerShard* shard, SendFn send)
    : options_(std::move(options)),
      shard_(shard),
      send_(std::move(send)),
      stream_id_(DrawStreamId()) {
  thread_ = std::thread([this] { Loop(); });
}

OwnerReplicator::~OwnerReplicator() { Stop(); }

std::unique_ptr<OwnerChannel> OwnerReplicator::MakeChannel(std::string name) {
  return std::make_unique<Channel>(this, std::move(name));
}

void OwnerReplicator::Enqueue(const std::string& backup, Pending p) {
  Stream& s = streams_[backup];
  if (s.generation == 0) s.generation = ++generations_;
  p.update.set_owner(options_.node_id);
  p.update.set_stream(stream_id_);
  p.update.set_sequence(++s.sequence);
  p.update.set_epoch(epoch_);
  p.update.set_dimension(shard_->dimension());
  s.queue.push_back(std::move(p));
}

void OwnerReplicator::Release(const std::shared_ptr<Waiter>& w,
                              DoneList* dones) {
  if (w == nullptr || w->remaining == 0) return;
  if (--w->remaining != 0) return;
  waiting_.erase(w->batch);
  if (w->done) {
    dones->push_back([done = std::move(w->done), reply = std::move(w->reply)] {
      done(std::move(reply));
    });
  }
}

void OwnerReplicator::DropStream(Stream* s, DoneList* dones) {
  for (Pending& p : s->queue) Release(p.waiter, dones);
  s->queue.clear();
  // A send in flight answers a stream that is gone (OnSent ignores it).
  s->inflight = false;
  s->generation = ++generations_;
}

void OwnerReplicator::Send(const DeltaBatch& batch, OwnerChannel::DoneFn done) {
  DeltaReply reply;
  absl::Status status;
  {
    absl::MutexLock l(&mu_);
    status = shard_->Apply(batch, &reply, OwnerShard::Origin::kThisProcess);
    if (status.ok() && reply.duplicate() && !stop_) {
      // A resend of a batch still awaiting its copies waits on them.
      auto it = waiting_.find(std::make_tuple(
          batch.node_id(), batch.incarnation(), batch.sequence()));
      if (it != waiting_.end()) {
        // The shard answered the resend with the changes of its first
        // answer and what came since, and forgot them: this answer, not
        // the first, is the one to give (the first would lose them).
        it->second->done = std::move(done);
        it->second->reply = std::move(reply);
        it->second->deadline = absl::Now() + options_.ack_timeout;
        return;
      }
    }
    if (status.ok() && !reply.duplicate() && !stop_ && backups_ != nullptr &&
        batch.keys_size() > 0) {
      // The batch's deltas, split by backup: each backup gets the entries
      // of the keys it backs up, as this sender's contributions.
      absl::flat_hash_map<std::string, ReplicaUpdate> by_backup;
      BlockReader deltas(batch.deltas(), shard_->dimension());
      // (Apply validated the batch.)
      if (deltas.Validate(static_cast<size_t>(batch.keys_size())).ok()) {
        SparseVector v;
        for (int i = 0; i < batch.keys_size(); ++i) {
          deltas.Next(&v);
          if (v.empty()) continue;
          for (const std::string& b : backups_(batch.keys(i))) {
            ReplicaUpdate& u = by_backup[b];
            if (u.contributors_size() == 0) {
              HandoffHolder* c = u.add_contributors();
              c->set_node_id(batch.node_id());
              c->set_incarnation(batch.incarnation());
            }
            u.add_keys(batch.keys(i));
            u.add_contributor_of(0);
            AppendToBlock(v, u.mutable_values());
          }
        }
      }
      if (!by_backup.empty()) {
        auto w = std::make_shared<Waiter>();
        w->remaining = by_backup.size();
        w->done = std::move(done);
        w->deadline = absl::Now() + options_.ack_timeout;
        w->reply = std::move(reply);
        w->batch = std::make_tuple(batch.node_id(), batch.incarnation(),
                                   batch.sequence());
        waiting_[w->batch] = w;
        for (auto& [b, u] : by_backup) {
          Enqueue(b, Pending{.update = std::move(u), .waiter = w});
        }
        return;  // answered once every backup has the deltas (OnSent)
      }
    }
  }
  if (status.ok()) {
    done(std::move(reply));
  } else {
    done(status);
  }
}

void OwnerReplicator::SetBackups(
    uint64_t epoch, std::function<std::vector<std::string>(Key)> backups,
    std::vector<std::string> members, size_t wanted) {
  DoneList dones;
  {
    absl::MutexLock l(&mu_);
    epoch_ = epoch;
    backups_ = std::move(backups);
    wanted_ = wanted;
    members_ = absl::flat_hash_set<std::string>(members.begin(), members.end());
    absl::flat_hash_set<std::string> keep(members.begin(), members.end());
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (keep.contains(it->first)) {
        ++it;
        continue;
      }
      DropStream(&it->second, &dones);
      streams_.erase(it++);
    }
    for (const std::string& m : members) {
      Stream& s = streams_[m];
      if (s.generation == 0) s.generation = ++generations_;
    }
  }
  for (auto& d : dones) d();
}

void OwnerReplicator::Refill(
    const std::function<bool(const std::string&)>& live) {
  absl::MutexLock l(&mu_);
  if (stop_ || backups_ == nullptr) return;
  QueueRefill(shard_->ReplicaSnapshot(options_.node_id, live), nullptr);
}

void OwnerReplicator::QueueRefill(const OwnerShard::ReplicaEntries& e,
                                  const std::string* only) {
  absl::flat_hash_map<std::string, std::vector<size_t>> by_backup;
  if (only != nullptr) {
    by_backup[*only];
  } else {
    for (const auto& [id, s] : streams_) by_backup[id];  // a reset for each
  }
  QueueCopies(e, std::move(by_backup), only, nullptr);
}

void OwnerReplicator::QueueCopies(
    const OwnerShard::ReplicaEntries& e,
    absl::flat_hash_map<std::string, std::vector<size_t>> by_backup,
    const std::string* only,
    const absl::flat_hash_map<std::string, std::vector<Key>>* reset_keys) {
  absl::flat_hash_set<Key> keys, short_keys;
  for (size_t i = 0; i < e.keys.size(); ++i) {
    const std::vector<std::string> b = backups_(e.keys[i]);
    if (b.size() < wanted_) short_keys.insert(e.keys[i]);
    for (const std::string& id : b) {
      if (only == nullptr || id == *only) by_backup[id].push_back(i);
    }
  }
  if (only == nullptr && reset_keys == nullptr) {
    short_keys_ = short_keys.size();
  }
  for (auto& [id, entries] : by_backup) {
    size_t from = 0;
    do {
      const size_t to =
          std::min(entries.size(), from + options_.max_entries_per_update);
      Pending p;
      if (reset_keys == nullptr) {
        p.update.set_reset(from == 0);
      } else if (from == 0) {
        // The first chunk drops the backup's copies of the keys.
        if (auto it = reset_keys->find(id); it != reset_keys->end()) {
          for (Key k : it->second) p.update.add_reset_keys(k);
        }
      }
      for (const HandoffHolder& c : e.contributors) {
        *p.update.add_contributors() = c;
      }
      keys.clear();
      for (size_t j = from; j < to; ++j) {
        const size_t i = entries[j];
        p.update.add_keys(e.keys[i]);
        p.update.add_contributor_of(e.contributor_of[i]);
        AppendToBlock(e.values[i], p.update.mutable_values());
        keys.insert(e.keys[i]);
      }
      p.keys = keys.size();
      Enqueue(id, std::move(p));
      from = to;
    } while (from < entries.size());
  }
}

bool OwnerReplicator::Live(const std::string& id) const {
  return id == options_.node_id || members_.contains(id);
}

absl::Status OwnerReplicator::ImportKeys(const KeyHandoff& handoff) {
  absl::MutexLock l(&mu_);
  LATENTD_RETURN_IF_ERROR(shard_->ImportKeys(handoff));
  if (stop_ || backups_ == nullptr || handoff.keys_size() == 0) {
    return absl::OkStatus();
  }
  const absl::flat_hash_set<Key> keys(handoff.keys().begin(),
                                      handoff.keys().end());
  OwnerShard::ReplicaEntries e = shard_->ReplicaSnapshot(
      options_.node_id,
      [this](const std::string& id)
          ABSL_NO_THREAD_SAFETY_ANALYSIS { return Live(id); },
      &keys);
  // Each backup of an imported key: the keys to drop there first.
  absl::flat_hash_map<std::string, std::vector<Key>> reset_keys;
  absl::flat_hash_map<std::string, std::vector<size_t>> by_backup;
  for (Key k : keys) {
    for (const std::string& b : backups_(k)) {
      reset_keys[b].push_back(k);
      by_backup[b];
    }
  }
  QueueCopies(e, std::move(by_backup), nullptr, &reset_keys);
  return absl::OkStatus();
}

void OwnerReplicator::ExpireWaiters(DoneList* dones) {
  const absl::Time now = absl::Now();
  for (auto& [batch, w] : waiting_) {
    if (!w->done || w->deadline > now) continue;
    dones->push_back([done = std::move(w->done)] {
      done(absl::UnavailableError(
          "this owner's backups have not acknowledged the copies of the "
          "batch yet"));
    });
    w->done = nullptr;
  }
}

void OwnerReplicator::Stop() {
  DoneList dones;
  {
    absl::MutexLock l(&mu_);
    if (stop_) return;
    stop_ = true;
    for (auto& [id, s] : streams_) DropStream(&s, &dones);
    // (An answered waiter's resend never came: answer nothing more.)
    waiting_.clear();
  }
  for (auto& d : dones) d();
  if (thread_.joinable()) thread_.join();
}

bool OwnerReplicator::WorkReady() const {
  if (stop_) return true;
  const absl::Time now = absl::Now();
  for (const auto& [id, s] : streams_) {
    if (!s.inflight && !s.queue.empty() && s.retry_at <= now) return true;
  }
  return false;
}

void OwnerReplicator::Loop() {
  absl::MutexLock l(&mu_);
  while (!stop_) {
    mu_.AwaitWithTimeout(absl::Condition(this, &OwnerReplicator::WorkReady),
                         options_.retry_interval);
    if (stop_) break;
    DoneList dones;
    ExpireWaiters(&dones);
    if (!dones.empty()) {
      mu_.Unlock();
      for (auto& d : dones) d();
      mu_.Lock();
      continue;
    }
    const absl::Time now = absl::Now();
    struct Out {
      std::string backup;
      uint64_t generation;
      ReplicaUpdate update;
    };
    std::vector<Out> ready;
    for (auto& [id, s] : streams_) {
      if (s.inflight || s.queue.empty() || s.retry_at > now) continue;
      s.inflight = true;
      // The front stays queued until OnSent acknowledges it (a copy goes
      // out: the stream may be dropped once the mutex is let go).
      ready.push_back(Out{id, s.generation, s.queue.front().update});
    }
    mu_.Unlock();
    for (Out& o : ready) {
      const size_t bytes = o.update.ByteSizeLong();
      send_(o.backup, o.update,
            [this, backup = o.backup, generation = o.generation,
             bytes](absl::Status s) {
              OnSent(backup, generation, bytes, std::move(s));
            });
    }
    mu_.Lock();
  }
}

void OwnerReplicator::OnSent(const std::string& backup, uint64_t generation,
                             size_t bytes, absl::Status status) {
  DoneList dones;
  {
    absl::MutexLock l(&mu_);
    auto it = streams_.find(backup);
    if (it == streams_.end() || it->second.generation != generation ||
        !it->second.inflight || it->second.queue.empty()) {
      return;  // the stream was dropped meanwhile
    }
    Stream& s = it->second;
    s.inflight = false;
    if (IsNoBase(status)) {
      // The backup holds no base of this process's copies (it restarted,
      // or was named before this epoch's refill): what it refused is in a
      // refill's snapshot, queued unless one is already on its way.
      Release(s.queue.front().waiter, &dones);
      s.queue.pop_front();
      s.failing = false;
      const bool reset_queued =
          std::any_of(s.queue.begin(), s.queue.end(),
                      [](const Pending& p) { return p.update.reset(); });
      if (!reset_queued && !stop_ && backups_ != nullptr) {
        ++stats_.rebases;
        QueueRefill(shard_->ReplicaSnapshot(options_.node_id,
                                            [this](const std::string& id)
                                                ABSL_NO_THREAD_SAFETY_ANALYSIS {
                                                  return Live(id);
                                                }),
                    &backup);
      }
    } else if (!status.ok()) {
      if (!s.failing) {
        options_.log(absl::StrCat("replicating key state to backup ", backup,
                                  " failed (", status.message(),
                                  "); retrying until it answers or leaves "
                                  "the ring"));
      }
      s.failing = true;
      ++stats_.updates_failed;
      s.retry_at = absl::Now() + options_.retry_interval;
      return;
    } else {
      s.failing = false;
      ++stats_.updates_sent;
      stats_.bytes_sent += bytes;
      Release(s.queue.front().waiter, &dones);
      s.queue.pop_front();
    }
  }
  for (auto& d : dones) d();
}

OwnerReplicatorStats OwnerReplicator::stats() const {
  absl::MutexLock l(&mu_);
  OwnerReplicatorStats out = stats_;
  out.keys_under_replicated = short_keys_;
  for (const auto& [id, s] : streams_) {
    for (const Pending& p : s.queue) {
      if (p.waiter == nullptr) {
        out.keys_under_replicated += p.keys;
      } else if (s.failing) {
        out.keys_under_replicated += p.update.keys_size();
      }
    }
  }
  return out;
}

}  // namespace latentd::sync
