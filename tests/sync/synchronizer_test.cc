// OwnerShard (apply, duplicate drop, validation) and Synchronizer (rounds
// between in-memory tables and owner shards, exact at quiescence) without
// any network.
#include "sync/synchronizer.h"

#include <cstdlib>
#include <map>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gtest/gtest.h"
#include "sync/consistency.h"
#include "sync/owner_shard.h"

namespace latentd::sync {
namespace {

DeltaBatch Batch(const std::string& node, uint64_t seq,
                 std::vector<std::pair<Key, SparseVector>> deltas) {
  DeltaBatch b;
  b.set_node_id(node);
  b.set_incarnation(1);
  b.set_sequence(seq);
  b.set_dimension(4);
  b.set_changes_only(true);
  for (auto& [k, v] : deltas) {
    b.add_keys(k);
    AppendToBlock(v, b.mutable_deltas());
  }
  return b;
}

TEST(OwnerShard, AppliesOnce) {
  OwnerShard shard(4);
  DeltaReply r;
  ASSERT_TRUE(shard.Apply(Batch("a", 1, {{7, {{1, 5}}}}), &r).ok());
  EXPECT_FALSE(r.duplicate());
  EXPECT_NE(r.owner_incarnation(), 0u);
  ASSERT_TRUE(shard.Apply(Batch("b", 1, {{7, {{1, 2}, {3, 1}}}}), &r).ok());
  EXPECT_EQ(shard.Global(7), (SparseVector{{1, 7}, {3, 1}}));
  // A resend of a's batch 1 is answered but not applied again.
  ASSERT_TRUE(shard.Apply(Batch("a", 1, {{7, {{1, 5}}}}), &r).ok());
  EXPECT_TRUE(r.duplicate());
  EXPECT_EQ(shard.Global(7), (SparseVector{{1, 7}, {3, 1}}));
  // Deltas may cancel to zero.
  ASSERT_TRUE(shard.Apply(Batch("a", 2, {{7, {{1, -7}, {3, -1}}}}), &r).ok());
  EXPECT_TRUE(shard.Global(7).empty());
  EXPECT_EQ(shard.stats().batches_duplicate, 1u);
}

TEST(OwnerShard, RejectsMalformedBatchesWithoutChange) {
  OwnerShard shard(4);
  DeltaReply r;
  EXPECT_EQ(shard.Apply(Batch("a", 1, {{7, {{9, 1}}}}), &r).code(),
            absl::StatusCode::kInvalidArgument);  // topic >= K
  EXPECT_EQ(shard.Apply(Batch("a", 1, {{7, {{2, 1}, {1, 1}}}}), &r).code(),
            absl::StatusCode::kInvalidArgument);  // not ascending
  EXPECT_EQ(
      shard.Apply(Batch("a", 1, {{7, {{1, 1}}}, {7, {{2, 1}}}}), &r).code(),
      absl::StatusCode::kInvalidArgument);  // repeated key
  DeltaBatch b = Batch("a", 1, {{7, {{1, 1}}}});
  b.mutable_deltas()->add_sizes(3);  // sizes overrun the entries
  EXPECT_EQ(shard.Apply(b, &r).code(), absl::StatusCode::kInvalidArgument);
  b = Batch("a", 1, {{7, {{1, 1}}}});
  b.set_dimension(5);
  EXPECT_EQ(shard.Apply(b, &r).code(), absl::StatusCode::kInvalidArgument);
  b = Batch("a", 1, {{7, {{1, 1}}}});
  b.set_changes_only(false);  // every sender sends its changes
  EXPECT_EQ(shard.Apply(b, &r).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(shard.Global(7).empty());
  // The rejected sequence 1 was not recorded: a good batch 1 applies.
  ASSERT_TRUE(shard.Apply(Batch("a", 1, {{7, {{1, 1}}}}), &r).ok());
  EXPECT_FALSE(r.duplicate());
}

// The changes of a reply, by key.
std::map<Key, SparseVector> Changes(const DeltaReply& r) {
  std::map<Key, SparseVector> out;
  BlockReader reader(r.changes(), 4);
  EXPECT_TRUE(reader.Validate(r.changed_keys_size()).ok());
  for (int i = 0; i < r.changed_keys_size(); ++i) {
    reader.Next(&out[r.changed_keys(i)]);
  }
  return out;
}

// A sender hears the global before its first delta of a key, then only
// the others' deltas; a resent batch hears them again (with what came
// since), the next sequence confirms them.
TEST(OwnerShard, SendsWhatTheSenderHasNotSeen) {
  OwnerShard shard(4);
  DeltaReply r;
  ASSERT_TRUE(shard.Apply(Batch("a", 1, {{7, {{1, 5}}}}), &r).ok());
  EXPECT_EQ(r.changed_keys_size(), 0);  // nothing before a
  ASSERT_TRUE(
      shard.Apply(Batch("b", 1, {{7, {{1, 2}, {3, 1}}}, {9, {{0, 1}}}}), &r)
          .ok());
  EXPECT_EQ(Changes(r), (std::map<Key, SparseVector>{{7, {{1, 5}}}}));
  ASSERT_TRUE(shard.Apply(Batch("a", 2, {}), &r).ok());
  // b's delta to 7; not 9, which a does not hold.
  EXPECT_EQ(Changes(r), (std::map<Key, SparseVector>{{7, {{1, 2}, {3, 1}}}}));
  ASSERT_TRUE(shard.Apply(Batch("b", 2, {{7, {{3, -1}}}}), &r).ok());
  EXPECT_TRUE(Changes(r).empty());  // b's own delta does not come back
  // a's batch 2 again (its reply was lost): the lost change merged with
  // b's newer one; topic 3 cancels out.
  ASSERT_TRUE(shard.Apply(Batch("a", 2, {}), &r).ok());
  EXPECT_TRUE(r.duplicate());
  EXPECT_EQ(Changes(r), (std::map<Key, SparseVector>{{7, {{1, 2}}}}));
  // The next sequence confirms it; a's own delta is applied, not echoed.
  ASSERT_TRUE(shard.Apply(Batch("a", 3, {{7, {{0, 4}}}}), &r).ok());
  EXPECT_TRUE(Changes(r).empty());
  EXPECT_EQ(shard.Global(7), (SparseVector{{0, 4}, {1, 7}}));
  // What a holds: 5 + 4 (its own) + 2 (heard) = the global. b hears a's.
  ASSERT_TRUE(shard.Apply(Batch("b", 3, {}), &r).ok());
  EXPECT_EQ(Changes(r), (std::map<Key, SparseVector>{{7, {{0, 4}}}}));
  // A new sender's delta reaches the holders as a change; it hears the
  // global as it was before its delta.
  ASSERT_TRUE(shard.Apply(Batch("c", 1, {{7, {{2, 3}}}}), &r).ok());
  EXPECT_EQ(Changes(r), (std::map<Key, SparseVector>{{7, {{0, 4}, {1, 7}}}}));
  ASSERT_TRUE(shard.Apply(Batch("a", 4, {}), &r).ok());
  EXPECT_EQ(Changes(r), (std::map<Key, SparseVector>{{7, {{2, 3}}}}));
}

// A global holding over half of the topics is kept dense inside the
// shard; what it answers must not show it.
TEST(OwnerShard, DenseGlobalsReadAsCanonicalSparse) {
  OwnerShard shard(4);
  DeltaReply r;
  ASSERT_TRUE(
      shard.Apply(Batch("a", 1, {{7, {{0, 2}, {2, 1}, {3, 5}}}}), &r).ok());
  EXPECT_EQ(shard.Global(7), (SparseVector{{0, 2}, {2, 1}, {3, 5}}));
  // A topic back to zero is not listed.
  ASSERT_TRUE(shard.Apply(Batch("a", 2, {{7, {{1, 4}, {2, -1}}}}), &r).ok());
  EXPECT_EQ(shard.Global(7), (SparseVector{{0, 2}, {1, 4}, {3, 5}}));
  // A new holder first gets the whole global, with or without a delta of
  // its own.
  ASSERT_TRUE(shard.Apply(Batch("b", 1, {{7, {}}}), &r).ok());
  EXPECT_EQ(Changes(r),
            (std::map<Key, SparseVector>{{7, {{0, 2}, {1, 4}, {3, 5}}}}));
  ASSERT_TRUE(shard.Apply(Batch("c", 1, {{7, {{0, -2}}}}), &r).ok());
  EXPECT_EQ(Changes(r),
            (std::map<Key, SparseVector>{{7, {{0, 2}, {1, 4}, {3, 5}}}}));
  const auto snapshot = shard.Snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].second, (SparseVector{{1, 4}, {3, 5}}));
  // a and b hear c's change.
  ASSERT_TRUE(shard.Apply(Batch("a", 3, {}), &r).ok());
  EXPECT_EQ(Changes(r), (std::map<Key, SparseVector>{{7, {{0, -2}}}}));
}

// A dense in-memory table that accumulates its own changes (Update) from
// zero, as SyncedTopicTable does; corrections apply immediately (the
// writer is the caller of EnqueueCorrection here, under the same lock as
// Update). Updates before the synchronizer starts are its initial values.
class FakeTable : public AbelianTable {
 public:
  FakeTable(std::vector<Key> keys, uint32_t k)
      : keys_(std::move(keys)),
        k_(k),
        v_(keys_.size(), std::vector<int64_t>(k)) {}
  size_t num_keys() const override { return keys_.size(); }
  Key key(size_t i) const override { return keys_[i]; }
  uint32_t dimension() const override { return k_; }
  void EnqueueCorrection(size_t i, const SparseVector& c) override {
    absl::MutexLock l(&mu_);
    for (const auto& e : c) v_[i][e.topic] += e.count;
  }
  void Update(size_t i, uint32_t t, int64_t by) {
    absl::MutexLock l(&mu_);
    v_[i][t] += by;
    change_[i][t] += by;
    if (!dirty_[i]) list_.push_back(static_cast<uint32_t>(i));
    dirty_[i] = true;
    weight_[i] += static_cast<uint32_t>(std::abs(by)) + 1;
  }
  uint32_t DirtyWeight(size_t i) const override {
    absl::MutexLock l(&mu_);
    return dirty_[i] ? weight_[i] : 0;
  }
  void TakeDirtyList(std::vector<uint32_t>* out) override {
    absl::MutexLock l(&mu_);
    out->insert(out->end(), list_.begin(), list_.end());
    list_.clear();
  }
  void TakeChange(size_t i, SparseVector* out) override {
    absl::MutexLock l(&mu_);
    out->clear();
    for (uint32_t t = 0; t < k_; ++t) {
      if (change_[i][t] != 0) out->push_back({t, change_[i][t]});
      change_[i][t] = 0;
    }
    dirty_[i] = false;
    weight_[i] = 0;
  }
  SparseVector Value(size_t i) const {
    absl::MutexLock l(&mu_);
    SparseVector v;
    for (uint32_t t = 0; t < k_; ++t) {
      if (v_[i][t] != 0) v.push_back({t, v_[i][t]});
    }
    return v;
  }

