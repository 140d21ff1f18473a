// Helpers over FileSystem::Default() (base/file_system.h): the durable
// patterns every module that keeps state uses (write, fsync, rename, fsync
// the directory), whole-file reads, and the Status for a failed system call.
// Each error names the path.
//
// Thread-safety: plain functions; safe from any thread, but two writers of
// one path at a time race (the caller's lock keeps them apart).
#ifndef LATENTD_BASE_FILE_UTIL_H_
#define LATENTD_BASE_FILE_UTIL_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace latentd {

// Status for a failed system call: the errno's code (absl::ErrnoToStatusCode)
// and "WHAT PATH: strerror", e.g. "cannot fsync /d/x.tmp: No space left".
absl::Status ErrnoError(int error_number, absl::string_view what,
                        absl::string_view path);

// The directory part of `path`: "." if it has none, "/" for "/x".
std::string DirectoryOf(const std::string& path);
// True if `path` exists (Stat succeeds).
bool PathExists(const std::string& path);
// True if `path`'s parent directory ("." if none) exists.
bool ParentDirectoryExists(const std::string& path);

// The whole file at `path`. kResourceExhausted if it is over `max_bytes`.
absl::StatusOr<std::string> ReadFileToString(const std::string& path,
                                             size_t max_bytes = size_t{1}
                                                                << 30);

// Writes `contents` to `path` (created or truncated), fsyncs and closes it.
// On failure the file may hold part of `contents`.
absl::Status WriteFileDurably(const std::string& path,
                              std::string_view contents);
// fsyncs the directory that holds `path`, so a rename into it is durable.
absl::Status SyncDirectoryOf(const std::string& path);
// Rename, then fsync of the target's directory. If the rename succeeded but
// the fsync failed, `to` is the new file (not yet durable) and the error
// says "renamed ... but".
absl::Status RenameDurably(const std::string& from, const std::string& to);
// Writes `contents` to PATH.tmp, fsyncs, renames over `path`, fsyncs the
// directory. On failure `path` is as before (PATH.tmp removed) unless only
// the last fsync failed (see RenameDurably).
absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents);

// Keeps a damaged file's bytes under a second name before it is repaired:
// PATH.damaged-<UTC time>[-N], a hard link (a durable copy, streamed, where
// there are no hard links), its directory fsynced. Returns the name.
absl::StatusOr<std::string> KeepDamagedCopy(const std::string& path);

}  // namespace latentd

#endif  // LATENTD_BASE_FILE_UTIL_H_
