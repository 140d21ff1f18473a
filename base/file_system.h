// FileSystem: the one seam between latentd and the files it reads and keeps
// (as leveldb's Env). Every open, write, fsync, rename, link, remove and
// read of durable state (the ingest log, the token store, model snapshots,
// vocab.txt, settings.txt, exports, the ports file, the tokens file) goes
// through FileSystem::Default(), which is the POSIX file system unless a
// test replaced it (ScopedDefaultFileSystem) with one that injects faults
// (base/testing/fault_injection_file_system.h). The helpers built on it
// (atomic replace, durable rename, whole-file reads) are in base/file_util.h.
//
// Errors: every failure is an absl::Status whose code follows the errno
// (absl::ErrnoToStatusCode: ENOENT kNotFound, ENOSPC kResourceExhausted,
// ...; see ErrnoError in base/file_util.h) and whose message names the path and
// what was being done, e.g. "cannot fsync /d/model.bin.tmp: Input/output
// error". A failed write or fsync is never reported as success.
//
// Usage:
//   FileSystem* fs = FileSystem::Default();
//   LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> f,
//                            fs->OpenForWrite(path, WriteMode::kTruncate));
//   LATENTD_RETURN_IF_ERROR(f->Append(bytes));
//   LATENTD_RETURN_IF_ERROR(f->Sync());
//   LATENTD_RETURN_IF_ERROR(f->Close());
//
// Thread-safety: a FileSystem's methods may be called from any thread at
// any time (implementations must make them so). A ReadableFile or
// WritableFile is used by one thread at a time (its owner's).
#ifndef LATENTD_BASE_FILE_SYSTEM_H_
#define LATENTD_BASE_FILE_SYSTEM_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd {

// A file opened for reading. Owns what it opened; closes it when destroyed.
class ReadableFile {
 public:
  virtual ~ReadableFile() = default;
  // Reads up to n bytes into buf; fewer only at the end of the file
  // (0 = the end).
  virtual absl::StatusOr<size_t> Read(char* buf, size_t n) = 0;
  // The file's size when it was opened.
  virtual uint64_t size() const = 0;
  virtual const std::string& path() const = 0;
};

// A file opened for writing. Append may buffer in user space: nothing is
// written before Flush, Sync, DataSync or Close (or the buffer filling), and
// nothing is durable before Sync or DataSync returned OK. Destroying an
// unclosed file closes it without flushing or syncing (what was buffered is
// lost; errors are ignored).
class WritableFile {
 public:
  virtual ~WritableFile() = default;
  // Appends `data` at the write position (the end of what was written).
  virtual absl::Status Append(std::string_view data) = 0;
  // Writes `data` at `offset`, bypassing the buffer (pwrite). REQUIRES: the
  // buffer is empty (Flush first). A failure may leave part of the data
  // written: the caller cuts it off (Truncate) before it acknowledges.
  virtual absl::Status WriteAt(uint64_t offset, std::string_view data) = 0;
  // Writes the buffer out.
  virtual absl::Status Flush() = 0;
  // Flush, then fsync (data and metadata).
  virtual absl::Status Sync() = 0;
  // Flush, then fdatasync (data and the size, not the times).
  virtual absl::Status DataSync() = 0;
  // Cuts the file to `size` bytes; the write position moves there.
  // REQUIRES: the buffer is empty. Not durable before a Sync/DataSync.
  virtual absl::Status Truncate(uint64_t size) = 0;
  // Flush, then close; the object is spent afterwards (every call fails).
  virtual absl::Status Close() = 0;
  virtual const std::string& path() const = 0;
};

// How OpenForWrite treats an existing file.
enum class WriteMode {
  kTruncate,  // created, or cut to empty
  kKeep,      // created if missing; its bytes kept, the position at the end
};

// What Stat tells.
struct FileInfo {
  uint64_t size = 0;
  bool directory = false;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // The POSIX file system (a process-wide object, never destroyed).
  static FileSystem* Posix();
  // The file system latentd's modules use: Posix() unless a
  // ScopedDefaultFileSystem replaced it. Never null.
  static FileSystem* Default();

  // Opens `path` for reading. kInvalidArgument if it is a directory.
  virtual absl::StatusOr<std::unique_ptr<ReadableFile>> OpenForRead(
      const std::string& path) = 0;
  // Opens `path` for writing (mode 0644 when created).
  virtual absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(
      const std::string& path, WriteMode mode) = 0;
  // rename(2): atomic; `to` is replaced if it exists. Not durable before a
  // SyncDirectory of `to`'s directory.
  virtual absl::Status Rename(const std::string& from,
                              const std::string& to) = 0;
  // link(2): `new_name` becomes a second name of `existing`.
  virtual absl::Status Link(const std::string& existing,
                            const std::string& new_name) = 0;
  // unlink(2). kNotFound if there is no such file.
  virtual absl::Status Remove(const std::string& path) = 0;
  // fsyncs the directory `dir`, making the names in it durable.
  virtual absl::Status SyncDirectory(const std::string& dir) = 0;
  // mkdir(2) (not its parents), mode 0755. kAlreadyExists if it exists.
  virtual absl::Status CreateDirectory(const std::string& dir) = 0;
  // stat(2). kNotFound if there is no such file.
  virtual absl::StatusOr<FileInfo> Stat(const std::string& path) = 0;
};

// Makes `fs` FileSystem::Default() for its lifetime, then restores the one
// before. For tests. REQUIRES: `fs` outlives this object, and nothing opened
// through `fs` is used after it is gone. Scopes nest (last in, first out).
class ScopedDefaultFileSystem {
 public:
  explicit ScopedDefaultFileSystem(FileSystem* fs);
  ~ScopedDefaultFileSystem();
  ScopedDefaultFileSystem(const ScopedDefaultFileSystem&) = delete;
  ScopedDefaultFileSystem& operator=(const ScopedDefaultFileSystem&) = delete;

 private:
  FileSystem* previous_;
};

}  // namespace latentd

#endif  // LATENTD_BASE_FILE_SYSTEM_H_
