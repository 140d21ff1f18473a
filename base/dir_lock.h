// DirectoryLock: an exclusive, advisory lock on a directory that one process
// owns while it runs (a daemon's data directory). It is an flock(2) on
// DIR/LOCK, which holds the owner's pid as text for the error a second
// process gets. The kernel drops the lock when the process exits, however
// it exits (kill -9 included), so a stale LOCK file never blocks a restart.
//
// Thread-safety: a DirectoryLock is not shared; Acquire is safe from any
// thread. flock locks belong to the open file: a second Acquire of the same
// directory fails even inside one process.
#ifndef LATENTD_BASE_DIR_LOCK_H_
#define LATENTD_BASE_DIR_LOCK_H_

#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace latentd {

class DirectoryLock {
 public:
  // Locks `dir` (which must exist). kFailedPrecondition if another holder
  // has it: "data directory DIR is in use by process PID (DIR/LOCK)";
  // kUnavailable (or the errno's code) naming the path on I/O errors.
  static absl::StatusOr<DirectoryLock> Acquire(const std::string& dir);

  DirectoryLock(DirectoryLock&& other) noexcept;
  DirectoryLock& operator=(DirectoryLock&& other) noexcept;
  DirectoryLock(const DirectoryLock&) = delete;
  DirectoryLock& operator=(const DirectoryLock&) = delete;
  // Releases the lock (closes the file; LOCK itself stays).
  ~DirectoryLock();

  const std::string& path() const { return path_; }

 private:
  DirectoryLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}

  std::string path_;  // DIR/LOCK
  int fd_ = -1;
};

}  // namespace latentd

#endif  // LATENTD_BASE_DIR_LOCK_H_
