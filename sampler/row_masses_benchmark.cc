// The SparseLDA row walk (sampler/internal/row_masses.h): its AVX2 and
// AVX-512 implementations against the scalar one, each measured where the
// CPU has it, whatever LATENTD_CPU says.
//
// BM_RowMasses/PATH/K: the rows a news20 sweep walks at K = 100 and 1000.
// A Zipf(1.0) vocabulary of 60,000 words over 2.18 M tokens (news20's
// size); a word's row as at a uniform random start (the densest state
// training sees): its tokens' topics drawn uniformly among K, the distinct
// ones its slots with their counts, in random order, one hole (count 0) per
// 8 slots. A row with more than K/2 topics is dense in the table and
// walked by another loop, so it is left out. 4,096 rows are drawn by token
// (a row is walked for each token of its word), so many are short and the
// frequent words' long rows (up to K/2) take most of the time; the excluded
// topic is one of the row's. Time per 4,096 rows (10 MiB at K=1000: in
// the L3 cache after the first pass).
//
// BM_RowMassesCold/PATH/K: the same with 65,536 rows (170 MiB at K=1000),
// so that each row comes from memory, as in a sweep, which visits the rows
// in document order: there the walk waits on memory more than it
// computes. Time per 65,536 rows.
//
// BM_RowMassesBySize/PATH/N: 256 rows of N slots at K = 1000, for the
// shortest row worth a vector walk (kRowMassesVectorSlots,
// kRowMassesAvx2Slots). Time per 256 rows.
//
// BM_DenseRowMasses/PATH/K: the walk of dense rows (dense_row_masses.h,
// the rows of frequent words, and of most words early on a large corpus)
// and the running sum the kernel takes after it: 4,096 rows of K topics,
// counts drawn as a dense row's, visited in a random order (1.6 MiB at
// K=100, 16 MiB at K=1000). Time per 4,096 rows.
//
// After the table the program prints each path's CPU time (the machine is
// shared; real time counts other work's) and its ratio to the scalar
// walk's (> 1: faster than scalar).
//
//   build/sampler/row_masses_benchmark --benchmark_min_time=0.5
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/bench/collecting_reporter.h"
#include "base/random.h"
#include "sampler/internal/dense_row_masses.h"
#include "sampler/internal/row_masses.h"
#include "sampler/topic_table.h"

