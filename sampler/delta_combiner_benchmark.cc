// DeltaCombiner::Combine, the count updater's sort of a batch's topic
// changes, by the width of its radix digits: the default against the
// others, in the same run.
//
// Workload: batches of 16,384 tokens (the token store's), words drawn from
// a Zipf(1.0) vocabulary of V words, 73% of tokens changing topic (a sweep
// of the 200 M-token corpus after the first), K topics. After the table the
// program prints each width's time per batch over the default's.
//
//   build/sampler/delta_combiner_benchmark --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "base/bench/collecting_reporter.h"
#include "sampler/internal/delta_combiner.h"

namespace latentd {
namespace {

constexpr size_t kBatchTokens = 16'384;

std::vector<TopicChange> Changes(size_t vocab, TopicId k) {
  std::mt19937_64 rng(7);
  std::vector<double> weight(vocab);
  for (size_t w = 0; w < vocab; ++w) weight[w] = 1.0 / (w + 1.0);
  std::discrete_distribution<WordId> word(weight.begin(), weight.end());
  std::uniform_int_distribution<TopicId> topic(0, k - 1);
  std::bernoulli_distribution moves(0.73);
  std::vector<TopicChange> changes;
  for (size_t i = 0; i < kBatchTokens; ++i) {
    const TopicId from = topic(rng);
    changes.push_back({word(rng), from, moves(rng) ? topic(rng) : from});
  }
  return changes;
}

// Args: vocabulary, K, digit bits.
void BM_Combine(benchmark::State& state) {
  const std::vector<TopicChange> changes =
      Changes(static_cast<size_t>(state.range(0)),
              static_cast<TopicId>(state.range(1)));
  internal::DeltaCombiner combiner(static_cast<int>(state.range(2)));
  std::vector<WordTopicDelta> deltas;
  for (auto _ : state) {
    combiner.Combine(changes, &deltas);
    benchmark::DoNotOptimize(deltas.data());
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * kBatchTokens));
}

BENCHMARK(BM_Combine)
    ->ArgsProduct({{60'000, 200'000}, {100, 1000}, {12, 13, 14, 15}})
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) {
  latentd::bench::CollectingReporter reporter;
  if (!latentd::bench::RunBenchmarks(&argc, argv, &reporter)) return 1;
  const auto& cpu = reporter.cpu_times();
  std::printf("\ntime per batch over the default width's (%d bits)\n",
              latentd::internal::DeltaCombiner::kDefaultDigitBits);
  for (const auto& [name, ms] : cpu) {
    const size_t last = name.rfind('/');
    const std::string base =
        name.substr(0, last + 1) +
        std::to_string(latentd::internal::DeltaCombiner::kDefaultDigitBits);
    auto it = cpu.find(base);
    if (it == cpu.end() || it->first == name) continue;
    std::printf("%-32s %.3f\n", name.c_str(), ms / it->second);
  }
  return 0;
}
