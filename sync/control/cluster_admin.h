// The control plane of an elastic cluster (issue 12): ring epochs, member
// states and the move in progress, kept in Redis and changed only by
// compare-and-set. The data plane (nodes handing keys and documents off)
// reads what is written here and reports back through ReportMoveProgress /
// FinishMove / FailMove.
//
// Redis layout, for cluster NAME (JoinCluster, sync/control/membership.h,
// writes the first two):
//
//   latentd:NAME:members     hash   id -> "host:port", every node that joined
//                                   or was admitted (JoinCluster's registry)
//   latentd:NAME:ring        string serialized RingConfigProto of the current
//                                   epoch; RingConfig.version IS the epoch,
//                                   +1 on every change (JoinCluster writes 1)
//   latentd:NAME:pending     hash   id -> "host:port", nodes registered with
//                                   --join and not yet admitted
//   latentd:NAME:states      hash   id -> "active" | "leaving" | "down"; a
//                                   ring member with no entry is active
//                                   (rings written by JoinCluster have none)
//   latentd:NAME:move        hash   the latest move: kind add|remove|failover,
//                                   node,
//                                   mode handoff|drop|lost (remove; "" for
//                                   add), phase drain|keys, from_epoch,
//                                   to_epoch, started_ms, updated_ms,
//                                   finished_ms (0 while running), status
//                                   running|done|failed|rolled_back, error,
//                                   and the counters keys, bytes,
//                                   documents moved
//   latentd:NAME:handoffs    hash   "ID/EPOCH" -> committed | rolled_back:
//                                   the outcome of the hand-off of node ID
//                                   in drain epoch EPOCH (never deleted;
//                                   one field per remove --handoff)
//   latentd:NAME:epochs      stream the history, one entry per event: fields
//                                   epoch, change (add | leave | remove |
//                                   down | return | rollback: a new
//                                   epoch; done | failed: the end of the
//                                   move to that epoch), node, mode,
//                                   time_ms; capped at
//                                   about 10000 entries
//   latentd:NAME:heartbeats  hash   id -> "unix_ms sweep keys documents
//                                   epoch senders_retracted reseed_refused
//                                   stale_refused under_replicated
//                                   failovers last_failover_ms
//                                   [ll_sweep ll_tokens doc_ll
//                                   owned_word_ll]" (older nodes write the
//                                   first 4 or 8; the last 4 only once the
//                                   node evaluated a sweep), written by
//                                   WriteHeartbeat
//   latentd:NAME:alive:ID    string the node's liveness record: written with
//                                   each heartbeat, with a TTL of the
//                                   failure timeout (PX), so it exists only
//                                   while the node beats
//
// Every time is Redis server time (TIME, unix milliseconds), read inside the
// script that writes it, so ages computed against ClusterStatus::now_ms
// use one clock however skewed the nodes' clocks are.
//
// Member states and epochs (E is the epoch before the change):
//
//   RegisterPending                    AdmitNode
//   ---------------> pending ---------------------------> active
//                             epoch E+1: ring + node (weight 1, same V, k);
//                             move {add, phase keys, E -> E+1}
//
//            RemoveNode(mode)                   FinishMove(E+1)
//   active ----------------------> leaving --------------------------> ...
//          epoch E+1: the same ring     epoch E+2: ring - node
//          (same placement), node       (k capped at the members left);
//          leaving; move {remove,       move phase keys, E+1 -> E+2
//          mode, phase drain,
//          E -> E+1}                         FinishMove(E+2)
//                                   ... --------------------> gone (its
//                                   members, states, heartbeats entries
//                                   are deleted)
//
// Failover (docs/design.md, "Failure detection and failover"):
//
//            DeclareDown (heartbeat older           ReturnNode (the node
//            than the failure timeout)              restarted from its data
//   active ---------------------------> down -----------------------> active
//          epoch E+1: ring - node;           epoch E+1: ring + node
//          move {failover, phase keys,       (weight 1); move {add, phase
//          E -> E+1}; the members end it     keys, E -> E+1}, ended by the
//          (FinishMove) once in effect       node as a joiner does
//
//   down --- RemoveNode(kLost) ---> gone: epoch E+1, the same ring; move
//            {remove, lost, phase keys}; FinishMove deletes its entries
//
// Why removal takes two epochs: in the drain phase the leaving node is still
// an owner under an unchanged placement, so it can stop sampling, finish its
// rounds and then either ship its documents with their assignments to the
// remaining nodes (handoff; the global counts do not change) or push the
// negation of its documents' counts to owners that do not move meanwhile
// (drop). Only then does epoch E+2 take it out of the ring, and the move plan
// between E+1 and E+2 (hashring/move_plan.h) hands its owner ranges off.
// Every node sees the drain start as an epoch change too (E -> E+1 with an
// empty move plan), which is what tells them to stop routing work to it.
//
// A move is "running" from the change that starts it until FinishMove of its
// last phase (status done) or FailMove (status failed). While one runs,
// AdmitNode and RemoveNode refuse (kFailedPrecondition). A failed move stays
// where it failed: the ring keeps its epoch, a node failed in drain stays
// leaving (RemoveNode may retry it: a new drain epoch), one failed in the
// keys phase stays leaving outside the ring for the data plane (or the
// failover issue) to recover.
//
// Compare-and-set: every change is ONE Lua script (EVAL) that compares the
// stored ring with the bytes the caller read (which carry the version, so
// this is the version check and stricter), re-checks what the change needs
// (no move running, the node still pending at the same address), checks
// that every key has the expected Redis type, and only then writes the
// ring, the member states, the move record and the history. Of two
// operators racing, one wins; the other gets kAborted ("the ring changed
// concurrently: epoch N; nothing was changed") or, if it read after the
// winner, kFailedPrecondition ("a move is already running: ..."). Nothing is
// ever half written.
//
// Errors: bad arguments kInvalidArgument; Redis unreachable or a command
// failing kUnavailable; Redis contents that are not what this layout says
// (a ring that does not parse, a key of the wrong type, a malformed move
// record or heartbeat) kDataLoss naming the key; the rest as each function
// says. Every function changes nothing when it fails, with one caveat:
// kUnavailable after the script was sent (the connection dropped or timed
// out waiting for the reply) leaves the outcome unknown. Read the status, or
// retry: an AdmitNode, RemoveNode, FinishMove or FailMove that did go
// through makes its retry fail (kAborted, kFailedPrecondition), so none is
// applied twice; RegisterPending and WriteHeartbeat are idempotent; a
// retried ReportMoveProgress may count its increments twice (the counters
// are for operators, not for correctness).
//
// Thread-safety: the functions are reentrant; a RedisClient is not
// thread-safe, so concurrent callers each use their own. Any number of
// processes may call them on one cluster at once.
#ifndef LATENTD_SYNC_CONTROL_CLUSTER_ADMIN_H_
#define LATENTD_SYNC_CONTROL_CLUSTER_ADMIN_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "hashring/ring_config.h"
#include "sync/control/membership.h"

