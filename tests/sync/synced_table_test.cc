// SyncedTopicTable's change accounting (sync/synchronizer.h):
// the writer's logged deltas come back per key, folded, exactly once,
// starting from the table's initial counts.
#include "sampler/synced_table.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"

namespace latentd {
namespace {

constexpr TopicId kK = 8;

// Everything listed now, taken, by key index.
std::map<uint32_t, sync::SparseVector> TakeAll(SyncedTopicTable* t) {
  std::vector<uint32_t> listed;
  t->TakeDirtyList(&listed);
  std::map<uint32_t, sync::SparseVector> out;
  for (uint32_t i : listed) {
    sync::SparseVector c;
    t->TakeChange(i, &c);
    if (!c.empty()) out[i] = c;
  }
  return out;
}

TEST(SyncedTopicTable, ChangesStartFromTheInitialCounts) {
  TopicTable table(3, kK);
  const std::vector<WordTopicDelta> init = {{0, 1, 2}, {0, 5, 1}, {2, 7, 4}};
  ASSERT_TRUE(table.Apply(init).ok());
  SyncedTopicTable t(&table, {100, 101, 102});
  const uint32_t totals = 3;
  auto first = TakeAll(&t);
  EXPECT_EQ(first, (std::map<uint32_t, sync::SparseVector>{
                       {0, {{1, 2}, {5, 1}}},
                       {2, {{7, 4}}},
                       {totals, {{1, 2}, {5, 1}, {7, 4}}}}));
  // Taken once: nothing more until the writer logs again.
  EXPECT_TRUE(TakeAll(&t).empty());
}

TEST(SyncedTopicTable, FoldsLoggedDeltasAndKeepsWhatIsNotTaken) {
  TopicTable table(4, kK);
  SyncedTopicTable t(&table, {100, 101, 102, 103});
  const uint32_t totals = 4;
  EXPECT_TRUE(TakeAll(&t).empty());  // an empty table has no change
  // Two batches; the second out of order, with a repeated (word, topic)
  // and a delta that cancels one of the first batch.
  t.MarkApplied(std::vector<WordTopicDelta>{{1, 2, 3}, {1, 6, 1}, {3, 0, 2}});
  t.MarkApplied(std::vector<WordTopicDelta>{{3, 0, -2}, {1, 6, 2}, {1, 2, 1}});
  std::vector<uint32_t> listed;
  t.TakeDirtyList(&listed);
  std::sort(listed.begin(), listed.end());
  EXPECT_EQ(listed, (std::vector<uint32_t>{1, totals}));  // word 3 netted 0
  EXPECT_EQ(t.DirtyWeight(1), 7u);
  // Word 1 is left for later; more comes for it and for word 0.
  t.MarkApplied(std::vector<WordTopicDelta>{{0, 4, 5}, {1, 2, -4}});
  listed.clear();
  t.TakeDirtyList(&listed);
  // Gross: 7 kept plus |-4|, though topic 2 now nets to 0.
  EXPECT_EQ(t.DirtyWeight(1), 11u);
  EXPECT_EQ(t.DirtyWeight(0), 5u);
  auto got = TakeAll(&t);
  EXPECT_EQ(got,
            (std::map<uint32_t, sync::SparseVector>{
                {0, {{4, 5}}}, {1, {{6, 3}}}, {totals, {{4, 5}, {6, 3}}}}));
  EXPECT_EQ(t.DirtyWeight(1), 0u);
}

// Deltas are logged packed, 16 bits of count each: counts and deltas past
// that range, at any K (one topic, or the most topics a table may have),
// still come back exact, and their weights gross.
TEST(SyncedTopicTable, CountsBeyondTheLoggedWidthComeBackExact) {
  for (const TopicId k : {TopicId{1}, TopicId{1000}, kMaxTopics}) {
    SCOPED_TRACE(k);
    const TopicId last = k - 1;
    TopicTable table(70'000, k);
    ASSERT_TRUE(table
                    .Apply(std::vector<WordTopicDelta>{{0, last, 100'000},
                                                       {69'999, 0, 40'000}})
                    .ok());
    std::vector<sync::Key> keys(70'000);
    for (size_t w = 0; w < keys.size(); ++w) keys[w] = 1000 + w;
    SyncedTopicTable t(&table, keys);
    const uint32_t totals = 70'000;
    sync::SparseVector first_totals = {{0, 40'000}, {last, 100'000}};
    if (last == 0) first_totals = {{0, 140'000}};
    EXPECT_EQ(TakeAll(&t),
              (std::map<uint32_t, sync::SparseVector>{{0, {{last, 100'000}}},
                                                      {69'999, {{0, 40'000}}},
                                                      {totals, first_totals}}));
    // Applied: -70,000 and the edges of a 16-bit count.
    const std::vector<WordTopicDelta> applied = {{0, last, -70'000},
                                                 {69'999, 0, 32'767},
                                                 {69'999, 0, -32'768},
                                                 {5, 0, 1}};
    ASSERT_TRUE(table.Apply(applied).ok());
    t.MarkApplied(applied);
    std::vector<uint32_t> listed;
    t.TakeDirtyList(&listed);
    EXPECT_EQ(t.DirtyWeight(0), 70'000u);
    EXPECT_EQ(t.DirtyWeight(69'999), 65'535u);
    // Topic 0 of the totals nets to 32,767 - 32,768 + 1 = 0.
    const sync::SparseVector totals_change = {{last, -70'000}};
    auto got = TakeAll(&t);
    EXPECT_EQ(
        got, (std::map<uint32_t, sync::SparseVector>{{0, {{last, -70'000}}},
                                                     {5, {{0, 1}}},
                                                     {69'999, {{0, -1}}},
                                                     {totals, totals_change}}));
  }
}

// Corrections queue per key, net per (word, topic), show in Read at once
// and reach the table (rows and n_k) with ApplyPending; one that would
// make a count negative is refused and stays queued.
TEST(SyncedTopicTable, QueuedCorrectionsNetAndApply) {
  TopicTable table(2, kK);
  ASSERT_TRUE(table.Apply(std::vector<WordTopicDelta>{{0, 1, 2}}).ok());
  SyncedTopicTable t(&table, {100, 101});
  const uint32_t totals = 2;
  t.EnqueueCorrection(0, {{1, 3}, {4, 1}});
  t.EnqueueCorrection(0, {{4, -1}, {6, 2}});
  t.EnqueueCorrection(totals, {{1, 3}, {6, 2}});
  sync::SparseVector x;
  t.Read(0, &x);
  EXPECT_EQ(x, (sync::SparseVector{{1, 5}, {6, 2}}));
  t.Read(totals, &x);
  EXPECT_EQ(x, (sync::SparseVector{{1, 5}, {6, 2}}));
  EXPECT_EQ(t.pending_rows(), 1u);
  ASSERT_TRUE(t.ApplyPending().ok());
  EXPECT_EQ(t.pending_rows(), 0u);
  EXPECT_EQ(table.Get(0, 1), 5);
  EXPECT_EQ(table.Get(0, 4), 0);
  EXPECT_EQ(table.Get(0, 6), 2);
  EXPECT_EQ(table.TopicTotal(1), 5);
  EXPECT_EQ(table.TopicTotal(6), 2);
  // Corrections are not the writer's own changes: not listed as such.
  auto changes = TakeAll(&t);
  EXPECT_EQ(changes, (std::map<uint32_t, sync::SparseVector>{
                         {0, {{1, 2}}}, {totals, {{1, 2}}}}));
  t.EnqueueCorrection(1, {{3, -1}});
  EXPECT_EQ(t.ApplyPending().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(t.pending_rows(), 1u);
  EXPECT_EQ(table.Get(1, 3), 0);
}

// Once most of the arena of untaken changes is garbage (changes taken or
// replaced), a fold compacts it; the changes still untaken survive whole.
TEST(SyncedTopicTable, UntakenChangesSurviveCompaction) {
  constexpr size_t kWords = 3000;
  constexpr TopicId kTopics = 32;
  TopicTable table(kWords, kTopics);
  std::vector<WordTopicDelta> init;
  std::vector<sync::Key> keys;
  for (size_t w = 0; w < kWords; ++w) {
    keys.push_back(1000 + w);
    for (TopicId k = 0; k < 30; ++k) {
      init.push_back({static_cast<WordId>(w), k, static_cast<int32_t>(k + 1)});
    }
  }
  ASSERT_TRUE(table.Apply(init).ok());
  SyncedTopicTable t(&table, keys);
  std::vector<uint32_t> listed;
  t.TakeDirtyList(&listed);
  ASSERT_EQ(listed.size(), kWords + 1);  // and the totals
  sync::SparseVector c;
  for (uint32_t i : listed) {
    if (i != 1 && i != 7) t.TakeChange(i, &c);  // 90,000 entries of garbage
  }
  const std::vector<WordTopicDelta> more = {{1, 0, 2}, {2, 5, -1}};
  t.MarkApplied(more);
  listed.clear();
  t.TakeDirtyList(&listed);  // compacts
  EXPECT_EQ(listed, (std::vector<uint32_t>{1, 2, 7, kWords}));
  t.TakeChange(1, &c);
  ASSERT_EQ(c.size(), 30u);
  EXPECT_EQ(c[0], (sync::SparseEntry{0, 3}));
  EXPECT_EQ(c[29], (sync::SparseEntry{29, 30}));
  t.TakeChange(2, &c);
  EXPECT_EQ(c, (sync::SparseVector{{5, -1}}));
  t.TakeChange(7, &c);
  ASSERT_EQ(c.size(), 30u);
  EXPECT_EQ(c[12], (sync::SparseEntry{12, 13}));
  // And folds after it go on as before.
  t.MarkApplied(std::vector<WordTopicDelta>{{7, 12, -13}, {7, 31, 1}});
  auto next = TakeAll(&t);
  EXPECT_EQ(next[7], (sync::SparseVector{{12, -13}, {31, 1}}));
}

// Corrections of distinct words apply as they were queued (no sort); a
// word may be queued again once they are applied, and a word queued twice
// before that is netted.
TEST(SyncedTopicTable, CorrectionsApplyAfterEachQueueing) {
  TopicTable table(3, kK);
  SyncedTopicTable t(&table, {100, 101, 102});
  const uint32_t totals = 3;
  t.EnqueueCorrection(2, {{0, 1}, {5, 2}});
  t.EnqueueCorrection(0, {{3, 4}});
  t.EnqueueCorrection(totals, {{0, 1}, {3, 4}, {5, 2}});
  ASSERT_TRUE(t.ApplyPending().ok());
  EXPECT_EQ(table.Get(2, 0), 1);
  EXPECT_EQ(table.Get(2, 5), 2);
  EXPECT_EQ(table.Get(0, 3), 4);
  EXPECT_EQ(table.TopicTotal(3), 4);
  t.EnqueueCorrection(2, {{0, -1}});
  t.EnqueueCorrection(1, {{0, 2}});
  t.EnqueueCorrection(1, {{0, -1}, {7, 1}});
  t.EnqueueCorrection(totals, {{7, 1}});
  ASSERT_TRUE(t.ApplyPending().ok());
  EXPECT_EQ(table.Get(2, 0), 0);
  EXPECT_EQ(table.Get(1, 0), 1);
  EXPECT_EQ(table.Get(1, 7), 1);
  EXPECT_EQ(table.TopicTotal(0), 1);
  EXPECT_EQ(table.TopicTotal(7), 1);
  EXPECT_FALSE(t.HasPending());
}

// A row of `table` as sparse counts.
sync::SparseVector Row(const TopicTable& table, WordId w) {
  sync::SparseVector out;
  for (TopicId k = 0; k < table.num_topics(); ++k) {
    if (table.Get(w, k) != 0) out.push_back({k, table.Get(w, k)});
  }
  return out;
}

// Two nodes with disjoint vocabularies and one owner: each learns the
// other's words, named, and once it adds them (Synchronizer::AddKeys) its
// rows equal the other's counts; later changes keep flowing to it; the
// totals key keeps its index while words are appended after it.
TEST(SyncedTopicTable, GrowingTablesLearnEachOthersWords) {
  sync::OwnerShard owner(kK);
  TopicTable ta(2, kK), tb(1, kK);
  ASSERT_TRUE(ta.Apply(std::vector<WordTopicDelta>{{0, 1, 3}, {1, 4, 2}}).ok());
  ASSERT_TRUE(tb.Apply(std::vector<WordTopicDelta>{{0, 2, 5}}).ok());
  SyncedTopicTable a(&ta, {101, 102}, {"apple", "plum"});
  SyncedTopicTable b(&tb, {201}, {"pear"});
  EXPECT_TRUE(a.GrowsKeys());
  EXPECT_FALSE(SyncedTopicTable(&ta, {101, 102}).GrowsKeys());
  auto make = [&owner](const std::string& id, SyncedTopicTable* t) {
    sync::SynchronizerOptions o;
    o.node_id = id;
    o.incarnation = 1;
    std::vector<std::unique_ptr<sync::OwnerChannel>> ch;
    ch.push_back(sync::MakeLocalChannel(&owner, "owner"));
    auto s = std::make_unique<sync::Synchronizer>(
        o, t, std::vector<uint32_t>(t->num_keys(), 0), std::move(ch));
    s->Start();
    return s;
  };
  auto sa = make("a", &a);
  auto sb = make("b", &b);
  for (int i = 0; i < 3; ++i) {
    sa->Flush();
    sb->Flush();
  }
  ASSERT_TRUE(a.ApplyPending().ok());
  ASSERT_TRUE(b.ApplyPending().ok());
  // Each was sent the other's words, named; not yet in its table.
  auto foreign_b = sb->ForeignKeys();
  std::sort(foreign_b.begin(), foreign_b.end());
  EXPECT_EQ(foreign_b, (std::vector<std::pair<sync::Key, std::string>>{
                           {101, "apple"}, {102, "plum"}}));
  EXPECT_EQ(sa->ForeignKeys(),
            (std::vector<std::pair<sync::Key, std::string>>{{201, "pear"}}));
  // The totals already count every word.
  EXPECT_EQ(tb.TopicTotal(1), 3);
  EXPECT_EQ(ta.TopicTotal(2), 5);
  // B adds A's words (appended after its totals key, index 1).
  ASSERT_TRUE(sb->AddKeys(
                    [&]() -> absl::Status {
                      tb.Resize(3);
                      const std::vector<sync::Key> keys = {101, 102};
                      const std::vector<std::string> names = {"apple", "plum"};
                      b.AddWords(keys, names);
                      return absl::OkStatus();
                    },
                    [](sync::Key) { return 0u; })
                  .ok());
  EXPECT_EQ(b.num_keys(), 4u);
  EXPECT_EQ(b.totals_index(), 1u);
  EXPECT_EQ(b.key(1), sync::kTopicTotalsKey);
  EXPECT_EQ(b.key(2), 101u);
  EXPECT_EQ(b.key(3), 102u);
  EXPECT_EQ(b.KeyName(3), "plum");
  EXPECT_TRUE(sb->ForeignKeys().empty());
  ASSERT_TRUE(b.ApplyPending().ok());
  EXPECT_EQ(Row(tb, 1), Row(ta, 0));
  EXPECT_EQ(Row(tb, 2), Row(ta, 1));
  // A new change of a word B learned reaches it as any change does.
  ASSERT_TRUE(
      ta.Apply(std::vector<WordTopicDelta>{{1, 4, -1}, {1, 6, 1}}).ok());
  a.MarkApplied(std::vector<WordTopicDelta>{{1, 4, -1}, {1, 6, 1}});
  for (int i = 0; i < 3; ++i) {
    sa->Flush();
    sb->Flush();
  }
  ASSERT_TRUE(a.ApplyPending().ok());
  ASSERT_TRUE(b.ApplyPending().ok());
  EXPECT_EQ(Row(tb, 2), (sync::SparseVector{{4, 1}, {6, 1}}));
  for (TopicId k = 0; k < kK; ++k) {
    EXPECT_EQ(ta.TopicTotal(k), tb.TopicTotal(k)) << k;
  }
  sa->Stop();
  sb->Stop();
}

// What a lost owner sent of a key this node does not hold is taken back,
// and only that: a survivor's own shard, which took the key over from its
// copy, pushed it the key's global first, and that part stays. (The two
// were summed under one owner's name, and a lost owner's late reply
// arriving after the push made the re-route drop both; found by the
// network-fault harness: a survivor's view stayed short, and the returning
// node's retraction drove its counts below zero.) Here the lost owner's
// part arrives first, which under the old sum kept both: too much.
TEST(SyncedTopicTable, ALostOwnersForeignPartAloneIsDropped) {
  sync::OwnerShard o0(kK), o1(kK);
  TopicTable ta(1, kK), tb(2, kK);
  ASSERT_TRUE(ta.Apply(std::vector<WordTopicDelta>{{0, 1, 3}}).ok());
  ASSERT_TRUE(tb.Apply(std::vector<WordTopicDelta>{{0, 2, 5}, {1, 4, 1}}).ok());
  SyncedTopicTable a(&ta, {101}, {"apple"});
  SyncedTopicTable b(&tb, {201, 202}, {"pear", "fig"});
  auto make = [&](const std::string& id, SyncedTopicTable* t,
                  std::vector<uint32_t> owner) {
    sync::SynchronizerOptions o;
    o.node_id = id;
    o.incarnation = 1;
    std::vector<std::unique_ptr<sync::OwnerChannel>> ch;
    ch.push_back(sync::MakeLocalChannel(&o0, "o0"));
    ch.push_back(sync::MakeLocalChannel(&o1, "o1"));
    auto s = std::make_unique<sync::Synchronizer>(o, t, std::move(owner),
                                                  std::move(ch));
    s->Start();
    return s;
  };
  // apple at o0; pear at o1, fig at o0 (so b holds keys at both); the
  // totals (the last key) at o1.
  auto sa = make("a", &a, {0, 1});
  auto sb = make("b", &b, {1, 0, 1});
  for (int i = 0; i < 2; ++i) {
    sa->Flush();
    sb->Flush();
  }
  ASSERT_EQ(sb->ForeignKeys(),
            (std::vector<std::pair<sync::Key, std::string>>{{101, "apple"}}));
  // o0 is lost; o1 takes apple over from its copy (o0's own part, here
  // {3: 2}) and pushes it to b, which holds every key.
  sync::KeyHandoff copy;
  copy.set_from_node("replica-of:o0");
  copy.set_epoch(1);
  copy.set_dimension(kK);
  copy.add_keys(101);
  copy.add_names("apple");
  sync::AppendToBlock({{3, 2}}, copy.mutable_globals());
  copy.add_holder_counts(0);
  ASSERT_TRUE(o1.ImportKeys(copy).ok());
  sb->Flush();
  auto only_o1 = [&] {
    std::vector<std::unique_ptr<sync::OwnerChannel>> ch;
    ch.push_back(sync::MakeLocalChannel(&o1, "o1"));
    return ch;
  };
  ASSERT_TRUE(sb->Reroute(1, {0, 0, 0}, only_o1(), {"o0"}).ok());
  ASSERT_TRUE(sa->Reroute(1, {0, 0}, only_o1(), {"o0"}).ok());
  ASSERT_TRUE(sb->AddKeys(
                    [&]() -> absl::Status {
                      tb.Resize(3);
                      b.AddWords(std::vector<sync::Key>{101},
                                 std::vector<std::string>{"apple"});
                      return absl::OkStatus();
                    },
                    [](sync::Key) { return 0u; })
                  .ok());
  for (int i = 0; i < 3; ++i) {
    sa->Flush();
    sb->Flush();
    ASSERT_TRUE(a.ApplyPending().ok());
    ASSERT_TRUE(b.ApplyPending().ok());
  }
  // a's three tokens re-seeded at o1, and the copy's part: once each.
  EXPECT_EQ(o1.Global(101), (sync::SparseVector{{1, 3}, {3, 2}}));
  EXPECT_EQ(Row(tb, 2), o1.Global(101));
  EXPECT_EQ(Row(ta, 0), o1.Global(101));
  sa->Stop();
  sb->Stop();
}

}  // namespace
}  // namespace latentd
