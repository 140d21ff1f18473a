// FaultInjectionFileSystem: a FileSystem (base/file_system.h) for tests that
// passes every call to a real one (POSIX by default) and makes chosen calls
// fail as a failing disk would: ENOSPC, EIO or any errno, a short write
// (part of the data written, then the error), a failed fsync. A fault names
// the operation and a glob over the path (fnmatch(3) without FNM_PATHNAME,
// so "*" matches "/" too), and fires on the Nth matching call, for a number
// of calls or until Clear(). Calls() records what went through, so a test
// can list the write sites of an operation and then fail each in turn.
//
// Usage:
//   FaultInjectionFileSystem faults;
//   ScopedDefaultFileSystem use(&faults);
//   faults.Inject({.op = FileOp::kSync, .path_glob = "*/ingest.log",
//                  .error = EIO});
//   ... the next fdatasync of the ingest log fails (and every later one)
//   faults.Clear();
//
// An injected error reads like the real one with " (injected fault)" added,
// e.g. "cannot fsync /d/model.bin.tmp: Input/output error (injected fault)".
//
// Thread-safety: every method is safe from any thread (one mutex); the files
// it hands out are used by one thread at a time, as any WritableFile.
#ifndef LATENTD_BASE_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_
#define LATENTD_BASE_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "base/file_system.h"

namespace latentd {

// The operations a fault can target (their names, in this order, are in
// the .cc file).
enum class FileOp {
  kOpenRead,   // OpenForRead
  kRead,       // ReadableFile::Read
  kOpenWrite,  // OpenForWrite
  kWrite,      // WritableFile::Append and WriteAt (not Flush)
  kSync,       // WritableFile::Sync and DataSync (fsync, fdatasync)
  kTruncate,   // WritableFile::Truncate
  kClose,      // WritableFile::Close
  kRename,     // the path is the target
  kLink,       // the path is the new name
  kRemove,
  kSyncDirectory,  // the path is the directory
  kCreateDirectory,
};
std::string_view FileOpName(FileOp op);

struct FileFault {
  FileOp op = FileOp::kWrite;
  std::string path_glob = "*";
  int error = EIO;
  // kWrite only: the first half of the data is written, then the error.
  bool short_write = false;
  // Matching calls let through before the first failure (0: the next one).
  int skip = 0;
  // Failures before the fault disarms itself; -1: until Clear().
  int times = -1;
};

class FaultInjectionFileSystem : public FileSystem {
 public:
  // REQUIRES: `base` outlives this object.
  explicit FaultInjectionFileSystem(FileSystem* base = FileSystem::Posix());

  // Arms `fault` (next to those armed already; the first that matches a
  // call decides).
  void Inject(FileFault fault);
  // Disarms every fault: calls go through again.
  void Clear();
  // Injected failures so far.
  int64_t failures() const;
  // Every call that reached this file system (op, path), in order, since
  // construction or ForgetCalls().
  std::vector<std::pair<FileOp, std::string>> Calls() const;
  void ForgetCalls();

  // The error to return for (op, path) if an armed fault fires, else OK;
  // records the call. *short_write (if given) is set for a short write.
  // Used by the files this object hands out.
  absl::Status Check(FileOp op, const std::string& path,
                     bool* short_write = nullptr);

  absl::StatusOr<std::unique_ptr<ReadableFile>> OpenForRead(
      const std::string& path) override;
  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(
      const std::string& path, WriteMode mode) override;
  absl::Status Rename(const std::string& from, const std::string& to) override;
  absl::Status Link(const std::string& existing,
                    const std::string& new_name) override;
  absl::Status Remove(const std::string& path) override;
  absl::Status SyncDirectory(const std::string& dir) override;
  absl::Status CreateDirectory(const std::string& dir) override;
  absl::StatusOr<FileInfo> Stat(const std::string& path) override;

 private:
  struct Armed {
    FileFault fault;
    int seen = 0;   // matching calls so far
    int fired = 0;  // failures injected
  };

  FileSystem* const base_;
  mutable absl::Mutex mu_;
  std::vector<Armed> armed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<FileOp, std::string>> calls_ ABSL_GUARDED_BY(mu_);
  int64_t failures_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace latentd

#endif  // LATENTD_BASE_TESTING_FAULT_INJECTION_FILE_SYSTEM_H_
