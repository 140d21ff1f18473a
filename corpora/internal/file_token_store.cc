// FileTokenStore: the token store as one file (layout in
// token_store_format.h). Each reader opens its own descriptor, so a pass over
// the old version keeps working while a writer renames the new one over it.
//
// A version is written under a temporary name, PATH.tmp or PATH.1.tmp (its
// writer's slot), and renamed over PATH once fsynced. A background commit
// (CommitInBackground) leaves the fsync and the rename to a thread of the
// store's: until that thread has renamed it, the current version is read
// from its temporary name, and the next writer takes the other slot, so
// the next sweep reads and writes while the device flushes.
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "corpora/internal/token_store_format.h"
#include "corpora/token_store.h"

namespace latentd {
namespace {

// Reads and checks the file header of an open store file.
absl::StatusOr<TokenStoreMeta> ReadHeader(ReadableFile& file) {
  std::string header(internal::kFileHeaderBytes, '\0');
  LATENTD_ASSIGN_OR_RETURN(size_t got, file.Read(header.data(), header.size()));
  header.resize(got);
  return internal::DecodeFileHeader(header, file.path());
}

// Makes a written version durable and current, as a commit does: fsync,
// close, rename `from` over `to`, fsync the directory. *renamed says whether
// the rename happened: then a failure is only the directory's fsync, and
// the version is current but not durable.
absl::Status SyncAndRename(FileSystem& fs, WritableFile& file,
                           const std::string& from, const std::string& to,
                           bool* renamed) {
  *renamed = false;
  absl::Status status = file.Sync();
  absl::Status closed = file.Close();
  if (status.ok()) status = closed;
  if (status.ok()) status = fs.Rename(from, to);
  LATENTD_RETURN_IF_ERROR(status);
  *renamed = true;
  absl::Status synced = fs.SyncDirectory(DirectoryOf(to));
  if (!synced.ok()) {
    return absl::Status(
        synced.code(), absl::StrCat(to, ": the new version is current but not ",
                                    "durable (", synced.message(), ")"));
  }
  return absl::OkStatus();
}

class FileBatchReader : public BatchReader {
 public:
  FileBatchReader(std::unique_ptr<ReadableFile> file, TokenStoreMeta meta)
      : file_(std::move(file)), meta_(meta) {}

  absl::StatusOr<bool> Next(DocBatch* batch) override {
    const std::string& path = file_->path();
    if (block_ == meta_.num_batches) {
      batch->Clear();
      LATENTD_RETURN_IF_ERROR(CheckEnd());
      return false;
    }
    char head[internal::kBlockHeaderBytes];
    LATENTD_ASSIGN_OR_RETURN(size_t got, file_->Read(head, sizeof(head)));
    offset_ += got;
    if (got == 0) {
      return absl::DataLossError(
          absl::StrCat(path, ": token store truncated: file ends after block ",
                       block_, " of ", meta_.num_batches));
    }
    LATENTD_ASSIGN_OR_RETURN(
        internal::BlockHeader h,
        internal::DecodeBlockHeader(std::string_view(head, got),
                                    file_->size() - offset_, path, block_));
    payload_.resize(h.payload_bytes);
    LATENTD_ASSIGN_OR_RETURN(got,
                             file_->Read(payload_.data(), payload_.size()));
    offset_ += got;
    LATENTD_RETURN_IF_ERROR(internal::DecodeBlockPayload(
        h, std::string_view(payload_.data(), got), meta_, path, block_, batch));
    batch->index = block_;
    batch->first_doc = docs_;
    docs_ += h.num_docs;
    tokens_ += h.num_tokens;
    ++block_;
    return true;
  }

 private:
  absl::Status CheckEnd() {
    if (offset_ != file_->size()) {
      return absl::DataLossError(absl::StrCat(
          file_->path(), ": token store has ", file_->size() - offset_,
          " unexpected bytes after its last block"));
    }
    if (docs_ != meta_.num_docs || tokens_ != meta_.num_tokens) {
      return absl::DataLossError(
          absl::StrCat(file_->path(), ": token store blocks hold ", docs_,
                       " docs / ", tokens_, " tokens, header says ",
                       meta_.num_docs, " / ", meta_.num_tokens));
    }
    return absl::OkStatus();
  }

  std::unique_ptr<ReadableFile> file_;
  TokenStoreMeta meta_;
  std::string payload_;
  uint64_t offset_ = internal::kFileHeaderBytes;
  uint64_t block_ = 0, docs_ = 0, tokens_ = 0;
};

class EmptyBatchReader : public BatchReader {
 public:
  absl::StatusOr<bool> Next(DocBatch* batch) override {
    batch->Clear();
    return false;
  }
};

class FileTokenStore;

class FileBatchWriter : public BatchWriter {
 public:
  FileBatchWriter(FileTokenStore* store, std::unique_ptr<WritableFile> file,
                  TokenStoreMeta meta, int slot)
      : store_(store), file_(std::move(file)), meta_(meta), slot_(slot) {}
  ~FileBatchWriter() override;

