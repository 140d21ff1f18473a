// latentctl graph ...: graph factorization (issue 14) on one machine.
//
//   latentctl graph train --edges FILE --out DIR [--dim 32]
//       [--negative-dims 0] [--epochs 20] [--threads 1] [--negatives 5]
//       [--lambda 1] [--learning-rate 0.1]
//       [--learning-rate-decay 0.05] [--seed 1] [--holdout FRACTION]
//       [--checkpoint-every 5] [--resume | --overwrite]
//       [--on-malformed fail|skip] [--json]
//
// reads an edge list (corpora/edge_list.h), trains vertex vectors
// (sampler/graph/graph_trainer.h) and prints one line per epoch to stderr:
// the objective and, with --holdout, the held-out ROC AUC and average
// precision (the split protocol of docs/design.md). DIR/graph.bin holds
// the model (sampler/graph/graph_model.h), written every --checkpoint-every
// epochs and at the end, the previous one kept as DIR/graph.prev.bin.
//
//   latentctl graph score [DIR] < pairs
//
// prints ⟨z_i, z_j⟩ for each input line "i j" (blank and '#' lines skipped);
// a line that is not two ids, or names a vertex the model does not have,
// prints "nan", and its error goes to stderr with its line number; the
// other lines are scored. The exit status is then 2.
//
//   latentctl graph neighbors [DIR] VERTEX [--top 10]
//
// prints the vertices u with the highest ⟨z_VERTEX, z_u⟩ (the likeliest
// new neighbours), one "id<TAB>score" per line.
//
//   latentctl graph embedding [DIR] VERTEX
//
// prints z_VERTEX, its d values space-separated on one line.
//
// Without DIR, score, neighbors and embedding ask a running latentd that
// serves a graph (latentd --graph-edges) at --addr (--protocol, --token as
// for the other daemon commands: cli/client_commands.h), and print the
// same. With a daemon only:
//
//   latentctl graph ingest [--addr H:P] < edges
//
// sends the edge lines of stdin (corpora/edge_list.h; a malformed line
// fails the command before anything is sent) to IngestEdges in calls of
// 10000 edges, and prints "accepted N edges, D duplicates" once all are
// durable on the daemon.
//
// Thread-safety: reentrant; one train at a time per directory.
#ifndef LATENTD_CLI_GRAPH_COMMANDS_H_
#define LATENTD_CLI_GRAPH_COMMANDS_H_

#include <atomic>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cli/client_commands.h"
#include "corpora/edge_list.h"
#include "sampler/graph/graph_trainer.h"

namespace latentd {

struct GraphTrainCommand {
  std::string edges;                  // --edges
  EdgeListOptions read;               // skip_malformed is set from on_malformed
  std::string on_malformed = "fail";  // or "skip"
  GraphTrainerOptions trainer;
  std::string out_dir;
  int epochs = 20;
  double holdout = 0;  // fraction of edges held out; 0 = none
  int checkpoint_every = 5;
  // > 1: train on this many in-process nodes (service/cluster/
  // graph_cluster.h), the edges split by the ring owner of their first
  // endpoint, with `consensus` (dual-sync, dual-async, naive-sync,
  // naive-async) and trainer.mu; the model written is the consensus.
  int nodes = 1;
  std::string consensus = "dual-sync";
  bool resume = false;
  bool overwrite = false;
  bool json = false;  // a JSON summary on stdout at the end
  const std::atomic<bool>* stop = nullptr;  // stop after the current epoch
};

struct GraphCommands {
  GraphTrainCommand train;
  std::string model_dir;          // score DIR; "" = the daemon
  std::vector<std::string> args;  // neighbors / embedding [DIR] VERTEX
  size_t top = 10;
  DaemonAddress address;  // the daemon of score, neighbors, embedding, ingest
  CLI::App* graph = nullptr;
  CLI::App* train_cmd = nullptr;
  CLI::App* score = nullptr;
  CLI::App* neighbors = nullptr;
  CLI::App* embedding = nullptr;
  CLI::App* ingest = nullptr;
};

// Adds `graph` and its subcommands to `app`.
void AddGraphCommands(CLI::App* app, GraphCommands* commands);

// Runs the graph subcommand that was parsed (its name into *which); nullopt
// if none was. kInvalidArgument for bad input (edge list lines, settings,
// an empty graph, a directory holding a model without --resume or
// --overwrite), the file's error for a missing or damaged one.
std::optional<absl::Status> RunGraphCommands(const GraphCommands& commands,
                                             FILE* in, FILE* out, FILE* err,
                                             std::string* which);

absl::Status RunGraphTrain(const GraphTrainCommand& command, FILE* out,
                           FILE* err);
// Scores the pairs of `in` (see above); kInvalidArgument naming how many
// lines failed, after scoring the rest.
absl::Status RunGraphScore(const std::string& dir, FILE* in, FILE* out,
                           FILE* err);
absl::Status RunGraphNeighbors(const std::string& dir, uint64_t vertex,
                               size_t top, FILE* out);
// kNotFound naming a vertex the model lacks.
absl::Status RunGraphEmbedding(const std::string& dir, uint64_t vertex,
                               FILE* out);

// The same against a daemon (cli/graph_remote_commands.cc); the daemon's
// errors come back as they are (kNotFound for an unknown vertex,
// kFailedPrecondition if it serves no graph).
absl::Status RunRemoteGraphScore(const DaemonAddress& address, FILE* in,
                                 FILE* out, FILE* err);
absl::Status RunRemoteGraphNeighbors(const DaemonAddress& address,
                                     uint64_t vertex, size_t top, FILE* out);
absl::Status RunRemoteGraphEmbedding(const DaemonAddress& address,
                                     uint64_t vertex, FILE* out);
// kInvalidArgument "stdin:LINE: what" for a malformed line (nothing sent).
absl::Status RunRemoteGraphIngest(const DaemonAddress& address, FILE* in,
                                  FILE* out);

// Shared by the local and the remote score: stdin's pair lines, and the
// printing of their scores (a failed one: "nan" and "stdin:LINE: why" on
// err; kInvalidArgument counting them at the end).
struct ScoreLine {
  uint64_t line = 0;
  absl::Status parsed;  // not OK: the line is not "i j"
  uint64_t a = 0;
  uint64_t b = 0;
};
std::vector<ScoreLine> ReadScoreLines(FILE* in);
absl::Status PrintScores(const std::vector<ScoreLine>& lines,
                         const std::vector<absl::StatusOr<double>>& scores,
                         FILE* out, FILE* err);
void PrintVector(std::span<const float> v, FILE* out);

}  // namespace latentd

#endif  // LATENTD_CLI_GRAPH_COMMANDS_H_
