// Synchronizer: the client side of the smart-master protocol (docs/design.md,
// "Many nodes"), over an AbelianTable that accumulates its own changes. One
// round for one owner:
//
//   build:  for each of the owner's keys the table lists dirty, take the
//           change δ it accumulated (AbelianTable::TakeChange) and send it
//           (DeltaBatch.changes_only)
//   reply:  the changes of this node's keys it has not seen yet (the other
//           nodes' deltas, and the global before this node's first delta
//           of a key); each goes to the table as a correction, as it is
//
// Every node's value equals the global once all deltas are in and all
// changes delivered. A round costs O(keys changed since the last round,
// here or at the owner) and O(changes), not O(keys held) nor O(row
// length), both ways.
//
// Keys are grouped by owner (one channel each, one outstanding batch per
// channel) and swept continuously by a background thread while sampling
// runs. A batch that fails (timeout, owner unavailable) is resent unchanged,
// same sequence, so the owner applies it exactly once; meanwhile the
// owner's keys keep accumulating δ and every other owner goes on.
//
// Managed communication: with a round byte budget, the keys with the
// largest AbelianTable::DirtyWeight go first; the others stay listed for a
// later round.
//
// Restarts (docs/design.md, "Restart and rejoin"). Every batch names the
// owner incarnation the channel last heard (DeltaBatch.owner_incarnation).
// An owner that restarted has lost its keys' globals, and refuses such a
// batch (kAborted, nothing applied); the channel then re-seeds it: for each
// of its keys the table takes back what it had received, and one batch
// sends everything this incarnation contributed plus the changes not yet
// sent, as a new holder does (the bookkeeping: sync/internal/key_ledger.h).
// A restarted sender needs nothing here: its table starts from its store's
// counts, and each owner takes the previous incarnation's contributions
// out when the new one first reaches it (sync/owner_shard.h).
//
// Growing key sets (AbelianTable::GrowsKeys; docs/design.md, "Growing
// vocabulary in a cluster"). Batches ask the owners for every key
// (DeltaBatch.all_keys) and carry the name of each key the first time it
// goes to its current owner. A reply's change of a key the table does not
// hold is kept aside, with the name the owner sent (ForeignKeys); AddKeys
// lets the table append keys and takes those changes into the new keys as
// received corrections.
//
// Parts (sync/internal/): BatchBuilder routes keys to channels and builds
// each round's batch; KeyLedger keeps per key what was contributed and
// received, and the changes kept aside; this class schedules the rounds,
// applies replies through them, and re-routes.
//
// Thread-safety: all public methods are thread-safe.
#ifndef LATENTD_SYNC_SYNCHRONIZER_H_
#define LATENTD_SYNC_SYNCHRONIZER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sync/abelian_table.h"
#include "sync/owner_channel.h"
#include "sync/owner_shard.h"
#include "sync/sync.pb.h"
#include "sync/transport/transport.h"