  absl::Status Append(const DocBatch& batch) override {
    if (done_) return absl::FailedPreconditionError("writer already spent");
    LATENTD_RETURN_IF_ERROR(internal::ValidateBatch(batch, meta_));
    internal::EncodeBlock(batch, &block_);
    LATENTD_RETURN_IF_ERROR(
        file_->Append(internal::EncodeBlockHeader(block_.header)));
    LATENTD_RETURN_IF_ERROR(internal::ForEachPayloadPiece(
        batch, block_,
        [this](std::string_view piece) { return file_->Append(piece); }));
    internal::CountAppended(batch, &meta_);
    return absl::OkStatus();
  }

  absl::Status Commit() override;
  absl::Status CommitInBackground() override;

 private:
  // Spends the writer: waits for the store's background commit (the
  // previous version's) and reports its failure; else writes the header.
  // On failure the temporary file is gone.
  absl::Status Finish();
  void Abandon();

  FileTokenStore* store_;
  std::unique_ptr<WritableFile> file_;
  TokenStoreMeta meta_;
  const int slot_;  // which temporary name the version is written under
  internal::EncodedBlock block_;
  bool done_ = false;
};

class FileTokenStore : public TokenStore {
 public:
  FileTokenStore(std::string path, TokenStoreMeta meta, bool has_file)
      : path_(std::move(path)), meta_(meta), has_file_(has_file) {}
  ~FileTokenStore() override { (void)JoinBackground(); }

  const TokenStoreMeta& meta() const override { return meta_; }

  absl::StatusOr<std::unique_ptr<BatchReader>> Read() override {
    if (!has_file_) return std::make_unique<EmptyBatchReader>();
    FileSystem* fs = FileSystem::Default();
    std::unique_ptr<ReadableFile> file;
    const int slot = background_ != nullptr ? background_->slot : live_slot_;
    if (slot >= 0) {
      // The current version is under its temporary name until the
      // background commit renames it: a miss means that happened.
      absl::StatusOr<std::unique_ptr<ReadableFile>> tmp =
          fs->OpenForRead(temp_path(slot));
      if (tmp.ok()) {
        file = std::move(*tmp);
      } else if (!absl::IsNotFound(tmp.status()) || background_ == nullptr) {
        return tmp.status();
      }
    }
    if (file == nullptr) {
      LATENTD_ASSIGN_OR_RETURN(file, fs->OpenForRead(path_));
    }
    LATENTD_ASSIGN_OR_RETURN(TokenStoreMeta meta, ReadHeader(*file));
    return std::make_unique<FileBatchReader>(std::move(file), meta);
  }

  absl::Status WaitDurable() override {
    LATENTD_RETURN_IF_ERROR(JoinBackground());
    if (durable_) return absl::OkStatus();
    if (live_slot_ < 0) {
      // Renamed over path_, but the directory's fsync failed: try again.
      LATENTD_RETURN_IF_ERROR(SyncDirectoryOf(path_));
      durable_ = true;
      return absl::OkStatus();
    }
    // Its fsync or rename failed; an fsync after a failed one may not tell
    // the truth, so only the next commit makes the store durable again.
    return absl::DataLossError(absl::StrCat(
        path_, ": the current version (sweep ", meta_.sweep,
        ") is not durable: its commit failed; the next one will retry"));
  }

  absl::StatusOr<std::unique_ptr<BatchWriter>> Rewrite(
      const TokenStoreMeta& meta) override {
    LATENTD_RETURN_IF_ERROR(internal::ValidateMeta(meta));
    if (writer_active_.exchange(true)) {
      return absl::FailedPreconditionError(
          absl::StrCat(path_, ": a rewrite is already in progress"));
    }
    TokenStoreMeta fresh = meta;
    fresh.num_docs = fresh.num_tokens = fresh.num_batches = 0;
    // Not the slot that holds the current version under its temporary name.
    const int busy = background_ != nullptr ? background_->slot : live_slot_;
    const int slot = busy == 0 ? 1 : 0;
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        FileSystem::Default()->OpenForWrite(temp_path(slot),
                                            WriteMode::kTruncate);
    absl::Status status = file.status();
    // The header is written again, with the final counts, by Commit.
    if (status.ok())
      status = (*file)->Append(internal::EncodeFileHeader(fresh));
    if (!status.ok()) {
      writer_active_ = false;
      (void)FileSystem::Default()->Remove(temp_path(slot));
      return status;
    }
    return std::make_unique<FileBatchWriter>(this, std::move(*file), fresh,
                                             slot);
  }

