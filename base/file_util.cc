#include "base/file_util.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/file_system.h"
#include "base/status_macros.h"

namespace latentd {

absl::Status ErrnoError(int error_number, absl::string_view what,
                        absl::string_view path) {
  return absl::Status(
      absl::ErrnoToStatusCode(error_number),
      absl::StrCat(what, " ", path, ": ", std::strerror(error_number)));
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

bool PathExists(const std::string& path) {
  return FileSystem::Default()->Stat(path).ok();
}

bool ParentDirectoryExists(const std::string& path) {
  absl::StatusOr<FileInfo> info =
      FileSystem::Default()->Stat(DirectoryOf(path));
  return info.ok() && info->directory;
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             size_t max_bytes) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                           FileSystem::Default()->OpenForRead(path));
  if (file->size() > max_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": file larger than ", max_bytes, " bytes"));
  }
  std::string data;
  size_t chunk = size_t{64} << 10;
  for (;;) {
    const size_t old = data.size();
    if (old > max_bytes) {
      return absl::ResourceExhaustedError(
          absl::StrCat(path, ": file larger than ", max_bytes, " bytes"));
    }
    data.resize(old + chunk);
    LATENTD_ASSIGN_OR_RETURN(size_t got, file->Read(data.data() + old, chunk));
    data.resize(old + got);
    if (got < chunk) break;
    chunk = std::min(chunk * 2, size_t{16} << 20);
  }
  return data;
}

absl::Status WriteFileDurably(const std::string& path,
                              std::string_view contents) {
  LATENTD_ASSIGN_OR_RETURN(
      std::unique_ptr<WritableFile> file,
      FileSystem::Default()->OpenForWrite(path, WriteMode::kTruncate));
  LATENTD_RETURN_IF_ERROR(file->Append(contents));
  LATENTD_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

absl::Status SyncDirectoryOf(const std::string& path) {
  return FileSystem::Default()->SyncDirectory(DirectoryOf(path));
}

absl::Status RenameDurably(const std::string& from, const std::string& to) {
  LATENTD_RETURN_IF_ERROR(FileSystem::Default()->Rename(from, to));
  absl::Status synced = SyncDirectoryOf(to);
  if (!synced.ok()) {
    return absl::Status(
        synced.code(),
        absl::StrCat("renamed ", from, " to ", to, " but ", synced.message()));
  }
  return absl::OkStatus();
}

absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents) {
  const std::string tmp = path + ".tmp";
  absl::Status status = WriteFileDurably(tmp, contents);
  if (status.ok()) status = RenameDurably(tmp, path);
  // After a rename only the directory's fsync can have failed: no tmp left.
  if (!status.ok() && PathExists(tmp)) {
    (void)FileSystem::Default()->Remove(tmp);
  }
  return status;
}

absl::StatusOr<std::string> KeepDamagedCopy(const std::string& path) {
  const std::string stem = absl::StrCat(
      path, ".damaged-",
      absl::FormatTime("%Y%m%dT%H%M%SZ", absl::Now(), absl::UTCTimeZone()));
  std::string kept = stem;
  for (int i = 1; PathExists(kept); ++i) kept = absl::StrCat(stem, "-", i);
  FileSystem* fs = FileSystem::Default();
  if (!fs->Link(path, kept).ok()) {
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> in,
                             fs->OpenForRead(path));
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> out,
                             fs->OpenForWrite(kept, WriteMode::kTruncate));
    std::string buf(1 << 20, '\0');
    for (;;) {
      LATENTD_ASSIGN_OR_RETURN(size_t got, in->Read(buf.data(), buf.size()));
      if (got == 0) break;
      LATENTD_RETURN_IF_ERROR(out->Append(std::string_view(buf.data(), got)));
    }
    LATENTD_RETURN_IF_ERROR(out->Sync());
    LATENTD_RETURN_IF_ERROR(out->Close());
  }
  LATENTD_RETURN_IF_ERROR(SyncDirectoryOf(kept));
  return kept;
}

}  // namespace latentd
