#include "corpora/posix_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "corpora/internal/absl_compat.h"

namespace latentd::internal {
namespace {

constexpr size_t kWriteBufferBytes = size_t{1} << 20;

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

absl::Status ErrnoError(int error_number, std::string_view what,
                        std::string_view path) {
  return absl::Status(absl::ErrnoToStatusCode(error_number),
                      absl::StrCat(ToAbsl(what), " ", ToAbsl(path), ": ",
                                   std::strerror(error_number)));
}

absl::StatusOr<std::unique_ptr<PosixReadFile>> PosixReadFile::Open(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open", path);
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    int err = errno;
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
  return std::unique_ptr<PosixReadFile>(
      new PosixReadFile(path, fd, static_cast<uint64_t>(st.st_size)));
}

PosixReadFile::~PosixReadFile() { ::close(fd_); }

absl::StatusOr<size_t> PosixReadFile::Read(char* buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    ssize_t r = ::read(fd_, buf + done, n - done);
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "cannot read", path_);
    }
    if (r == 0) break;
    done += static_cast<size_t>(r);
  }
  return done;
}

PosixWriteFile::PosixWriteFile(std::string path, int fd)
    : path_(std::move(path)), fd_(fd), buf_(new char[kWriteBufferBytes]) {}

absl::StatusOr<std::unique_ptr<PosixWriteFile>> PosixWriteFile::Create(
    const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoError(errno, "cannot create", path);
  return std::unique_ptr<PosixWriteFile>(new PosixWriteFile(path, fd));
}

PosixWriteFile::~PosixWriteFile() {
  if (fd_ >= 0) ::close(fd_);
}

absl::Status PosixWriteFile::WriteRaw(const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd_, data, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "cannot write", path_);
    }
    data += w;
    n -= static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status PosixWriteFile::Append(std::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError("file closed: " + path_);
  // An empty piece (an empty vector's bytes) may have a null data(), which
  // memcpy must not get even for 0 bytes (UBSan).
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

absl::Status PosixWriteFile::WriteAt(uint64_t offset, std::string_view data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t w = ::pwrite(fd_, data.data() + done, data.size() - done,
                         static_cast<off_t>(offset + done));
    if (w < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(errno, "cannot write", path_);
    }
    done += static_cast<size_t>(w);
  }
  return absl::OkStatus();
}

absl::Status PosixWriteFile::Flush() {
  if (used_ == 0) return absl::OkStatus();
  size_t n = used_;
  used_ = 0;
  return WriteRaw(buf_.get(), n);
}

absl::Status PosixWriteFile::Sync() {
  LATENTD_RETURN_IF_ERROR(Flush());
  if (::fsync(fd_) != 0) return ErrnoError(errno, "cannot fsync", path_);
  return absl::OkStatus();
}

absl::Status PosixWriteFile::Close() {
  absl::Status status = Flush();
  if (fd_ >= 0 && ::close(fd_) != 0 && status.ok()) {
    status = ErrnoError(errno, "cannot close", path_);
  }
  fd_ = -1;
  return status;
}

absl::Status SyncDirectoryOf(const std::string& path) {
  std::string dir = DirectoryOf(path);
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(errno, "cannot open directory", dir);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError(err, "cannot fsync directory", dir);
  return absl::OkStatus();
}

absl::Status RenameDurably(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoError(errno, absl::StrCat("cannot rename ", from, " to"), to);
  }
  return SyncDirectoryOf(to);
}

absl::Status WriteFileAtomically(const std::string& path,
                                 std::string_view contents) {
  std::string tmp = path + ".tmp";
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<PosixWriteFile> file,
                           PosixWriteFile::Create(tmp));
  absl::Status status = file->Append(contents);
  if (status.ok()) status = file->Sync();
  if (status.ok()) status = file->Close();
  if (status.ok()) status = RenameDurably(tmp, path);
  if (!status.ok()) ::unlink(tmp.c_str());
  return status;
}

bool ParentDirectoryExists(const std::string& path) {
  struct stat st;
  std::string dir = DirectoryOf(path);
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace latentd::internal
