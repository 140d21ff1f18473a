#include "service/internal/ack_mark.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "xxhash.h"

namespace latentd::service::internal {
namespace {

constexpr size_t kMarkBytes = 16;

}  // namespace

std::string AckMarkPath(const std::string& journal_path) {
  return journal_path + ".acked";
}

absl::StatusOr<AckMark> ReadAckMark(const std::string& journal_path) {
  const std::string path = AckMarkPath(journal_path);
  AckMark mark;
  absl::StatusOr<std::string> bytes = ReadFileToString(path, 4096);
  if (absl::IsNotFound(bytes.status())) return mark;
  if (!bytes.ok()) {
    return absl::Status(
        bytes.status().code(),
        absl::StrCat("cannot read ", path, ": ", bytes.status().message()));
  }
  mark.exists = true;
  // Empty: created, never written (a crash in the journal's first Open).
  if (bytes->empty()) return mark;
  uint64_t value = 0;
  uint64_t hash = 0;
  if (bytes->size() == kMarkBytes) {
    std::memcpy(&value, bytes->data(), 8);
    std::memcpy(&hash, bytes->data() + 8, 8);
  }
  if (bytes->size() != kMarkBytes || XXH64(bytes->data(), 8, 0) != hash) {
    mark.damaged = true;
    return mark;
  }
  mark.value = value;
  return mark;
}

absl::Status WriteAckMark(WritableFile* mark, uint64_t value) {
  char out[kMarkBytes];
  std::memcpy(out, &value, 8);
  const uint64_t hash = XXH64(out, 8, 0);
  std::memcpy(out + 8, &hash, 8);
  absl::Status status = mark->WriteAt(0, std::string_view(out, kMarkBytes));
  if (status.ok()) status = mark->DataSync();
  return status;
}

absl::Status UndoFailedAppend(WritableFile* journal, uint64_t size,
                              WritableFile* mark, uint64_t acked,
                              FailedAppend* failed) {
  if (failed->mark) {
    LATENTD_RETURN_IF_ERROR(WriteAckMark(mark, acked));
    failed->mark = false;
  }
  if (failed->tail) {
    LATENTD_RETURN_IF_ERROR(journal->Truncate(size));
    LATENTD_RETURN_IF_ERROR(journal->DataSync());
    failed->tail = false;
  }
  return absl::OkStatus();
}

}  // namespace latentd::service::internal
