// ClusterLinkOptions: how a ClusterLink (service/cluster/cluster_link.h)
// joins and serves its cluster — membership, security, sync pacing,
// failover and replication — and LinkedTable, the table a link keeps in
// step when it is not the topic counts. Plain settings; the defaults are
// this library's (latentd sets its own from daemon settings).
#ifndef LATENTD_SERVICE_CLUSTER_CLUSTER_LINK_OPTIONS_H_
#define LATENTD_SERVICE_CLUSTER_CLUSTER_LINK_OPTIONS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hashring/ring.h"
#include "sync/abelian_table.h"
#include "sync/consistency.h"
#include "sync/control/membership.h"
#include "sync/transport/tls.h"
#include "sync/transport/transport.h"

namespace latentd {

// A table other than topic counts that a link keeps in step with the
// cluster (a graph node's vertex vectors, sampler/graph/synced_embeddings.h):
// any keyed Abelian table, plus how to apply the corrections the
// synchronizer queued for it through the table's single writer.
struct LinkedTable {
  sync::AbelianTable* table = nullptr;  // not owned
  std::function<absl::Status()> apply_pending;
};
// Builds the table once the ring is fixed (so that a node can keep the
// share of its input the ring gives it): given the ring, its config and
// this node's index among its members. Called once, from Create.
using LinkedTableFactory = std::function<absl::StatusOr<LinkedTable>(
    const hashring::RingConfig& config, const hashring::Ring& ring,
    uint32_t self)>;

struct ClusterLinkOptions {
  // ---- Membership ----
  std::string redis_url = "redis://127.0.0.1:6379";
  std::string cluster = "default";
  std::string listen = "127.0.0.1:0";  // sync server; port 0: a free one
  std::string node_id;                 // "" = the address listened on
  // Called once the sync server listens, before this node registers
  // anywhere, with its address: what a restart must listen on again (the
  // daemon keeps it in its data directory). An error ends the join. With
  // it set, port 0 draws a port below the ephemeral range (ServerOptions::
  // durable_port).
  std::function<absl::Status(const std::string& address)> on_listening;
  uint32_t expected_members = 1;  // the ring is fixed with this many
  // Join a running cluster instead (sync/control/cluster_admin.h): register as
  // pending, wait until an operator admits this node (the ring lists it),
  // take the keys the new ring gives it once every member has handed them
  // off, then push this node's counts and take the globals. It starts at
  // the cluster's sweep clock. expected_members is not used.
  bool join = false;
  // How long to wait for the ring (or, with `join`, for admission and the
  // hand-offs).
  absl::Duration join_timeout = absl::Seconds(60);

  // ---- Security (docs/operations.md, "Security") ----
  // The shared cluster key (sync::LoadClusterKey reads a key file): every
  // sync connection, both ways, proves it in a handshake and every frame
  // carries a MAC (sync/transport/peer_auth.h); a peer without it gets nothing
  // applied. Create() refuses an empty key unless `insecure` is set: then
  // the sync port takes frames from anyone who can reach it (loopback
  // development only; logged as a warning).
  std::string cluster_key;
  bool insecure = false;
  // Mutual TLS on the sync port (sync::TlsContext::ForMutualServer/Client):
  // all three files, or none. With them every sync connection, both ways,
  // is encrypted and each side's certificate must chain to the cluster CA
  // (the server's must also name the host of its member address); the
  // cluster-key handshake then runs inside TLS. A node without a
  // certificate from that CA cannot join. Create() fails with
  // kInvalidArgument naming the file when one is missing or unusable.
  sync::MutualTlsFiles tls;
  // With `tls`: a peer whose certificate names no node id (a subjectAltName
  // URI latentd-node:<id>, ops/issue-node-cert.sh) is refused. A peer whose
  // certificate names node ids is always refused if it claims another
  // (sync/transport/peer_auth.h).
  bool tls_require_node_id = false;
  // Connection hygiene of the sync server (sync::ServerOptions): open
  // connections at once, and from one IP address (0: no cap); connections
  // without a frame this long are closed (peers reconnect on their next
  // call; infinite: never).
  int max_connections = 1024;
  int max_connections_per_address = 256;
  absl::Duration idle_timeout = absl::Seconds(300);
  // Payload bytes of frames still arriving on the sync port, all
  // connections together; a frame that would take more closes its
  // connection (0: no cap).
  size_t max_request_bytes_in_flight = size_t{1} << 30;

