// InMemoryTokenStore: committed versions are immutable vectors of batches
// shared with the readers that started on them, so a rewrite never disturbs
// a pass in progress.
#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "base/status_macros.h"
#include "corpora/internal/token_store_format.h"
#include "corpora/token_store.h"

namespace latentd {
namespace {

using Version = std::vector<DocBatch>;

class MemoryBatchReader : public BatchReader {
 public:
  explicit MemoryBatchReader(std::shared_ptr<const Version> version)
      : version_(std::move(version)) {}

  absl::StatusOr<bool> Next(DocBatch* batch) override {
    if (next_ == version_->size()) {
      batch->Clear();
      return false;
    }
    const DocBatch& src = (*version_)[next_];
    *batch = src;
    batch->index = next_;
    batch->first_doc = docs_;
    if (batch->doc_ids.empty()) batch->doc_ids.resize(src.num_docs());
    if (batch->users.empty()) batch->users.resize(src.num_docs());
    docs_ += src.num_docs();
    ++next_;
    return true;
  }

 private:
  std::shared_ptr<const Version> version_;
  size_t next_ = 0;
  uint64_t docs_ = 0;
};

class InMemoryTokenStore;

class MemoryBatchWriter : public BatchWriter {
 public:
  MemoryBatchWriter(InMemoryTokenStore* store, TokenStoreMeta meta)
      : store_(store), meta_(meta), version_(std::make_shared<Version>()) {}
  ~MemoryBatchWriter() override;

  absl::Status Append(const DocBatch& batch) override {
    if (done_) return absl::FailedPreconditionError("writer already spent");
    LATENTD_RETURN_IF_ERROR(internal::ValidateBatch(batch, meta_));
    version_->push_back(batch);
    internal::CountAppended(batch, &meta_);
    return absl::OkStatus();
  }

  absl::Status Commit() override;

 private:
  InMemoryTokenStore* store_;
  TokenStoreMeta meta_;
  std::shared_ptr<Version> version_;
  bool done_ = false;
};

class InMemoryTokenStore : public TokenStore {
 public:
  explicit InMemoryTokenStore(const TokenStoreMeta& meta)
      : meta_(meta), current_(std::make_shared<const Version>()) {
    meta_.num_docs = meta_.num_tokens = meta_.num_batches = 0;
  }

  const TokenStoreMeta& meta() const override { return meta_; }

  absl::StatusOr<std::unique_ptr<BatchReader>> Read() override {
    std::lock_guard<std::mutex> lock(mu_);
    return std::make_unique<MemoryBatchReader>(current_);
  }

  absl::StatusOr<std::unique_ptr<BatchWriter>> Rewrite(
      const TokenStoreMeta& meta) override {
    LATENTD_RETURN_IF_ERROR(internal::ValidateMeta(meta));
    if (writer_active_.exchange(true)) {
      return absl::FailedPreconditionError(
          "in-memory token store: a rewrite is already in progress");
    }
    TokenStoreMeta fresh = meta;
    fresh.num_docs = fresh.num_tokens = fresh.num_batches = 0;
    return std::make_unique<MemoryBatchWriter>(this, fresh);
  }

  void Committed(std::shared_ptr<const Version> version,
                 const TokenStoreMeta& meta) {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = std::move(version);
    meta_ = meta;
  }
  void WriterDone() { writer_active_ = false; }

 private:
  TokenStoreMeta meta_;
  std::mutex mu_;  // guards current_ (Read and Commit may be on two threads)
  std::shared_ptr<const Version> current_;
  std::atomic<bool> writer_active_{false};
};

MemoryBatchWriter::~MemoryBatchWriter() { store_->WriterDone(); }

absl::Status MemoryBatchWriter::Commit() {
  if (done_) return absl::FailedPreconditionError("writer already spent");
  done_ = true;
  store_->Committed(std::move(version_), meta_);
  return absl::OkStatus();
}

}  // namespace

std::unique_ptr<TokenStore> CreateInMemoryTokenStore(
    const TokenStoreMeta& meta) {
  return std::make_unique<InMemoryTokenStore>(meta);
}

}  // namespace latentd
