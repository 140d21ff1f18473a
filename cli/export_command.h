// `latentctl export`: the model a running latentd serves (its published
// view) written into a directory in the text formats `latentctl train`
// writes — vocab.txt, word_topic_counts.tsv, alpha.txt, topics.txt — by the
// same writers (sampler/model_export.h), so the files are byte-identical to
// an offline export of the same counts, vocabulary, α and β. The model
// comes through the paged ExportModel call (service/api.proto); pages of
// different model versions are never mixed: the fetch starts over, a few
// times at most, and then fails saying that training is moving the model.
//
// From a cluster node (ExportModelResponse.cluster) the words come sorted
// by their bytes, without the words that have no count: every node of a
// drained cluster gives the same files.
//
// Example: latentctl export --addr 127.0.0.1:7071 --out /tmp/model
//
// Given a model directory instead (`latentctl export DIR --format F`), it
// writes that model in the files another tool reads — F is pyldavis, mallet
// or csv (sampler/tool_exports.h) — into --out (default: DIR itself). The
// directory must hold the training token store (tokens.lts, as `latentctl
// train` writes it): the document–topic part comes from there. F gensim
// writes a gensim LdaModel (cli/gensim_export.h) from the text files only.
//
// Thread-safety: reentrant; one call at a time per output directory.
#ifndef LATENTD_CLI_EXPORT_COMMAND_H_
#define LATENTD_CLI_EXPORT_COMMAND_H_

#include <cstdint>
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/statusor.h"
#include "cli/client_commands.h"
#include "corpora/vocabulary.h"
#include "sampler/model_snapshot.h"
#include "service/api.pb.h"
#include "service/api_client.h"

namespace latentd {

// How FetchModel pages.
struct FetchOptions {
  // Words asked for per ExportModel page; 0 = the node's default (10000).
  // The node may send fewer (it also cuts pages at about 1 MiB).
  uint32_t page_words = 0;
  // Fetches begun before a model that keeps changing is an error.
  int attempts = 3;
  // Progress lines ("export: 120000/250000 words"), at most one a second,
  // for a model of several pages; nullptr = none.
  FILE* progress = nullptr;
};

// The model as a node served it, assembled from pages of one view.
struct FetchedModel {
  api::ModelVersion version;
  // K, V, α, β and the counts (by topic within a word); sweep is
  // version.sweep, tokens Σ n_k; seed is not exported (0).
  ModelSnapshot snapshot;
  Vocabulary vocab;  // word i is WordId i; size() == snapshot.vocab_size
  int pages = 0;     // pages of the fetch that was kept
};

// Fetches the whole model through `api` (which must outlive the call).
// Errors: a failed call's own status; kDataLoss for a page that
// contradicts itself or the other pages (a word twice, a topic >= K,
// columns that do not sum to n_k, ...); kAborted if the model changed
// between pages on each of options.attempts fetches.
absl::StatusOr<FetchedModel> FetchModel(service::ApiClient* api,
                                        const FetchOptions& options);

// Writes vocab.txt, topics.txt (`top_words` words per topic),
// word_topic_counts.tsv and alpha.txt into the existing directory `dir`,
// each atomically. Fails with the first file's error.
absl::Status WriteModelText(const FetchedModel& model, int top_words,
                            const std::string& dir);

struct ExportCommandOptions {
  DaemonAddress address;  // the node; addr or model_dir is required
  // A model directory to export for another tool (with `format`); "" =
  // fetch from the node at address.addr.
  std::string model_dir;
  // With model_dir: "pyldavis", "mallet", "csv" or "gensim" (required).
  std::string format;
  // With format "gensim": the Python 3 (with gensim) that writes the model
  // (cli/gensim_export.h).
  std::string python = "python3";
  // Created if missing (its parent must exist); required with address,
  // default model_dir with model_dir.
  std::string out_dir;
  // Replace a model in out_dir (any file of sampler/model_dir.h's list,
  // removed once the fetch has succeeded); without it such a directory is
  // refused before anything is fetched.
  bool overwrite = false;
  // Words per topic in topics.txt (as train's --top), or in
  // mallet_topic_keys.txt (Mallet's --num-top-words).
  int top_words = 20;
  // Print, at the end, a JSON summary on `out`: outDir, addr, sweep, view,
  // topics (K), vocabulary (V), tokens (Σ n_k), pages.
  bool json = false;
  FetchOptions fetch;  // progress is set by RunExport
};

// Adds the `export` subcommand with its flags into *options; returns it.
CLI::App* AddExportCommand(CLI::App* app, ExportCommandOptions* options);

// Runs the command: claims out_dir, fetches, writes. Progress and the
// summary line ("exported sweep S (view V) from ADDR: ...") go to `err`,
// the --json summary to `out`.
// Errors name the address (kUnavailable: unreachable), or out_dir
// (kFailedPrecondition: holds a model, no --overwrite).
// With model_dir: loads the model and its token store and writes the
// format's files into out_dir (replacing those files, nothing else), then
// prints "wrote F files (...) to OUT" on `err` (--json: a summary on
// `out`: dir, outDir, format, files, topics, vocabulary, documents).
// Errors: kInvalidArgument for a missing or unknown format or both DIR and
// --addr; kFailedPrecondition if DIR has no tokens.lts; ExportForTool's.
absl::Status RunExport(const ExportCommandOptions& options, FILE* out,
                       FILE* err);

}  // namespace latentd

#endif  // LATENTD_CLI_EXPORT_COMMAND_H_
