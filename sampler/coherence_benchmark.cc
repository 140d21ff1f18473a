// CoherenceCounter::AddDocument against its baseline, the all-pairs count
// (every pair of a document's scored words, every pair of the topics each
// ranks in: what the counter did before it grouped the words by topic).
// Both count the same pairs; the program checks that before timing.
//
// Workload (synthetic, the shape that made coherence slow at large K): a
// Zipf(1.0) vocabulary of 50,000 words; K topics whose 10 top words are
// drawn from that distribution (distinct within a topic), so that the
// frequent words are top words of many topics, as in a model early in
// training or with K far above the corpus's themes; 2,000 documents of 200
// tokens drawn from it. K = 100, 1000 and 10,000. After the table the
// program prints documents per second of both and their ratio.
//
//   build/sampler/coherence_benchmark --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "base/bench/collecting_reporter.h"
#include "base/random.h"
#include "sampler/coherence.h"

namespace latentd {
namespace {

constexpr uint32_t kVocab = 50'000;
constexpr int kTopWords = 10;
constexpr int kDocs = 2'000;
constexpr int kDocTokens = 200;
constexpr TopicId kTopicCounts[] = {100, 1000, 10'000};

// Inverse-CDF draws from Zipf(1.0) over kVocab words.
class Zipf {
 public:
  Zipf() : cdf_(kVocab) {
    double sum = 0;
    for (uint32_t w = 0; w < kVocab; ++w) cdf_[w] = (sum += 1.0 / (w + 1));
    for (double& c : cdf_) c /= sum;
  }
  WordId Draw(Rng& rng) const {
    const double u = rng.Uniform();
    return static_cast<WordId>(std::min<size_t>(
        std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin(),
        kVocab - 1));
  }

 private:
  std::vector<double> cdf_;
};

struct Workload {
  std::vector<std::vector<WordId>> topics;
  std::vector<std::vector<WordId>> docs;
};

const Workload& MakeWorkload(TopicId k) {
  static std::map<TopicId, Workload> cache;
  Workload& w = cache[k];
  if (!w.topics.empty()) return w;
  const Zipf zipf;
  Rng rng(k);
  for (TopicId t = 0; t < k; ++t) {
    absl::flat_hash_set<WordId> seen;
    std::vector<WordId> top;
    while (top.size() < kTopWords) {
      const WordId word = zipf.Draw(rng);
      if (seen.insert(word).second) top.push_back(word);
    }
    w.topics.push_back(std::move(top));
  }
  Rng doc_rng(7);
  for (int d = 0; d < kDocs; ++d) {
    std::vector<WordId> doc(kDocTokens);
    for (WordId& word : doc) word = zipf.Draw(doc_rng);
    w.docs.push_back(std::move(doc));
  }
  return w;
}

// The baseline: D(v_i, v_j) by pairing every two present words and then
// every two of their (topic, rank) places.
class AllPairsCounter {
 public:
  explicit AllPairsCounter(const std::vector<std::vector<WordId>>& topics)
      : places_(kVocab), pairs_(topics.size()) {
    for (TopicId k = 0; k < topics.size(); ++k) {
      for (int r = 0; r < static_cast<int>(topics[k].size()); ++r) {
        places_[topics[k][r]].emplace_back(k, r);
      }
      pairs_[k].assign(kTopWords * kTopWords, 0);
    }
  }
  void AddDocument(const std::vector<WordId>& doc) {
    present_.clear();
    for (WordId w : doc) {
      if (!places_[w].empty()) present_.push_back(w);
    }
    std::sort(present_.begin(), present_.end());
    present_.erase(std::unique(present_.begin(), present_.end()),
                   present_.end());
    for (size_t i = 0; i < present_.size(); ++i) {
      for (size_t j = i + 1; j < present_.size(); ++j) {
        for (const auto& [ka, ra] : places_[present_[i]]) {
          for (const auto& [kb, rb] : places_[present_[j]]) {
            if (ka == kb) {
              pairs_[ka][std::min(ra, rb) * kTopWords + std::max(ra, rb)]++;
            }
          }
        }
      }
    }
  }
  uint64_t Pair(TopicId k, int a, int b) const {
    return pairs_[k][a * kTopWords + b];
  }

 private:
  std::vector<std::vector<std::pair<TopicId, int>>> places_;
  std::vector<std::vector<uint64_t>> pairs_;
  std::vector<WordId> present_;
};

// Whether both count the same pairs over the first 200 documents: each
// topic's UMass from the baseline's pair counts (UMass is a function of
// the pair counts and D(v_l)) against the counter's report.
bool SameCounts(TopicId k) {
  const Workload& w = MakeWorkload(k);
  CoherenceCounter counter(w.topics, kVocab, kTopWords);
  AllPairsCounter baseline(w.topics);
  std::vector<uint64_t> df(kVocab, 0);
  for (int d = 0; d < 200; ++d) {
    counter.AddDocument(w.docs[d]);
    baseline.AddDocument(w.docs[d]);
    const absl::flat_hash_set<WordId> seen(w.docs[d].begin(), w.docs[d].end());
    for (WordId v : seen) ++df[v];
  }
  const CoherenceReport r = counter.Report();
  for (TopicId t = 0; t < k; ++t) {
    double umass = 0;
    int pairs = 0;
    for (int later = 1; later < kTopWords; ++later) {
      for (int earlier = 0; earlier < later; ++earlier) {
        const uint64_t d_earlier = df[w.topics[t][earlier]];
        if (d_earlier == 0) continue;
        umass += std::log((baseline.Pair(t, earlier, later) + 1.0) /
                          static_cast<double>(d_earlier));
        ++pairs;
      }
    }
    if ((pairs > 0) != r.topics[t].umass.has_value()) return false;
    if (pairs > 0 && std::abs(umass / pairs - *r.topics[t].umass) > 1e-12) {
      return false;
    }
  }
  return true;
}

void BM_Coherence(benchmark::State& state) {
  const Workload& w = MakeWorkload(static_cast<TopicId>(state.range(0)));
  CoherenceCounter counter(w.topics, kVocab, kTopWords);
  size_t d = 0;
  for (auto _ : state) counter.AddDocument(w.docs[d++ % w.docs.size()]);
  state.SetItemsProcessed(state.iterations());
}

void BM_CoherenceAllPairs(benchmark::State& state) {
  const Workload& w = MakeWorkload(static_cast<TopicId>(state.range(0)));
  AllPairsCounter counter(w.topics);
  size_t d = 0;
  for (auto _ : state) counter.AddDocument(w.docs[d++ % w.docs.size()]);
  state.SetItemsProcessed(state.iterations());
}

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (latentd::TopicId k : latentd::kTopicCounts) {
    if (!latentd::SameCounts(k)) {
      std::fprintf(stderr, "K=%u: the counter and the baseline disagree\n", k);
      return 1;
    }
    benchmark::RegisterBenchmark("BM_Coherence", latentd::BM_Coherence)
        ->Arg(k)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_CoherenceAllPairs",
                                 latentd::BM_CoherenceAllPairs)
        ->Arg(k)
        ->Unit(benchmark::kMicrosecond);
  }
  latentd::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n%-6s %14s %16s %10s\n", "K", "grouped docs/s",
              "all-pairs docs/s", "ratio");
  for (latentd::TopicId k : latentd::kTopicCounts) {
    auto g = reporter.times().find(absl::StrCat("BM_Coherence/", k));
    auto a = reporter.times().find(absl::StrCat("BM_CoherenceAllPairs/", k));
    if (g == reporter.times().end() || a == reporter.times().end()) continue;
    std::printf("%-6u %14.0f %16.0f %9.1fx\n", k, 1e6 / g->second,
                1e6 / a->second, a->second / g->second);
  }
  benchmark::Shutdown();
  return 0;
}
