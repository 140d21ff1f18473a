#include "service/cluster/internal/ring_change_reading.h"

#include <algorithm>

namespace latentd::internal {

absl::flat_hash_set<std::string> NotBackupsOf(
    const sync::ClusterStatus& status) {
  absl::flat_hash_set<std::string> out;
  for (const sync::MemberStatus& m : status.members) {
    if (m.state == sync::MemberState::kLeaving ||
        m.state == sync::MemberState::kDown) {
      out.insert(m.id);
    }
  }
  return out;
}

RingChangeReading ReadRingChange(const sync::ClusterStatus& st,
                                 const hashring::RingConfig& next,
                                 const std::string& node_id, bool listed) {
  RingChangeReading r;
  if (st.move && st.move->status == sync::MoveStatus::kRunning) {
    const sync::MoveRecord& move = *st.move;
    if (move.kind == sync::MoveKind::kFailover && move.node != node_id) {
      // Failed over: followed as a lost member's removal.
      r.lost.push_back(move.node);
      r.failover = true;
      r.detected_age_ms = std::max<int64_t>(0, st.now_ms - move.started_ms);
    } else if (move.kind == sync::MoveKind::kAdd) {
      r.added = move.node;  // (a failed-over member returning)
    } else if (move.kind != sync::MoveKind::kRemove) {
      // (this node's own failover: self_down)
    } else if (move.mode == sync::RemoveMode::kLost && move.node != node_id) {
      r.lost.push_back(move.node);
    } else if (listed && move.node == node_id &&
               move.phase == sync::MovePhase::kDrain &&
               move.to_epoch == next.version) {
      r.leave = move.mode;  // the drain epoch of this node's removal
    }
  }
  if (st.move && st.move->status != sync::MoveStatus::kRunning &&
      st.move->kind == sync::MoveKind::kRemove &&
      st.move->mode == sync::RemoveMode::kLost && st.move->node != node_id &&
      st.move->to_epoch == next.version && r.lost.empty()) {
    // A failed-over member removed as lost: latentctl ends that move at
    // once (nobody drains it), but its kept counts must still leave.
    r.lost.push_back(st.move->node);
  }
  for (const sync::MemberStatus& m : st.members) {
    r.self_down |= m.id == node_id && m.state == sync::MemberState::kDown;
  }
  r.not_backups = NotBackupsOf(st);
  return r;
}

}  // namespace latentd::internal
