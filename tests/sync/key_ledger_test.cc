// KeyLedger (sync/internal/key_ledger.h): what a node contributed to and
// received of each key, kept through its logs' folds, is what a re-seed
// sends and gives back.
#include "sync/internal/key_ledger.h"

#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "sync/sparse_block.h"

namespace latentd::sync::internal {
namespace {

constexpr uint32_t kTopics = 16;

// A table that records the corrections enqueued to it, per key and topic.
class RecordingTable : public AbelianTable {
 public:
  explicit RecordingTable(size_t keys) : corrections_(keys) {}
  size_t num_keys() const override { return corrections_.size(); }
  Key key(size_t i) const override { return 1000 + i; }
  uint32_t dimension() const override { return kTopics; }
  void EnqueueCorrection(size_t i, const SparseVector& c) override {
    for (const SparseEntry& e : c) corrections_[i][e.topic] += e.count;
  }
  void TakeDirtyList(std::vector<uint32_t>*) override {}
  void TakeChange(size_t, SparseVector* out) override { out->clear(); }
  std::vector<std::map<uint32_t, int64_t>> corrections_;
};

SparseVector Canonical(const std::map<uint32_t, int64_t>& m) {
  SparseVector v;
  for (const auto& [t, c] : m) {
    if (c != 0) v.push_back({t, c});
  }
  return v;
}

// Random replies; every key re-seeded at the end. With min_fold_entries
// 1, 8 and the default, the logs are folded every reply, now and then,
// and only by the re-seed.
class KeyLedgerFoldTest : public ::testing::TestWithParam<size_t> {};

TEST_P(KeyLedgerFoldTest, ReseedSendsAllContributedAndGivesBackAllReceived) {
  constexpr size_t kKeys = 40;
  RecordingTable table(kKeys);
  KeyLedger ledger(&table, GetParam());
  KeyIndex index;
  for (uint32_t i = 0; i < kKeys; ++i) index[table.key(i)] = i;
  std::vector<std::map<uint32_t, int64_t>> contributed(kKeys), received(kKeys);
  std::mt19937 rng(7);
  auto random_change = [&rng] {
    std::map<uint32_t, int64_t> m;
    const int n = static_cast<int>(rng() % 4);
    for (int j = 0; j < n; ++j) {
      m[rng() % kTopics] += static_cast<int64_t>(rng() % 7) - 3;
    }
    return m;
  };
  for (int round = 0; round < 300; ++round) {
    DeltaBatch sent;
    std::vector<uint32_t> sent_keys;
    for (uint32_t i = 0; i < kKeys; ++i) {
      if (rng() % 3 != 0) continue;
      const auto change = random_change();
      sent_keys.push_back(i);
      sent.add_keys(table.key(i));
      AppendToBlock(Canonical(change), sent.mutable_deltas());
      for (const auto& [t, c] : change) contributed[i][t] += c;
    }
    DeltaReply reply;
    for (uint32_t i = 0; i < kKeys; ++i) {
      if (rng() % 4 != 0) continue;
      const auto change = random_change();
      reply.add_changed_keys(table.key(i));
      AppendToBlock(Canonical(change), reply.mutable_changes());
      for (const auto& [t, c] : change) received[i][t] += c;
    }
    // A key this node does not hold: ignored.
    reply.add_changed_keys(99);
    AppendToBlock({{1, 5}}, reply.mutable_changes());
    ledger.ApplyReply(0, sent, sent_keys, reply, index);
  }
  for (uint32_t i = 0; i < kKeys; ++i) {
    table.corrections_[i].clear();  // the replies' own corrections
    const SparseVector unsent = {{0, 1}};
    SparseVector delta;
    ledger.TakeReseed(i, unsent, &delta);
    std::map<uint32_t, int64_t> want = contributed[i];
    want[0] += 1;
    EXPECT_EQ(delta, Canonical(want)) << "key " << i;
    std::map<uint32_t, int64_t> back;
    for (const auto& [t, c] : received[i]) back[t] = -c;
    EXPECT_EQ(Canonical(table.corrections_[i]), Canonical(back)) << "key " << i;
    // Taken: a second re-seed sends only what is unsent.
    ledger.TakeReseed(i, unsent, &delta);
    EXPECT_EQ(delta, unsent) << "key " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(FoldThresholds, KeyLedgerFoldTest,
                         ::testing::Values(size_t{1}, size_t{8},
                                           size_t{1} << 16));

}  // namespace
}  // namespace latentd::sync::internal
