// Replicated key state (sync/owner_replicator.h, sync/replica_store.h):
// three owners, each replicating its own part of its keys to the next one.
// After an owner fails, its backup imports the copies and the survivors
// re-seed their own contributions: the new owner's globals count every
// node's deltas, the failed one's included. A refill then copies the new
// owner's part to its new backup, so a second failure loses nothing
// either. Also: a batch is answered only once its backup has it, a failed
// send is retried, and the store refuses malformed updates.
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "sync/owner_replicator.h"
#include "sync/owner_shard.h"
#include "sync/replica_store.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kK = 6;
constexpr Key kKeys = 60;

std::string Id(int n) { return absl::StrCat("n", n); }

SparseVector Dense2Sparse(const std::vector<int64_t>& d) {
  SparseVector v;
  for (uint32_t k = 0; k < d.size(); ++k) {
    if (d[k] != 0) v.push_back({k, d[k]});
  }
  return v;
}

SparseVector Sum(const SparseVector& a, const SparseVector& b) {
  SparseVector out;
  AddSparse(a, b, +1, &out);
  return out;
}

// A node: its owner shard, the copies it holds as a backup, and its
// replicator, whose sends go straight into the backup's store (through a
// hook that may hold or fail them).
struct Node {
  std::string id;
  std::unique_ptr<OwnerShard> shard = std::make_unique<OwnerShard>(kK);
  std::unique_ptr<ReplicaStore> store = std::make_unique<ReplicaStore>(kK);
  std::unique_ptr<OwnerReplicator> replicator;
  std::unique_ptr<OwnerChannel> channel;
  uint64_t sequence[3] = {0, 0, 0};  // per owner, as a sender
};

