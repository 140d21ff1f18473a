// What the cluster's synchronization costs a node per sampled token, without
// the sampler: two nodes' tables in one process, each with its synchronizer
// and owner shard (local channels, no transport), fed the count changes a
// sweep makes, against the same changes applied to unsynced tables.
//
// Workload: a Zipf(1.0) vocabulary of 50,000 words, 1 M tokens a node, K
// topics. Each word favours 8 topics of its own (9 of 10 of its tokens sit
// in them), so rows are as sparse as a trained model's; a sweep moves every
// token to a new topic drawn the same way (in batches of 4,096 tokens,
// combined per (word, topic) as the pipeline's combiner does). One
// iteration is one sweep of both nodes.
//
// BM_Apply/K: the tables alone (TopicTable::Apply of each batch): the
//   count updater's work in a single node.
// BM_ApplySync/K/R: the same, plus what a cluster node adds: each batch
//   logged for the synchronizer (MarkApplied), the corrections queued by
//   replies applied after it (ApplyPending), and a pass of both nodes'
//   synchronizers (push every change, pull the other's) R times a sweep.
//   The owners admit batches as a cluster's do (ring epoch, members, owned
//   keys, no sender below its own part).
//
// BM_ApplyLogFold/K/R: BM_Apply plus the synced table's own part of that
//   (MarkApplied, and R folds a sweep: TakeDirtyList, TakeChange).
//
// After the table the program prints, per K and R, the process CPU time of
// the sync work per token (BM_ApplySync less BM_Apply) and its ratio to the
// tables' own work.
//
//   build/ops/bench/sync_round_benchmark --benchmark_min_time=2
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/bench/collecting_reporter.h"
#include "base/check.h"
#include "base/random.h"
#include "sampler/internal/delta_combiner.h"
#include "sampler/sampling_kernel.h"
#include "sampler/synced_table.h"
#include "sampler/topic_table.h"
#include "sync/owner_channel.h"
#include "sync/owner_shard.h"
#include "sync/synchronizer.h"

namespace latentd {
namespace {

constexpr size_t kVocab = 50'000;
constexpr size_t kTokens = 1'000'000;
constexpr size_t kBatch = 4'096;
constexpr int kHomeTopics = 8;

// One node's documents, as token (word, topic) pairs, and the moves of a
// sweep.
class Tokens {
 public:
  Tokens(TopicId k, uint64_t seed) : k_(k), rng_(seed) {
    std::vector<double> weight(kVocab);
    for (size_t w = 0; w < kVocab; ++w) weight[w] = 1.0 / (w + 1.0);
    std::discrete_distribution<WordId> word(weight.begin(), weight.end());
    for (size_t i = 0; i < kTokens; ++i) {
      const WordId w = word(rng_);
      word_.push_back(w);
      topic_.push_back(Draw(w));
    }
  }
  // Every token's counts, as deltas for an empty table.
  std::vector<WordTopicDelta> Counts() {
    std::vector<TopicChange> changes;
    for (size_t i = 0; i < kTokens; ++i) {
      changes.push_back({word_[i], kUncounted, topic_[i]});
    }
    std::vector<WordTopicDelta> deltas;
    internal::DeltaCombiner().Combine(changes, &deltas);
    return deltas;
  }
  // The next batch of a sweep (tokens in order, wrapping), combined.
  void NextBatch(std::vector<WordTopicDelta>* deltas) {
    changes_.clear();
    for (size_t n = 0; n < kBatch; ++n, next_ = (next_ + 1) % kTokens) {
      const TopicId to = Draw(word_[next_]);
      changes_.push_back({word_[next_], topic_[next_], to});
      topic_[next_] = to;
    }
    combiner_.Combine(changes_, deltas);
  }
  static size_t BatchesPerSweep() { return kTokens / kBatch; }