namespace latentd::sync {

namespace internal {
class BatchBuilder;
class KeyLedger;
}  // namespace internal

struct SynchronizerOptions {
  std::string node_id;
  uint64_t incarnation = 0;  // random per process start
  // Delta bytes per round to one owner; 0 = every key every round.
  size_t round_byte_budget = 0;
  // Pause between the end of a round and the next one to the same owner.
  absl::Duration round_interval = absl::Milliseconds(10);
  // Background rounds (not passes, not complete kicks) send only the keys
  // whose AbelianTable::DirtyWeight is at least this; the others wait for
  // a later round. 0 = every dirty key. Delays only, never loss: see
  // max_key_delay.
  uint32_t min_key_weight = 0;
  // A background round that comes this long after its channel's last
  // complete round is complete too, so a light key's change waits at most
  // about this long even when nothing kicks (a node that stopped sampling
  // and merges documents).
  absl::Duration max_key_delay = absl::Seconds(2);
  // Pause before resending a failed batch.
  absl::Duration retry_interval = absl::Milliseconds(200);
  // The ring epoch stamped on batches until Reroute (0: unversioned).
  uint64_t epoch = 0;
  // Reroute first waits this long for batches awaiting a resend.
  absl::Duration reroute_resend_timeout = absl::Seconds(10);
  LogFn log = LogToStderr;
  // Routine events, at info: an owner back, an owner restarted and
  // re-seeded.
  LogFn info = LogInfoToStderr;
};

// Monotone counters (relaxed atomics). Bytes count remote channels only,
// frame headers included.
struct SyncCounters {
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> rounds{0};         // batches answered
  std::atomic<uint64_t> failed_rounds{0};  // batches failed (then resent)
  std::atomic<uint64_t> round_micros_total{0};
  std::atomic<uint64_t> round_micros_max{0};
  std::atomic<uint64_t> keys_sent{0};
  std::atomic<uint64_t> nonzero_keys_sent{0};
  // Staleness, in sweeps: for each non-zero δ sent, the sweeps between
  // when this δ began to accumulate (the key's previous round, or when it
  // was listed dirty after it, whichever is later) and this round.
  std::atomic<uint64_t> staleness_sum{0};
  std::atomic<uint64_t> staleness_samples{0};
  std::atomic<uint64_t> staleness_max{0};
};

class Synchronizer {
 public:
  // key_owner[i] is the channel of key index i. `table` must outlive this.
  // REQUIRES: key_owner.size() == table->num_keys(), every entry <
  // channels.size().
  Synchronizer(SynchronizerOptions options, AbelianTable* table,
               std::vector<uint32_t> key_owner,
               std::vector<std::unique_ptr<OwnerChannel>> channels);
  ~Synchronizer();  // Stop()

  // Starts the background rounds. Call once.
  void Start();
  // Stops starting rounds and waits for outstanding batches to be answered
  // or to fail. Idempotent.
  void Stop();

  struct PassResult {
    // Nothing moved either way: no reachable owner was sent a δ ≠ 0 nor
    // sent back a change.
    bool quiet = true;
    // Channels that failed during the pass (their keys were not synced).
    std::vector<std::string> unavailable;
  };
  // Runs one round per owner, each starting after this call, and waits for
  // all of them: every δ ≠ 0 is sent (no byte budget, whatever
  // min_key_weight) and every change at the owner comes back; unchanged
  // keys are not visited. REQUIRES: Start() was called and Stop() was not.
  PassResult Flush();
  // Starts a round to every owner as soon as its channel is free (without
  // waiting for round_interval). Does not wait. A `complete` round sends
  // every dirty key, whatever min_key_weight.
  void Kick(bool complete = false);
  // Owner `name`'s process is `incarnation` (learnt outside a round: it
  // took a key hand-off from this node). Unless a round reply named one
  // already, the next batch to it names it: should that process restart
  // before answering one, the restarted one (which lost the hand-off) is
  // re-seeded ("Restarts" above). 0, or an unknown name: nothing.
  void NoteOwnerIncarnation(std::string_view name, uint64_t incarnation);

  // Moves to ring epoch `epoch`, stamped on every batch from now on: key
  // index i then goes to channels[key_owner[i]]. A channel whose name()
  // is that of a current channel is the same owner: the new object is
  // dropped and the current channel carries on (its sequence, and a
  // batch it must resend: that one goes to the owner it went to, which
  // applied it or not; such batches are resent and answered before the
  // switch, so that a key's changes keep their order). A channel left with
  // no key is retired once it has nothing to resend. An old owner's refusal of
  // a batch as routed by an older epoch (kFailedPrecondition) means nothing was
  // applied: its changes go out again, by the current ring. Waits for the
  // rounds in flight to end and starts none meanwhile; the table's writer goes
  // on (changes accumulate). Always OK. REQUIRES: key_owner.size() ==
  // table->num_keys(), every entry < channels.size(), channel names
  // distinct.
  //
  // `lost`: names of owners that are gone for good (remove-node --lost).
  // Their batches awaiting a resend are not waited for; once such an owner
  // has no key left, its unanswered batch goes out again by the new ring,
  // and each key it owned is re-seeded at its new owner (everything this
  // node contributed to it, the table giving back what it had received, as
  // for a restarted owner: "Restarts" above). A lost owner's channel is
  // never used again: an owner of the same name in a later epoch (a node
  // failed over that came back, its new owner shard filled by hand-offs)
  // gets a new channel, so nothing is re-seeded there twice.
  absl::Status Reroute(uint64_t epoch, std::vector<uint32_t> key_owner,
                       std::vector<std::unique_ptr<OwnerChannel>> channels,
                       const std::vector<std::string>& lost = {});
  uint64_t epoch() const { return epoch_.load(std::memory_order_relaxed); }