class Replication : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int n = 0; n < 3; ++n) nodes_[n].id = Id(n);
    for (int n = 0; n < 3; ++n) {
      OwnerReplicatorOptions o;
      o.node_id = Id(n);
      o.retry_interval = absl::Milliseconds(5);
      o.ack_timeout = absl::Milliseconds(50);
      o.log = [](std::string_view) {};
      nodes_[n].replicator = std::make_unique<OwnerReplicator>(
          o, nodes_[n].shard.get(),
          [this](const std::string& backup, const ReplicaUpdate& u,
                 std::function<void(absl::Status)> done) {
            Deliver(backup, u, std::move(done));
          });
      nodes_[n].channel = nodes_[n].replicator->MakeChannel();
    }
    SetRing({0, 1, 2});
    // As KeyReplicas::Start does: every backup's copy gets its base.
    for (Node& n : nodes_) {
      n.replicator->Refill([this](const std::string& id) { return Live(id); });
    }
    // Each refill is one update to each of the two others, empty ones too.
    for (int i = 0; i < 2000; ++i) {
      bool sent = true;
      for (Node& n : nodes_)
        sent = sent && n.replicator->stats().updates_sent >= 2;
      if (sent) break;
      absl::SleepFor(absl::Milliseconds(1));
    }
  }

  // Every replicator's thread ends before any node's store or shard does
  // (a refill may still be on its way into them).
  void TearDown() override {
    for (Node& n : nodes_) n.replicator->Stop();
  }

  void Deliver(const std::string& backup, const ReplicaUpdate& u,
               std::function<void(absl::Status)> done) {
    if (backup_down_) {
      done(absl::UnavailableError("backup down"));
      return;
    }
    if (hold_resets_ && u.reset()) {
      done(absl::UnavailableError("resets held"));
      return;
    }
    if (fail_next_ > 0) {
      --fail_next_;
      done(absl::UnavailableError("injected"));
      return;
    }
    absl::MutexLock lock(&stores_mu_);  // a test may replace a store
    for (Node& n : nodes_) {
      if (n.id != backup) continue;
      bool duplicate = false;
      done(n.store->Apply(u, &duplicate));
      return;
    }
    done(absl::UnavailableError("no such node"));
  }

  // The ring over `alive`: key k is owned by the first alive node from
  // k % 3 on, and backed up by the next alive one.
  int OwnerOf(Key k) const {
    for (int i = 0; i < 3; ++i) {
      const int n = static_cast<int>((k + i) % 3);
      if (alive_[n]) return n;
    }
    return -1;
  }
  std::vector<std::string> BackupsOf(Key k) const {
    const int owner = OwnerOf(k);
    for (int i = 1; i < 3; ++i) {
      const int n = (owner + i) % 3;
      if (alive_[n]) return {Id(n)};
    }
    return {};
  }
  void SetRing(const std::vector<int>& alive) {
    for (bool& a : alive_) a = false;
    for (int n : alive) alive_[n] = true;
    ++epoch_;
    for (int n : alive) {
      std::vector<std::string> members;
      for (int m : alive) {
        if (m != n) members.push_back(Id(m));
      }
      nodes_[n].replicator->SetBackups(
          epoch_, [this](Key k) { return BackupsOf(k); }, members, 1);
    }
  }
  bool Live(const std::string& id) const {
    for (int n = 0; n < 3; ++n) {
      if (Id(n) == id) return alive_[n];
    }
    return false;
  }

  // Sender n's next batch header to `owner`.
  void Stamp(int n, int owner, DeltaBatch* b) {
    b->set_node_id(Id(n));
    b->set_incarnation(100 + n);
    b->set_sequence(++nodes_[n].sequence[owner]);
    b->set_dimension(kK);
    b->set_changes_only(true);
  }

  // Node n's batch `b` to its own shard, through its replicating channel:
  // answered only once the backups hold the deltas (the replicator's
  // thread delivers them).
  void SendOwn(int n, const DeltaBatch& b) {
    std::atomic<bool> answered{false};
    nodes_[n].channel->Send(b, [&](absl::StatusOr<DeltaReply> r) {
      EXPECT_TRUE(r.ok()) << r.status();
      answered = true;
    });
    for (int i = 0; i < 2000 && !answered; ++i) {
      absl::SleepFor(absl::Milliseconds(1));
    }
    ASSERT_TRUE(answered);
  }

  // Sender n sends `deltas` (key -> delta) to each key's owner: its own
  // through its replicating channel, the others' straight to their shards.
  void Send(int n, const std::map<Key, SparseVector>& deltas) {
    std::map<int, DeltaBatch> batches;
    for (const auto& [k, d] : deltas) {
      DeltaBatch& b = batches[OwnerOf(k)];
      b.add_keys(k);
      AppendToBlock(d, b.mutable_deltas());
      contributed_[n][k] = Sum(contributed_[n][k], d);
    }
    for (auto& [owner, b] : batches) {
      Stamp(n, owner, &b);
      if (owner == n) {
        SendOwn(n, b);
      } else {
        DeltaReply reply;
        ASSERT_TRUE(nodes_[owner].shard->Apply(b, &reply).ok());
      }
    }
  }

  std::map<Key, SparseVector> RandomDeltas(std::mt19937_64& rng) {
    std::map<Key, SparseVector> out;
    for (Key k = 0; k < kKeys; ++k) {
      if (rng() % 3 == 0) continue;
      std::vector<int64_t> d(kK, 0);
      d[rng() % kK] += 1 + static_cast<int64_t>(rng() % 4);
      d[rng() % kK] -= static_cast<int64_t>(rng() % 2);
      out[k] = Dense2Sparse(d);
    }
    return out;
  }

  // Fails node `dead`: the ring drops it, each key's new owner imports the
  // copies it holds (through its replicator, as KeyReplicas does), and the
  // survivors re-seed their own contributions there (everything they
  // contributed to the keys that moved); then, with `refill`, the epoch's
  // refill.
  void Fail(int dead, const std::vector<int>& alive, bool refill = true) {
    std::map<Key, int> old_owner;
    for (Key k = 0; k < kKeys; ++k) old_owner[k] = OwnerOf(k);
    nodes_[dead].replicator->Stop();
    SetRing(alive);
    for (int n : alive) {
      for (const KeyHandoff& h : nodes_[n].store->TakeOver(
               Id(dead), [&](Key k) { return OwnerOf(k) == n; }, epoch_,
               Id(n))) {
        ASSERT_TRUE(nodes_[n].replicator->ImportKeys(h).ok());
      }
    }
    for (int n : alive) {
      std::map<int, DeltaBatch> batches;
      for (Key k = 0; k < kKeys; ++k) {
        if (old_owner[k] != dead || contributed_[n][k].empty()) continue;
        DeltaBatch& b = batches[OwnerOf(k)];
        b.add_keys(k);
        AppendToBlock(contributed_[n][k], b.mutable_deltas());
      }
      for (auto& [owner, b] : batches) {
        Stamp(n, owner, &b);
        if (owner == n) {
          SendOwn(n, b);  // as the synchronizer re-seeds its own keys
          continue;
        }
        DeltaReply reply;
        ASSERT_TRUE(nodes_[owner].shard->Apply(b, &reply).ok());
      }
    }
    if (!refill) return;
    for (int n : alive) {
      nodes_[n].replicator->Refill(
          [this](const std::string& id) { return Live(id); });
    }
  }

  void ExpectGlobalsCount(const std::vector<int>& contributors) {
    for (Key k = 0; k < kKeys; ++k) {
      SparseVector want;
      for (int n : contributors) want = Sum(want, contributed_[n][k]);
      EXPECT_EQ(nodes_[OwnerOf(k)].shard->Global(k), want) << "key " << k;
    }
  }

  void AwaitReplicated(const std::vector<int>& alive) {
    for (int i = 0; i < 2000; ++i) {
      uint64_t missing = 0;
      for (int n : alive) {
        missing += nodes_[n].replicator->stats().keys_under_replicated;
      }
      if (missing == 0) return;
      absl::SleepFor(absl::Milliseconds(1));
    }
    FAIL() << "copies still missing";
  }

  Node nodes_[3];
  bool alive_[3] = {true, true, true};
  uint64_t epoch_ = 0;
  std::atomic<int> fail_next_{0};  // set by the test, read by the replicator
  std::atomic<bool> backup_down_{false};
  std::atomic<bool> hold_resets_{false};  // refills fail while set
  std::map<Key, SparseVector> contributed_[3];
  absl::Mutex stores_mu_;  // Deliver's use of the nodes' stores
};

