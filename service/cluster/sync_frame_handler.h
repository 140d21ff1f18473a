// SyncFrameHandler: the server side of a member's sync port. Each frame a
// peer sends (a delta batch, progress, a key hand-off, a replica update) is
// parsed, checked against the sender its connection proved (CheckSender)
// and against the owner shard's admission, and handed to the part that
// keeps it: the OwnerShard, the ClockTable or the ReplicaStore. Refusals
// are counted (for /metrics) and logged at most once a second per kind.
//
// Progress from an id that no ring here lists is kept only if the cluster's
// registry in Redis (members and pending joiners) names it: a joiner whose
// ring this node has not reached yet. The registry is read again by the
// ring watcher (RefreshRegistryIfStale) once such progress came.
//
// Thread-safety: Handle runs on the sync server's threads; the counters
// and RefreshRegistryIfStale may be called from any thread.
#ifndef LATENTD_SERVICE_CLUSTER_SYNC_FRAME_HANDLER_H_
#define LATENTD_SERVICE_CLUSTER_SYNC_FRAME_HANDLER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "base/log.h"
#include "sync/consistency.h"
#include "sync/control/membership.h"
#include "sync/owner_shard.h"
#include "sync/replica_store.h"
#include "sync/sync.pb.h"
#include "sync/transport/transport.h"

namespace latentd {

class SyncFrameHandler {
 public:
  struct Parts {
    // Not owned; each outlives the handler.
    sync::OwnerShard* owner = nullptr;
    sync::ReplicaStore* replicas = nullptr;
    sync::ClockTable* clocks = nullptr;
    // This node's clock and whether it has finished sampling, for the
    // reply to a peer's progress.
    std::function<sync::ProgressReply()> progress;
    std::string cluster;  // its name, for the registry's keys
    sync::LogFn log = sync::LogToStderr;
    sync::LogFn info = sync::LogInfoToStderr;  // routine refusals
  };
  explicit SyncFrameHandler(Parts parts) : parts_(std::move(parts)) {}

  // Key hand-offs are imported by `importer` from now on (KeyReplicas::
  // ImportKeys, which also replicates them) instead of straight into the
  // owner shard. Any thread.
  void SetKeyImporter(
      std::function<absl::Status(const sync::KeyHandoff&)> importer) {
    absl::MutexLock l(&importer_mu_);
    importer_ = std::move(importer);
  }

  // Answers `request` through `responder` (once).
  void Handle(sync::Frame request, sync::Responder responder);

  // Reads the registry again if progress came from an id it did not list
  // since the last read. An error leaves it stale (for the next call).
  absl::Status RefreshRegistryIfStale(sync::RedisClient* redis);

  // Frames refused as speaking for a node other than the one their
  // connection proved; key hand-offs, replica updates and progress refused
  // as from a node the owner does not admit (see above).
  uint64_t sender_mismatches() const { return sender_mismatches_.load(); }
  uint64_t handoffs_refused() const { return handoffs_refused_.load(); }
  uint64_t replicas_refused() const { return replicas_refused_.load(); }
  uint64_t progress_refused() const { return progress_refused_.load(); }
  // Keys and bytes other owners handed to this one.
  uint64_t handoff_keys_in() const { return handoff_keys_in_.load(); }
  uint64_t handoff_bytes_in() const { return handoff_bytes_in_.load(); }

 private:
  void HandleDeltaBatch(const sync::Frame& request, sync::Responder& r);
  void HandleProgress(const sync::Frame& request, sync::Responder& r);
  void HandleKeyHandoff(const sync::Frame& request, sync::Responder& r);
  void HandleReplicaUpdate(const sync::Frame& request, sync::Responder& r);
  // OK unless `request` came on an authenticated connection of a node
  // other than `claimed` (then logged, kPermissionDenied).
  absl::Status CheckSender(const sync::Frame& request,
                           const std::string& claimed);
  // Logs a refusal of a peer's frame, at most one line per second.
  void LogRefusal(log::Throttle& throttle, const std::string& line);
  bool InRegistry(const std::string& id) const;

  const Parts parts_;
  std::atomic<uint64_t> sender_mismatches_{0};
  std::atomic<uint64_t> handoffs_refused_{0};
  std::atomic<uint64_t> replicas_refused_{0};
  std::atomic<uint64_t> progress_refused_{0};
  std::atomic<uint64_t> handoff_keys_in_{0};
  absl::Mutex importer_mu_;
  std::function<absl::Status(const sync::KeyHandoff&)> importer_
      ABSL_GUARDED_BY(importer_mu_);
  std::atomic<uint64_t> handoff_bytes_in_{0};

  // The ids the registry listed when last read.
  mutable absl::Mutex registry_mu_;
  absl::flat_hash_set<std::string> registry_ids_ ABSL_GUARDED_BY(registry_mu_);
  std::atomic<bool> registry_stale_{false};

  // Refusals can come at any rate: at most one line a second of each kind
  // (with how many were held back).
  log::Throttle mismatch_log_{absl::Seconds(1)};
  log::Throttle not_member_log_{absl::Seconds(1)};
  log::Throttle invalid_log_{absl::Seconds(1)};
  log::Throttle handoff_log_{absl::Seconds(1)};
  log::Throttle replica_log_{absl::Seconds(1)};
  log::Throttle progress_log_{absl::Seconds(1)};
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_SYNC_FRAME_HANDLER_H_
