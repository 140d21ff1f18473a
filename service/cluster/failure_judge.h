// FailureJudge: which ring member, if any, this node may declare down, from
// its reads of the cluster's status in Redis (docs/operations.md, "Restarts
// and failover"). Three rules:
// - a member is a suspect when its heartbeat is older than the failure
//   timeout by Redis's clock (and it is active, in the ring, not this
//   node, and no move runs);
// - no failover without a quorum (sync::CheckFailoverQuorum): a node
//   restarted before most of its ring is back changes no membership;
// - a member this process has not seen alive since it started (every
//   member of a whole cluster restarted) is given `start_grace` from this
//   node's start to come back before it is failed over. Seen alive: a
//   heartbeat written after the first read, or `heard_from` says so (it
//   sent this process progress: a member killed before its next beat).
// Each read also says what to log: one line per new reason for holding back.
//
// Thread-safety: none; one thread (the liveness thread) uses it.
#ifndef LATENTD_SERVICE_CLUSTER_FAILURE_JUDGE_H_
#define LATENTD_SERVICE_CLUSTER_FAILURE_JUDGE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "sync/control/cluster_admin.h"

namespace latentd {

class FailureJudge {
 public:
  // `started`: when this process started judging (its grace counts from
  // there). `heard_from` (may be empty): whether a member reached this
  // process directly since it started.
  FailureJudge(std::string self, absl::Duration failure_timeout,
               absl::Duration start_grace, absl::Time started,
               std::function<bool(const std::string&)> heard_from = nullptr);

  struct Verdict {
    std::string down;           // the member to declare down; empty: nobody
    std::string note;           // a line to log, empty if nothing new
    bool note_is_info = false;  // expected (the start grace), not a warning
  };
  // One read of the status at local time `now`. With `may_declare` false
  // (the heartbeats are not judged yet) it only learns who beats.
  Verdict Judge(const sync::ClusterStatus& status, absl::Time now,
                bool may_declare = true);

 private:
  bool Fresh(const sync::MemberStatus& m, int64_t now_ms) const;

  const std::string self_;
  const absl::Duration failure_timeout_;
  const absl::Time grace_ends_;
  const std::function<bool(const std::string&)> heard_from_;
  // Redis's clock at the first read: a heartbeat written after it was
  // written by a process alive since this one started.
  int64_t first_read_ms_ = -1;
  absl::flat_hash_set<std::string> seen_beating_;
  absl::flat_hash_set<std::string> grace_noted_;
  std::string quorum_noted_;  // the last no-quorum line logged
};

}  // namespace latentd

#endif  // LATENTD_SERVICE_CLUSTER_FAILURE_JUDGE_H_
