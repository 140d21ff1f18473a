// lda_bench: end-to-end LDA training benchmark. One configuration per run
// (so peak RSS is per configuration); ops/bench/lda_bench.sh runs the
// workload matrix and prints the ratios.
//
// Engines:
//   latentd  the product path: file token store streamed through the TBB
//            pipeline, --kernel (auto, sparse, dense, mh), --threads
//            samplers, --progressive-start (the product's default start;
//            without it the uniform start), --init-row-topics (the sparse
//            start, 0: off),
//            --no-overlay (a batch's tokens do not see its own moves on
//            the word rows: the sampler before issue 15),
//            --overlay-max-word-tokens (the overlay follows only words
//            with at most this many tokens; 0: all)
//   dense    the baseline: plain serial O(K) collapsed Gibbs over in-memory
//            documents (ops/bench/dense_gibbs.h)
// Both start from the same initial assignments (the corpus builder's, drawn
// with --seed, which also seeds the sampler) and use fixed α (--alpha,
// default 50/K) and β, so their log-likelihood curves compare. --raw-text
// tokenizes with the product's defaults (stop words and one-letter words
// dropped) instead of keeping every word of a preprocessed corpus.
//
// Output: one "sweep" line per sweep (wall time, tokens/s, tokens per CPU
// second of the process, log-likelihood per token, kernel; latentd: then a
// "rows" line with the token-weighted mean non-zero topics of the word
// rows) and a final "result" line with the mean tokens/s and tokens per
// CPU second (the rate to compare on a shared machine: CPU time hardly
// depends on the load beside it), the wall time at which the
// log-likelihood last crossed --target-ll from below (-1 if it ended
// below), the log-likelihood of the last sweep ended by 3 s and by 10 s of
// sampling, and the peak RSS. With --holdout F (latentd only) that share of
// the documents is held out, and every --heldout-every sweeps (and after the
// last) the held-out log-likelihood per token by document completion is
// printed ("heldout" lines, computed off the clock, as latentctl train's);
// the result line then adds the last one and the sampling time at which an
// evaluation first reached --target-heldout (-1 if none did).
//
// WarpLDA's model scored on the same split (warplda_side_by_side.sh with
// HOLDOUT set): --training-text FILE writes the training documents in the
// text form WarpLDA's `format` reads and exits; --score-state Z.estimate
// --state-vocab VOCAB scores a WarpLDA topic dump of those documents on the
// held-out ones as latentd's state is scored ("result state_heldout_ll")
// and exits; --dump-state PREFIX writes latentd's final state in that dump's
// form (ops/bench/warplda_state.h).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "CLI/CLI.hpp"
#include "base/fast_mutexes.h"
#include "corpora/corpus_builder.h"
#include "ops/bench/dense_gibbs.h"
#include "ops/bench/warplda_state.h"
#include "sampler/doc_topic_stats.h"
#include "sampler/fold_in.h"
#include "sampler/hyperparams.h"
#include "sampler/sampling_kernel.h"
#include "sampler/trainer.h"

namespace {

// CPU seconds (user + system) of the whole process so far: a sweep's CPU
// cost, unlike its wall time, hardly depends on what else the machine runs.
double ProcessCpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) * 1e-6;
}

double PeakRssMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024.0;
}

// log p(w, z) per token of the trainer's current state: the word part from
// the table, the document part from a pass over the store.
absl::StatusOr<double> LogLikelihoodPerToken(latentd::Trainer& trainer) {
  latentd::DocTopicStats stats(trainer.alpha());
  absl::Status read = latentd::ForEachDocument(
      trainer.store(), [&](const latentd::DocBatch& batch, size_t d) {
        stats.AddDocument(batch.doc_topics(d));
      });
  if (!read.ok()) return read;
  const double ll =
      latentd::WordLogLikelihood(trainer.table(), trainer.beta()) +
      stats.log_likelihood();
  return ll / static_cast<double>(stats.tokens());
}

// The held-out log-likelihood per token, by document completion, of the
// model in `table`: what latentctl train prints for --holdout.
absl::StatusOr<double> HeldOutLogLikelihood(const latentd::TopicTable& table,
                                            std::vector<double> alpha,
                                            double beta,
                                            latentd::TokenStore* heldout) {
  latentd::FoldIn fold_in(table, std::move(alpha), beta);
  absl::StatusOr<latentd::PerplexityResult> p =
      latentd::DocumentCompletionPerplexity(&fold_in, heldout,
                                            latentd::InferOptions{});
  if (!p.ok()) return p.status();
  return p->log_likelihood_per_token();
}

