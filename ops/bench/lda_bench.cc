// lda_bench: end-to-end LDA training benchmark. One configuration per run
// (so peak RSS is per configuration); ops/bench/lda_bench.sh runs the
// workload matrix and prints the ratios.
//
// Engines:
//   latentd  the product path: file token store streamed through the TBB
//            pipeline with the SparseLDA kernel, --threads samplers
//   dense    the baseline: plain serial O(K) collapsed Gibbs over in-memory
//            documents (ops/bench/dense_gibbs.h)
// Both start from the same initial assignments (the corpus builder's, same
// seed) and use fixed α and β, so their log-likelihood curves compare.
//
// Output: one "sweep" line per sweep (wall time, tokens/s, log-likelihood
// per token) and a final "result" line with the mean tokens/s, the wall
// time to first reach --target-ll (or -1) and the peak RSS.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "CLI/CLI.hpp"
#include "corpora/corpus_builder.h"
#include "ops/bench/dense_gibbs.h"
#include "sampler/doc_topic_stats.h"
#include "sampler/fast_mutexes.h"
#include "sampler/hyperparams.h"
#include "sampler/trainer.h"

namespace {

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// log p(w, z) per token of the trainer's current state: the word part from
// the table, the document part from a pass over the store.
absl::StatusOr<double> LogLikelihoodPerToken(latentd::Trainer& trainer) {
  latentd::DocTopicStats stats(trainer.alpha());
  auto reader = trainer.store()->Read();
  if (!reader.ok()) return reader.status();
  latentd::DocBatch batch;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok()) return more.status();
    if (!*more) break;
    for (size_t d = 0; d < batch.num_docs(); ++d) {
      stats.AddDocument(batch.doc_topics(d));
    }
  }
  const double ll =
      latentd::WordLogLikelihood(trainer.table(), trainer.beta()) +
      stats.log_likelihood();
  return ll / static_cast<double>(stats.tokens());
}

}  // namespace

