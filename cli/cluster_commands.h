// latentctl cluster ...: the operator's view of an elastic cluster's control
// plane (issue 12), read from the cluster's Redis (sync/cluster_admin.h has
// the layout and the state machine).
//
//   latentctl cluster status --cluster-redis URL [--cluster NAME] [--json]
//
// prints the epoch, each member's id, address, state (pending, active,
// leaving), whether it is in the ring, and the age of its last heartbeat (by
// the Redis server's clock), and the latest move. Text by default; --json
// prints one JSON object (lowerCamelCase names, as the API's JSON).
//
// Read-only on purpose: there is no add-node / remove-node yet. The
// functions that change the ring exist (sync::AdmitNode, sync::RemoveNode),
// but no node acts on a new epoch yet (the data plane: key hand-off,
// re-routing, document shipping), so an operator command that wrote one
// would report success while the cluster kept the old placement, and the
// move would never finish. They come with the data plane.
//
// Thread-safety: reentrant; each run opens its own Redis connection.
#ifndef LATENTD_CLI_CLUSTER_COMMANDS_H_
#define LATENTD_CLI_CLUSTER_COMMANDS_H_

#include <cstdio>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "sync/cluster_admin.h"

namespace latentd {

struct ClusterCommands {
  std::string redis_url;            // --cluster-redis
  std::string cluster = "latentd";  // --cluster, the daemon's default
  bool json = false;
  CLI::App* cluster_cmd = nullptr;
  CLI::App* status = nullptr;
};

// Adds `cluster` and its subcommand `status` to `app`.
void AddClusterCommands(CLI::App* app, ClusterCommands* commands);

// Runs the cluster subcommand that was parsed; nullopt if none was.
// kInvalidArgument for a malformed --cluster-redis, kUnavailable if Redis
// cannot be reached, kDataLoss if what it holds is not the documented
// layout (the message names the key).
std::optional<absl::Status> RunClusterCommands(const ClusterCommands& commands,
                                               FILE* out);

// The text and JSON forms `cluster status` prints (each ends in a newline).
// Heartbeat ages are status.now_ms minus the heartbeat's time.
std::string FormatClusterStatusText(const sync::ClusterStatus& status);
std::string FormatClusterStatusJson(const sync::ClusterStatus& status);

}  // namespace latentd

#endif  // LATENTD_CLI_CLUSTER_COMMANDS_H_
