// Key hand-off between owners when the ring epoch changes (OwnerShard::
// AdvanceEpoch / ImportKeys): senders keep adding deltas, lose
// replies and resend, switch to the new ring at different times, and a new
// owner takes deltas before and after its hand-off arrives. At the end
// every sender's view of every key equals the key's global at its owner,
// which equals the sum of every delta made: nothing lost, nothing twice.
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sync/owner_shard.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kK = 5;
constexpr int kKeys = 40;

using Dense = std::vector<int64_t>;

SparseVector ToSparse(const Dense& d) {
  SparseVector v;
  for (uint32_t k = 0; k < d.size(); ++k) {
    if (d[k] != 0) v.push_back({k, d[k]});
  }
  return v;
}

void AddInto(Dense* d, const SparseVector& v) {
  for (const SparseEntry& e : v) (*d)[e.topic] += e.count;
}

// Keys >= kKeys / 2 move from owner 0 to owner 1 at epoch 2.
bool Moves(Key key) { return key >= kKeys / 2; }
std::string NewOwner(Key key) { return Moves(key) ? "owner-1" : ""; }

// One sender: its view of every key, the changes it has made
// and not sent, and per owner channel the batch in flight (a reply lost).
struct Sender {
  std::string id;
  uint64_t incarnation;
  uint64_t epoch = 1;
  std::map<Key, Dense> view;
  std::map<Key, Dense> unsent;
  uint64_t sequence[2] = {0, 0};
  std::optional<DeltaBatch> in_flight[2];

  int OwnerOf(Key key) const { return epoch >= 2 && Moves(key) ? 1 : 0; }

  DeltaBatch Build(int owner) {
    DeltaBatch b;
    b.set_node_id(id);
    b.set_incarnation(incarnation);
    b.set_sequence(++sequence[owner]);
    b.set_dimension(kK);
    b.set_changes_only(true);
    b.set_epoch(epoch);
    for (auto it = unsent.begin(); it != unsent.end();) {
      if (OwnerOf(it->first) != owner) {
        ++it;
        continue;
      }
      b.add_keys(it->first);
      AppendToBlock(ToSparse(it->second), b.mutable_deltas());
      it = unsent.erase(it);
    }
    return b;
  }

  // Puts a refused batch's deltas back, to be routed again.
  void Return(const DeltaBatch& b) {
    BlockReader r(b.deltas(), kK);
    ASSERT_TRUE(r.Validate(b.keys_size()).ok());
    SparseVector v;
    for (Key k : b.keys()) {
      r.Next(&v);
      Dense& d = unsent[k];
      d.resize(kK);
      AddInto(&d, v);
    }
  }

  void TakeReply(const DeltaReply& reply) {
    BlockReader r(reply.changes(), kK);
    ASSERT_TRUE(r.Validate(reply.changed_keys_size()).ok());
    SparseVector v;
    for (Key k : reply.changed_keys()) {
      r.Next(&v);
      Dense& d = view[k];
      d.resize(kK);
      AddInto(&d, v);
    }
  }
};

class OwnerHandoff : public ::testing::TestWithParam<int> {};

