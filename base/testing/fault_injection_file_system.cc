#include "base/testing/fault_injection_file_system.h"

#include <fnmatch.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace latentd {
namespace {

// Each operation's name, and what the real call would say on failure.
struct OpText {
  const char* name;
  const char* verb;
};
constexpr OpText kOpText[] = {
    {"open-read", "cannot open"},                     // kOpenRead
    {"read", "cannot read"},                          // kRead
    {"open-write", "cannot create"},                  // kOpenWrite
    {"write", "cannot write"},                        // kWrite
    {"sync", "cannot fsync"},                         // kSync
    {"truncate", "cannot truncate"},                  // kTruncate
    {"close", "cannot close"},                        // kClose
    {"rename", "cannot rename to"},                   // kRename
    {"link", "cannot link as"},                       // kLink
    {"remove", "cannot remove"},                      // kRemove
    {"sync-directory", "cannot fsync directory"},     // kSyncDirectory
    {"create-directory", "cannot create directory"},  // kCreateDirectory
};
static_assert(sizeof(kOpText) / sizeof(kOpText[0]) ==
              static_cast<size_t>(FileOp::kCreateDirectory) + 1);

class FaultReadableFile : public ReadableFile {
 public:
  FaultReadableFile(FaultInjectionFileSystem* fs,
                    std::unique_ptr<ReadableFile> file)
      : fs_(fs), file_(std::move(file)) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    LATENTD_RETURN_IF_ERROR(fs_->Check(FileOp::kRead, path()));
    return file_->Read(buf, n);
  }
  uint64_t size() const override { return file_->size(); }
  const std::string& path() const override { return file_->path(); }

 private:
  FaultInjectionFileSystem* fs_;
  std::unique_ptr<ReadableFile> file_;
};

class FaultWritableFile : public WritableFile {
 public:
  FaultWritableFile(FaultInjectionFileSystem* fs,
                    std::unique_ptr<WritableFile> file)
      : fs_(fs), file_(std::move(file)) {}

  absl::Status Append(std::string_view data) override {
    bool short_write = false;
    absl::Status fault = fs_->Check(FileOp::kWrite, path(), &short_write);
    if (fault.ok()) return file_->Append(data);
    if (short_write) {
      // What a full disk does: part goes out, the rest fails.
      LATENTD_RETURN_IF_ERROR(file_->Append(data.substr(0, data.size() / 2)));
      LATENTD_RETURN_IF_ERROR(file_->Flush());
    }
    return fault;
  }
  absl::Status WriteAt(uint64_t offset, std::string_view data) override {
    bool short_write = false;
    absl::Status fault = fs_->Check(FileOp::kWrite, path(), &short_write);
    if (fault.ok()) return file_->WriteAt(offset, data);
    if (short_write) {
      LATENTD_RETURN_IF_ERROR(
          file_->WriteAt(offset, data.substr(0, data.size() / 2)));
    }
    return fault;
  }
  absl::Status Flush() override { return file_->Flush(); }
  absl::Status Sync() override {
    // The data reaches the kernel; only its fsync fails.
    LATENTD_RETURN_IF_ERROR(file_->Flush());
    LATENTD_RETURN_IF_ERROR(fs_->Check(FileOp::kSync, path()));
    return file_->Sync();
  }
  absl::Status DataSync() override {
    LATENTD_RETURN_IF_ERROR(file_->Flush());
    LATENTD_RETURN_IF_ERROR(fs_->Check(FileOp::kSync, path()));
    return file_->DataSync();
  }
  absl::Status Truncate(uint64_t size) override {
    LATENTD_RETURN_IF_ERROR(fs_->Check(FileOp::kTruncate, path()));
    return file_->Truncate(size);
  }
  absl::Status Close() override {
    absl::Status fault = fs_->Check(FileOp::kClose, path());
    absl::Status closed = file_->Close();  // close(2) releases it either way
    return fault.ok() ? closed : fault;
  }
  const std::string& path() const override { return file_->path(); }

