// `latentctl topics` and `latentctl infer` against a model directory.
//
// Thread-safety: reentrant; each call loads its own copy of the model.
#ifndef LATENTD_CLI_QUERY_COMMANDS_H_
#define LATENTD_CLI_QUERY_COMMANDS_H_

#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "sampler/fold_in.h"

namespace latentd {

struct TopicsCommandOptions {
  std::string model_dir;
  int top = 20;                  // words per topic
  std::optional<int64_t> topic;  // only this topic
};

// Prints each topic's top words with their probabilities. Fails with
// kOutOfRange naming K for a topic id the model does not have.
absl::Status RunTopics(const TopicsCommandOptions& options, FILE* out);

struct InferCommandOptions {
  std::string model_dir;
  InferOptions infer;
  int top = 5;  // topics printed per document
};

// Reads documents, one per line of `in`, tokenized as in training; prints
// "<line>\t<topic>:<θ> ..." (the `top` largest θ) per document. A line
// without known words gets a message on `err` naming the line, and the
// rest go on. Fails only if the model cannot be loaded.
absl::Status RunInfer(const InferCommandOptions& options, FILE* in, FILE* out,
                      FILE* err);

}  // namespace latentd

#endif  // LATENTD_CLI_QUERY_COMMANDS_H_
