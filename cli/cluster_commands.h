// latentctl cluster ...: the operator's view of an elastic cluster's control
// plane (issue 12), read from the cluster's Redis (sync/control/cluster_admin.h
// has the layout and the state machine).
//
//   latentctl cluster status --cluster-redis URL [--cluster NAME] [--json]
//
// prints the epoch, each member's id, address, state (pending, active,
// leaving), whether it is in the ring, and the age of its last heartbeat (by
// the Redis server's clock), the latest move, and the cluster's
// log-likelihood per token (SumLogLikelihood). Text by default; --json
// prints one JSON object (lowerCamelCase names, as the API's JSON).
//
//   latentctl cluster add-node NODE_ID --cluster-redis URL [--cluster NAME]
//                              [--timeout SECONDS] [--json]
//
// admits a pending node (one started with --cluster-join, listed by
// status): a new ring epoch with the node (sync::AdmitNode), then waits
// until the members have handed it its keys and it has joined, and prints
// what moved (keys, bytes, seconds). Errors change nothing: an unknown or
// not-pending node, a move already running, two operators racing.
//
//   latentctl cluster remove-node NODE_ID [--handoff|--drop|--lost]
//                                 --cluster-redis URL [--cluster NAME]
//                                 [--timeout SECONDS] [--json]
//
// removes a ring member: with --handoff (the default) it ships its
// documents, with their topics, to the others, who add them to their token
// stores (the model keeps them); with --drop its documents' counts are
// taken out of the model; either way its keys go to the others and the node
// leaves (a latentd exits 0). --lost removes a node gone for good without
// it. Waits for the move and prints what moved. Errors change nothing: an
// unknown or pending node, the last node, a move already running, a down
// node without --lost.
//
//   latentctl cluster drain --cluster-redis URL [--cluster NAME]
//                           [--timeout SECONDS] [--json]
//   latentctl cluster resume --cluster-redis URL [--cluster NAME]
//
// drain asks every member to pause sampling and push and pull every change
// (sync/control/drain.h), and waits until every ring member reports the
// same table checksum: settled, every node holds the same global table.
// The drain stays requested (sampling paused) until resume, also when the
// wait times out (kDeadlineExceeded naming who is not settled).
//
// Thread-safety: reentrant; each run opens its own Redis connection.
#ifndef LATENTD_CLI_CLUSTER_COMMANDS_H_
#define LATENTD_CLI_CLUSTER_COMMANDS_H_

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

struct ClusterCommands {
  std::string redis_url;            // --cluster-redis
  std::string cluster = "latentd";  // --cluster, the daemon's default
  bool json = false;
  std::string node;              // add-node / remove-node NODE_ID
  bool drop = false;             // remove-node --drop
  bool handoff = false;          // remove-node --handoff (the default)
  bool lost = false;             // remove-node --lost
  double timeout_seconds = 120;  // add-node: wait this long for the move
  std::string reason;            // abort-move --reason
  CLI::App* cluster_cmd = nullptr;
  CLI::App* status = nullptr;
  CLI::App* add_node = nullptr;
  CLI::App* remove_node = nullptr;
  CLI::App* drain = nullptr;
  CLI::App* resume = nullptr;
  CLI::App* abort_move = nullptr;
};

// Adds `cluster` and its subcommands `status`, `add-node`, `remove-node`,
// `drain`, `resume` and `abort-move` to `app`.
void AddClusterCommands(CLI::App* app, ClusterCommands* commands);

// Runs the cluster subcommand that was parsed; nullopt if none was.
// kInvalidArgument for a malformed --cluster-redis, kUnavailable if Redis
// cannot be reached, kDataLoss if what it holds is not the documented
// layout (the message names the key); add-node as sync::AdmitNode says,
// kDeadlineExceeded if the move is still running after --timeout (it goes
// on; `cluster status` shows it), kAborted if it failed; abort-move
// kFailedPrecondition if no move is running.
std::optional<absl::Status> RunClusterCommands(const ClusterCommands& commands,
                                               FILE* out);

// The cluster's log-likelihood per token (docs/operations.md): the parts
// the ring's members last put in their heartbeats (sync::LogLikelihoodPart)
// summed, divided by their tokens summed. Only when every member in the
// ring has one; else `missing` says, per member, why there is no figure.
struct ClusterLogLikelihood {
  std::optional<double> per_token;
  uint64_t first_sweep = 0;  // the members' parts' sweeps range over
  uint64_t last_sweep = 0;   // first_sweep..last_sweep
  uint64_t tokens = 0;
  std::vector<std::string> missing;  // "ID: why"
};
ClusterLogLikelihood SumLogLikelihood(const sync::ClusterStatus& status);

// The text and JSON forms `cluster status` prints (each ends in a newline).
// Both end with the cluster's log-likelihood (SumLogLikelihood).
// Heartbeat ages are status.now_ms minus the heartbeat's time.
std::string FormatClusterStatusText(const sync::ClusterStatus& status);
std::string FormatClusterStatusJson(const sync::ClusterStatus& status);

}  // namespace latentd

#endif  // LATENTD_CLI_CLUSTER_COMMANDS_H_
