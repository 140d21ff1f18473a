// IngestPath: the ingest log, the queue of acknowledged records and
// deduplication. Replication and adoption of copies are in
// ingest_replication.cc.
#include "service/ingest_path.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "base/status_macros.h"
#include "service/internal/daemon_log.h"

namespace latentd::service {

using internal::Log;
using internal::LogWarning;

namespace {

std::string LogPath(const std::string& dir) { return dir + "/ingest.log"; }

}  // namespace

IngestPath::IngestPath(IngestPathOptions options, ClusterRouter* router)
    : options_(std::move(options)), router_(router) {}

IngestPath::~IngestPath() { Stop(); }

absl::Status IngestPath::Open(uint64_t merged_through) {
  const std::string& dir = options_.data_dir;
  std::vector<IngestRecord> records;
  // A damaged record does not stop the node: skipped if merged already,
  // else lost and said so (docs/operations.md,
  // "Checkpoints and damaged files"), unless options_.refuse_ingest_loss.
  IngestLogRepair repair;
  LATENTD_ASSIGN_OR_RETURN(
      log_, IngestLog::Open(LogPath(dir), &records,
                            {.repair = true,
                             .merged_through = merged_through,
                             .refuse_loss = options_.refuse_ingest_loss},
                            &repair));
  ReportLogRepair(repair);
  uint64_t replayed = 0;
  {
    absl::MutexLock plock(&pending_mu_);
    for (IngestRecord& rec : records) {
      if (!rec.source.empty()) sources_.insert(rec.source);
      if (rec.lost) continue;  // reported when the log was repaired
      if (rec.sequence > merged_through && rec.words.empty()) {
        return absl::DataLossError(absl::StrCat(
            LogPath(dir), ": record ", rec.sequence,
            " was compacted away but the token store holds only up to ",
            merged_through));
      }
      if (rec.sequence > merged_through) {
        pending_.push_back(std::move(rec));
        ++replayed;
      }
    }
    m_.pending->Set(static_cast<double>(pending_.size()));
  }
  if (log_->last_sequence() < merged_through) {
    return absl::DataLossError(absl::StrCat(
        "token store holds ingest sequence ", merged_through, " but ",
        LogPath(dir), " ends at ", log_->last_sequence()));
  }
  Log(absl::StrCat("ingest log: ", records.size(), " records, ", replayed,
                   " to merge (merged up to sequence ", merged_through, ")"));
  if (options_.cluster_mode && options_.replicas > 1) {
    LATENTD_ASSIGN_OR_RETURN(
        replicas_, ReplicaLogs::Open(options_.data_dir + "/replicas"));
  }
  if (options_.cluster_mode) {
    LATENTD_ASSIGN_OR_RETURN(staged_,
                             ReplicaLogs::Open(options_.data_dir + "/handoff"));
    if (const uint64_t n = staged_->records(); n > 0) {
      Log(absl::StrCat("holding ", n,
                       " staged hand-off documents until their move is "
                       "decided"));
    }
  }
  return absl::OkStatus();
}

void IngestPath::ReportLogRepair(const IngestLogRepair& repair) {
  const std::string& log = log_->path();
  if (repair.ack_mark_damaged) {
    log::Error("latentd",
               absl::StrCat(AckMarkPath(log),
                            " did not verify: the log's last records could "
                            "not be checked against it; rewritten"));
  }
  if (repair.damage.empty()) return;
  for (const IngestLogDamage& d : repair.damage) {
    if (d.lost() > 0) {
      log::Error("latentd", absl::StrCat(log, ": damaged ", d.Describe()));
    } else {
      LogWarning(absl::StrCat(
          log, ": damaged ", d.Describe(),
          " (their sources are forgotten: a redelivery is ingested again)"));
    }
  }
  m_.log_damage->Add(repair.damage.size());
  m_.lost->Add(repair.lost());
  LogWarning(absl::StrCat(log,
                          " rewritten without the damage; the damaged "
                          "file is kept as ",
                          repair.kept_aside));
}

void IngestPath::SetCluster(std::string redis_url, std::string cluster) {
  cluster_redis_url_ = std::move(redis_url);
  cluster_name_ = std::move(cluster);
}

void IngestPath::Start() {
  if (replicas_ != nullptr || staged_ != nullptr) {
    replica_thread_ = std::thread([this] { ReplicaLoop(); });
  }
}

void IngestPath::BeginStop() {
  absl::MutexLock lock(&pending_mu_);
  stopping_ = true;
}

void IngestPath::Stop() {
  BeginStop();
  if (replica_thread_.joinable()) replica_thread_.join();
}

bool IngestPath::stopping() const {
  absl::MutexLock lock(&pending_mu_);
  return stopping_;
}

bool IngestPath::SourceIngested(const std::string& source) const {
  absl::MutexLock lock(&pending_mu_);
  return sources_.contains(source);
}

void IngestPath::DropKnownSources(std::vector<IngestRecord>* records) {
  std::erase_if(*records, [&](const IngestRecord& r)
                              ABSL_EXCLUSIVE_LOCKS_REQUIRED(pending_mu_) {
                                const bool dup = !r.source.empty() &&
                                                 sources_.contains(r.source);
                                if (dup) m_.duplicates->Add();
                                return dup;
                              });
}

absl::StatusOr<uint64_t> IngestPath::Ingest(std::vector<IngestRecord> records,
                                            LogRange* appended, bool route) {
  LATENTD_RETURN_IF_ERROR(router_->CheckJoined());
  uint64_t staged = 0;
  if (staged_ != nullptr) {
    LATENTD_ASSIGN_OR_RETURN(staged, StageHandoffs(&records));
    if (records.empty()) return staged;
  }
  LATENTD_ASSIGN_OR_RETURN(uint64_t n,
                           IngestHere(std::move(records), appended, route));
  return staged + n;
}

absl::StatusOr<uint64_t> IngestPath::IngestHere(
    std::vector<IngestRecord> records, LogRange* appended, bool route) {
  LATENTD_RETURN_IF_ERROR(router_->CheckJoined());
  uint64_t forwarded = 0;
  if (router_->link() != nullptr && route) {
    LATENTD_RETURN_IF_ERROR(router_->ForwardToOwners(&records, &forwarded));
  }
  {
    absl::MutexLock lock(&pending_mu_);
    DropKnownSources(&records);
  }
  if (records.empty()) return forwarded;
  // Copies first: a document is acknowledged once every copy is durable.
  if (replicas_ != nullptr && router_->link() != nullptr) {
    LATENTD_RETURN_IF_ERROR(Replicate(records));
  }
  // Appends are serialized by the log; the pending queue keeps log order
  // because both happen under pending_mu_.
  absl::MutexLock lock(&pending_mu_);
  if (leaving_) {
    return absl::UnavailableError(
        "this node is leaving the cluster (remove-node): ingest into another "
        "member");
  }
  // Again: a call with the same source may have been appended while these
  // were replicated (a client's retry of a call that timed out).
  DropKnownSources(&records);
  if (records.empty()) return forwarded;
  LATENTD_RETURN_IF_ERROR(log_->Append(&records));
  const uint64_t n = records.size();
  if (appended != nullptr) {
    *appended = {records.front().sequence, records.back().sequence};
  }
  for (IngestRecord& r : records) {
    if (!r.source.empty()) sources_.insert(r.source);
    pending_.push_back(std::move(r));
  }
  ingested_ += n;
  m_.ingested->Add(n);
  m_.pending->Set(static_cast<double>(pending_.size()));
  return n + forwarded;
}

void IngestPath::BeginLeave() {
  absl::MutexLock lock(&pending_mu_);
  leaving_ = true;
}

std::vector<IngestRecord> IngestPath::PendingAfter(uint64_t merged) const {
  std::vector<IngestRecord> batch;
  absl::MutexLock lock(&pending_mu_);
  for (const IngestRecord& r : pending_) {
    if (r.sequence > merged) batch.push_back(r);
  }
  return batch;
}

void IngestPath::Published(uint64_t merged) {
  absl::MutexLock lock(&pending_mu_);
  std::erase_if(pending_, [merged](const IngestRecord& r) {
    return r.sequence <= merged;
  });
  m_.pending->Set(static_cast<double>(pending_.size()));
}

void IngestPath::Compact(uint64_t merged, uint64_t max_bytes) {
  if (max_bytes == 0 || log_->size_bytes() <= max_bytes) return;
  const uint64_t before = log_->size_bytes();
  absl::Status c = log_->Compact(merged, options_.keep_sources);
  if (!c.ok()) {
    LogWarning(
        absl::StrCat("ingest log compaction failed (kept): ", c.message()));
  } else {
    Log(absl::StrCat("ingest log compacted: ", before, " -> ",
                     log_->size_bytes(), " bytes"));
  }
}

void IngestPath::WaitForWork(absl::Duration timeout) const {
  absl::MutexLock lock(&pending_mu_);
  auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pending_mu_) {
    return stopping_ || !pending_.empty();
  };
  pending_mu_.AwaitWithTimeout(absl::Condition(&ready), timeout);
}

size_t IngestPath::pending() const {
  absl::MutexLock lock(&pending_mu_);
  return pending_.size();
}

const std::string& IngestPath::log_path() const { return log_->path(); }

}  // namespace latentd::service