  // Growing tables only: the keys replies brought that the table does not
  // hold and whose names are known, with their names (a snapshot).
  std::vector<std::pair<Key, std::string>> ForeignKeys();
  // Waits until no round runs and, starting none
  // meanwhile, calls grow(), which appends keys to the table (and may only
  // do that, and mark existing keys changed); then routes each new key to
  // owner(key), an index into the channels of the current epoch (those
  // given to the constructor or the last Reroute), and, for a growing
  // table, takes the changes kept aside for it (ForeignKeys) into the table
  // as received corrections. A new key of a table that does not grow (a
  // graph node's newly held vertex) is like a key it had from the start:
  // its owner sends it the global once it first sends a change. grow()'s
  // error is returned (the table must then be unchanged). REQUIRES:
  // owner(key) < the number of those channels; not called concurrently
  // with Reroute.
  absl::Status AddKeys(const std::function<absl::Status()>& grow,
                       const std::function<uint32_t(Key)>& owner);

  // The node's sweep clock, stamped on batches and used for staleness.
  void set_clock(uint64_t clock) {
    clock_.store(clock, std::memory_order_relaxed);
  }
  const SyncCounters& counters() const { return counters_; }
  // Channels whose last round failed.
  std::vector<std::string> UnavailableOwners() const;

 private:
  struct Channel;
  void Loop();
  // Whether `c`'s last round failed and its retry_interval has not passed.
  bool BackingOff(const Channel& c, absl::Time now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Builds the channel's next batch (or reuses the failed one) and sends
  // it. Runs on the loop thread while the channel is busy.
  void SendRound(Channel* c);
  void OnReply(Channel* c, absl::StatusOr<DeltaReply> reply);
  // Whether a reply is well formed (an error saying what if not, which
  // OnReply reports as kDataLoss); checked before anything is applied.
  absl::Status CheckReply(const DeltaReply& reply) const;
  // Loop thread: the batches owners refused (refused_) go back to the
  // builder (BatchBuilder::Requeue).
  void RequeueRefused();
  // Whether no channel has a round running.
  bool AllIdle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SynchronizerOptions options_;
  AbelianTable* const table_;
  const bool grows_;  // table_->GrowsKeys()
  // Per-key state, handed to the round in progress (one at a time, through
  // Channel::busy under mu_), or to Reroute/AddKeys while no round runs.
  // The ledger is thread-safe on its own (replies of different channels
  // may carry the same key).
  std::unique_ptr<internal::KeyLedger> ledger_;
  std::unique_ptr<internal::BatchBuilder> builder_;
  // The internal channel of each channel of the current epoch (identity
  // until a Reroute). Changed by Reroute only.
  std::vector<uint32_t> route_;
  std::atomic<uint64_t> epoch_{0};
  std::vector<std::unique_ptr<Channel>> channels_;
  std::atomic<uint64_t> clock_{0};
  SyncCounters counters_;

  mutable absl::Mutex mu_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t pass_requested_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t kicks_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t complete_kick_ ABSL_GUARDED_BY(mu_) = 0;  // latest complete one
  bool rerouting_ ABSL_GUARDED_BY(mu_) = false;      // no round may start
  std::vector<DeltaBatch> refused_ ABSL_GUARDED_BY(mu_);
  // NoteOwnerIncarnation for owners no channel routes to yet, by name.
  absl::flat_hash_map<std::string, uint64_t> noted_incarnations_
      ABSL_GUARDED_BY(mu_);
  std::thread thread_;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_SYNCHRONIZER_H_