  // ---- Sync ----
  sync::Consistency consistency;
  size_t round_byte_budget = 0;  // see SynchronizerOptions
  // Under async too, end each sweep with one round to every owner (push
  // this sweep's deltas, pull the others'; incremental: O(changed keys))
  // and wait for the replies. Not a barrier: it never waits for other
  // nodes' progress. If false (the default), the end of a sweep only kicks
  // a round and sampling goes on at once: with rounds paced by work (below)
  // the log-likelihood is the same either way (ops/bench/cluster_bench.sh).
  // (The 4-7% drift once seen without it came from the old fixed 10 ms
  // rounds that each visited every key: on an oversubscribed machine they
  // fell behind, so nodes sampled whole sweeps between rounds.)
  // SSP/BSP always flush.
  bool flush_each_sweep = false;
  // Background rounds are paced by work, not by a timer: the count updater
  // starts one every 1/rounds_per_sweep of a sweep's batches (counted in
  // the previous sweep; 0 = timer only). A round costs O(keys changed
  // since the previous one), so fewer rounds per sweep cost less sync CPU
  // per token but let the nodes' counts be staler (the log-likelihood per
  // sweep falls behind the single node's). With min_key_weight (below),
  // 8 rounds of heavy keys cost no more CPU per token than 4 rounds of
  // every key did and halve the gap (cluster_bench, news20, K=100:
  // docs/benchmarks.md, "Cluster synchronization").
  int rounds_per_sweep = 8;
  // Rounds within a sweep send only the keys that changed by at least this
  // much here (Σ|Δn_wk| since their last round); the round that ends the
  // sweep sends every changed key. 0 = every changed key every round.
  uint32_t min_key_weight = 32;
  // Whatever the work, a round at most this long after the previous one.
  absl::Duration round_interval = absl::Milliseconds(500);
  absl::Duration call_timeout = absl::Seconds(2);
  // A peer unreachable this long stops counting for SSP, and is reported.
  absl::Duration dead_after = absl::Seconds(3);
  absl::Duration heartbeat = absl::Milliseconds(200);
  // How often the ring in Redis is read for a newer epoch (0: never).
  absl::Duration ring_poll = absl::Milliseconds(250);
  // Keys per KeyHandoff frame.
  size_t handoff_chunk_keys = 5000;
  // A ring member whose heartbeat in Redis is older than this is declared
  // down and failed over (see above). 0: never (this library's default;
  // latentd's --failure-timeout defaults to 1.5 s). Heartbeats go out
  // every failure_timeout / 5 (at least every 20 ms, at most every second).
  absl::Duration failure_timeout = absl::ZeroDuration();
  // A member this node has not seen beat since it started (a whole
  // cluster restarted) is failed over only this long after the start
  // (FailureJudge). 0: judged as the others are.
  absl::Duration failover_grace = absl::ZeroDuration();
  // The most keys one member may create at this node's owner shard in a
  // ring epoch (sync::OwnerAdmission::max_new_keys_per_sender). 0: no
  // bound (this library's default; latentd's --cluster-max-new-keys
  // defaults to 4,000,000).
  uint64_t max_new_keys_per_member = 0;
  // Replicated key state (sync/owner_replicator.h; docs/design.md,
  // "Replicated key state"): copies of each key, the owner's included. With
  // k > 1 the part of each owned key's global that no survivor could
  // re-seed goes to the key's k-1 next members on the ring before the
  // owner's own batches are answered, and a failed-over member's counts
  // stay in the model (its copies taken over by its keys' new owners)
  // until it returns or is removed as lost. With 1 (this library's default;
  // latentd passes --replicas) a failed-over member's counts leave the
  // model at once.
  uint32_t key_replicas = 1;
  // What needs an operator's eye (failures, refusals, stalls) goes to
  // `log`; routine membership events (joined, epoch in effect, hand-off
  // done, a peer back) to `info`.
  sync::LogFn log = sync::LogToStderr;
  sync::LogFn info = sync::LogInfoToStderr;
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_CLUSTER_LINK_OPTIONS_H_