TEST_F(Replication, ABackupHoldsWhatItsOwnerContributed) {
  std::mt19937_64 rng(1);
  for (int round = 0; round < 5; ++round) {
    for (int n = 0; n < 3; ++n) Send(n, RandomDeltas(rng));
  }
  for (Key k = 0; k < kKeys; ++k) {
    const int owner = OwnerOf(k);
    const int backup = (owner + 1) % 3;
    EXPECT_EQ(nodes_[backup].store->Sum(Id(owner), k), contributed_[owner][k])
        << "key " << k;
  }
}

TEST_F(Replication, AFailedSendIsRetriedBeforeTheBatchIsAnswered) {
  std::mt19937_64 rng(2);
  fail_next_ = 3;
  Send(0, RandomDeltas(rng));
  EXPECT_EQ(fail_next_.load(), 0);
  EXPECT_GE(nodes_[0].replicator->stats().updates_failed, 3u);
  for (Key k = 0; k < kKeys; ++k) {
    if (OwnerOf(k) != 0) continue;
    EXPECT_EQ(nodes_[1].store->Sum(Id(0), k), contributed_[0][k]);
  }
}

// A backup that does not answer makes the owner's own batch fail after
// ack_timeout (as an owner that does not answer would), never hang; its
// resend (same sequence) is answered once the backup has the copies.
TEST_F(Replication, ABatchWaitingOnADeadBackupFailsAndItsResendWaits) {
  backup_down_ = true;
  DeltaBatch b;
  b.add_keys(0);  // owned by node 0, backed up by node 1
  AppendToBlock({{2, 5}}, b.mutable_deltas());
  Stamp(0, 0, &b);
  std::atomic<int> answers{0};
  absl::Status first;
  nodes_[0].channel->Send(b, [&](absl::StatusOr<DeltaReply> r) {
    first = r.status();
    ++answers;
  });
  for (int i = 0; i < 2000 && answers == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(answers, 1);
  EXPECT_EQ(first.code(), absl::StatusCode::kUnavailable) << first;
  EXPECT_GT(nodes_[0].replicator->stats().keys_under_replicated, 0u);

  std::atomic<bool> resent{false};
  nodes_[0].channel->Send(b, [&](absl::StatusOr<DeltaReply> r) {
    EXPECT_TRUE(r.ok()) << r.status();  // (the first application's reply)
    resent = true;
  });
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(resent) << "answered before the backup held the copies";
  backup_down_ = false;
  for (int i = 0; i < 2000 && !resent; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_TRUE(resent);
  EXPECT_EQ(nodes_[1].store->Sum(Id(0), 0), (SparseVector{{2, 5}}));
  EXPECT_EQ(nodes_[0].shard->Global(0), (SparseVector{{2, 5}}));
}

// While an owner's own batch waits on a dead backup, another sender's
// delta to the same key arrives. The owner's answer to the resend carries
// it (the shard hands it out once, with the resend): the answer given
// once the backup is back must be that one, not the first. (Giving the
// first lost the delta for the owner's own view: in a whole-cluster
// restart with --replicas 2 later changes then took counts below zero.)
TEST_F(Replication, TheAnswerToAResendCarriesWhatCameMeanwhile) {
  backup_down_ = true;
  DeltaBatch b;
  b.add_keys(0);  // owned by node 0, backed up by node 1
  AppendToBlock({{2, 5}}, b.mutable_deltas());
  Stamp(0, 0, &b);
  std::atomic<int> answers{0};
  nodes_[0].channel->Send(b, [&](absl::StatusOr<DeltaReply> r) {
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable);
    ++answers;
  });
  for (int i = 0; i < 2000 && answers == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_EQ(answers, 1);
  // Node 2 adds 7 to topic 3 of key 0: node 0, a holder, has it unseen.
  DeltaBatch other;
  other.add_keys(0);
  AppendToBlock({{3, 7}}, other.mutable_deltas());
  Stamp(2, 0, &other);
  DeltaReply ignored;
  ASSERT_TRUE(nodes_[0].shard->Apply(other, &ignored).ok());

  std::atomic<bool> resent{false};
  DeltaReply answer;
  nodes_[0].channel->Send(b, [&](absl::StatusOr<DeltaReply> r) {
    ASSERT_TRUE(r.ok()) << r.status();
    answer = *r;
    resent = true;
  });
  backup_down_ = false;
  for (int i = 0; i < 2000 && !resent; ++i) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  ASSERT_TRUE(resent);
  ASSERT_EQ(answer.changed_keys_size(), 1);
  EXPECT_EQ(answer.changed_keys(0), 0u);
  SparseVector change;
  BlockReader changes(answer.changes(), kK);
  ASSERT_TRUE(changes.Validate(1).ok());
  changes.Next(&change);
  EXPECT_EQ(change, (SparseVector{{3, 7}}));
}

TEST_F(Replication, TwoFailuresInTurnLoseNoCount) {
  std::mt19937_64 rng(3);
  for (int round = 0; round < 4; ++round) {
    for (int n = 0; n < 3; ++n) Send(n, RandomDeltas(rng));
  }
  ExpectGlobalsCount({0, 1, 2});

  Fail(0, {1, 2});
  ExpectGlobalsCount({0, 1, 2});  // node 0's counts stay in the model
  AwaitReplicated({1, 2});
  for (int round = 0; round < 3; ++round) {
    for (int n : {1, 2}) Send(n, RandomDeltas(rng));
  }
  ExpectGlobalsCount({0, 1, 2});

  // Node 1 owns two thirds of the keys now; node 2 holds their copies
  // (node 0's part included, from the refill) and takes them over.
  Fail(1, {2});
  ExpectGlobalsCount({0, 1, 2});

  // Node 0 is removed as lost: what it contributed leaves the model.
  nodes_[2].shard->RetractSender(Id(0));
  ExpectGlobalsCount({1, 2});
}

// An owner names a backup that holds nothing of it (a node that returned
// with an empty store) and replicates its own batches to it at once; the
// refill that gives the copy its base comes later. If the owner fails in
// between, the backup holds deltas without their base: imported, they put
// the key's global below zero (in a netfault run: "applying sync
// corrections: delta -1 would make n(word 40, topic 8) = 0 negative", and
// the node stopped). Those deltas are answered NoBase and not kept, and
// the copy is not taken over: the owner's own part is out of the model
// until it returns, and the survivors' parts are exact. (Here the refill
// that NoBase asks for is held back, so the owner fails first.)
TEST_F(Replication, DeltasBeforeTheRefillAreNotTakenOverAlone) {
  std::mt19937_64 rng(11);
  for (int n = 0; n < 3; ++n) Send(n, RandomDeltas(rng));
  AwaitReplicated({0, 1, 2});
  // Node 1 leaves and returns with an empty store; node 0 names it again
  // (SetBackups) but has not refilled it yet.
  SetRing({0, 2});
  {
    absl::MutexLock lock(&stores_mu_);
    nodes_[1].store = std::make_unique<ReplicaStore>(kK);
  }
  SetRing({0, 1, 2});
  std::map<Key, SparseVector> moves;  // tokens of node 0 change topics
  for (Key k = 0; k < kKeys; k += 3) {
    const SparseVector& mine = contributed_[0][k];
    if (mine.empty() || mine[0].count <= 0) continue;
    const uint32_t from = mine[0].topic;
    moves[k] = from == 0 ? SparseVector{{0, -1}, {1, 1}}
                         : SparseVector{{0, 1}, {from, -1}};
  }
  ASSERT_FALSE(moves.empty());
  hold_resets_ = true;  // the refill node 1 asks for does not get there
  Send(0, moves);       // answered: node 1 said it has no base
  EXPECT_EQ(nodes_[1].store->State(Id(0)), ReplicaStore::CopyState::kUnbased);
  EXPECT_GT(nodes_[1].store->stats().updates_unbased, 0u);
  Fail(0, {1, 2});
  // (This fixture's contributions are any integers; a count's would be
  // non-negative, and a move's -1 imported alone took it below zero.)
  for (Key k = 0; k < kKeys; ++k) {
    SparseVector want = Sum(contributed_[1][k], contributed_[2][k]);
    if (k % 3 != 0) want = Sum(want, contributed_[0][k]);  // senders' parts
    EXPECT_EQ(nodes_[OwnerOf(k)].shard->Global(k), want) << "key " << k;
  }
}

// A backup restarts within the failure timeout: no ring change, so no
// epoch refill; its empty store answers the owner's next batch NoBase, the
// owner refills it, and a failure of the owner afterwards loses nothing.
TEST_F(Replication, ABackupThatRestartedAsksForItsBaseAndGetsIt) {
  std::mt19937_64 rng(9);
  for (int n = 0; n < 3; ++n) Send(n, RandomDeltas(rng));
  AwaitReplicated({0, 1, 2});
  {
    absl::MutexLock lock(&stores_mu_);
    nodes_[1].store = std::make_unique<ReplicaStore>(kK);
  }
  Send(0, RandomDeltas(rng));
  AwaitReplicated({0, 1, 2});
  EXPECT_EQ(nodes_[0].replicator->stats().rebases, 1u);
  EXPECT_EQ(nodes_[1].store->State(Id(0)), ReplicaStore::CopyState::kBased);
  Fail(0, {1, 2});
  ExpectGlobalsCount({0, 1, 2});
}

// Within one epoch, before its refill: an owner takes over a dead node's
// keys and changes them, then fails too. Its backup must hold those keys
// whole, not the changes alone: the take-over queues each imported key's
// whole part (reset_keys) ahead of the deltas that follow. On those keys
// every node's contributions, the two dead ones' included, count once at
// the end. (The dead sender's part of the second owner's own keys waits
// for the refill: two failures before it lose that, docs/design.md.)
TEST_F(Replication, KeysTakenOverReachTheBackupWholeBeforeTheRefill) {
  std::mt19937_64 rng(5);
  for (int n = 0; n < 3; ++n) Send(n, RandomDeltas(rng));
  AwaitReplicated({0, 1, 2});
  Fail(2, {0, 1}, /*refill=*/false);  // node 0 now owns node 2's keys
  std::map<Key, SparseVector> moves;
  for (Key k = 2; k < kKeys; k += 3) moves[k] = SparseVector{{0, 1}, {1, -1}};
  Send(0, moves);  // node 0 changes them; node 1 is their backup
  AwaitReplicated({0, 1});
  Fail(0, {1});
  for (Key k = 2; k < kKeys; k += 3) {
    SparseVector want;
    for (int n = 0; n < 3; ++n) want = Sum(want, contributed_[n][k]);
    EXPECT_EQ(nodes_[1].shard->Global(k), want) << "key " << k;
  }
}

TEST(ReplicaStore, DuplicatesAndMalformedUpdatesChangeNothing) {
  ReplicaStore store(kK);
  ReplicaUpdate u;
  u.set_owner("a");
  u.set_stream(7);
  u.set_sequence(1);
  u.set_dimension(kK);
  HandoffHolder* c = u.add_contributors();
  c->set_node_id("a");
  c->set_incarnation(9);
  u.add_keys(5);
  u.add_contributor_of(0);
  AppendToBlock({{1, 3}}, u.mutable_values());
  bool duplicate = true;
  // No reset of stream 7 yet: answered NoBase, not kept, nothing to take
  // over.
  EXPECT_TRUE(IsNoBase(store.Apply(u, &duplicate)));
  EXPECT_FALSE(duplicate);
  EXPECT_TRUE(store.Sum("a", 5).empty());
  EXPECT_EQ(store.State("a"), ReplicaStore::CopyState::kUnbased);
  EXPECT_TRUE(store
                  .TakeOver(
                      "a", [](Key) { return true; }, 1, "b")
                  .empty());
  u.set_reset(true);
  u.set_sequence(2);
  ASSERT_TRUE(store.Apply(u, &duplicate).ok());
  EXPECT_EQ(store.State("a"), ReplicaStore::CopyState::kBased);
  u.set_reset(false);
  u.set_sequence(1);
  ASSERT_TRUE(store.Apply(u, &duplicate).ok());
  EXPECT_TRUE(duplicate);
  EXPECT_EQ(store.Sum("a", 5), (SparseVector{{1, 3}}));

  ReplicaUpdate bad = u;
  bad.set_sequence(3);
  bad.set_contributor_of(0, 4);
  absl::Status s = store.Apply(bad, &duplicate);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("contributor 4"), std::string::npos) << s;
  bad = u;
  bad.set_sequence(3);
  bad.mutable_values()->set_topics(0, kK);  // topic out of range
  EXPECT_EQ(store.Apply(bad, &duplicate).code(),
            absl::StatusCode::kInvalidArgument);
  bad = u;
  bad.set_dimension(kK + 1);
  EXPECT_EQ(store.Apply(bad, &duplicate).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(store.Sum("a", 5), (SparseVector{{1, 3}}));

  // A reset drops what the owner had sent before.
  ReplicaUpdate reset = u;
  reset.set_sequence(4);
  reset.set_reset(true);
  reset.set_keys(0, 6);
  ASSERT_TRUE(store.Apply(reset, &duplicate).ok());
  EXPECT_TRUE(store.Sum("a", 5).empty());
  EXPECT_EQ(store.Sum("a", 6), (SparseVector{{1, 3}}));
  EXPECT_EQ(store.num_keys(), 1u);
}

}  // namespace
}  // namespace latentd::sync