TEST_P(OwnerHandoff, ExactThroughAnEpochChange) {
  std::mt19937_64 rng(GetParam());
  OwnerShard owners[2] = {OwnerShard(kK), OwnerShard(kK)};
  owners[0].SetEpoch(1);
  owners[1].SetEpoch(1);
  std::vector<Sender> senders;
  senders.reserve(4);  // references stay valid when the late one joins
  for (int s = 0; s < 3; ++s) {
    Sender& sender = senders.emplace_back();
    sender.id = "node-" + std::to_string(s);
    sender.incarnation = 1000u + s;
  }
  std::map<Key, Dense> truth;
  auto change = [&](Sender& s, Key key, uint32_t topic, int64_t by) {
    for (std::map<Key, Dense>* m : {&s.view, &s.unsent, &truth}) {
      Dense& d = (*m)[key];
      d.resize(kK);
      d[topic] += by;
    }
  };
  // Every sender starts holding every key (the initial counts exchange).
  for (Sender& s : senders) {
    for (Key k = 0; k < kKeys; ++k) change(s, k, k % kK, 1 + (k % 3));
  }
  // One round from `s` to `owner`: resend a lost batch, or send a new one.
  // Replies are lost at random (the batch stays in flight).
  auto round = [&](Sender& s, int owner) {
    DeltaBatch b = s.in_flight[owner] ? *s.in_flight[owner] : s.Build(owner);
    DeltaReply reply;
    absl::Status st = owners[owner].Apply(b, &reply);
    if (!st.ok()) {
      // Refused whole (routed by an older or newer ring): nothing applied.
      ASSERT_TRUE(st.code() == absl::StatusCode::kFailedPrecondition ||
                  st.code() == absl::StatusCode::kUnavailable)
          << st;
      ASSERT_FALSE(s.in_flight[owner].has_value())
          << "a resend of an applied batch must be answered: " << st;
      s.Return(b);
      if (st.code() == absl::StatusCode::kFailedPrecondition) s.epoch = 2;
      return;
    }
    if (rng() % 5 == 0) {
      s.in_flight[owner] = b;  // the reply is lost
      return;
    }
    s.in_flight[owner].reset();
    s.TakeReply(reply);
  };

  bool advanced = false, imported = false;
  std::vector<KeyHandoff> handoffs;
  for (int step = 0; step < 3000; ++step) {
    Sender& s = senders[rng() % senders.size()];
    const uint64_t what = rng() % 100;
    if (what < 60) {
      const int64_t by = static_cast<int64_t>(rng() % 5) - 2;
      if (by != 0) change(s, rng() % kKeys, rng() % kK, by);
    } else if (what < 95) {
      round(s, static_cast<int>(rng() % 2));
    } else if (!advanced && step > 500) {
      // The old owner moves to epoch 2 and hands its moving keys off.
      handoffs = owners[0].AdvanceEpoch(2, NewOwner, "owner-0",
                                        /*max_keys_per_chunk=*/7);
      EXPECT_EQ(handoffs.size(), 3u) << "20 keys in chunks of 7";
      owners[1].SetEpoch(2);
      advanced = true;
    } else if (advanced && !imported && rng() % 4 == 0) {
      for (const KeyHandoff& h : handoffs) {
        ASSERT_TRUE(owners[1].ImportKeys(h).ok());
        ASSERT_TRUE(owners[1].ImportKeys(h).ok());  // a repeat is a no-op
      }
      imported = true;
    } else if (advanced && rng() % 3 == 0) {
      s.epoch = 2;  // this sender has seen the new ring
    } else if (advanced && senders.size() == 3) {
      // A node that joins with the new ring: it never held a key at the
      // old owner, so the new owner must give it the handed-off part too,
      // whether the hand-off arrived before its first delta or after.
      Sender& late = senders.emplace_back();
      late.id = "late";
      late.incarnation = 77;
      late.epoch = 2;
      for (Key k = 0; k < kKeys; ++k) change(late, k, (k + 1) % kK, 2);
    }
  }
  if (!advanced) {
    handoffs = owners[0].AdvanceEpoch(2, NewOwner, "owner-0", 7);
    owners[1].SetEpoch(2);
  }
  if (!imported) {
    for (const KeyHandoff& h : handoffs) {
      ASSERT_TRUE(owners[1].ImportKeys(h).ok());
    }
  }
  // Drain: everyone on the new ring, every lost batch resent and answered,
  // every change sent, and every owner's pending changes pulled.
  for (Sender& s : senders) s.epoch = 2;
  for (int pass = 0; pass < 4; ++pass) {
    for (Sender& s : senders) {
      for (int owner = 0; owner < 2; ++owner) {
        while (s.in_flight[owner]) {
          DeltaReply reply;
          ASSERT_TRUE(owners[owner].Apply(*s.in_flight[owner], &reply).ok());
          ASSERT_TRUE(reply.duplicate());
          s.in_flight[owner].reset();
          s.TakeReply(reply);
        }
        DeltaBatch b = s.Build(owner);
        DeltaReply reply;
        ASSERT_TRUE(owners[owner].Apply(b, &reply).ok());
        s.TakeReply(reply);
      }
    }
  }
  for (Key k = 0; k < kKeys; ++k) {
    const int owner = Moves(k) ? 1 : 0;
    const SparseVector global = owners[owner].Global(k);
    EXPECT_EQ(global, ToSparse(truth[k])) << "key " << k;
    EXPECT_TRUE(owners[1 - owner].Global(k).empty())
        << "key " << k << " also at the other owner";
    for (const Sender& s : senders) {
      EXPECT_EQ(ToSparse(s.view.at(k)), global) << s.id << " key " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, OwnerHandoff, ::testing::Range(1, 41));

// A new batch routed by the old ring is refused whole; one routed by a
// ring the owner has not reached yet is refused as unavailable.
TEST(OwnerShardEpoch, RefusesOtherEpochsAndAppliesNothing) {
  OwnerShard shard(kK);
  shard.SetEpoch(3);
  DeltaBatch b;
  b.set_node_id("n");
  b.set_incarnation(1);
  b.set_sequence(1);
  b.set_dimension(kK);
  b.set_changes_only(true);
  b.add_keys(7);
  AppendToBlock({{1, 4}}, b.mutable_deltas());
  DeltaReply reply;
  b.set_epoch(2);
  EXPECT_EQ(shard.Apply(b, &reply).code(),
            absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(shard.stats().batches_stale_refused, 1u);
  b.set_epoch(4);
  EXPECT_EQ(shard.Apply(b, &reply).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(shard.stats().batches_stale_refused, 1u) << "not stale: early";
  EXPECT_TRUE(shard.Global(7).empty());
  b.set_epoch(3);
  ASSERT_TRUE(shard.Apply(b, &reply).ok());
  EXPECT_EQ(shard.Global(7), (SparseVector{{1, 4}}));
  // A resend of the applied batch, after the owner moved on: answered as a
  // duplicate, not refused (its sender must not route it elsewhere).
  shard.AdvanceEpoch(
      4, [](Key) { return std::string(); }, "me");
  ASSERT_TRUE(shard.Apply(b, &reply).ok());
  EXPECT_TRUE(reply.duplicate());
  EXPECT_EQ(shard.Global(7), (SparseVector{{1, 4}}));
}

TEST(OwnerShardEpoch, RejectsMalformedHandoffsWithoutChange) {
  OwnerShard shard(kK);
  KeyHandoff h;
  h.set_from_node("x");
  h.set_epoch(2);
  h.set_dimension(kK);
  h.add_keys(1);
  h.add_holder_counts(1);
  AppendToBlock({{0, 2}}, h.mutable_globals());
  h.add_holder_of(3);  // no such holder
  AppendToBlock({}, h.mutable_unseen());
  EXPECT_EQ(shard.ImportKeys(h).code(), absl::StatusCode::kInvalidArgument);
  h.clear_holder_of();
  h.add_holder_of(0);
  h.add_holders()->set_node_id("a");
  h.set_dimension(kK + 1);
  EXPECT_EQ(shard.ImportKeys(h).code(), absl::StatusCode::kInvalidArgument);
  h.set_dimension(kK);
  h.mutable_globals()->set_topics(0, kK);  // topic out of range
  EXPECT_EQ(shard.ImportKeys(h).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(shard.Snapshot().empty());
  h.mutable_globals()->set_topics(0, 0);
  ASSERT_TRUE(shard.ImportKeys(h).ok());
  EXPECT_EQ(shard.Global(1), (SparseVector{{0, 2}}));
}

// A sender that left is forgotten: its slot is free for another, and the
// others' changes no longer pile up for it.
TEST(OwnerShardEpoch, ForgetSenderFreesItsSlot) {
  OwnerShard shard(kK);
  auto batch = [](const std::string& id, uint64_t seq, int64_t by) {
    DeltaBatch b;
    b.set_node_id(id);
    b.set_incarnation(9);
    b.set_sequence(seq);
    b.set_dimension(kK);
    b.set_changes_only(true);
    b.add_keys(5);
    AppendToBlock({{2, by}}, b.mutable_deltas());
    return b;
  };
  DeltaReply reply;
  ASSERT_TRUE(shard.Apply(batch("a", 1, 3), &reply).ok());
  ASSERT_TRUE(shard.Apply(batch("b", 1, 4), &reply).ok());
  shard.ForgetSender("a");
  // The forgotten sender's deltas stay in the global.
  EXPECT_EQ(shard.Global(5), (SparseVector{{2, 7}}));
  // Back with a new incarnation later, it starts from the whole global.
  DeltaBatch again = batch("a", 1, 1);
  again.set_incarnation(10);
  ASSERT_TRUE(shard.Apply(again, &reply).ok());
  ASSERT_EQ(reply.changed_keys_size(), 1);
  EXPECT_EQ(reply.changes().counts(0), 7);
}

// Restarts (OwnerShard header, "Restarts"): a batch of one key.
DeltaBatch OneKey(const std::string& id, uint64_t incarnation, uint64_t seq,
                  Key key, SparseVector delta) {
  DeltaBatch b;
  b.set_node_id(id);
  b.set_incarnation(incarnation);
  b.set_sequence(seq);
  b.set_dimension(kK);
  b.set_changes_only(true);
  b.add_keys(key);
  AppendToBlock(delta, b.mutable_deltas());
  return b;
}

// The changes a reply carries for `key` (empty if none).
SparseVector ChangeOf(const DeltaReply& reply, Key key) {
  BlockReader r(reply.changes(), kK);
  EXPECT_TRUE(r.Validate(reply.changed_keys_size()).ok());
  SparseVector v;
  for (Key k : reply.changed_keys()) {
    r.Next(&v);
    if (k == key) return v;
  }
  return {};
}

// A later incarnation of a sender replaces what the earlier one gave: its
// contributions come out before its first batch applies, the other holders
// are told, and the earlier incarnation is refused from then on.
TEST(OwnerShardRestart, ALaterIncarnationReplacesTheEarliersCounts) {
  OwnerShard shard(kK);
  DeltaReply reply;
  ASSERT_TRUE(shard.Apply(OneKey("a", 100, 1, 5, {{1, 4}}), &reply).ok());
  ASSERT_TRUE(
      shard.Apply(OneKey("a", 100, 2, 5, {{1, -1}, {2, 2}}), &reply).ok());
  ASSERT_TRUE(shard.Apply(OneKey("b", 50, 1, 5, {{0, 3}}), &reply).ok());
  EXPECT_EQ(ChangeOf(reply, 5), (SparseVector{{1, 3}, {2, 2}}));
  EXPECT_EQ(shard.Global(5), (SparseVector{{0, 3}, {1, 3}, {2, 2}}));
  // "a" restarts from its store: 6 tokens of key 5, all in topic 4.
  ASSERT_TRUE(shard.Apply(OneKey("a", 200, 1, 5, {{4, 6}}), &reply).ok());
  EXPECT_EQ(shard.Global(5), (SparseVector{{0, 3}, {4, 6}}));
  // The new "a" gets the global as it was before its delta: b's part.
  EXPECT_EQ(ChangeOf(reply, 5), (SparseVector{{0, 3}}));
  // "b" hears that a's old part left and a's new part came.
  ASSERT_TRUE(shard.Apply(OneKey("b", 50, 2, 5, {}), &reply).ok());
  EXPECT_EQ(ChangeOf(reply, 5), (SparseVector{{1, -3}, {2, -2}, {4, 6}}));
  const OwnerShardStats st = shard.stats();
  EXPECT_EQ(st.senders_retracted, 1u);
  EXPECT_EQ(st.counts_retracted, 5u);
  // A late batch of the earlier process applies nothing.
  absl::Status late = shard.Apply(OneKey("a", 100, 3, 5, {{1, 1}}), &reply);
  EXPECT_EQ(late.code(), absl::StatusCode::kAborted) << late;
  EXPECT_EQ(shard.Global(5), (SparseVector{{0, 3}, {4, 6}}));
  EXPECT_EQ(shard.stats().batches_stale_refused, 1u);
}

// A batch addressed to an earlier process of the owner (it restarted and
// lost what it held) applies nothing: its sender must re-seed it.
TEST(OwnerShardRestart, ABatchForAnEarlierOwnerProcessIsRefused) {
  OwnerShard shard(kK);
  DeltaReply reply;
  ASSERT_TRUE(shard.Apply(OneKey("a", 1, 1, 5, {{1, 4}}), &reply).ok());
  const uint64_t me = reply.owner_incarnation();
  DeltaBatch ok = OneKey("a", 1, 2, 5, {{1, 1}});
  ok.set_owner_incarnation(me);
  ASSERT_TRUE(shard.Apply(ok, &reply).ok());
  DeltaBatch stale = OneKey("a", 1, 3, 5, {{1, 1}});
  stale.set_owner_incarnation(me + 2);
  absl::Status s = shard.Apply(stale, &reply);
  EXPECT_EQ(s.code(), absl::StatusCode::kAborted) << s;
  EXPECT_NE(s.message().find("owner restarted"), std::string::npos) << s;
  EXPECT_EQ(shard.Global(5), (SparseVector{{1, 5}}));
  EXPECT_EQ(shard.stats().batches_reseed_refused, 1u);
}

// Contributions move with the keys: the new owner takes a restarted
// sender's earlier counts out, whether the restart reaches it after the
// hand-off or before (then the hand-off's part of the earlier incarnation
// comes out as it is imported).
TEST(OwnerShardRestart, ContributionsMoveWithAHandoff) {
  for (bool restart_first : {false, true}) {
    SCOPED_TRACE(restart_first ? "restart before the import"
                               : "restart after the import");
    OwnerShard from(kK), to(kK);
    from.SetEpoch(1);
    to.SetEpoch(2);
    DeltaReply reply;
    DeltaBatch a1 = OneKey("a", 100, 1, 30, {{1, 4}});
    a1.set_epoch(1);
    ASSERT_TRUE(from.Apply(a1, &reply).ok());
    DeltaBatch b1 = OneKey("b", 50, 1, 30, {{0, 2}});
    b1.set_epoch(1);
    ASSERT_TRUE(from.Apply(b1, &reply).ok());
    std::vector<KeyHandoff> h = from.AdvanceEpoch(2, NewOwner, "owner-0");
    ASSERT_EQ(h.size(), 1u);
    DeltaBatch again = OneKey("a", 200, 1, 30, {{3, 7}});
    again.set_epoch(2);
    if (restart_first) {
      ASSERT_TRUE(to.Apply(again, &reply).ok());
      ASSERT_TRUE(to.ImportKeys(h[0]).ok());
    } else {
      ASSERT_TRUE(to.ImportKeys(h[0]).ok());
      ASSERT_TRUE(to.Apply(again, &reply).ok());
    }
    EXPECT_EQ(to.Global(30), (SparseVector{{0, 2}, {3, 7}}));
    // b's view: it had {0:2, 1:4}; it hears a's old part leave and a's
    // new part come.
    DeltaBatch b2 = OneKey("b", 50, 1, 30, {});
    b2.set_epoch(2);
    ASSERT_TRUE(to.Apply(b2, &reply).ok());
    EXPECT_EQ(ChangeOf(reply, 30), (SparseVector{{1, -4}, {3, 7}}));
  }
}

// A re-seed (DeltaBatch.reseeded) gets the key's global before its delta
// even when the owner had pushed the sender that key already. Found by the
// network-fault harness (halves, Redis with one): a survivor took a failed
// owner's key over from its copy while its own synchronizer still routed
// by the old ring; a resent batch to itself brought the key's global (an
// all-keys holder is pushed every key), and the re-seed at re-routing took
// everything received back, that global too. The owner had it as
// delivered, so the survivor's view stayed short and a later retraction
// drove its counts below zero.
TEST(OwnerShardRestart, AReseedGetsTheGlobalEvenIfItWasPushedBefore) {
  for (bool flagged : {true, false}) {
    SCOPED_TRACE(flagged ? "re-seed flagged" : "not flagged");
    OwnerShard owner(kK);
    DeltaReply reply;
    // "s" holds every key; the owner takes key 30 over from a copy.
    DeltaBatch first = OneKey("s", 7, 1, 5, {{0, 1}});
    first.set_all_keys(true);
    ASSERT_TRUE(owner.Apply(first, &reply).ok());
    KeyHandoff copy;
    copy.set_from_node("replica-of:dead");
    copy.set_epoch(1);
    copy.set_dimension(kK);
    copy.add_keys(30);
    copy.add_names("word");
    AppendToBlock({{1, 2}, {3, 1}}, copy.mutable_globals());
    copy.add_holder_counts(0);
    ASSERT_TRUE(owner.ImportKeys(copy).ok());
    // Its next batch is pushed key 30's global...
    DeltaBatch pushed = OneKey("s", 7, 2, 5, {});
    pushed.set_all_keys(true);
    ASSERT_TRUE(owner.Apply(pushed, &reply).ok());
    EXPECT_EQ(ChangeOf(reply, 30), (SparseVector{{1, 2}, {3, 1}}));
    // ... which the sender takes back with everything else it had
    // received of key 30 when it re-seeds it with its own part.
    DeltaBatch reseed = OneKey("s", 7, 3, 30, {{1, 4}});
    reseed.set_all_keys(true);
    if (flagged) reseed.add_reseeded(0);
    ASSERT_TRUE(owner.Apply(reseed, &reply).ok());
    EXPECT_EQ(owner.Global(30), (SparseVector{{1, 6}, {3, 1}}));
    if (flagged) {
      EXPECT_EQ(ChangeOf(reply, 30), (SparseVector{{1, 2}, {3, 1}}));
    } else {
      EXPECT_EQ(ChangeOf(reply, 30), SparseVector{});  // the old defect
    }
  }
}

TEST(OwnerShardRestart, ReseededIndexesMustBeAscendingAndInTheBatch) {
  OwnerShard owner(kK);
  DeltaReply reply;
  DeltaBatch b = OneKey("s", 7, 1, 5, {{0, 1}});
  b.add_reseeded(1);
  absl::Status s = owner.Apply(b, &reply);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("re-seeds key index 1"), std::string::npos) << s;
  b.clear_reseeded();
  b.add_keys(6);
  AppendToBlock({{0, 1}}, b.mutable_deltas());
  b.add_reseeded(1);
  b.add_reseeded(0);
  EXPECT_EQ(owner.Apply(b, &reply).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(owner.Global(5), SparseVector{});  // nothing applied
}

}  // namespace
}  // namespace latentd::sync
