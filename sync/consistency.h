// Consistency control between nodes (docs/design.md, "Many nodes"):
//
//   async   no bound (YahooLDA)
//   ssp:s   a node starts sweep t only once every live node has completed
//           (and flushed) sweep t − 1 − s, so the sweep a node is in is at
//           most s ahead of the sweep the slowest node is in
//   bsp     ssp:0: everybody in the same sweep
//
// ClockTable holds what this node knows of every node's completed sweeps.
// A node that is unreachable for longer than dead_after, or that announced
// it finished, no longer holds the others back.
//
// Thread-safety: ClockTable is thread-safe.
#ifndef LATENTD_SYNC_CONSISTENCY_H_
#define LATENTD_SYNC_CONSISTENCY_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace latentd::sync {

struct Consistency {
  bool bounded = false;    // false: async
  uint32_t staleness = 0;  // s, when bounded
  // "async", "ssp:<s>" (0 <= s <= 1000000) or "bsp"; kInvalidArgument else.
  static absl::StatusOr<Consistency> Parse(std::string_view text);
  std::string ToString() const;
};

class ClockTable {
 public:
  // `nodes`: every member id, this node's included.
  explicit ClockTable(std::vector<std::string> nodes);

  // At most this many ids that are not members are remembered at once.
  static constexpr size_t kMaxPendingNodes = 256;

  // Adds a member (clock 0) if not yet known, taking in what Update and
  // MarkReady recorded for it before.
  void Add(const std::string& node);
  // Raises `node`'s known clock (never lowers it). An id that is not a
  // member (progress that came before the ring named it, or from a peer
  // claiming an id no ring has) is kept aside until Add() makes it one and
  // counts in nothing before: at most kMaxPendingNodes such ids, further
  // ones are dropped. Returns false when dropped.
  bool Update(const std::string& node, uint64_t clock, bool finished);
  // Records that `node` pushed its initial state; a non-member as Update.
  bool MarkReady(const std::string& node);
  // Blocks until every live node is ready, or `deadline`; returns whether.
  bool WaitAllReady(absl::Time deadline) const;
  // Blocks until every node is finished or dead, or `deadline`.
  bool WaitAllFinished(absl::Time deadline) const;
  // Marks `node` dead: it no longer counts in MinClock.
  void MarkDead(const std::string& node);
  // Counts `node` again (a failed-over member back in the ring); adds it
  // if unknown.
  void Revive(const std::string& node);
  bool IsDead(const std::string& node) const;
  // Whether Update or MarkReady recorded anything for `node` in this
  // process: for a peer, that it sent progress since this node started.
  bool Heard(const std::string& node) const;

  // The smallest clock among live, unfinished nodes (UINT64_MAX if none).
  uint64_t MinClock() const;
  // Blocks until MinClock() >= clock, or `deadline`. Returns whether it
  // holds.
  bool WaitForMin(uint64_t clock, absl::Time deadline) const;
  uint64_t Get(const std::string& node) const;

 private:
  struct Entry {
    uint64_t clock = 0;
    bool finished = false;
    bool dead = false;
    bool ready = false;
    bool heard = false;  // Update or MarkReady came for it
  };
  uint64_t MinLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The member's entry, else the pending one (made if there is room),
  // else null.
  Entry* FindOrPend(const std::string& node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, Entry> entries_ ABSL_GUARDED_BY(mu_);
  // Non-members' progress (see Update); never counted.
  absl::flat_hash_map<std::string, Entry> pending_ ABSL_GUARDED_BY(mu_);
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_CONSISTENCY_H_
