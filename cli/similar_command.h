// `latentctl similar`: the documents or users most like one, by Hellinger
// distance between topic mixtures, from a running latentd
// (SimilarDocuments, SimilarUsers; docs/api.md "Similar documents and
// users"):
//   latentctl similar --doc ID | --text "..." | --user ID [--top N]
//
// Text output: one line per neighbour, nearest first, "RANK\tID\tDISTANCE
// \tview V", then a line saying how stale the answer can be (the oldest
// view among them against the model's current one); --json prints the
// API's answer as one JSON object.
//
// Thread-safety: reentrant; each run opens its own connection.
#ifndef LATENTD_CLI_SIMILAR_COMMAND_H_
#define LATENTD_CLI_SIMILAR_COMMAND_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "cli/client_commands.h"

namespace latentd {

struct SimilarCommandOptions {
  DaemonAddress address;
  std::string doc;    // --doc: a document id of the model
  std::string text;   // --text: a new text, inferred first
  std::string user;   // --user: a user id
  uint32_t top = 10;  // --top, 1..1000
  bool json = false;
};

// Adds the `similar` subcommand; exactly one of --doc, --text, --user.
CLI::App* AddSimilarCommand(CLI::App* app, SimilarCommandOptions* options);

// Asks the daemon and prints the answer (above). The daemon's error for
// an unknown id, a top out of range or a text without a known word.
absl::Status RunSimilar(const SimilarCommandOptions& options, FILE* out);

}  // namespace latentd

#endif  // LATENTD_CLI_SIMILAR_COMMAND_H_
