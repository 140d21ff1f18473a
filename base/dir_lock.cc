#include "base/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/file_util.h"

namespace latentd {
namespace {

// The pid another holder wrote into the file, or "unknown".
std::string HolderPid(int fd) {
  char buf[32] = {};
  const ssize_t got = ::pread(fd, buf, sizeof(buf) - 1, 0);
  int pid = 0;
  if (got <= 0 || !absl::SimpleAtoi(absl::StripAsciiWhitespace(buf), &pid) ||
      pid <= 0) {
    return "unknown";
  }
  return absl::StrCat(pid);
}

}  // namespace

absl::StatusOr<DirectoryLock> DirectoryLock::Acquire(const std::string& dir) {
  std::string path = dir + "/LOCK";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "cannot open the lock file", path);
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    if (error == EWOULDBLOCK) {
      const std::string holder = HolderPid(fd);
      ::close(fd);
      return absl::FailedPreconditionError(absl::StrCat(
          "data directory ", dir, " is in use by process ", holder, " (", path,
          " is locked): stop that process first, or give another data "
          "directory"));
    }
    ::close(fd);
    return ErrnoError(error, "cannot lock", path);
  }
  const std::string pid = absl::StrCat(::getpid(), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) !=
                                     static_cast<ssize_t>(pid.size())) {
    const int error = errno;
    ::close(fd);
    return ErrnoError(error, "cannot write the pid into", path);
  }
  return DirectoryLock(std::move(path), fd);
}

DirectoryLock::DirectoryLock(DirectoryLock&& other) noexcept
    : path_(std::move(other.path_)), fd_(std::exchange(other.fd_, -1)) {}

DirectoryLock& DirectoryLock::operator=(DirectoryLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(other.path_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

DirectoryLock::~DirectoryLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace latentd
