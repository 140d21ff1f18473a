// The POSIX FileSystem (base/file_system.h): file descriptors, a 1 MiB
// user-space write buffer per WritableFile, writeback started every 8 MiB,
// EINTR retried, every other errno returned as ErrnoError naming the path.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"

namespace latentd {
namespace {

constexpr size_t kWriteBufferBytes = size_t{1} << 20;
constexpr size_t kWriteBehindBytes = size_t{8} << 20;

class PosixReadableFile : public ReadableFile {
 public:
  PosixReadableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixReadableFile() override { ::close(fd_); }

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t done = 0;
    while (done < n) {
      const ssize_t r = ::read(fd_, buf + done, n - done);
      if (r < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(errno, "cannot read", path_);
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return done;
  }
  uint64_t size() const override { return size_; }
  const std::string& path() const override { return path_; }

 private:
  const std::string path_;
  const int fd_;
  const uint64_t size_;
};

class PosixWritableFile : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd)
      : path_(std::move(path)), fd_(fd), buf_(new char[kWriteBufferBytes]) {}
  ~PosixWritableFile() override {
    if (fd_ >= 0) ::close(fd_);
  }

  absl::Status Append(std::string_view data) override {
    LATENTD_RETURN_IF_ERROR(CheckOpen());
    // An empty piece (an empty vector's bytes) may have a null data(),
    // which memcpy must not get even for 0 bytes (UBSan).
    if (data.empty()) return absl::OkStatus();
    if (used_ + data.size() <= kWriteBufferBytes) {
      std::memcpy(buf_.get() + used_, data.data(), data.size());
      used_ += data.size();
      return absl::OkStatus();
    }
    LATENTD_RETURN_IF_ERROR(Flush());
    if (data.size() >= kWriteBufferBytes / 2) {
      return WriteRaw(data.data(), data.size());
    }
    std::memcpy(buf_.get(), data.data(), data.size());
    used_ = data.size();
    return absl::OkStatus();
  }

  absl::Status WriteAt(uint64_t offset, std::string_view data) override {
    LATENTD_RETURN_IF_ERROR(CheckOpen());
    size_t done = 0;
    while (done < data.size()) {
      const ssize_t w = ::pwrite(fd_, data.data() + done, data.size() - done,
                                 static_cast<off_t>(offset + done));
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(errno, "cannot write", path_);
      }
      done += static_cast<size_t>(w);
    }
    return absl::OkStatus();
  }

  absl::Status Flush() override {
    LATENTD_RETURN_IF_ERROR(CheckOpen());
    if (used_ == 0) return absl::OkStatus();
    const size_t n = used_;
    used_ = 0;
    return WriteRaw(buf_.get(), n);
  }

  absl::Status Sync() override {
    LATENTD_RETURN_IF_ERROR(Flush());
    if (::fsync(fd_) != 0) return ErrnoError(errno, "cannot fsync", path_);
    return absl::OkStatus();
  }

  absl::Status DataSync() override {
    LATENTD_RETURN_IF_ERROR(Flush());
    if (::fdatasync(fd_) != 0) {
      return ErrnoError(errno, "cannot fdatasync", path_);
    }
    return absl::OkStatus();
  }

  absl::Status Truncate(uint64_t size) override {
    LATENTD_RETURN_IF_ERROR(CheckOpen());
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0) {
      return ErrnoError(errno, "cannot truncate", path_);
    }
    if (::lseek(fd_, static_cast<off_t>(size), SEEK_SET) < 0) {
      return ErrnoError(errno, "cannot seek", path_);
    }
    return absl::OkStatus();
  }

  absl::Status Close() override {
    if (fd_ < 0) return CheckOpen();
    absl::Status status = Flush();
    if (::close(fd_) != 0 && status.ok()) {
      status = ErrnoError(errno, "cannot close", path_);
    }
    fd_ = -1;
    return status;
  }

  const std::string& path() const override { return path_; }

 private:
  absl::Status CheckOpen() const {
    if (fd_ >= 0) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("file closed: ", path_));
  }

  absl::Status WriteRaw(const char* data, size_t n) {
    while (n > 0) {
      const ssize_t w = ::write(fd_, data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return ErrnoError(errno, "cannot write", path_);
      }
      data += w;
      n -= static_cast<size_t>(w);
      WriteBehind(static_cast<size_t>(w));
    }
    return absl::OkStatus();
  }

  // Starts the kernel's writeback of each 8 MiB written (a hint; errors
  // ignored), so that a large file goes to disk while it is written and
  // the fsync that ends it finds little left. Without it a sweep's 1.1 GiB
  // token store stayed dirty until the sweep's fsync, and the uncapped
  // 200 M-token runs' sweeps alternated between 12 and 9 M tokens/s where
  // a memory cap (whose pressure writes pages back early) kept them at 12
  // (docs/benchmarks.md, "Large corpora from disk").
  void WriteBehind(size_t n) {
    unsynced_ += n;
    if (unsynced_ < kWriteBehindBytes) return;
    const off_t end = ::lseek(fd_, 0, SEEK_CUR);
    if (end >= static_cast<off_t>(unsynced_)) {
      ::sync_file_range(fd_, end - static_cast<off_t>(unsynced_),
                        static_cast<off_t>(unsynced_), SYNC_FILE_RANGE_WRITE);
    }
    unsynced_ = 0;
  }

  const std::string path_;
  int fd_;
  std::unique_ptr<char[]> buf_;
  size_t used_ = 0;
  size_t unsynced_ = 0;  // written since the last writeback hint
};

