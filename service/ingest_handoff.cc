// IngestPath's side of the two-phase hand-off (remove-node --handoff,
// docs/design.md "Growing and shrinking the cluster"): documents a leaving
// node hands off are staged here, durable and uncounted, until Redis holds
// the attempt's outcome; committed, they take the ingest path; rolled
// back, they are dropped, so the leaving node's counts were never doubled.
#include <algorithm>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "service/handoff_source.h"
#include "service/ingest_path.h"
#include "service/internal/daemon_log.h"
#include "sync/control/cluster_admin.h"
#include "sync/control/membership.h"

namespace latentd::service {

using internal::Log;
using internal::LogWarning;

namespace {

// Records per append when a committed attempt moves into the ingest path.
constexpr size_t kMoveChunk = 1000;

}  // namespace

absl::StatusOr<uint64_t> IngestPath::StageHandoffs(
    std::vector<IngestRecord>* records) {
  std::map<std::string, std::vector<IngestRecord>> by_attempt;
  std::erase_if(*records, [&](IngestRecord& r) {
    if (r.topics.empty()) return false;
    std::optional<HandoffAttempt> a = ParseHandoffSource(r.source);
    if (!a.has_value()) return false;
    by_attempt[a->key()].push_back(std::move(r));
    return true;
  });
  uint64_t taken = 0;
  for (auto& [key, mine] : by_attempt) {
    taken += mine.size();
    // (A resend within the attempt: the log drops the sources it holds.)
    LATENTD_RETURN_IF_ERROR(staged_->Append(key, std::move(mine)).status());
  }
  return taken;
}

absl::StatusOr<uint64_t> IngestPath::CommitHandoff(const std::string& key) {
  std::optional<HandoffAttempt> a = ParseHandoffKey(key);
  if (!a.has_value() || staged_ == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "'", key, "' is not a hand-off attempt (NODE/EPOCH) of a cluster"));
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           sync::RedisClient::Connect(cluster_redis_url_));
  LATENTD_ASSIGN_OR_RETURN(
      sync::HandoffOutcome outcome,
      sync::ReadHandoffOutcome(redis.get(), cluster_name_, a->node, a->epoch));
  if (outcome != sync::HandoffOutcome::kCommitted) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the hand-off of ", a->node, " in drain epoch ", a->epoch,
        " is not committed in Redis (",
        outcome == sync::HandoffOutcome::kUndecided    ? "undecided"
        : outcome == sync::HandoffOutcome::kRolledBack ? "rolled back"
                                                       : "no outcome recorded",
        ")"));
  }
  return MoveStaged(key);
}

absl::StatusOr<uint64_t> IngestPath::MoveStaged(const std::string& key) {
  absl::MutexLock commit(&commit_mu_);
  LATENTD_ASSIGN_OR_RETURN(std::vector<IngestRecord> records,
                           staged_->Read(key));
  uint64_t last = 0, moved = 0;
  for (size_t from = 0; from < records.size(); from += kMoveChunk) {
    std::vector<IngestRecord> chunk(
        std::make_move_iterator(records.begin() + from),
        std::make_move_iterator(records.begin() +
                                std::min(records.size(), from + kMoveChunk)));
    for (IngestRecord& r : chunk) r.sequence = 0;
    LogRange range;
    LATENTD_ASSIGN_OR_RETURN(
        uint64_t n, IngestHere(std::move(chunk), &range, /*route=*/false));
    moved += n;
    last = std::max(last, range.last);
  }
  LATENTD_RETURN_IF_ERROR(staged_->Drop(key));
  if (!records.empty()) {
    Log(absl::StrCat("hand-off ", key, " committed: ", moved, " of its ",
                     records.size(),
                     " staged documents taken in (the others were "
                     "already)"));
  }
  // (Moved before, or all known: the log's end covers them.)
  return last != 0 ? last : log_->last_sequence();
}

absl::Status IngestPath::SettleHandoffs() {
  if (router_->link() == nullptr || router_->left()) return absl::OkStatus();
  const std::vector<std::string> keys = staged_->Origins();
  if (keys.empty()) return absl::OkStatus();
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<sync::RedisClient> redis,
                           sync::RedisClient::Connect(cluster_redis_url_));
  for (const std::string& key : keys) {
    std::optional<HandoffAttempt> a = ParseHandoffKey(key);
    if (!a.has_value()) continue;  // (never staged under such a name)
    LATENTD_ASSIGN_OR_RETURN(
        sync::HandoffOutcome outcome,
        sync::ReadHandoffOutcome(redis.get(), cluster_name_, a->node,
                                 a->epoch));
    if (outcome == sync::HandoffOutcome::kCommitted) {
      LATENTD_RETURN_IF_ERROR(MoveStaged(key).status());
    } else if (outcome == sync::HandoffOutcome::kRolledBack) {
      absl::MutexLock commit(&commit_mu_);
      LATENTD_ASSIGN_OR_RETURN(std::vector<IngestRecord> records,
                               staged_->Read(key));
      LATENTD_RETURN_IF_ERROR(staged_->Drop(key));
      Log(absl::StrCat("hand-off ", key, " rolled back: its ", records.size(),
                       " staged documents dropped (they stay with ", a->node,
                       ")"));
    } else if (outcome == sync::HandoffOutcome::kUnknown &&
               unknown_handoffs_.insert(key).second) {
      // (Redis lost its state, or no node ever ran this attempt: neither
      // taking them in nor dropping them is safe to guess.)
      absl::MutexLock commit(&commit_mu_);
      LATENTD_ASSIGN_OR_RETURN(std::vector<IngestRecord> records,
                               staged_->Read(key));
      LogWarning(absl::StrCat(
          "hand-off ", key,
          ": Redis records no outcome and no such removal runs; its ",
          records.size(),
          " staged documents are kept, not counted (docs/operations.md, "
          "\"Growing and shrinking\")"));
    }
  }
  return absl::OkStatus();
}

uint64_t IngestPath::staged_handoff_documents() const {
  return staged_ == nullptr ? 0 : staged_->records();
}

}  // namespace latentd::service