 private:
  FaultInjectionFileSystem* fs_;
  std::unique_ptr<WritableFile> file_;
};

}  // namespace

std::string_view FileOpName(FileOp op) {
  return kOpText[static_cast<size_t>(op)].name;
}

FaultInjectionFileSystem::FaultInjectionFileSystem(FileSystem* base)
    : base_(base) {}

void FaultInjectionFileSystem::Inject(FileFault fault) {
  absl::MutexLock lock(&mu_);
  armed_.push_back({.fault = std::move(fault)});
}

void FaultInjectionFileSystem::Clear() {
  absl::MutexLock lock(&mu_);
  armed_.clear();
}

int64_t FaultInjectionFileSystem::failures() const {
  absl::MutexLock lock(&mu_);
  return failures_;
}

std::vector<std::pair<FileOp, std::string>> FaultInjectionFileSystem::Calls()
    const {
  absl::MutexLock lock(&mu_);
  return calls_;
}

void FaultInjectionFileSystem::ForgetCalls() {
  absl::MutexLock lock(&mu_);
  calls_.clear();
}

absl::Status FaultInjectionFileSystem::Check(FileOp op, const std::string& path,
                                             bool* short_write) {
  absl::MutexLock lock(&mu_);
  calls_.emplace_back(op, path);
  for (Armed& a : armed_) {
    const FileFault& f = a.fault;
    if (f.op != op || ::fnmatch(f.path_glob.c_str(), path.c_str(), 0) != 0) {
      continue;
    }
    if (f.times >= 0 && a.fired >= f.times) continue;
    if (a.seen++ < f.skip) continue;
    ++a.fired;
    ++failures_;
    if (short_write != nullptr) *short_write = f.short_write;
    return absl::Status(
        absl::ErrnoToStatusCode(f.error),
        absl::StrCat(kOpText[static_cast<size_t>(op)].verb, " ", path, ": ",
                     std::strerror(f.error), " (injected fault)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<ReadableFile>>
FaultInjectionFileSystem::OpenForRead(const std::string& path) {
  LATENTD_RETURN_IF_ERROR(Check(FileOp::kOpenRead, path));
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                           base_->OpenForRead(path));
  return std::make_unique<FaultReadableFile>(this, std::move(file));
}

absl::StatusOr<std::unique_ptr<WritableFile>>
FaultInjectionFileSystem::OpenForWrite(const std::string& path,
                                       WriteMode mode) {
  LATENTD_RETURN_IF_ERROR(Check(FileOp::kOpenWrite, path));
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                           base_->OpenForWrite(path, mode));
  return std::make_unique<FaultWritableFile>(this, std::move(file));
}

absl::Status FaultInjectionFileSystem::Rename(const std::string& from,
                                              const std::string& to) {
  LATENTD_RETURN_IF_ERROR(Check(FileOp::kRename, to));
  return base_->Rename(from, to);
}

absl::Status FaultInjectionFileSystem::Link(const std::string& existing,
                                            const std::string& new_name) {
  LATENTD_RETURN_IF_ERROR(Check(FileOp::kLink, new_name));
  return base_->Link(existing, new_name);
}

absl::Status FaultInjectionFileSystem::Remove(const std::string& path) {
  LATENTD_RETURN_IF_ERROR(Check(FileOp::kRemove, path));
  return base_->Remove(path);
}

absl::Status FaultInjectionFileSystem::SyncDirectory(const std::string& dir) {
  LATENTD_RETURN_IF_ERROR(Check(FileOp::kSyncDirectory, dir));
  return base_->SyncDirectory(dir);
}

absl::Status FaultInjectionFileSystem::CreateDirectory(const std::string& dir) {
  LATENTD_RETURN_IF_ERROR(Check(FileOp::kCreateDirectory, dir));
  return base_->CreateDirectory(dir);
}

absl::StatusOr<FileInfo> FaultInjectionFileSystem::Stat(
    const std::string& path) {
  return base_->Stat(path);
}

}  // namespace latentd