namespace latentd {
namespace {

using internal::RowMassesFn;

constexpr uint32_t kVocab = 60'000;
constexpr double kTokens = 2.18e6;
constexpr size_t kRows = 4096;
constexpr size_t kColdRows = 65'536;
constexpr TopicId kTopicCounts[] = {100, 1000};
constexpr uint32_t kSizes[] = {8, 12, 16, 24, 32, 48, 64};
constexpr int kSizeRows = 256;

struct Path {
  const char* name;
  RowMassesFn fn;
};

std::vector<Path> Paths() {
  std::vector<Path> paths = {{"scalar", &internal::RowMassesScalar}};
  if (internal::RowMassesAvx2 != nullptr) {
    paths.push_back({"avx2", internal::RowMassesAvx2});
  }
  if (internal::RowMassesAvx512 != nullptr) {
    paths.push_back({"avx512", internal::RowMassesAvx512});
  }
  return paths;
}

struct Row {
  std::unique_ptr<std::atomic<TopicTable::RawEntry>[]> slots;
  uint32_t size = 0;
  TopicId excluded = 0;
};

struct Workload {
  TopicId K = 0;
  std::vector<double> coef;
  std::vector<Row> rows;
  uint32_t max_size = 0;
  uint64_t slots = 0;
};

// A row of `distinct` topic counts (topic -> count) in random order, one
// hole per 8 slots; the excluded topic is one of its topics.
Row MakeRow(const std::map<TopicId, Count>& counts, TopicId K, Rng& rng) {
  std::vector<TopicTable::RawEntry> slots;
  for (const auto& [k, c] : counts) {
    slots.push_back(TopicTable::RawPack(c, k));
    if (rng.UniformInt(8) == 0) {
      slots.push_back(
          TopicTable::RawPack(0, static_cast<TopicId>(rng.UniformInt(K))));
    }
  }
  for (size_t i = slots.size(); i > 1; --i) {
    std::swap(slots[i - 1], slots[rng.UniformInt(i)]);
  }
  Row row;
  row.size = static_cast<uint32_t>(slots.size());
  row.slots = std::make_unique<std::atomic<TopicTable::RawEntry>[]>(row.size);
  for (uint32_t i = 0; i < row.size; ++i) row.slots[i].store(slots[i]);
  row.excluded = TopicTable::RawTopic(slots[rng.UniformInt(row.size)]);
  return row;
}

void AddRow(Workload& w, Row row) {
  w.max_size = std::max(w.max_size, row.size);
  w.slots += row.size;
  w.rows.push_back(std::move(row));
}

std::vector<double> Coefficients(TopicId K, Rng& rng) {
  std::vector<double> coef(K);
  for (double& c : coef) c = 1e-4 + 1e-3 * rng.Uniform();
  return coef;
}

const Workload& News20Rows(TopicId K, size_t rows) {
  static std::map<std::pair<TopicId, size_t>, Workload> cache;
  Workload& w = cache[{K, rows}];
  if (!w.rows.empty()) return w;
  w.K = K;
  Rng rng(K);
  w.coef = Coefficients(K, rng);
  // Zipf(1.0) token counts, and their cumulative sum to draw by token.
  std::vector<double> cdf(kVocab);
  double h = 0;
  for (uint32_t r = 0; r < kVocab; ++r) cdf[r] = (h += 1.0 / (r + 1));
  std::vector<Count> topic_counts(K);
  while (w.rows.size() < rows) {
    const double u = rng.Uniform() * h;
    const auto r = static_cast<uint32_t>(
        std::lower_bound(cdf.begin(), cdf.end(), u) - cdf.begin());
    const auto f =
        static_cast<uint64_t>(std::max(1.0, std::round(kTokens / h / (r + 1))));
    if (f > 2 * uint64_t{K}) continue;  // more than K/2 topics: dense
    std::fill(topic_counts.begin(), topic_counts.end(), 0);
    for (uint64_t t = 0; t < f; ++t) ++topic_counts[rng.UniformInt(K)];
    std::map<TopicId, Count> counts;
    for (TopicId k = 0; k < K; ++k) {
      if (topic_counts[k] > 0) counts[k] = topic_counts[k];
    }
    if (counts.size() > K / 2) continue;
    AddRow(w, MakeRow(counts, K, rng));
  }
  return w;
}

const Workload& RowsOfSize(uint32_t size) {
  static std::map<uint32_t, Workload> cache;
  Workload& w = cache[size];
  if (!w.rows.empty()) return w;
  w.K = 1000;
  Rng rng(size);
  w.coef = Coefficients(w.K, rng);
  while (w.rows.size() < kSizeRows) {
    std::map<TopicId, Count> counts;
    while (counts.size() < size * 7 / 8) {
      counts[rng.UniformInt(w.K)] = 1 + rng.UniformInt(5);
    }
    Row row = MakeRow(counts, w.K, rng);
    if (row.size == size) AddRow(w, std::move(row));
  }
  return w;
}

void WalkAll(benchmark::State& state, RowMassesFn fn, const Workload& w) {
  const size_t room = w.max_size + internal::kRowMassesSlack;
  std::vector<TopicId> topics(room);
  std::vector<double> running(room);
  std::vector<Count> counts(room);
  const internal::RowMassesOut out{topics.data(), running.data(),
                                   counts.data()};
  for (auto _ : state) {
    for (const Row& row : w.rows) {
      int64_t tokens;
      const uint32_t n = fn(row.slots.get(), row.size, w.coef.data(),
                            row.excluded, out, &tokens);
      benchmark::DoNotOptimize(n);
      benchmark::DoNotOptimize(tokens);
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * w.slots));
}

struct DenseRows {
  TopicId K = 0;
  std::vector<double> coef;
  std::vector<std::unique_ptr<std::atomic<Count>[]>> rows;
  std::vector<TopicId> excluded;
};

const DenseRows& DenseWorkload(TopicId K) {
  static std::map<TopicId, DenseRows> cache;
  DenseRows& w = cache[K];
  if (!w.rows.empty()) return w;
  w.K = K;
  Rng rng(K + 7);
  w.coef = Coefficients(K, rng);
  for (size_t r = 0; r < kRows; ++r) {
    auto row = std::make_unique<std::atomic<Count>[]>(K);
    for (TopicId k = 0; k < K; ++k) {
      row[k].store(rng.UniformInt(4) == 0
                       ? 0
                       : static_cast<Count>(1 + rng.UniformInt(30)));
    }
    w.rows.push_back(std::move(row));
    w.excluded.push_back(static_cast<TopicId>(rng.UniformInt(K)));
  }
  for (size_t i = w.rows.size(); i > 1; --i) {
    const size_t j = rng.UniformInt(i);
    std::swap(w.rows[i - 1], w.rows[j]);
    std::swap(w.excluded[i - 1], w.excluded[j]);
  }
  return w;
}

void WalkDense(benchmark::State& state, internal::DenseRowMassesFn fn,
               const DenseRows& w) {
  std::vector<double> mass(w.K);
  for (auto _ : state) {
    for (size_t r = 0; r < w.rows.size(); ++r) {
      const int64_t tokens =
          fn(w.rows[r].get(), w.K, w.coef.data(), w.excluded[r], mass.data());
      const double q = internal::RunningSum(mass.data(), w.K);
      benchmark::DoNotOptimize(tokens);
      benchmark::DoNotOptimize(q);
      benchmark::ClobberMemory();
    }
  }
  state.SetItemsProcessed(
      static_cast<int64_t>(state.iterations() * w.rows.size() * w.K));
}

void PrintRatios(const std::map<std::string, double>& times,
                 const std::string& bench, const char* arg_name,
                 const std::vector<uint32_t>& args, const char* unit) {
  const std::vector<Path> paths = Paths();
  const std::string prefix = bench + "/";
  const auto it = times.lower_bound(prefix);
  if (it == times.end() || it->first.compare(0, prefix.size(), prefix) != 0) {
    return;  // filtered out
  }
  std::printf("\n%s (%s):\n%-6s", bench.c_str(), unit, arg_name);
  for (const Path& p : paths) std::printf(" %10s", p.name);
  for (size_t i = 1; i < paths.size(); ++i) {
    std::printf(" %9s/1", paths[i].name);
  }
  std::printf("\n");
  for (uint32_t arg : args) {
    std::vector<double> t;
    for (const Path& p : paths) {
      const auto it = times.find(absl::StrCat(bench, "/", p.name, "/", arg));
      t.push_back(it == times.end() ? NAN : it->second);
    }
    std::printf("%-6u", arg);
    for (double x : t) std::printf(" %10.2f", x);
    for (size_t i = 1; i < t.size(); ++i) std::printf(" %10.2fx", t[0] / t[i]);
    std::printf("\n");
  }
}

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) {
  using namespace latentd;  // NOLINT: main's own program
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  std::vector<uint32_t> ks(std::begin(kTopicCounts), std::end(kTopicCounts));
  std::vector<uint32_t> sizes(std::begin(kSizes), std::end(kSizes));
  for (const Path& p : Paths()) {
    for (TopicId k : kTopicCounts) {
      benchmark::RegisterBenchmark(
          absl::StrCat("BM_RowMasses/", p.name, "/", k).c_str(),
          [p, k](benchmark::State& s) {
            WalkAll(s, p.fn, News20Rows(k, kRows));
          })
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(
          absl::StrCat("BM_RowMassesCold/", p.name, "/", k).c_str(),
          [p, k](benchmark::State& s) {
            WalkAll(s, p.fn, News20Rows(k, kColdRows));
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
  std::vector<std::pair<const char*, internal::DenseRowMassesFn>> dense = {
      {"scalar", &internal::DenseRowMassesScalar}};
  if (internal::DenseRowMassesAvx2 != nullptr) {
    dense.push_back({"avx2", internal::DenseRowMassesAvx2});
  }
  if (internal::DenseRowMassesAvx512 != nullptr) {
    dense.push_back({"avx512", internal::DenseRowMassesAvx512});
  }
  for (const auto& [name, fn] : dense) {
    for (TopicId k : kTopicCounts) {
      benchmark::RegisterBenchmark(
          absl::StrCat("BM_DenseRowMasses/", name, "/", k).c_str(),
          [fn = fn, k](benchmark::State& s) {
            WalkDense(s, fn, DenseWorkload(k));
          })
          ->Unit(benchmark::kMicrosecond);
    }
  }
  for (const Path& p : Paths()) {
    for (uint32_t size : kSizes) {
      benchmark::RegisterBenchmark(
          absl::StrCat("BM_RowMassesBySize/", p.name, "/", size).c_str(),
          [p, size](benchmark::State& s) {
            WalkAll(s, p.fn, RowsOfSize(size));
          });
    }
  }
  bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf(
      "\nThe sampler's paths here: %s (sparse rows), %s (dense rows); this "
      "program runs every path\n",
      internal::kRowMassesPath.name, internal::kDenseRowMassesPath.name);
  PrintRatios(reporter.cpu_times(), "BM_RowMasses", "K", ks,
              "CPU us per 4096 rows");
  PrintRatios(reporter.cpu_times(), "BM_RowMassesCold", "K", ks,
              "CPU us per 65536 rows");
  PrintRatios(reporter.cpu_times(), "BM_DenseRowMasses", "K", ks,
              "CPU us per 4096 rows");
  PrintRatios(reporter.cpu_times(), "BM_RowMassesBySize", "size", sizes,
              "CPU ns per 256 rows");
  benchmark::Shutdown();
  return 0;
}