class PosixFileSystem : public FileSystem {
 public:
  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenForRead(
      const std::string& path) override {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return ErrnoError(errno, "cannot open", path);
    struct stat st;
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoError(err, "cannot stat", path);
    }
    if (S_ISDIR(st.st_mode)) {
      ::close(fd);
      return absl::InvalidArgumentError(
          absl::StrCat("cannot read ", path, ": is a directory"));
    }
#ifdef POSIX_FADV_SEQUENTIAL
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
    return std::make_unique<PosixReadableFile>(
        path, fd, static_cast<uint64_t>(st.st_size));
  }

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(
      const std::string& path, WriteMode mode) override {
    // kKeep positions at the end (not O_APPEND: WriteAt must write where
    // it is told).
    const int flags = O_WRONLY | O_CREAT | O_CLOEXEC |
                      (mode == WriteMode::kTruncate ? O_TRUNC : 0);
    const int fd = ::open(path.c_str(), flags, 0644);
    if (fd < 0) return ErrnoError(errno, "cannot create", path);
    if (mode == WriteMode::kKeep && ::lseek(fd, 0, SEEK_END) < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoError(err, "cannot seek", path);
    }
    return std::make_unique<PosixWritableFile>(path, fd);
  }

  absl::Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return ErrnoError(errno, absl::StrCat("cannot rename ", from, " to"), to);
    }
    return absl::OkStatus();
  }

  absl::Status Link(const std::string& existing,
                    const std::string& new_name) override {
    if (::link(existing.c_str(), new_name.c_str()) != 0) {
      return ErrnoError(errno, absl::StrCat("cannot link ", existing, " as"),
                        new_name);
    }
    return absl::OkStatus();
  }

  absl::Status Remove(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) {
      return ErrnoError(errno, "cannot remove", path);
    }
    return absl::OkStatus();
  }

  absl::Status SyncDirectory(const std::string& dir) override {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ErrnoError(errno, "cannot open directory", dir);
    const int rc = ::fsync(fd);
    const int err = errno;
    ::close(fd);
    if (rc != 0) return ErrnoError(err, "cannot fsync directory", dir);
    return absl::OkStatus();
  }

  absl::Status CreateDirectory(const std::string& dir) override {
    if (::mkdir(dir.c_str(), 0755) != 0) {
      return ErrnoError(errno, "cannot create", dir);
    }
    return absl::OkStatus();
  }

  absl::StatusOr<FileInfo> Stat(const std::string& path) override {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      return ErrnoError(errno, "cannot stat", path);
    }
    return FileInfo{.size = static_cast<uint64_t>(st.st_size),
                    .directory = S_ISDIR(st.st_mode)};
  }
};

// Release on install, acquire on use: a file system installed before a
// thread starts using Default() is seen whole.
std::atomic<FileSystem*>& DefaultSlot() {
  static std::atomic<FileSystem*> slot{FileSystem::Posix()};
  return slot;
}

}  // namespace

FileSystem* FileSystem::Posix() {
  static PosixFileSystem* const fs = new PosixFileSystem();
  return fs;
}

FileSystem* FileSystem::Default() {
  return DefaultSlot().load(std::memory_order_acquire);
}

ScopedDefaultFileSystem::ScopedDefaultFileSystem(FileSystem* fs)
    : previous_(DefaultSlot().exchange(fs, std::memory_order_acq_rel)) {}

ScopedDefaultFileSystem::~ScopedDefaultFileSystem() {
  DefaultSlot().store(previous_, std::memory_order_release);
}

}  // namespace latentd
