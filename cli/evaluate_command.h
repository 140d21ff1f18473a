// `latentctl evaluate DIR [--corpus FILE]`: the held-out quality of a
// trained model by document completion. For each document of at least two
// tokens (words the model does not know dropped first), θ is folded in
// from its first half (Gibbs fold-in against the frozen model,
// sampler/fold_in.h) and the second half is scored: the held-out
// log-likelihood per token is Σ log Σ_k θ_k φ_wk over the second halves
// divided by their tokens, and the perplexity is exp(−that). The documents
// are --corpus (tokenized as the model's corpus was) or, without it, the
// documents `latentctl train --holdout` set aside (DIR/heldout.lts) — the
// same computation train reports at its end and latentd --holdout reports
// as it trains.
//
// Example: latentctl evaluate /tmp/ap --corpus test.txt --format lines
//
// Thread-safety: reentrant; each call loads its own copy of the model.
#ifndef LATENTD_CLI_EVALUATE_COMMAND_H_
#define LATENTD_CLI_EVALUATE_COMMAND_H_

#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "cli/model_corpus.h"
#include "sampler/fold_in.h"

namespace latentd {

struct EvaluateCommandOptions {
  std::string model_dir;
  ModelCorpusOptions corpus;  // path "" = DIR/heldout.lts
  InferOptions infer;         // the fold-in of each first half
  // Print one JSON object instead of text: dir, corpus, documents,
  // scoredTokens, logLikelihoodPerToken, perplexity.
  bool json = false;
};

// Adds the `evaluate` subcommand with its flags into *options.
CLI::App* AddEvaluateCommand(CLI::App* app, EvaluateCommandOptions* options);

// Runs the command; one line (or the JSON object) to `out`. Errors: the
// model's or the corpus's, naming the file; kFailedPrecondition without
// --corpus when the model has no held-out documents; kInvalidArgument if
// no document has two known tokens.
absl::Status RunEvaluate(const EvaluateCommandOptions& options, FILE* out);

// "held-out log-likelihood per token -7.9512, perplexity 2839.41 (document
// completion: 1200 documents, 150000 tokens scored)".
std::string HeldoutSummaryLine(const PerplexityResult& result);

}  // namespace latentd

#endif  // LATENTD_CLI_EVALUATE_COMMAND_H_
