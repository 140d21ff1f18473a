#include "service/replica_logs.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/status_macros.h"

namespace latentd::service {
namespace {

constexpr char kSuffix[] = ".log";
constexpr size_t kSuffixBytes = sizeof(kSuffix) - 1;

// A node id's bytes in hex: non-empty, even, hex digits only.
bool IsHex(absl::string_view s) {
  return !s.empty() && s.size() % 2 == 0 &&
         std::all_of(s.begin(), s.end(), [](char c) {
           return absl::ascii_isxdigit(static_cast<unsigned char>(c));
         });
}

}  // namespace

absl::StatusOr<std::unique_ptr<ReplicaLogs>> ReplicaLogs::Open(
    const std::string& dir) {
  FileSystem* fs = FileSystem::Default();
  if (absl::Status made = fs->CreateDirectory(dir);
      !made.ok() && !absl::IsAlreadyExists(made)) {
    return made;
  }
  std::unique_ptr<ReplicaLogs> logs(new ReplicaLogs(dir));
  std::error_code ec;
  std::vector<std::string> origins;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!absl::EndsWith(name, kSuffix)) continue;  // e.g. a .damaged- copy
    const absl::string_view hex =
        absl::string_view(name).substr(0, name.size() - kSuffixBytes);
    if (!IsHex(hex)) {
      return absl::DataLossError(absl::StrCat(
          dir, "/", name, ": not a replica log name (hex of a node id)"));
    }
    origins.push_back(absl::HexStringToBytes(hex));
  }
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot list ", dir, ": ", ec.message()));
  }
  absl::MutexLock lock(&logs->mu_);
  for (const std::string& origin : origins) {
    LATENTD_RETURN_IF_ERROR(logs->OpenOrigin(origin, nullptr));
  }
  return logs;
}

std::string ReplicaLogs::PathOf(const std::string& origin) const {
  return absl::StrCat(dir_, "/", absl::BytesToHexString(origin), kSuffix);
}

absl::Status ReplicaLogs::OpenOrigin(const std::string& origin,
                                     std::vector<IngestRecord>* out) {
  std::vector<IngestRecord> records;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<IngestLog> log,
                           IngestLog::Open(PathOf(origin), &records));
  Origin& o = origins_[origin];
  o.log = std::move(log);
  o.sources.clear();
  o.records = records.size();
  for (const IngestRecord& r : records) {
    if (!r.source.empty()) o.sources.insert(r.source);
  }
  if (out != nullptr) *out = std::move(records);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> ReplicaLogs::Append(
    const std::string& origin, std::vector<IngestRecord> records) {
  if (origin.empty()) {
    return absl::InvalidArgumentError("a replica copy names no origin node");
  }
  absl::MutexLock lock(&mu_);
  auto it = origins_.find(origin);
  if (it == origins_.end()) {
    LATENTD_RETURN_IF_ERROR(OpenOrigin(origin, nullptr));
    it = origins_.find(origin);
  }
  Origin& o = it->second;
  absl::flat_hash_set<std::string> batch;
  std::erase_if(records, [&](const IngestRecord& r) {
    return !r.source.empty() &&
           (o.sources.contains(r.source) || !batch.insert(r.source).second);
  });
  if (records.empty()) return 0;
  LATENTD_RETURN_IF_ERROR(o.log->Append(&records));
  for (const IngestRecord& r : records) {
    if (!r.source.empty()) o.sources.insert(r.source);
  }
  o.records += records.size();
  return records.size();
}

std::vector<std::string> ReplicaLogs::Origins() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> out;
  for (const auto& [origin, o] : origins_) {
    if (o.records > 0) out.push_back(origin);
  }
  return out;
}

bool ReplicaLogs::HoldsSource(const std::string& origin,
                              const std::string& source) const {
  absl::MutexLock lock(&mu_);
  auto it = origins_.find(origin);
  return it != origins_.end() && it->second.sources.contains(source);
}

absl::StatusOr<std::vector<IngestRecord>> ReplicaLogs::Read(
    const std::string& origin) {
  absl::MutexLock lock(&mu_);
  std::vector<IngestRecord> records;
  if (!origins_.contains(origin)) return records;
  // Reopening reads the file through the one writer there is.
  origins_[origin].log.reset();
  LATENTD_RETURN_IF_ERROR(OpenOrigin(origin, &records));
  return records;
}

absl::Status ReplicaLogs::Drop(const std::string& origin) {
  absl::MutexLock lock(&mu_);
  auto it = origins_.find(origin);
  if (it == origins_.end()) return absl::OkStatus();
  it->second.log.reset();
  origins_.erase(it);
  LATENTD_RETURN_IF_ERROR(IngestLog::Remove(PathOf(origin)));
  return FileSystem::Default()->SyncDirectory(dir_);
}

uint64_t ReplicaLogs::records() const {
  absl::MutexLock lock(&mu_);
  uint64_t n = 0;
  for (const auto& [origin, o] : origins_) n += o.records;
  return n;
}

}  // namespace latentd::service