void PrintError(const absl::Status& status) {
  std::fprintf(stderr, "lda_bench: %s\n",
               std::string(status.message()).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  latentd::DisableMutexDeadlockDetection();
  CLI::App app{"lda_bench: time LDA sweeps of latentd or the dense baseline"};
  std::string corpus, vocab, format = "lines", engine = "latentd",
                             work_dir = "/tmp/lda_bench";
  uint32_t topics = 100;
  int threads = 1, sweeps = 50, mh_steps = 2, in_flight = 0;
  std::string kernel = "sparse", mh_order = "word";
  double max_seconds = 0, mh_refresh = 1.0;
  uint32_t init_row_topics = 0;
  bool progressive_start = false;
  int serial_batches = latentd::TrainerOptions().progressive_serial_batches;
  int progressive_stride = latentd::TrainerOptions().progressive_stride;
  double progressive_smoothing =
      latentd::TrainerOptions().progressive_smoothing;
  double target_ll = 0, beta = 0.01, alpha = 0;
  double holdout = 0, target_heldout = 0;
  int heldout_every = 10;
  uint64_t seed = 1, batch_tokens = 16384, min_batches = 128;
  std::string overlay_max_word_tokens = "auto";
  std::string training_text, score_state, state_vocab, dump_state;
  bool raw_text = false, no_overlay = false;
  app.add_option("--corpus", corpus, "Corpus file")->required();
  app.add_option("--vocab", vocab, "Vocabulary (ldac/uci)");
  app.add_option("--format", format, "Corpus format")->capture_default_str();
  app.add_option("--engine", engine, "latentd | dense")
      ->check(CLI::IsMember({"latentd", "dense"}));
  app.add_option("--topics", topics, "K")->capture_default_str();
  app.add_option("--threads", threads, "Sampler threads (latentd)")
      ->capture_default_str();
  app.add_option("--sweeps", sweeps, "Sweeps")->capture_default_str();
  app.add_option("--in-flight", in_flight,
                 "latentd: batches in the pipeline at once in the sweeps (0: "
                 "2 x threads + 1, one with one thread); the progressive "
                 "start's pass keeps at most one a thread")
      ->capture_default_str();
  app.add_option("--kernel", kernel, "latentd kernel: auto|sparse|dense|mh")
      ->check(CLI::IsMember({"auto", "sparse", "dense", "mh"}))
      ->capture_default_str();
  app.add_option("--mh-steps", mh_steps, "MH cycles per token (mh, auto)")
      ->capture_default_str();
  app.add_option("--mh-refresh", mh_refresh,
                 "Draws per slot before a word's MH proposal is rebuilt")
      ->capture_default_str();
  app.add_option("--mh-order", mh_order,
                 "MH visits a batch's tokens grouped by word or in document "
                 "order")
      ->check(CLI::IsMember({"word", "document"}))
      ->capture_default_str();
  app.add_option("--init-row-topics", init_row_topics,
                 "Sparse start: topics per word of the first pass (0: off)")
      ->capture_default_str();
  app.add_flag("--progressive-start", progressive_start,
               "Progressive start: a first pass drawing each token given "
               "those placed before it");
  app.add_option("--serial-batches", serial_batches,
                 "Progressive start: its first stage samples this many "
                 "first batches one at a time (0: none)")
      ->capture_default_str();
  app.add_option("--progressive-stride", progressive_stride,
                 "Progressive start: its first stage samples every this "
                 "many-th batch, the second the rest (1: one stage)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--progressive-smoothing", progressive_smoothing,
                 "Progressive start: the second stage's beta is max(beta, "
                 "this / max(K, 100)) (0: beta)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-seconds", max_seconds,
                 "Stop after this many seconds of sampling (0: no limit)")
      ->capture_default_str();
  app.add_option("--target-ll", target_ll,
                 "Log-likelihood per token whose first crossing is timed");
  app.add_option("--work-dir", work_dir, "Scratch directory")
      ->capture_default_str();
  app.add_option("--alpha", alpha, "Symmetric alpha, fixed (0: 50/K)")
      ->capture_default_str();
  app.add_option("--seed", seed, "Initial topics and sampler seed")
      ->capture_default_str();
  app.add_option("--batch-tokens", batch_tokens,
                 "Target tokens per batch of the token store")
      ->capture_default_str();
  app.add_option("--min-batches", min_batches,
                 "Batches sized to the corpus: at least this many (0: off)")
      ->capture_default_str();
  app.add_flag("--raw-text", raw_text,
               "Default tokenizer (drop stop words) instead of keeping words");
  app.add_flag("--no-overlay", no_overlay,
               "latentd: a batch's tokens do not see its own row moves");
  app.add_option("--overlay-max-word-tokens", overlay_max_word_tokens,
                 "latentd: the overlay follows words with at most this many "
                 "tokens (0: every word; auto: by the documents' length)")
      ->check([](const std::string& v) {
        auto n = latentd::ParseOverlayMaxWordTokens(v);
        return n.ok() ? std::string() : std::string(n.status().message());
      })
      ->capture_default_str();
  app.add_option("--holdout", holdout,
                 "latentd: share of documents held out; their document "
                 "completion log-likelihood is printed every --heldout-every "
                 "sweeps (0: none)")
      ->check(CLI::Range(0.0, 0.99));
  app.add_option("--heldout-every", heldout_every,
                 "With --holdout: sweeps between held-out evaluations (and "
                 "after the last)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--target-heldout", target_heldout,
                 "With --holdout: held-out log-likelihood per token whose "
                 "first reaching is timed");
  app.add_option("--training-text", training_text,
                 "Write the training documents to this file in WarpLDA's "
                 "text form (\"dN dN\" then the words) and exit");
  app.add_option("--score-state", score_state,
                 "With --holdout and --state-vocab: score this WarpLDA "
                 "topic dump (PREFIX.z.estimate) of the training documents "
                 "on the held-out ones and exit");
  app.add_option("--state-vocab", state_vocab,
                 "The vocabulary of --score-state (WarpLDA's PREFIX.vocab)");
  app.add_option("--dump-state", dump_state,
                 "latentd: after the last sweep, write the state as "
                 "PREFIX.z.estimate and PREFIX.vocab (WarpLDA's forms)");
  CLI11_PARSE(app, argc, argv);
  if (!score_state.empty() && (holdout <= 0 || state_vocab.empty())) {
    std::fprintf(stderr, "--score-state needs --holdout and --state-vocab\n");
    return 2;
  }
  if (holdout > 0 && engine != "latentd") {
    std::fprintf(stderr, "--holdout needs --engine latentd\n");
    return 2;
  }

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
  if (!raw_text) {
    input.tokenizer.remove_stopwords = false;
    input.tokenizer.min_length = 1;
  }
  latentd::CorpusBuilderOptions build;
  build.num_topics = topics;
  build.seed = seed;
  build.batch_tokens = batch_tokens;
  build.min_batches = min_batches;
  build.holdout_fraction = holdout;
  const std::string store_path = work_dir + "/bench.lts";
  const std::string heldout_path =
      holdout > 0 ? work_dir + "/heldout.lts" : std::string();
  auto built =
      latentd::BuildCorpusFiles(input, build, store_path, heldout_path);
  if (!built.ok()) {
    std::fprintf(stderr, "%s\n", std::string(built.status().message()).c_str());
    return 1;
  }
  auto store = latentd::OpenFileTokenStore(store_path);
  if (!store.ok()) return 1;
  absl::StatusOr<std::unique_ptr<latentd::TokenStore>> heldout_store;
  if (holdout > 0) {
    heldout_store = latentd::OpenFileTokenStore(heldout_path);
    if (!heldout_store.ok()) return 1;
  }
  double last_heldout = 0, heldout_reached = -1;
  if (alpha <= 0) alpha = 50.0 / topics;
  // The modes that do not sample.
  if (!training_text.empty() || !score_state.empty()) {
    absl::Status done;
    if (!training_text.empty()) {
      done = latentd::bench::WriteWarpLdaText(store->get(), built->vocab,
                                              training_text);
      if (done.ok()) {
        std::printf("wrote %llu training documents to %s\n",
                    (unsigned long long)built->stats.documents,
                    training_text.c_str());
      }
    } else {
      done = [&]() -> absl::Status {
        auto counts = latentd::bench::ReadWarpLdaCounts(
            score_state, state_vocab, built->vocab, topics);
        if (!counts.ok()) return counts.status();
        latentd::TopicTable table((*store)->meta().vocab_size, topics);
        absl::Status applied = table.Apply(*counts);
        if (!applied.ok()) return applied;
        auto ll =
            HeldOutLogLikelihood(table, std::vector<double>(topics, alpha),
                                 beta, heldout_store->get());
        if (!ll.ok()) return ll.status();
        std::printf("result state_heldout_ll=%.4f state_tokens=%lld\n", *ll,
                    (long long)table.TotalTokens());
        return absl::OkStatus();
      }();
    }
    std::filesystem::remove(store_path);
    if (holdout > 0) std::filesystem::remove(heldout_path);
    if (!done.ok()) PrintError(done);
    return done.ok() ? 0 : 1;
  }
  std::printf(
      "corpus %s: %llu documents, %llu tokens, %zu words; K=%u "
      "engine=%s threads=%d; %s\n",
      corpus.c_str(), (unsigned long long)built->stats.documents,
      (unsigned long long)built->stats.tokens, built->vocab.size(), topics,
      engine.c_str(), engine == "dense" ? 1 : threads,
      latentd::CpuPathsDescription().c_str());

  double wall = 0, sampled_seconds = 0, reached = -1, last_ll = 0;
  double ll_at_3 = 0, ll_at_10 = 0;  // 0: no sweep ended by then
  int sweeps_run = 0;
  auto out_of_time = [&] { return max_seconds > 0 && wall >= max_seconds; };
  uint64_t tokens = 0;
  std::string kernel_ran = "dense";
  // The last quarter of the sweeps: the rate once the word rows have
  // thinned out, which is what a long training run mostly sees.
  const int tail_from = sweeps - std::max(sweeps / 4, 1) + 1;
  double tail_seconds = 0, cpu = 0, tail_cpu = 0;
  uint64_t tail_tokens = 0;
  auto record = [&](int sweep, double seconds, double cpu_seconds, uint64_t n,
                    double ll) {
    wall += seconds;
    cpu += cpu_seconds;
    sampled_seconds += seconds;
    tokens += n;
    if (sweep >= tail_from) {
      tail_seconds += seconds;
      tail_cpu += cpu_seconds;
      tail_tokens += n;
    }
    last_ll = ll;
    // The time of the last crossing of the target from below: a run that
    // starts above it (a sparse start's first state can) and falls back
    // has not reached it yet.
    if (target_ll != 0 && ll < target_ll) reached = -1;
    if (reached < 0 && target_ll != 0 && ll >= target_ll) reached = wall;
    // The log-likelihood of the last state reached within 3 s and 10 s.
    if (wall <= 3.0) ll_at_3 = ll;
    if (wall <= 10.0) ll_at_10 = ll;
    sweeps_run = sweep;
    std::printf(
        "sweep %d wall %.3f tokens/s %.0f tokens/cpu-s %.0f ll/token %.4f "
        "kernel %s\n",
        sweep, wall, n / seconds, n / cpu_seconds, ll, kernel_ran.c_str());
    std::fflush(stdout);
  };

  if (engine == "dense") {
    // The same initial assignments, held in memory.
    std::vector<std::vector<latentd::WordId>> docs;
    std::vector<std::vector<latentd::TopicId>> z;
    absl::Status read = latentd::ForEachDocument(
        store->get(), [&](const latentd::DocBatch& batch, size_t d) {
          docs.emplace_back(batch.doc_words(d).begin(),
                            batch.doc_words(d).end());
          z.emplace_back(batch.doc_topics(d).begin(),
                         batch.doc_topics(d).end());
        });
    if (!read.ok()) {
      std::fprintf(stderr, "%s\n", std::string(read.message()).c_str());
      return 1;
    }
    latentd::bench::DenseGibbs dense(std::move(docs), std::move(z),
                                     built->vocab.size(), topics, alpha, beta,
                                     seed);
    for (int s = 1; s <= sweeps && !out_of_time(); ++s) {
      const auto start = std::chrono::steady_clock::now();
      const double cpu_start = ProcessCpuSeconds();
      dense.Sweep();
      const double seconds = std::chrono::duration<double>(
                                 std::chrono::steady_clock::now() - start)
                                 .count();
      record(s, seconds, ProcessCpuSeconds() - cpu_start, dense.num_tokens(),
             dense.LogLikelihoodPerToken());
    }
  } else {
    latentd::TrainerOptions options;
    options.num_topics = topics;
    options.alpha = alpha;
    options.beta = beta;
    options.optimize_alpha = false;
    options.pipeline.threads = threads;
    options.pipeline.max_batches_in_flight = in_flight;
    options.pipeline.kernel = *latentd::ParseKernelKind(kernel);
    options.init_row_topics = init_row_topics;
    options.progressive_start = progressive_start;
    options.progressive_serial_batches = serial_batches;
    options.progressive_stride = progressive_stride;
    options.progressive_smoothing = progressive_smoothing;
    options.pipeline.kernel_options.mh.steps = mh_steps;
    options.pipeline.kernel_options.mh.refresh = mh_refresh;
    options.pipeline.kernel_options.mh.word_order = mh_order == "word";
    options.pipeline.kernel_options.batch_overlay = !no_overlay;
    options.pipeline.kernel_options.overlay_max_word_tokens =
        *latentd::ParseOverlayMaxWordTokens(overlay_max_word_tokens);
    options.seed = seed;
    // The log-likelihood is computed outside the timed sweep, as for the
    // dense sampler, so that both rates measure sampling alone.
    options.eval_every = 0;
    auto trainer = latentd::Trainer::Create(options, std::move(*store));
    if (!trainer.ok()) {
      std::fprintf(stderr, "%s\n",
                   std::string(trainer.status().message()).c_str());
      return 1;
    }
    for (int s = 1; s <= sweeps && !out_of_time(); ++s) {
      const double cpu_start = ProcessCpuSeconds();
      auto report = (*trainer)->Sweep();
      const double cpu_seconds = ProcessCpuSeconds() - cpu_start;
      if (!report.ok()) return 1;
      kernel_ran = std::string(latentd::KernelKindName(report->kernel));
      if (report->init_seconds > 0) {
        char init[64];
        std::snprintf(init, sizeof init, " after a %.3f s start pass",
                      report->init_seconds);
        kernel_ran += init;
      }
      if (report->mean_row_topics > 0) {
        kernel_ran += " (auto: mean row topics " +
                      std::to_string(report->mean_row_topics) + ")";
      }
      absl::StatusOr<double> ll = LogLikelihoodPerToken(**trainer);
      if (!ll.ok()) {
        std::fprintf(stderr, "%s\n",
                     std::string(ll.status().message()).c_str());
        return 1;
      }
      record(s, report->result.seconds, cpu_seconds, report->result.tokens,
             *ll);
      std::printf("rows sweep %d mean_row_topics %.1f\n", s,
                  (*trainer)->table().MeanRowTopics());
      if (holdout > 0 &&
          (s % heldout_every == 0 || s == sweeps || out_of_time())) {
        auto ll =
            HeldOutLogLikelihood((*trainer)->table(), (*trainer)->alpha(),
                                 (*trainer)->beta(), heldout_store->get());
        if (!ll.ok()) {
          PrintError(ll.status());
          return 1;
        }
        last_heldout = *ll;
        if (heldout_reached < 0 && target_heldout != 0 &&
            last_heldout >= target_heldout) {
          heldout_reached = wall;
        }
        std::printf("heldout sweep %d wall %.3f ll/token %.4f\n", s, wall,
                    last_heldout);
      }
    }
    if (!dump_state.empty()) {
      absl::Status dumped = latentd::bench::WriteWarpLdaState(
          (*trainer)->store(), built->vocab, dump_state);
      if (!dumped.ok()) {
        PrintError(dumped);
        return 1;
      }
    }
  }
  std::printf(
      "result engine=%s K=%u threads=%d tokens_per_s=%.0f "
      "tail_tokens_per_s=%.0f tokens_per_cpu_s=%.0f tail_tokens_per_cpu_s=%.0f "
      "seconds_to_target=%.3f final_ll=%.4f "
      "ll_at_3s=%.4f ll_at_10s=%.4f sweeps=%d peak_rss_mib=%.1f\n",
      engine.c_str(), topics, engine == "dense" ? 1 : threads,
      tokens / sampled_seconds,
      tail_seconds > 0 ? tail_tokens / tail_seconds : 0.0, tokens / cpu,
      tail_cpu > 0 ? tail_tokens / tail_cpu : 0.0, reached, last_ll, ll_at_3,
      ll_at_10, sweeps_run, PeakRssMiB());
  if (holdout > 0) {
    std::printf("result heldout_ll=%.4f seconds_to_heldout_target=%.3f\n",
                last_heldout, heldout_reached);
    std::filesystem::remove(heldout_path);
  }
  std::filesystem::remove(store_path);
  return 0;
}
