#include "service/cluster/failure_judge.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace latentd {

FailureJudge::FailureJudge(std::string self, absl::Duration failure_timeout,
                           absl::Duration start_grace, absl::Time started,
                           std::function<bool(const std::string&)> heard_from)
    : self_(std::move(self)),
      failure_timeout_(failure_timeout),
      grace_ends_(started + start_grace),
      heard_from_(std::move(heard_from)) {}

bool FailureJudge::Fresh(const sync::MemberStatus& m, int64_t now_ms) const {
  return m.heartbeat && now_ms - m.heartbeat->unix_ms <=
                            absl::ToInt64Milliseconds(failure_timeout_);
}

FailureJudge::Verdict FailureJudge::Judge(const sync::ClusterStatus& status,
                                          absl::Time now, bool may_declare) {
  Verdict v;
  if (first_read_ms_ < 0) first_read_ms_ = status.now_ms;
  for (const sync::MemberStatus& m : status.members) {
    if ((m.heartbeat && m.heartbeat->unix_ms > first_read_ms_) ||
        (heard_from_ && heard_from_(m.id))) {
      seen_beating_.insert(m.id);
    }
  }
  if (!may_declare || !status.ring ||
      (status.move && status.move->status == sync::MoveStatus::kRunning)) {
    return v;  // one change at a time
  }
  const sync::MemberStatus* suspect = nullptr;
  for (const sync::MemberStatus& m : status.members) {
    if (m.in_ring && m.id != self_ && m.state == sync::MemberState::kActive &&
        m.heartbeat && !Fresh(m, status.now_ms)) {
      suspect = &m;
      break;
    }
  }
  if (suspect == nullptr) {
    quorum_noted_.clear();
    return v;
  }
  if (absl::Status q =
          sync::CheckFailoverQuorum(status, self_, failure_timeout_);
      !q.ok()) {
    if (q.message() != quorum_noted_) {
      quorum_noted_ = std::string(q.message());
      v.note = absl::StrCat(quorum_noted_, ": nobody is declared down (",
                            suspect->id, " has not beaten)");
    }
    return v;
  }
  quorum_noted_.clear();
  if (!seen_beating_.contains(suspect->id) && now < grace_ends_) {
    if (grace_noted_.insert(suspect->id).second) {
      v.note_is_info = true;
      v.note = absl::StrFormat(
          "%s has not beaten since this node started: waiting %s more for it "
          "to come back before failing it over (--failover-grace)",
          suspect->id,
          absl::FormatDuration(
              absl::Ceil(grace_ends_ - now, absl::Seconds(1))));
    }
    return v;
  }
  v.down = suspect->id;
  return v;
}

}  // namespace latentd