 private:
  std::vector<Key> keys_;
  uint32_t k_;
  mutable absl::Mutex mu_;
  std::vector<std::vector<int64_t>> v_;
  std::vector<bool> dirty_ = std::vector<bool>(v_.size(), false);
  std::vector<uint32_t> list_;
  std::vector<uint32_t> weight_ = std::vector<uint32_t>(v_.size(), 0);
  std::vector<std::vector<int64_t>> change_ = v_;
};

// Loses the reply of every `every`-th batch after applying it (as a
// timeout would), so the synchronizer resends it.
class LossyChannel final : public OwnerChannel {
 public:
  LossyChannel(OwnerShard* shard, int every, std::string name = "lossy")
      : inner_(MakeLocalChannel(shard, std::move(name))), every_(every) {}
  void Send(const DeltaBatch& batch, DoneFn done) override {
    const bool lose = ++calls_ % every_ == 0;
    inner_->Send(batch, [lose, done](absl::StatusOr<DeltaReply> r) {
      if (lose) {
        done(absl::DeadlineExceededError("reply lost"));
      } else {
        done(std::move(r));
      }
    });
  }
  bool remote() const override { return false; }
  std::string name() const override { return inner_->name(); }

 private:
  std::unique_ptr<OwnerChannel> inner_;
  const int every_;
  std::atomic<int> calls_{0};
};

// Refuses every batch, as the owners of a ring that no longer lists the
// sender do, counting them.
class RefusingChannel final : public OwnerChannel {
 public:
  void Send(const DeltaBatch&, DoneFn done) override {
    calls.fetch_add(1);
    done(absl::PermissionDeniedError(
        "sender 'n0' is not a member of ring epoch 2"));
  }
  bool remote() const override { return true; }
  std::string name() const override { return "refusing"; }
  std::atomic<int> calls{0};
};

// A failed batch waits retry_interval before its resend however often the
// synchronizer is kicked meanwhile (the sampler kicks after every few
// batches): an owner that refuses every batch gets a few a second, not a
// tight loop that keeps the channel busy and starves AddKeys.
TEST(Synchronizer, KicksWaitForTheRetryInterval) {
  const std::vector<Key> keys = {11, 22};
  FakeTable t(keys, 4);
  auto refusing = std::make_unique<RefusingChannel>();
  RefusingChannel* r = refusing.get();
  std::vector<std::unique_ptr<OwnerChannel>> ch;
  ch.push_back(std::move(refusing));
  SynchronizerOptions o;
  o.node_id = "n0";
  o.round_interval = absl::Milliseconds(1);
  o.retry_interval = absl::Milliseconds(200);
  Synchronizer s(o, &t, {0, 0}, std::move(ch));
  s.Start();
  t.Update(0, 1, 3);
  for (const absl::Time end = absl::Now() + absl::Seconds(1);
       absl::Now() < end;) {
    s.Kick(/*complete=*/true);
    absl::SleepFor(absl::Microseconds(100));
  }
  s.Stop();
  // About 1 s / 200 ms sends (before: thousands).
  EXPECT_GE(r->calls.load(), 2);
  EXPECT_LE(r->calls.load(), 10);
}

// Two nodes, each owning half the keys through local channels, change
// their values while their synchronizers run; after a drain every node's
// values equal the owners' globals, which equal the sum of all changes.
TEST(Synchronizer, ExactAtQuiescence) {
  const std::vector<Key> keys = {11, 22, 33, 44, 55, 66};
  OwnerShard shard0(4), shard1(4);
  FakeTable t0(keys, 4), t1(keys, 4);
  std::vector<uint32_t> owner = {0, 1, 0, 1, 0, 1};
  auto make = [&](const std::string& id, FakeTable* t, size_t budget) {
    std::vector<std::unique_ptr<OwnerChannel>> ch;
    ch.push_back(MakeLocalChannel(&shard0));
    ch.push_back(MakeLocalChannel(&shard1));
    SynchronizerOptions o;
    o.node_id = id;
    o.round_interval = absl::Milliseconds(1);
    o.round_byte_budget = budget;
    return std::make_unique<Synchronizer>(o, t, owner, std::move(ch));
  };
  auto s0 = make("n0", &t0, 0);
  auto s1 = make("n1", &t1, 30);  // budgeted: a few keys per round
  s0->Start();
  s1->Start();
  std::vector<std::vector<int64_t>> truth(keys.size(),
                                          std::vector<int64_t>(4, 0));
  std::mt19937 rng(3);
  for (int step = 0; step < 3000; ++step) {
    const size_t i = rng() % keys.size();
    const uint32_t t = rng() % 4;
    const int64_t by = static_cast<int64_t>(rng() % 5) - 1;
    (step % 2 ? t1 : t0).Update(i, t, by);
    truth[i][t] += by;
    if (step % 100 == 99) {
      // A burst of updates, then a round of the budgeted node: waited for,
      // not slept for, since a sanitizer build on a loaded machine ran
      // fewer than one round a millisecond (8 rounds in all, once).
      const uint64_t seen = s1->counters().rounds.load();
      const absl::Time deadline = absl::Now() + absl::Seconds(10);
      while (s1->counters().rounds.load() == seen && absl::Now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  }
  // Drain: rounds of one pass each until both are quiet in the same round.
  bool quiet = false;
  for (int round = 0; round < 20 && !quiet; ++round) {
    const bool q0 = s0->Flush().quiet;
    const bool q1 = s1->Flush().quiet;
    quiet = q0 && q1;
  }
  ASSERT_TRUE(quiet);
  for (size_t i = 0; i < keys.size(); ++i) {
    SparseVector want;
    for (uint32_t t = 0; t < 4; ++t) {
      if (truth[i][t] != 0) want.push_back({t, truth[i][t]});
    }
    const OwnerShard& o = owner[i] == 0 ? shard0 : shard1;
    EXPECT_EQ(o.Global(keys[i]), want) << "key " << keys[i];
    EXPECT_EQ(t0.Value(i), want);
    EXPECT_EQ(t1.Value(i), want);
  }
  EXPECT_GT(s1->counters().rounds.load(), 10u);
}

// 6000 random updates of random keys on random nodes (tables[n]), with
// kicks, complete kicks and flushes of random nodes in between; *truth
// (key index × topic) gets every update.
void RandomUpdates(uint32_t seed,
                   const std::vector<std::unique_ptr<FakeTable>>& tables,
                   const std::vector<std::unique_ptr<Synchronizer>>& syncs,
                   std::vector<std::vector<int64_t>>* truth) {
  std::mt19937 rng(seed);
  const size_t nodes = tables.size();
  const size_t num_keys = truth->size();
  const uint32_t dim = static_cast<uint32_t>((*truth)[0].size());
  for (int step = 0; step < 6000; ++step) {
    const size_t n = rng() % nodes;
    const size_t i = rng() % num_keys;
    const uint32_t t = rng() % dim;
    const int64_t by = static_cast<int64_t>(rng() % 5) - 2;
    tables[n]->Update(i, t, by);
    (*truth)[i][t] += by;
    if (step % 50 == 0) {
      syncs[rng() % nodes]->Kick(/*complete=*/step % 150 == 0);
    }
    if (step % 500 == 0) syncs[rng() % nodes]->Flush();
    if (step % 200 == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

// Every key's global at its owner (shards[owner[i]]) and its value in
// every table equal the truth.
void ExpectExact(const std::vector<Key>& keys,
                 const std::vector<uint32_t>& owner,
                 const std::vector<const OwnerShard*>& shards,
                 const std::vector<std::unique_ptr<FakeTable>>& tables,
                 const std::vector<std::vector<int64_t>>& truth) {
  for (size_t i = 0; i < keys.size(); ++i) {
    SparseVector want;
    for (uint32_t t = 0; t < truth[i].size(); ++t) {
      if (truth[i][t] != 0) want.push_back({t, truth[i][t]});
    }
    EXPECT_EQ(shards[owner[i]]->Global(keys[i]), want) << "key " << keys[i];
    for (auto& t : tables) EXPECT_EQ(t->Value(i), want) << "key " << keys[i];
  }
}

// Options of node n of the three-node tests below: node 2 runs a byte
// budget, node 1 leaves keys of little change to later rounds.
SynchronizerOptions ThreeNodeOptions(int n) {
  SynchronizerOptions o;
  o.node_id = absl::StrCat("n", n);
  o.round_interval = absl::Milliseconds(1);
  o.retry_interval = absl::Milliseconds(1);
  o.round_byte_budget = n == 2 ? 40 : 0;
  o.min_key_weight = n == 1 ? 12 : 0;
  return o;
}

// Three nodes over seven keys and two owner shards (keys alternate), for
// the tests below; every node's synchronizer is stopped at the end.
class ThreeNodeSync : public ::testing::Test {
 protected:
  static constexpr uint32_t kK = 5;
  void TearDown() override {
    for (auto& s : syncs) s->Stop();
  }
  const std::vector<Key> keys = {11, 22, 33, 44, 55, 66, 77};
  const std::vector<uint32_t> owner = {0, 1, 0, 1, 0, 1, 1};
  OwnerShard shard0{kK}, shard1{kK};
  std::vector<std::unique_ptr<FakeTable>> tables;
  std::vector<std::unique_ptr<Synchronizer>> syncs;
  std::vector<std::vector<int64_t>> truth{keys.size(),
                                          std::vector<int64_t>(kK, 0)};
};

// Three nodes, one of them budgeted, one leaving keys of little change to
// later rounds: two Flush passes (every node pushes, then every node
// pulls) make every node exact, and a third then finds nothing to do.
TEST_F(ThreeNodeSync, FlushesAreExact) {
  for (int n = 0; n < 3; ++n) {
    tables.push_back(std::make_unique<FakeTable>(keys, kK));
    // Initial values: every node holds every key.
    for (size_t i = 0; i < keys.size(); ++i) {
      tables.back()->Update(i, (i + n) % kK, n + 1);
      truth[i][(i + n) % kK] += n + 1;
    }
    std::vector<std::unique_ptr<OwnerChannel>> ch;
    ch.push_back(MakeLocalChannel(&shard0));
    ch.push_back(MakeLocalChannel(&shard1));
    syncs.push_back(std::make_unique<Synchronizer>(
        ThreeNodeOptions(n), tables.back().get(), owner, std::move(ch)));
    syncs.back()->Start();
  }
  for (auto& s : syncs) s->Flush();  // every node tells every owner
  RandomUpdates(5, tables, syncs, &truth);
  // Every node pushes, then every node pulls.
  for (auto& s : syncs) s->Flush();
  for (auto& s : syncs) s->Flush();
  ExpectExact(keys, owner, {&shard0, &shard1}, tables, truth);
  for (auto& s : syncs) EXPECT_TRUE(s->Flush().quiet);
}

// Three nodes (one budgeted, one leaving keys of little change to later
// rounds), with every 7th reply of one owner lost: Flush
// passes make every node exact, and every node's table equals the owners'
// globals, which equal the sum of every node's changes and initial values.
TEST_F(ThreeNodeSync, ExactWithLostReplies) {
  for (int n = 0; n < 3; ++n) {
    tables.push_back(std::make_unique<FakeTable>(keys, kK));
    // Initial values, known only to this node.
    for (size_t i = 0; i < keys.size(); ++i) {
      tables.back()->Update(i, (i + n) % kK, n + 1);
      truth[i][(i + n) % kK] += n + 1;
    }
    std::vector<std::unique_ptr<OwnerChannel>> ch;
    ch.push_back(std::make_unique<LossyChannel>(&shard0, 7));
    ch.push_back(MakeLocalChannel(&shard1));
    syncs.push_back(std::make_unique<Synchronizer>(
        ThreeNodeOptions(n), tables.back().get(), owner, std::move(ch)));
    syncs.back()->Start();
  }
  RandomUpdates(9, tables, syncs, &truth);
  // Every node pushes, then every node pulls, until a round in which all
  // are quiet (a lost reply ends a pass early).
  bool quiet = false;
  for (int round = 0; round < 20 && !quiet; ++round) {
    quiet = true;
    for (auto& s : syncs) quiet = s->Flush().quiet && quiet;
  }
  ASSERT_TRUE(quiet);
  ExpectExact(keys, owner, {&shard0, &shard1}, tables, truth);
  EXPECT_GT(shard0.stats().batches_duplicate, 0u);  // resends happened
}

// The ring changes under three nodes (elastic membership):
// three of seven keys move to a third owner. The old owners hand them off
// (AdvanceEpoch), the nodes re-route at different moments while they go on
// changing values (batches routed by the old ring are refused and sent
// again by the new one), one owner loses replies throughout, and the new
// owner imports the hand-off after some nodes already sent it deltas.
// Flush passes then make every node exact against the new owners.
TEST_F(ThreeNodeSync, ExactThroughAReroute) {
  OwnerShard shard2{kK};
  for (OwnerShard* o : {&shard0, &shard1, &shard2}) o->SetEpoch(1);
  auto channels = [&](bool with_new) {
    std::vector<std::unique_ptr<OwnerChannel>> ch;
    ch.push_back(std::make_unique<LossyChannel>(&shard0, 7, "o0"));
    ch.push_back(MakeLocalChannel(&shard1, "o1"));
    if (with_new) ch.push_back(MakeLocalChannel(&shard2, "o2"));
    return ch;
  };
  for (int n = 0; n < 3; ++n) {
    tables.push_back(std::make_unique<FakeTable>(keys, kK));
    for (size_t i = 0; i < keys.size(); ++i) {
      tables.back()->Update(i, (i + n) % kK, n + 1);
      truth[i][(i + n) % kK] += n + 1;
    }
    SynchronizerOptions o = ThreeNodeOptions(n);
    o.epoch = 1;
    syncs.push_back(std::make_unique<Synchronizer>(o, tables.back().get(),
                                                   owner, channels(false)));
    syncs.back()->Start();
  }
  RandomUpdates(11, tables, syncs, &truth);

  // Epoch 2: keys 33, 66 and 77 (indices 2, 5, 6) move to owner 2.
  const std::vector<uint32_t> owner2 = {0, 1, 2, 1, 0, 2, 2};
  auto moves = [&](Key k) {
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i] == k && owner2[i] == 2) return std::string("o2");
    }
    return std::string();
  };
  // Node 0 sees the new ring first: the old owners, still at epoch 1,
  // answer its batches "not there yet" until they move on.
  ASSERT_TRUE(syncs[0]->Reroute(2, owner2, channels(true)).ok());
  RandomUpdates(15, tables, syncs, &truth);
  shard2.SetEpoch(2);
  std::vector<KeyHandoff> handoffs =
      shard0.AdvanceEpoch(2, moves, "o0", /*max_keys_per_chunk=*/1);
  RandomUpdates(16, tables, syncs, &truth);  // o1 still at epoch 1
  for (KeyHandoff& h : shard1.AdvanceEpoch(2, moves, "o1")) {
    handoffs.push_back(std::move(h));
  }
  EXPECT_EQ(handoffs.size(), 2u);            // one key from o0, two from o1
  RandomUpdates(12, tables, syncs, &truth);  // n1, n2 still on epoch 1
  ASSERT_TRUE(syncs[1]->Reroute(2, owner2, channels(true)).ok());
  RandomUpdates(13, tables, syncs, &truth);
  for (const KeyHandoff& h : handoffs) ASSERT_TRUE(shard2.ImportKeys(h).ok());
  ASSERT_TRUE(syncs[2]->Reroute(2, owner2, channels(true)).ok());
  EXPECT_EQ(syncs[2]->epoch(), 2u);
  RandomUpdates(14, tables, syncs, &truth);

  bool quiet = false;
  for (int round = 0; round < 30 && !quiet; ++round) {
    quiet = true;
    for (auto& s : syncs) quiet = s->Flush().quiet && quiet;
  }
  ASSERT_TRUE(quiet);
  ExpectExact(keys, owner2, {&shard0, &shard1, &shard2}, tables, truth);
  for (size_t i = 0; i < keys.size(); ++i) {
    if (owner2[i] == 2) {
      EXPECT_TRUE(shard0.Global(keys[i]).empty() &&
                  shard1.Global(keys[i]).empty())
          << "key " << keys[i] << " left behind at its old owner";
    }
  }
  // o0 loses replies by design and background rounds go on after the
  // flushes, so it may be marked unavailable at any moment; the owners the
  // re-route brought must not be.
  for (auto& s : syncs) {
    for (const std::string& name : s->UnavailableOwners()) {
      EXPECT_EQ(name, "o0");
    }
  }
  // Stop the background rounds while shard2 (a local of this test) still
  // exists: TearDown runs after it is gone.
  for (auto& s : syncs) s->Stop();
}

TEST(Consistency, Parses) {
  EXPECT_FALSE(Consistency::Parse("async")->bounded);
  EXPECT_EQ(Consistency::Parse("ssp:3")->staleness, 3u);
  EXPECT_TRUE(Consistency::Parse("bsp")->bounded);
  EXPECT_EQ(Consistency::Parse("bsp")->staleness, 0u);
  EXPECT_FALSE(Consistency::Parse("ssp:").ok());
  EXPECT_FALSE(Consistency::Parse("ssp:-1").ok());
  EXPECT_FALSE(Consistency::Parse("fast").ok());
}

TEST(ClockTable, MinSkipsDeadAndFinished) {
  ClockTable c({"a", "b", "c"});
  c.Update("a", 5, false);
  c.Update("b", 3, false);
  EXPECT_EQ(c.MinClock(), 0u);  // c is at 0
  c.MarkDead("c");
  EXPECT_EQ(c.MinClock(), 3u);
  c.Update("b", 2, false);  // never lowered
  EXPECT_EQ(c.MinClock(), 3u);
  c.Update("b", 3, true);
  EXPECT_EQ(c.MinClock(), 5u);
  EXPECT_TRUE(c.WaitForMin(5, absl::Now()));
  EXPECT_FALSE(c.WaitForMin(6, absl::Now() + absl::Milliseconds(10)));
}

// Heard: progress came for a member in this process (FailureJudge's sign
// that it was alive since this node started); a listed member alone is not.
TEST(ClockTable, HeardIsProgressNotMembership) {
  ClockTable c({"a", "b", "c"});
  c.Update("a", 1, false);
  c.MarkReady("b");
  EXPECT_TRUE(c.Heard("a"));
  EXPECT_TRUE(c.Heard("b"));
  EXPECT_FALSE(c.Heard("c"));
  EXPECT_FALSE(c.Heard("d"));
  c.Update("d", 0, false);  // before the ring names d
  EXPECT_TRUE(c.Heard("d"));
  c.MarkDead("a");
  EXPECT_TRUE(c.Heard("a"));
  c.Revive("c");
  EXPECT_FALSE(c.Heard("c"));
}

// Progress from ids no ring names (a peer making ids up) is capped and
// holds nobody back; a member's early progress is taken in when it joins.
TEST(ClockTable, NonMembersAreCappedAndCountNowhere) {
  ClockTable c({"a"});
  c.Update("a", 4, false);
  EXPECT_TRUE(c.Update("b", 2, false));  // before the ring names b
  EXPECT_TRUE(c.MarkReady("b"));
  int dropped = 0;
  for (size_t i = 0; i < 2 * ClockTable::kMaxPendingNodes; ++i) {
    dropped += !c.Update(absl::StrCat("ghost", i), 0, false);
  }
  EXPECT_EQ(dropped, ClockTable::kMaxPendingNodes + 1);  // b holds a slot
  EXPECT_FALSE(c.MarkReady("ghost-late"));
  EXPECT_EQ(c.MinClock(), 4u);  // ghosts at clock 0 hold nothing back
  EXPECT_TRUE(c.WaitForMin(4, absl::Now()));
  c.MarkReady("a");
  EXPECT_TRUE(c.WaitAllReady(absl::Now()));
  c.Add("b");  // now a member, with what it sent before
  EXPECT_EQ(c.Get("b"), 2u);
  EXPECT_EQ(c.MinClock(), 2u);
  EXPECT_TRUE(c.WaitAllReady(absl::Now()));
  c.Add("ghost0");
  EXPECT_EQ(c.MinClock(), 0u);
}

// A light change (below min_key_weight) with nothing kicking rounds, as on
// a node that stopped sampling and merged a document: it reaches the owner
// once max_key_delay has passed since the last complete round, and with no
// such bound it never does.
TEST(Synchronizer, ALightChangeWaitsAtMostMaxKeyDelay) {
  for (const absl::Duration delay :
       {absl::Milliseconds(50), absl::InfiniteDuration()}) {
    OwnerShard shard(4);
    FakeTable table({11}, 4);
    SynchronizerOptions o;
    o.node_id = "n";
    o.round_interval = absl::Milliseconds(1);
    o.min_key_weight = 100;
    o.max_key_delay = delay;
    std::vector<std::unique_ptr<OwnerChannel>> ch;
    ch.push_back(MakeLocalChannel(&shard));
    Synchronizer sync(o, &table, {0}, std::move(ch));
    sync.Start();
    // (The first round is complete: it finds nothing yet.)
    absl::SleepFor(absl::Milliseconds(20));
    table.Update(0, 2, 3);
    const SparseVector want = {{2, 3}};
    for (int i = 0; i < 100 && shard.Global(11) != want; ++i) {
      absl::SleepFor(absl::Milliseconds(10));
    }
    if (delay == absl::InfiniteDuration()) {
      EXPECT_TRUE(shard.Global(11).empty());
      sync.Flush();  // a pass sends it
    }
    EXPECT_EQ(shard.Global(11), want) << delay;
    sync.Stop();
  }
}

}  // namespace
}  // namespace latentd::sync
