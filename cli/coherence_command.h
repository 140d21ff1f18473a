// `latentctl coherence DIR`: the UMass and NPMI coherence of each topic of
// a trained model and their means (sampler/coherence.h defines both), over
// the training documents (DIR/tokens.lts) or another corpus (--corpus,
// tokenized as the model's corpus was; words the model does not know are
// ignored). `latentctl train` prints the means at its end through
// CoherenceSummaryLine.
//
// Example: latentctl coherence /tmp/ap --top 10
//
// Thread-safety: reentrant; each call loads its own copy of the model.
#ifndef LATENTD_CLI_COHERENCE_COMMAND_H_
#define LATENTD_CLI_COHERENCE_COMMAND_H_

#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "corpora/vocabulary.h"
#include "sampler/coherence.h"

namespace latentd {

struct CoherenceCommandOptions {
  std::string model_dir;
  // Reference corpus; "" = the model's training token store.
  std::string corpus;
  // Its format ("lines", "yahoo", "dir", "uci", "ldac"); "" = the model's
  // corpus format (settings.txt).
  std::string format;
  std::string vocab_path;  // uci/ldac vocabulary of --corpus
  int top_words = 10;      // M
  // "mimno" (the default) or "gensim" (gensim's ε smoothing:
  // sampler/coherence.h).
  std::string convention = "mimno";
  // Print one JSON object instead of text: dir, reference, documents,
  // topWords, convention, meanUmass, meanNpmi, topics [{topic, umass, npmi,
  // words}] (null where a value is undefined).
  bool json = false;
};

// Adds the `coherence` subcommand with its flags into *options.
CLI::App* AddCoherenceCommand(CLI::App* app, CoherenceCommandOptions* options);

// Runs the command: a table "topic umass npmi words" to `out` (one line
// per topic, then the means), or the JSON object.
// Errors: the model's or the corpus's, naming the file; kInvalidArgument
// for top_words < 2, an unknown format or convention.
absl::Status RunCoherence(const CoherenceCommandOptions& options, FILE* out);

// "coherence (top 10 words, 2246 documents): UMass -1.234 NPMI 0.056 (mean
// over topics)", "n/a" for an undefined mean.
std::string CoherenceSummaryLine(const CoherenceReport& report);

}  // namespace latentd

#endif  // LATENTD_CLI_COHERENCE_COMMAND_H_
