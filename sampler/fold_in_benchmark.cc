// InferDocument's core, FoldIn::Infer, against its baseline: the textbook
// dense fold-in, which draws each token from all K conditionals
// (n_dk + α_k)(n_wk + β)/(n_k + Vβ) of the frozen model.
//
// Model: blei-ap (under $LATENTD_DATA_DIR, the real corpora) after 20
// sweeps at K = 100 (and K = 1000), α = 50/K, β = 0.01. Documents: 200
// tokens each, the first 200 tokens of AP documents long enough, cycled.
// 30 iterations, 10 burn-in (the daemon's defaults). After the usual table
// the program prints documents per second of both and their ratio.
//
//   LATENTD_DATA_DIR=DIR build/sampler/fold_in_benchmark
//       --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/bench/collecting_reporter.h"
#include "base/fast_mutexes.h"
#include "base/random.h"
#include "corpora/corpus_builder.h"
#include "corpora/document_reader.h"
#include "sampler/fold_in.h"
#include "sampler/trainer.h"

namespace latentd {
namespace {

constexpr size_t kDocTokens = 200;
constexpr TopicId kTopicCounts[] = {100, 1000};

struct Model {
  std::unique_ptr<Trainer> trainer;
  std::vector<std::vector<WordId>> docs;
};

// Trained once per K, shared by both benchmarks.
Model& TrainedModel(TopicId k) {
  static std::map<TopicId, Model> models;
  Model& m = models[k];
  if (m.trainer != nullptr) return m;
  const char* env = std::getenv("LATENTD_DATA_DIR");
  if (env == nullptr || *env == '\0') {
    std::fprintf(stderr,
                 "set LATENTD_DATA_DIR to the real corpora "
                 "(it reads blei-ap/ap.dat.zst there)\n");
    std::exit(1);
  }
  const std::string dir = std::string(env) + "/blei-ap";
  ReaderOptions input;
  input.format = CorpusFormat::kLdaC;
  input.path = dir + "/ap.dat.zst";
  input.vocab_path = dir + "/vocab.txt.zst";
  CorpusBuilderOptions build;
  build.num_topics = k;
  std::unique_ptr<TokenStore> store =
      CreateInMemoryTokenStore(TokenStoreMeta{});
  auto reader = OpenDocumentReader(input);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", reader.status().ToString().c_str());
    std::exit(1);
  }
  auto built = BuildCorpus(**reader, build, store.get());
  if (!built.ok()) {
    std::fprintf(stderr, "%s\n", built.status().ToString().c_str());
    std::exit(1);
  }
  TrainerOptions o;
  o.num_topics = k;
  o.optimize_alpha = false;
  o.eval_every = 0;
  auto trainer = Trainer::Create(o, std::move(store));
  if (!trainer.ok()) std::exit(1);
  m.trainer = std::move(*trainer);
  for (int s = 0; s < 20; ++s) {
    if (!m.trainer->Sweep().ok()) std::exit(1);
  }
  absl::Status read =
      ForEachDocument(m.trainer->store(), [&](const DocBatch& batch, size_t d) {
        auto words = batch.doc_words(d);
        if (words.size() < kDocTokens) return;
        m.docs.emplace_back(words.begin(), words.begin() + kDocTokens);
      });
  if (!read.ok()) std::exit(1);
  return m;
}

// The baseline: each token drawn from all K conditionals.
std::vector<double> DenseInfer(const TopicTable& table,
                               const std::vector<double>& alpha, double beta,
                               std::span<const WordId> words,
                               const InferOptions& options, uint64_t stream) {
  const TopicId K = table.num_topics();
  const double vbeta = beta * static_cast<double>(table.vocab_size());
  std::vector<double> inv(K), p(K), theta(K, 0.0);
  double alpha_sum = 0;
  for (TopicId k = 0; k < K; ++k) {
    inv[k] = 1.0 / (static_cast<double>(table.TopicTotal(k)) + vbeta);
    alpha_sum += alpha[k];
  }
  Rng rng = Rng::ForStream(options.seed, stream, 1);
  std::vector<TopicId> z(words.size());
  std::vector<int> n_dk(K, 0);
  for (size_t i = 0; i < words.size(); ++i) {
    z[i] = static_cast<TopicId>(rng.UniformInt(K));
    ++n_dk[z[i]];
  }
  int kept = 0;
  for (int it = 0; it < options.iterations; ++it) {
    for (size_t i = 0; i < words.size(); ++i) {
      --n_dk[z[i]];
      double total = 0;
      for (TopicId k = 0; k < K; ++k) {
        total +=
            (n_dk[k] + alpha[k]) * (table.Get(words[i], k) + beta) * inv[k];
        p[k] = total;
      }
      const double u = rng.Uniform() * total;
      TopicId pick = 0;
      while (pick + 1 < K && p[pick] <= u) ++pick;
      z[i] = pick;
      ++n_dk[pick];
    }
    if (it >= options.burn_in) {
      for (TopicId k = 0; k < K; ++k) theta[k] += n_dk[k] + alpha[k];
      ++kept;
    }
  }
  for (double& t : theta) t /= kept * (words.size() + alpha_sum);
  return theta;
}

InferOptions Options() {
  InferOptions o;
  o.iterations = 30;
  o.burn_in = 10;
  o.seed = 1;
  return o;
}

void BM_SparseFoldIn(benchmark::State& state) {
  Model& m = TrainedModel(static_cast<TopicId>(state.range(0)));
  FoldIn fold_in(m.trainer->table(), m.trainer->alpha(), m.trainer->beta());
  size_t d = 0;
  for (auto _ : state) {
    auto theta = fold_in.Infer(m.docs[d % m.docs.size()], Options(), d);
    benchmark::DoNotOptimize(theta);
    ++d;
  }
  state.SetItemsProcessed(state.iterations());
}

void BM_DenseFoldIn(benchmark::State& state) {
  Model& m = TrainedModel(static_cast<TopicId>(state.range(0)));
  size_t d = 0;
  for (auto _ : state) {
    auto theta =
        DenseInfer(m.trainer->table(), m.trainer->alpha(), m.trainer->beta(),
                   m.docs[d % m.docs.size()], Options(), d);
    benchmark::DoNotOptimize(theta);
    ++d;
  }
  state.SetItemsProcessed(state.iterations());
}

}  // namespace
}  // namespace latentd

int main(int argc, char** argv) {
  latentd::DisableMutexDeadlockDetection();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  for (latentd::TopicId k : latentd::kTopicCounts) {
    benchmark::RegisterBenchmark("BM_SparseFoldIn", latentd::BM_SparseFoldIn)
        ->Arg(k)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark("BM_DenseFoldIn", latentd::BM_DenseFoldIn)
        ->Arg(k)
        ->Unit(benchmark::kMicrosecond);
  }
  latentd::bench::CollectingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n%-6s %14s %14s %12s\n", "K", "sparse docs/s", "dense docs/s",
              "sparse/dense");
  for (latentd::TopicId k : latentd::kTopicCounts) {
    auto s = reporter.times().find(absl::StrCat("BM_SparseFoldIn/", k));
    auto d = reporter.times().find(absl::StrCat("BM_DenseFoldIn/", k));
    if (s == reporter.times().end() || d == reporter.times().end()) continue;
    std::printf("%-6u %14.0f %14.0f %11.1fx\n", k, 1e6 / s->second,
                1e6 / d->second, d->second / s->second);
  }
  benchmark::Shutdown();
  return 0;
}
