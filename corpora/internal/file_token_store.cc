// FileTokenStore: the token store as one file (layout in
// token_store_format.h). Each reader opens its own descriptor, so a pass over
// the old version keeps working while a writer renames the new one over it.
#include <atomic>
#include <memory>
#include <string>
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
                  TokenStoreMeta meta)
      : store_(store), file_(std::move(file)), meta_(meta) {}
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

 private:
  FileTokenStore* store_;
  std::unique_ptr<WritableFile> file_;
  TokenStoreMeta meta_;
  internal::EncodedBlock block_;
  bool done_ = false;
};

class FileTokenStore : public TokenStore {
 public:
  FileTokenStore(std::string path, TokenStoreMeta meta, bool has_file)
      : path_(std::move(path)), meta_(meta), has_file_(has_file) {}

  const TokenStoreMeta& meta() const override { return meta_; }

  absl::StatusOr<std::unique_ptr<BatchReader>> Read() override {
    if (!has_file_) return std::make_unique<EmptyBatchReader>();
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                             FileSystem::Default()->OpenForRead(path_));
    LATENTD_ASSIGN_OR_RETURN(TokenStoreMeta meta, ReadHeader(*file));
    return std::make_unique<FileBatchReader>(std::move(file), meta);
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
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        FileSystem::Default()->OpenForWrite(temp_path(), WriteMode::kTruncate);
    absl::Status status = file.status();
    // The header is written again, with the final counts, by Commit.
    if (status.ok())
      status = (*file)->Append(internal::EncodeFileHeader(fresh));
    if (!status.ok()) {
      writer_active_ = false;
      (void)FileSystem::Default()->Remove(temp_path());
      return status;
    }
    return std::make_unique<FileBatchWriter>(this, std::move(*file), fresh);
  }

  std::string temp_path() const { return path_ + ".tmp"; }
  const std::string& path() const { return path_; }
  void Committed(const TokenStoreMeta& meta) {
    meta_ = meta;
    has_file_ = true;
  }
  void WriterDone() { writer_active_ = false; }

 private:
  const std::string path_;
  TokenStoreMeta meta_;
  bool has_file_;
  std::atomic<bool> writer_active_{false};
};

FileBatchWriter::~FileBatchWriter() {
  if (!done_) {
    (void)file_->Close();
    (void)FileSystem::Default()->Remove(store_->temp_path());
  }
  store_->WriterDone();
}

absl::Status FileBatchWriter::Commit() {
  if (done_) return absl::FailedPreconditionError("writer already spent");
  done_ = true;
  FileSystem* fs = FileSystem::Default();
  absl::Status status = file_->Flush();
  if (status.ok()) {
    status = file_->WriteAt(0, internal::EncodeFileHeader(meta_));
  }
  if (status.ok()) status = file_->Sync();
  if (status.ok()) status = file_->Close();
  if (status.ok()) status = fs->Rename(store_->temp_path(), store_->path());
  if (!status.ok()) {
    (void)file_->Close();
    (void)fs->Remove(store_->temp_path());
    return status;
  }
  // Renamed: the new version is current (readers open it from now on), so
  // meta() must say so even if the directory's fsync fails below.
  store_->Committed(meta_);
  absl::Status synced = SyncDirectoryOf(store_->path());
  if (!synced.ok()) {
    return absl::Status(
        synced.code(),
        absl::StrCat(store_->path(), ": the new version is current but not ",
                     "durable (", synced.message(), ")"));
  }
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
