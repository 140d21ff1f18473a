// `latentctl train`: build a corpus into a model directory (or resume one)
// and run Gibbs sweeps, printing a progress line per sweep ("sweep i/N"
// with an ETA), checkpointing, and finally writing the exports and printing
// the topics. A directory that already holds a model is refused unless
// resume or overwrite is set.
//
// Thread-safety: one call at a time per model directory.
#ifndef LATENTD_CLI_TRAIN_COMMAND_H_
#define LATENTD_CLI_TRAIN_COMMAND_H_

#include <atomic>
#include <cstdio>
#include <string>

#include "absl/status/status.h"
#include "corpora/corpus_builder.h"
#include "corpora/document_reader.h"
#include "sampler/fold_in.h"
#include "sampler/trainer.h"

namespace latentd {

struct TrainCommandOptions {
  ReaderOptions input;         // ignored with resume
  CorpusBuilderOptions build;  // ignored with resume
  TrainerOptions trainer;
  std::string out_dir;
  int sweeps = 100;     // sweeps to run in this invocation
  bool resume = false;  // continue the model in out_dir
  // Replace a model already in out_dir. Without it (or resume) a directory
  // holding a model is refused, so no trained model is lost by a typo.
  bool overwrite = false;
  int checkpoint_every = 10;  // snapshot every N sweeps (and at the end)
  int top_words = 20;         // words per topic in topics.txt / stdout
  int print_topics = 20;      // topics printed at the end (0: none)
  // Print, at the end, a JSON summary of the run on `out` instead of the
  // topics: modelDir, sweep, sweepsRun, topics (K), documents, tokens,
  // samplingSeconds, tokensPerSecond, tableBytes and tableArenaPeakBytes
  // (the word-topic table's rows now and the most its arena held; the
  // arena is 0 in an AddressSanitizer build), logLikelihoodPerToken (last
  // evaluated sweep, if any), heldoutPerplexity and
  // heldoutLogLikelihoodPerToken (with --holdout; cli/evaluate_command.h),
  // coherenceUmass and coherenceNpmi (means over the topics of the top 10
  // words' coherence over the training documents, sampler/coherence.h;
  // null if undefined).
  bool json = false;
  InferOptions heldout_infer;  // fold-in for held-out perplexity
  // Set (e.g. by a signal handler) to stop after the current sweep; the
  // model is checkpointed and exported before returning.
  const std::atomic<bool>* stop = nullptr;
};

// Runs the command. Progress goes to `err` — ending with the held-out
// HeldoutSummaryLine (if any) and CoherenceSummaryLine — the topics to
// `out`.
absl::Status RunTrain(const TrainCommandOptions& options, FILE* out, FILE* err);

}  // namespace latentd

#endif  // LATENTD_CLI_TRAIN_COMMAND_H_