namespace latentd::sync {

// Upper bounds on what the functions accept.
inline constexpr size_t kMaxClusterNameBytes = 255;
inline constexpr size_t kMaxNodeAddressBytes = 1024;
// One report's counter increments; the totals stop at about 9e18
// (kOutOfRange beyond).
inline constexpr uint64_t kMaxCounterIncrement = uint64_t{1} << 48;

// The Redis keys of cluster `cluster` (see the layout above).
struct ClusterKeys {
  explicit ClusterKeys(std::string_view cluster);
  std::string members, ring, pending, states, move, epochs, heartbeats;
  std::string drain;  // set while a drain is requested (sync/control/drain.h)
  // hash "NODE/EPOCH" -> committed | rolled_back: the outcome of each
  // hand-off attempt (CommitHandoff, RollBackHandoff).
  std::string handoffs;
  // latentd:NAME:alive:ID for node `id`.
  std::string Alive(std::string_view id) const;

 private:
  std::string prefix_;
};

// kDown: declared dead by failure detection (DeclareDown): out of the ring,
// its counts out of the model, until it returns (ReturnNode) or is removed
// for good (RemoveNode with kLost).
enum class MemberState { kPending, kActive, kLeaving, kDown };
// kLost: the node is gone for good (issue 13). Nobody drives its drain:
// the operator's tool ends it at once (FinishMove), the remaining members
// take what the lost node contributed out of their globals, rebuild the
// globals of the keys it owned from their own contributions, and the last
// of them to put the ring without it in effect ends the move.
enum class RemoveMode { kHandoff, kDrop, kLost };
enum class MoveKind { kAdd, kRemove, kFailover };
enum class MovePhase { kDrain, kKeys };
// kRolledBack: a remove --handoff whose hand-off failed before it was
// committed; the ring went back to the node active (RollBackHandoff).
enum class MoveStatus { kRunning, kDone, kFailed, kRolledBack };

// "pending", "handoff", "add", "drain", "running", ...: the words stored in
// Redis and printed by latentctl.
const char* MemberStateName(MemberState state);
const char* RemoveModeName(RemoveMode mode);
const char* MoveKindName(MoveKind kind);
const char* MovePhaseName(MovePhase phase);
const char* MoveStatusName(MoveStatus status);

// What a move has moved so far, summed over every node's reports.
struct MoveCounters {
  uint64_t keys = 0;
  uint64_t bytes = 0;
  uint64_t documents = 0;
};

struct MoveRecord {
  MoveKind kind = MoveKind::kAdd;
  std::string node;
  RemoveMode mode = RemoveMode::kHandoff;  // meaningful for kRemove only
  MovePhase phase = MovePhase::kKeys;
  uint64_t from_epoch = 0;  // the epoch before the change
  uint64_t to_epoch = 0;    // the epoch the current phase moves to
  int64_t started_ms = 0;   // Redis time, unix ms
  int64_t updated_ms = 0;   // the latest change or report
  int64_t finished_ms = 0;  // 0 while running
  MoveStatus status = MoveStatus::kRunning;
  std::string error;  // why it failed (kFailed)
  MoveCounters counters;
};

// A node's part of the cluster's joint log p(w, z) at one evaluated sweep
// (docs/design.md, "Many nodes"): the parts of every ring member summed,
// divided by their tokens summed, are the cluster's log-likelihood per
// token.
struct LogLikelihoodPart {
  uint64_t sweep = 0;   // the node's sweep they were evaluated at
  uint64_t tokens = 0;  // tokens of its documents
  // log p(z_d | α) summed over its documents.
  double doc = 0;
  // Σ over the word keys it owns of Σ_k [lnΓ(g_wk + β) − lnΓ(β)], plus
  // Σ_k [lnΓ(Vβ) − lnΓ(n_k + Vβ)] if it owns the topic totals.
  double owned_word = 0;
};

// One line of latentd:NAME:heartbeats, as a node last wrote it.
struct Heartbeat {
  int64_t unix_ms = 0;  // Redis time of the write
  uint64_t sweep = 0;
  uint64_t keys = 0;       // keys the node owns
  uint64_t documents = 0;  // documents in its token store
  // The ring epoch the node routes by and its owner shard's failover
  // counters since it started (sync::OwnerShardStats: senders retracted,
  // re-seed refusals, stale refusals). Written by every node of this
  // version; a 4-field line (an older node) reads with has_counters false.
  uint64_t epoch = 0;
  uint64_t senders_retracted = 0;
  uint64_t reseed_refused = 0;
  uint64_t stale_refused = 0;
  bool has_counters = false;  // read side: the four fields above were there
  // Replicated key state and failovers (ClusterLink): copies of its keys
  // its backups do not hold yet, failovers it took part in as a survivor,
  // and how long the latest took (ms, -1 if none). A line without them
  // (an older node) reads with has_replication false.
  uint64_t under_replicated = 0;
  uint64_t failovers = 0;
  int64_t last_failover_ms = -1;
  bool has_replication = false;
  // Its latest log-likelihood part; absent before it evaluated a sweep
  // (or from an older node).
  std::optional<LogLikelihoodPart> log_likelihood = std::nullopt;
  // While a drain is requested and its last pass found nothing to send or
  // receive: the checksum of its table (sync/control/drain.h); else 0.
  // Written as a last field "s=HEX" when not 0.
  uint64_t settled_checksum = 0;
  // The node stopped sampling after a failure (a failed sweep, a table
  // that could not take the owners' counts, declared down): its table is
  // not the cluster's, so it reports no checksum. Written as "f=1".
  bool stopped_failed = false;
  // Copies the node keeps of each key it owns, itself included (its
  // --replicas); 0 from an older node. Written as "r=N".
  uint32_t key_copies = 0;
  // A line from a newer node reads by the fields known here: positional
  // fields past the fifteen above and tagged fields (NAME=VALUE, last)
  // other than s=, f= and r= are skipped, so that a rolling upgrade leaves
  // `cluster status` readable by the old latentctl and nodes.
};

struct MemberStatus {
  std::string id;
  std::string address;
  MemberState state = MemberState::kActive;
  bool in_ring = false;  // false for pending and down nodes and for a
                         // leaving node past its drain phase
  uint32_t weight = 0;   // in the ring; 0 if not in it
  std::optional<Heartbeat> heartbeat;
};

struct ClusterStatus {
  std::string cluster;
  // The current epoch's ring; nullopt before the ring is written.
  std::optional<hashring::RingConfig> ring;
  uint64_t epoch = 0;  // ring->version, 0 without a ring
  // Ring members, leaving nodes already out of the ring, and pending nodes,
  // sorted by id.
  std::vector<MemberStatus> members;
  std::optional<MoveRecord> move;  // the latest move, nullopt if none ever
  int64_t now_ms = 0;              // Redis time when this was read
  // Whether a drain is requested (sync/control/drain.h; read just after
  // the rest).
  bool drain_requested = false;
};

// One line for logs and errors: "add n3, epoch 4 -> 5, phase keys, running
// 2.5 s; 10 keys, 4096 bytes, 0 documents moved" (times against `now_ms`,
// Redis time, for a running move). Thread-safe (pure function).
std::string DescribeMove(const MoveRecord& move, int64_t now_ms);

// The failover quorum (docs/operations.md, "Restarts and failover"): ring
// members whose heartbeat in `status` is at most `failure_timeout` old by
// Redis's clock, `self` counted as alive. A member may declare another down
// only while at least half of the ring is alive: a majority, or exactly
// half with Redis as the tie-breaker (the change is a transaction on Redis,
// which the declaring member reaches). So a node restarted alone, before
// the others of its ring are back, changes no membership. Returns
// kFailedPrecondition naming the count when there is no quorum.
// Thread-safe (pure function).
absl::Status CheckFailoverQuorum(const ClusterStatus& status,
                                 std::string_view self,
                                 absl::Duration failure_timeout);

// Test seams and polling; the defaults are what production wants.
struct ClusterAdminOptions {
  // If set, runs after a change has read the cluster and before its
  // compare-and-set: tests use it to make a concurrent change land between
  // the two.
  std::function<void()> before_commit;
  // How often WaitForMove reads the move record.
  absl::Duration poll_interval = absl::Milliseconds(50);
};

// Registers node `id`, reachable at `address` ("host:port", port >= 1), as
// pending (what `latentd --join` does). Re-registering a pending node
// replaces its address. kInvalidArgument for a bad cluster name, id or
// address; kAlreadyExists if `id` is in the ring or leaving it.
absl::Status RegisterPending(RedisClient* redis, std::string_view cluster,
                             std::string_view id, std::string_view address,
                             const ClusterAdminOptions& options = {});

// Admits pending node `id`: writes epoch E+1, the ring plus `id` (weight 1,
// the address it registered, V and k as before), makes it active and starts
// move {add, phase keys, E -> E+1}. Returns the new ring.
// kNotFound if nobody registered `id`; kFailedPrecondition if `id` is not
// pending (it is in the ring or leaving), if the cluster has no ring yet, if
// a move is running, or if the new ring would be invalid (too many points);
// kAborted if the ring or the node's registration changed concurrently.
absl::StatusOr<hashring::RingConfig> AdmitNode(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    const ClusterAdminOptions& options = {});

// Starts removing ring member `id`: writes epoch E+1 with the same ring, marks
// it leaving and starts move {remove, mode, phase drain, E -> E+1}; the node
// leaves the ring at FinishMove (see the state machine above). Also retries
// the drain of a leaving node whose move failed. Returns the new ring.
// A down node (out of the ring already) is removed with kLost only: epoch
// E+1 keeps the ring and starts move {remove, lost, phase keys, E -> E+1},
// which FinishMove ends (deleting its entries; its counts left the model
// when it went down).
// kNotFound if nobody knows `id`; kFailedPrecondition if it is pending (not
// in the ring), if it left the ring already, if it is down and `mode` is
// not kLost, if it is the last active member, or if a move is running;
// kAborted on a concurrent change.
absl::StatusOr<hashring::RingConfig> RemoveNode(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    RemoveMode mode, const ClusterAdminOptions& options = {});

// Failure detection, for nodes: declares ring member `id` down, if its
// alive key has expired and its last heartbeat is older than
// `failure_timeout` by Redis's clock: writes epoch E+1, the ring without
// `id` (k capped at the members left), marks it down and starts move
// {failover, phase keys, E -> E+1}, which the members end once they route
// by it (FinishMove). Returns the new ring. kFailedPrecondition if the node
// beats (it is alive), is not an active ring member, is the last one, or a
// move is running; kAborted on a concurrent change (another member won:
// of several racing, one does).
absl::StatusOr<hashring::RingConfig> DeclareDown(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    absl::Duration failure_timeout, const ClusterAdminOptions& options = {});

// For a down node restarted from its data directory: puts it back in the
// ring at `address` (weight 1): epoch E+1, state active, move {add, phase
// keys, E -> E+1}, which the node ends as a joiner does (FinishMove).
// Returns the new ring. kFailedPrecondition if it is not down, if
// `address` is not the one it had (peers reach a member by the address it
// had: remove it with kLost and join it as a new node instead), or if a
// move is running; kAborted on a concurrent change.
absl::StatusOr<hashring::RingConfig> ReturnNode(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    std::string_view address, const ClusterAdminOptions& options = {});

// For nodes: adds `counters` (increments, each at most
// kMaxCounterIncrement) to the running move whose current phase moves to
// `to_epoch`. kFailedPrecondition if no such move is running; kOutOfRange if
// a total would pass about 9e18.
absl::Status ReportMoveProgress(RedisClient* redis, std::string_view cluster,
                                uint64_t to_epoch,
                                const MoveCounters& counters);

// For the node driving the move (the added node; the leaving node), once
// its phase is complete cluster-wide: adds `counters` as ReportMoveProgress
// does and ends the phase. For a remove's drain phase that writes epoch
// E+2 without the node and starts the keys phase (to_epoch E+2); otherwise
// the move is done (a removed node's entries are deleted). Returns the move
// record as it now is. kFailedPrecondition if no move to `to_epoch` is
// running; kAborted if the ring changed concurrently (it cannot while the
// move runs, unless Redis was edited by hand).
absl::StatusOr<MoveRecord> FinishMove(RedisClient* redis,
                                      std::string_view cluster,
                                      uint64_t to_epoch,
                                      const MoveCounters& counters,
                                      const ClusterAdminOptions& options = {});

// Marks the running move to `to_epoch` failed with `reason` (non-empty,
// printable); a remove --handoff in its drain phase has its hand-off
// recorded rolled back. kFailedPrecondition if no such move is running, or
// if it is a hand-off that was committed (CommitHandoff).
absl::Status FailMove(RedisClient* redis, std::string_view cluster,
                      uint64_t to_epoch, std::string_view reason);

// Waits until the move that wrote epoch `epoch` (what AdmitNode or
// RemoveNode returned; for a remove it spans both phases) has ended, and
// returns its record once done. kAborted with its error if it failed;
// kDeadlineExceeded if it is still running after `timeout`; kNotFound if no
// move wrote `epoch`; kFailedPrecondition if a later move has replaced its
// record (its outcome is in the history).
absl::StatusOr<MoveRecord> WaitForMove(RedisClient* redis,
                                       std::string_view cluster, uint64_t epoch,
                                       absl::Duration timeout,
                                       const ClusterAdminOptions& options = {});

// The two-phase hand-off of `remove-node --handoff` (docs/design.md,
// "Growing and shrinking the cluster"). The receivers stage the leaving
// node's documents without counting them; the node then decides, here,
// once: committed (the receivers merge what they staged) or rolled back
// (they discard it, and the ring takes the node back). A receiver that was
// away when it was decided reads the outcome with ReadHandoffOutcome.
// kUnknown: no outcome is recorded and no such move runs (Redis lost its
// state, or no node ever started that attempt): a receiver keeps what it
// staged rather than guess.
enum class HandoffOutcome { kUndecided, kCommitted, kRolledBack, kUnknown };

// For the leaving node `id`, once every receiver holds its documents
// durably: records the hand-off of its running drain phase to `to_epoch`
// committed. Idempotent. kFailedPrecondition if that move is not running
// (an operator aborted it) or the attempt was rolled back.
absl::Status CommitHandoff(RedisClient* redis, std::string_view cluster,
                           std::string_view id, uint64_t to_epoch);

// For the leaving node `id`, when its hand-off failed before it was
// committed: writes epoch E+1 with the same ring and `id` active again,
// ends the move rolled back with `reason` (1..4096 bytes) and records the
// attempt rolled back, in one script. Returns the new ring.
// kFailedPrecondition if the move of `id` draining to `to_epoch` is not
// running or its hand-off was committed (it can only complete forward
// then); kAborted on a concurrent ring change.
absl::StatusOr<hashring::RingConfig> RollBackHandoff(
    RedisClient* redis, std::string_view cluster, std::string_view id,
    uint64_t to_epoch, std::string_view reason,
    const ClusterAdminOptions& options = {});

// What became of the hand-off of node `id` in drain epoch `epoch`:
// committed or rolled back as recorded (FailMove, an operator's
// abort-move, records an undecided one rolled back); undecided while that
// move runs undecided; otherwise kUnknown.
absl::StatusOr<HandoffOutcome> ReadHandoffOutcome(RedisClient* redis,
                                                  std::string_view cluster,
                                                  std::string_view id,
                                                  uint64_t epoch);

// Reads the whole control-plane state in one script (a consistent
// snapshot). A cluster nobody has written anything for reads as no ring and
// no members.
absl::StatusOr<ClusterStatus> ReadClusterStatus(RedisClient* redis,
                                                std::string_view cluster);

// For nodes: records node `id`'s heartbeat, stamped with the Redis time
// (heartbeat.unix_ms is ignored), and, if `alive_for` > 0, sets its alive
// key to expire after `alive_for` (what DeclareDown checks).
absl::Status WriteHeartbeat(RedisClient* redis, std::string_view cluster,
                            std::string_view id, const Heartbeat& heartbeat,
                            absl::Duration alive_for = absl::ZeroDuration());

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_CONTROL_CLUSTER_ADMIN_H_