  std::string temp_path(int slot) const {
    return slot == 0 ? path_ + ".tmp" : path_ + ".1.tmp";
  }
  const std::string& path() const { return path_; }
  // A synchronous commit renamed its version over path(): it is current,
  // and durable once MarkDurable() (the directory fsynced).
  void Committed(const TokenStoreMeta& meta) {
    meta_ = meta;
    has_file_ = true;
    live_slot_ = -1;
    durable_ = false;
  }
  void MarkDurable() { durable_ = true; }
  void WriterDone() { writer_active_ = false; }

  // Makes the version written under `slot` to `file` (header written,
  // buffer flushed) current, and starts its fsync, rename and directory
  // fsync on a thread. REQUIRES: no background commit running.
  void CommitInBackground(std::unique_ptr<WritableFile> file, int slot,
                          const TokenStoreMeta& meta) {
    meta_ = meta;
    has_file_ = true;
    durable_ = false;
    live_slot_ = slot;
    background_ = std::make_unique<Background>();
    background_->slot = slot;
    Background* job = background_.get();
    FileSystem* fs = FileSystem::Default();
    job->thread = std::thread(
        [job, fs, file = std::move(file), from = temp_path(slot), to = path_] {
          job->status = SyncAndRename(*fs, *file, from, to, &job->renamed);
        });
  }

  // Waits for the background commit, if one runs, and returns its
  // failure once (later calls return OK; WaitDurable still tells).
  absl::Status JoinBackground() {
    if (background_ == nullptr) return absl::OkStatus();
    background_->thread.join();
    if (background_->renamed) live_slot_ = -1;
    durable_ = background_->status.ok();
    absl::Status status = std::move(background_->status);
    background_.reset();
    if (!status.ok()) {
      return absl::Status(
          status.code(),
          absl::StrCat(
              "background commit of ", path_, " failed (the ",
              "version stays current, not durable): ", status.message()));
    }
    return absl::OkStatus();
  }

 private:
  // A commit's fsync, rename and directory fsync, running on `thread`;
  // `status` and `renamed` are read after joining it.
  struct Background {
    int slot = 0;
    std::thread thread;
    absl::Status status;
    bool renamed = false;
  };

  const std::string path_;
  TokenStoreMeta meta_;
  bool has_file_;
  std::atomic<bool> writer_active_{false};
  std::unique_ptr<Background> background_;
  // The slot whose temporary name holds the current version (a background
  // commit that has not renamed it, or failed to), or -1: it is at path_.
  int live_slot_ = -1;
  bool durable_ = true;  // the current version is at path_ and fsynced
};

FileBatchWriter::~FileBatchWriter() {
  if (!done_) Abandon();
  store_->WriterDone();
}

void FileBatchWriter::Abandon() {
  (void)file_->Close();
  (void)FileSystem::Default()->Remove(store_->temp_path(slot_));
}

absl::Status FileBatchWriter::Finish() {
  if (done_) return absl::FailedPreconditionError("writer already spent");
  done_ = true;
  absl::Status status = store_->JoinBackground();
  if (status.ok()) status = file_->Flush();
  if (status.ok()) {
    status = file_->WriteAt(0, internal::EncodeFileHeader(meta_));
  }
  if (!status.ok()) Abandon();
  return status;
}

absl::Status FileBatchWriter::Commit() {
  LATENTD_RETURN_IF_ERROR(Finish());
  bool renamed = false;
  absl::Status status =
      SyncAndRename(*FileSystem::Default(), *file_, store_->temp_path(slot_),
                    store_->path(), &renamed);
  if (!renamed) {
    Abandon();
    return status;
  }
  // Renamed: the new version is current (readers open it from now on), so
  // meta() says so even if the directory's fsync failed.
  store_->Committed(meta_);
  if (status.ok()) store_->MarkDurable();
  return status;
}

absl::Status FileBatchWriter::CommitInBackground() {
  LATENTD_RETURN_IF_ERROR(Finish());
  store_->CommitInBackground(std::move(file_), slot_, meta_);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<TokenStore>> OpenFileTokenStore(
    const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                           FileSystem::Default()->OpenForRead(path));
  LATENTD_ASSIGN_OR_RETURN(TokenStoreMeta meta, ReadHeader(*file));
  return std::make_unique<FileTokenStore>(path, meta, /*has_file=*/true);
}

absl::StatusOr<std::unique_ptr<TokenStore>> CreateFileTokenStore(
    const std::string& path, const TokenStoreMeta& meta) {
  if (!ParentDirectoryExists(path)) {
    return absl::NotFoundError(absl::StrCat("cannot create token store ", path,
                                            ": directory does not exist"));
  }
  TokenStoreMeta empty = meta;
  empty.num_docs = empty.num_tokens = empty.num_batches = 0;
  return std::make_unique<FileTokenStore>(path, empty, /*has_file=*/false);
}

}  // namespace latentd
