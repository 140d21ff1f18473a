// `latentctl topics` and `latentctl infer` against a model directory, and
// the output forms they share with the same commands against a daemon
// (cli/client_commands.h), so that both print the same text and JSON.
//
// Thread-safety: reentrant; each call loads its own copy of the model.
#ifndef LATENTD_CLI_QUERY_COMMANDS_H_
#define LATENTD_CLI_QUERY_COMMANDS_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "sampler/fold_in.h"
#include "service/api.pb.h"

namespace latentd {

struct TopicsCommandOptions {
  std::string model_dir;
  int top = 20;                  // words per topic
  std::optional<int64_t> topic;  // only this topic
  bool json = false;             // print TopicsJson instead of text
};

// Prints each topic's top words with their probabilities: a line
// "topic <k>\talpha=<α_k>\ttokens=<n_k>", then "  <word>\t<φ>" per word.
// Fails with kOutOfRange naming K for a topic id the model does not have.
absl::Status RunTopics(const TopicsCommandOptions& options, FILE* out);

struct InferCommandOptions {
  std::string model_dir;
  InferOptions infer;
  int top = 5;        // topics printed per document
  int words = 3;      // each printed topic's top words (0: none)
  bool json = false;  // print InferJsonLine / InferErrorJsonLine instead
};

// Reads documents, one per line of `in`, tokenized as in training; prints
// one line per input line: "<line number>\t<topic>:<θ> (<words>)..." (the
// `top` largest θ, each with its `words` most probable words), or the line
// number alone for a line without known words, which also gets a message on
// `err` naming the line; the rest go on. Fails only if the model cannot be
// loaded.
absl::Status RunInfer(const InferCommandOptions& options, FILE* in, FILE* out,
                      FILE* err);

// --json of topics: one line, the ListTopicsResponse as JSON.
std::string TopicsJson(const api::ListTopicsResponse& topics);
// --json of infer: one line per input line, the InferDocumentResponse as
// JSON with "line" (1-based) added, or {"line":N,"error":"..."}.
std::string InferJsonLine(uint64_t line, const api::InferDocumentResponse& r);
std::string InferErrorJsonLine(uint64_t line, std::string_view message);
// Text of infer: "<line>\t<topic>:<weight> (<word> ...)..." (no newline;
// the parenthesis only where the response has the topic's top words).
std::string InferTextLine(uint64_t line, const api::InferDocumentResponse& r);

}  // namespace latentd

#endif  // LATENTD_CLI_QUERY_COMMANDS_H_