int main(int argc, char** argv) {
  latentd::DisableMutexDeadlockDetection();
  CLI::App app{"lda_bench: time LDA sweeps of latentd or the dense baseline"};
  std::string corpus, vocab, format = "lines", engine = "latentd",
                             work_dir = "/tmp/lda_bench";
  uint32_t topics = 100;
  int threads = 1, sweeps = 50;
  double target_ll = 0, beta = 0.01;
  app.add_option("--corpus", corpus, "Corpus file")->required();
  app.add_option("--vocab", vocab, "Vocabulary (ldac/uci)");
  app.add_option("--format", format, "Corpus format")->capture_default_str();
  app.add_option("--engine", engine, "latentd | dense")
      ->check(CLI::IsMember({"latentd", "dense"}));
  app.add_option("--topics", topics, "K")->capture_default_str();
  app.add_option("--threads", threads, "Sampler threads (latentd)")
      ->capture_default_str();
  app.add_option("--sweeps", sweeps, "Sweeps")->capture_default_str();
  app.add_option("--target-ll", target_ll,
                 "Log-likelihood per token whose first crossing is timed");
  app.add_option("--work-dir", work_dir, "Scratch directory")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  auto fmt = latentd::ParseCorpusFormat(format);
  if (!fmt.ok()) {
    std::fprintf(stderr, "%s\n", std::string(fmt.status().message()).c_str());
    return 2;
  }
  std::filesystem::create_directories(work_dir);
  latentd::ReaderOptions input;
  input.format = *fmt;
  input.path = corpus;
  input.vocab_path = vocab;
  // news20.lines is already preprocessed: keep every word as it is.
  input.tokenizer.remove_stopwords = false;
  input.tokenizer.min_length = 1;
  latentd::CorpusBuilderOptions build;
  build.num_topics = topics;
  build.seed = 1;
  const std::string store_path = work_dir + "/bench.lts";
  auto built = latentd::BuildCorpusFiles(input, build, store_path);
  if (!built.ok()) {
    std::fprintf(stderr, "%s\n", std::string(built.status().message()).c_str());
    return 1;
  }
  auto store = latentd::OpenFileTokenStore(store_path);
  if (!store.ok()) return 1;
  const double alpha = 50.0 / topics;
  std::printf(
      "corpus %s: %llu documents, %llu tokens, %zu words; K=%u "
      "engine=%s threads=%d\n",
      corpus.c_str(), (unsigned long long)built->stats.documents,
      (unsigned long long)built->stats.tokens, built->vocab.size(), topics,
      engine.c_str(), engine == "dense" ? 1 : threads);

  double wall = 0, sampled_seconds = 0, reached = -1, last_ll = 0;
  uint64_t tokens = 0;
  // The last quarter of the sweeps: the rate once the word rows have
  // thinned out, which is what a long training run mostly sees.
  const int tail_from = sweeps - std::max(sweeps / 4, 1) + 1;
  double tail_seconds = 0;
  uint64_t tail_tokens = 0;
  auto record = [&](int sweep, double seconds, uint64_t n, double ll) {
    wall += seconds;
    sampled_seconds += seconds;
    tokens += n;
    if (sweep >= tail_from) {
      tail_seconds += seconds;
      tail_tokens += n;
    }
    last_ll = ll;
    if (reached < 0 && target_ll != 0 && ll >= target_ll) reached = wall;
    std::printf("sweep %d wall %.3f tokens/s %.0f ll/token %.4f\n", sweep, wall,
                n / seconds, ll);
    std::fflush(stdout);
  };

  if (engine == "dense") {
    // The same initial assignments, held in memory.
    std::vector<std::vector<latentd::WordId>> docs;
    std::vector<std::vector<latentd::TopicId>> z;
    auto reader = (*store)->Read();
    if (!reader.ok()) return 1;
    latentd::DocBatch batch;
    while (true) {
      absl::StatusOr<bool> more = (*reader)->Next(&batch);
      if (!more.ok()) {
        std::fprintf(stderr, "%s\n",
                     std::string(more.status().message()).c_str());
        return 1;
      }
      if (!*more) break;
      for (size_t d = 0; d < batch.num_docs(); ++d) {
        docs.emplace_back(batch.doc_words(d).begin(), batch.doc_words(d).end());
        z.emplace_back(batch.doc_topics(d).begin(), batch.doc_topics(d).end());
      }
    }
    latentd::bench::DenseGibbs dense(std::move(docs), std::move(z),
                                     built->vocab.size(), topics, alpha, beta,
                                     1);
    for (int s = 1; s <= sweeps; ++s) {
      const auto start = std::chrono::steady_clock::now();
      dense.Sweep();
      const double seconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
      record(s, seconds, dense.num_tokens(), dense.LogLikelihoodPerToken());
    }
  } else {
    latentd::TrainerOptions options;
    options.num_topics = topics;
    options.alpha = alpha;
    options.beta = beta;
    options.optimize_alpha = false;
    options.pipeline.threads = threads;
    // The log-likelihood is computed outside the timed sweep, as for the
    // dense sampler, so that both rates measure sampling alone.
    options.eval_every = 0;
    auto trainer = latentd::Trainer::Create(options, std::move(*store));
    if (!trainer.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(trainer.status().message()).c_str());
      return 1;
    }
    for (int s = 1; s <= sweeps; ++s) {
      auto report = (*trainer)->Sweep();
      if (!report.ok()) return 1;
      absl::StatusOr<double> ll = LogLikelihoodPerToken(**trainer);
      if (!ll.ok()) {
        std::fprintf(stderr, "%s\n",
                     std::string(ll.status().message()).c_str());
        return 1;
      }
      record(s, report->result.seconds, report->result.tokens, *ll);
    }
  }
  std::printf(
      "result engine=%s K=%u threads=%d tokens_per_s=%.0f "
      "tail_tokens_per_s=%.0f seconds_to_target=%.3f final_ll=%.4f "
      "peak_rss_mib=%.1f\n",
      engine.c_str(), topics, engine == "dense" ? 1 : threads,
      tokens / sampled_seconds, tail_tokens / tail_seconds, reached, last_ll,
      PeakRssMiB());
  std::filesystem::remove(store_path);
  return 0;
}