 private:
  TopicId Draw(WordId w) {
    const uint64_t r = rng_();
    if (r % 10 != 0) {
      return static_cast<TopicId>(Mix64(w * 16 + (r >> 8) % kHomeTopics) % k_);
    }
    return static_cast<TopicId>((r >> 8) % k_);
  }
  const TopicId k_;
  std::mt19937_64 rng_;
  std::vector<WordId> word_;
  std::vector<TopicId> topic_;
  size_t next_ = 0;
  std::vector<TopicChange> changes_;
  internal::DeltaCombiner combiner_;
};

std::vector<sync::Key> WordKeys() {
  std::vector<sync::Key> keys(kVocab);
  for (size_t w = 0; w < kVocab; ++w) keys[w] = Mix64(w) >> 1;  // != totals
  return keys;
}

// Node n's tokens (seed n + 1) and a table of K topics holding their
// counts.
void MakeNode(TopicId k, int n, std::unique_ptr<Tokens>* tokens,
              std::unique_ptr<TopicTable>* table) {
  *tokens = std::make_unique<Tokens>(k, n + 1);
  *table = std::make_unique<TopicTable>(kVocab, k);
  LATENTD_CHECK((*table)->Apply((*tokens)->Counts()).ok());
}

void BM_Apply(benchmark::State& state) {
  const auto k = static_cast<TopicId>(state.range(0));
  std::vector<std::unique_ptr<Tokens>> tokens(2);
  std::vector<std::unique_ptr<TopicTable>> tables(2);
  for (int n = 0; n < 2; ++n) MakeNode(k, n, &tokens[n], &tables[n]);
  std::vector<WordTopicDelta> deltas;
  for (auto _ : state) {
    for (size_t b = 0; b < Tokens::BatchesPerSweep(); ++b) {
      for (int n = 0; n < 2; ++n) {
        tokens[n]->NextBatch(&deltas);
        LATENTD_CHECK(tables[n]->Apply(deltas).ok());
      }
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * 2 * kTokens));
}

// BM_Apply plus the synced table's part alone, no synchronizer: each batch
// logged (MarkApplied), and R times a sweep the log folded into per-key
// changes (TakeDirtyList) and the keys a round sends taken (TakeChange):
// those changed by 32 or more, every one at the sweep's last fold (as the
// cluster's min_key_weight and complete rounds do).
void BM_ApplyLogFold(benchmark::State& state) {
  const auto k = static_cast<TopicId>(state.range(0));
  const auto rounds = static_cast<size_t>(state.range(1));
  std::vector<std::unique_ptr<Tokens>> tokens(2);
  std::vector<std::unique_ptr<TopicTable>> tables(2);
  std::vector<std::unique_ptr<SyncedTopicTable>> synced;
  for (int n = 0; n < 2; ++n) {
    MakeNode(k, n, &tokens[n], &tables[n]);
    synced.push_back(
        std::make_unique<SyncedTopicTable>(tables[n].get(), WordKeys()));
  }
  const size_t every = Tokens::BatchesPerSweep() / rounds;
  std::vector<WordTopicDelta> deltas;
  std::vector<uint32_t> dirty;
  sync::SparseVector change;
  for (auto _ : state) {
    for (size_t b = 0; b < Tokens::BatchesPerSweep(); ++b) {
      for (int n = 0; n < 2; ++n) {
        tokens[n]->NextBatch(&deltas);
        LATENTD_CHECK(tables[n]->Apply(deltas).ok());
        synced[n]->MarkApplied(deltas);
        if ((b + 1) % every != 0) continue;
        const bool complete = b + every >= Tokens::BatchesPerSweep();
        dirty.clear();
        synced[n]->TakeDirtyList(&dirty);
        for (uint32_t i : dirty) {
          if (complete || synced[n]->DirtyWeight(i) >= 32) {
            synced[n]->TakeChange(i, &change);
          }
        }
      }
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * 2 * kTokens));
}

void BM_ApplySync(benchmark::State& state) {
  const auto k = static_cast<TopicId>(state.range(0));
  const auto rounds = static_cast<size_t>(state.range(1));
  sync::OwnerShard shards[2] = {sync::OwnerShard(k), sync::OwnerShard(k)};
  const std::vector<sync::Key> keys = WordKeys();
  std::vector<uint32_t> owner(kVocab + 1);
  for (size_t i = 0; i <= kVocab; ++i) {
    owner[i] = static_cast<uint32_t>(
        (i == kVocab ? sync::kTopicTotalsKey : keys[i]) % 2);
  }
  struct Node {
    std::unique_ptr<Tokens> tokens;
    std::unique_ptr<TopicTable> table;
    std::unique_ptr<SyncedTopicTable> synced;
    std::unique_ptr<sync::Synchronizer> sync;
  };
  // Admitted as the cluster admits them: members, owned keys, and topic
  // counts no sender may take below its own part.
  for (uint32_t o = 0; o < 2; ++o) {
    sync::OwnerAdmission admission;
    admission.members = {"n0", "n1"};
    admission.owns = [o](sync::Key key) { return key % 2 == o; };
    admission.counts = true;
    shards[o].SetAdmission(1, std::move(admission));
    shards[o].SetEpoch(1);
  }
  std::vector<Node> nodes(2);
  for (int n = 0; n < 2; ++n) {
    Node& node = nodes[n];
    MakeNode(k, n, &node.tokens, &node.table);
    node.synced = std::make_unique<SyncedTopicTable>(node.table.get(), keys);
    std::vector<std::unique_ptr<sync::OwnerChannel>> channels;
    for (int o = 0; o < 2; ++o) {
      // The other node's shard checks this node's batches as a peer's.
      channels.push_back(
          sync::MakeLocalChannel(&shards[o], absl::StrCat("o", o),
                                 o == n ? sync::OwnerShard::Origin::kThisProcess
                                        : sync::OwnerShard::Origin::kPeer));
    }
    sync::SynchronizerOptions options;
    options.node_id = absl::StrCat("n", n);
    options.round_interval = absl::Hours(1);  // passes only
    options.max_key_delay = absl::Hours(1);
    options.epoch = 1;
    node.sync = std::make_unique<sync::Synchronizer>(
        options, node.synced.get(), owner, std::move(channels));
    node.sync->Start();
  }
  // Both nodes' counts at both owners, and each node holding the sum.
  for (int pass = 0; pass < 2; ++pass) {
    for (Node& node : nodes) {
      node.sync->Flush();
      LATENTD_CHECK(node.synced->ApplyPending().ok());
    }
  }
  const size_t every = Tokens::BatchesPerSweep() / rounds;
  std::vector<WordTopicDelta> deltas;
  for (auto _ : state) {
    for (size_t b = 0; b < Tokens::BatchesPerSweep(); ++b) {
      for (Node& node : nodes) {
        node.tokens->NextBatch(&deltas);
        LATENTD_CHECK(node.table->Apply(deltas).ok());
        node.synced->MarkApplied(deltas);
        LATENTD_CHECK(node.synced->ApplyPending().ok());
        if ((b + 1) % every == 0) node.sync->Flush();
      }
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * 2 * kTokens));
  for (Node& node : nodes) node.sync->Stop();
}

BENCHMARK(BM_Apply)
    ->Arg(100)
    ->Arg(1000)
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK(BM_ApplyLogFold)
    ->Args({100, 8})
    ->Args({1000, 8})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();
BENCHMARK(BM_ApplySync)
    ->Args({100, 4})
    ->Args({100, 8})
    ->Args({1000, 4})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime();

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) {
  latentd::bench::CollectingReporter reporter;
  if (!latentd::bench::RunBenchmarks(&argc, argv, &reporter)) return 1;
  const auto& cpu = reporter.cpu_times();
  const double tokens = 2.0 * latentd::kTokens;
  std::printf(
      "\nsync work per token (process CPU; BM_ApplySync or BM_ApplyLogFold - "
      "BM_Apply)\n");
  for (const auto& [name, ms] : cpu) {
    const size_t prefix = name.rfind("BM_ApplySync/", 0) == 0      ? 13
                          : name.rfind("BM_ApplyLogFold/", 0) == 0 ? 16
                                                                   : 0;
    if (prefix == 0) continue;
    const std::string k = name.substr(prefix, name.find('/', prefix) - prefix);
    auto base = cpu.find("BM_Apply/" + k + "/process_time");
    if (base == cpu.end()) base = cpu.find("BM_Apply/" + k);
    if (base == cpu.end()) continue;
    const double sync_ns = (ms - base->second) * 1e6 / tokens;
    std::printf("%-40s %7.1f ns/token  %5.2fx the tables' own %.1f ns\n",
                name.c_str(), sync_ns, sync_ns / (base->second * 1e6 / tokens),
                base->second * 1e6 / tokens);
  }
  return 0;
}
