// Thin RAII wrappers over POSIX file descriptors with buffered writes, and
// the atomic-replace helpers (write temp, fsync, rename, fsync directory).
// Every error is an absl::Status naming the path. Not thread-safe: one owner.
#ifndef LATENTD_CORPORA_POSIX_FILE_H_
#define LATENTD_CORPORA_POSIX_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd::internal {

// Status for a failed system call: the errno's code, "what path: strerror".
absl::Status ErrnoError(int error_number, std::string_view what,
                        std::string_view path);

// A file opened for reading. Owns its descriptor.
class PosixReadFile {
 public:
  static absl::StatusOr<std::unique_ptr<PosixReadFile>> Open(
      const std::string& path);
  ~PosixReadFile();
  PosixReadFile(const PosixReadFile&) = delete;
  PosixReadFile& operator=(const PosixReadFile&) = delete;

  // Reads up to n bytes; fewer only at the end of the file (0 = end).
  absl::StatusOr<size_t> Read(char* buf, size_t n);
  // Size of the file when opened.
  uint64_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  PosixReadFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  std::string path_;
  int fd_;
  uint64_t size_;
};

// A file created (truncated) for writing, with a large user-space buffer.
class PosixWriteFile {
 public:
  static absl::StatusOr<std::unique_ptr<PosixWriteFile>> Create(
      const std::string& path);
  // Closes without syncing (the data may be lost); errors are ignored.
  ~PosixWriteFile();
  PosixWriteFile(const PosixWriteFile&) = delete;
  PosixWriteFile& operator=(const PosixWriteFile&) = delete;

  absl::Status Append(std::string_view data);
  // Writes `data` at `offset`, bypassing (and not disturbing) the buffer.
  // REQUIRES: the region was already flushed.
  absl::Status WriteAt(uint64_t offset, std::string_view data);
  absl::Status Flush();
  // Flush + fsync.
  absl::Status Sync();
  // Flush + close; the object is spent afterwards.
  absl::Status Close();
  const std::string& path() const { return path_; }

 private:
  PosixWriteFile(std::string path, int fd);
  absl::Status WriteRaw(const char* data, size_t n);
  std::string path_;
  int fd_;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
};

// fsyncs the directory that holds `path`, so a rename into it is durable.
absl::Status SyncDirectoryOf(const std::string& path);
// rename(2), then fsync of the target's directory.
absl::Status RenameDurably(const std::string& from, const std::string& to);
// Writes `contents` to path.tmp, fsyncs, renames over `path`.
absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents);
// True if `path`'s parent directory ("." if none) exists.
bool ParentDirectoryExists(const std::string& path);

}  // namespace latentd::internal

#endif  // LATENTD_CORPORA_POSIX_FILE_H_
