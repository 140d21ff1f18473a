// The token store: a corpus with each token's current topic, read and
// rewritten sequentially one DocBatch at a time, so a sweep streams the
// corpus and memory stays bounded by the model, not the corpus.
//
// On disk (FileTokenStore) a store is one file: a versioned header (magic,
// format version, meta below, header checksum) followed by blocks, one per
// appended DocBatch, each with its own length and checksum. A truncated,
// corrupt or foreign file is reported as kDataLoss / kInvalidArgument naming
// the file and the block. InMemoryTokenStore keeps the batches in memory, for
// small corpora and tests. Both keep the batch boundaries they were written
// with: a pass reads back exactly the batches that were appended.
//
// Thread-safety: a TokenStore is used by one thread at a time, except that a
// BatchReader and a BatchWriter from the same store may be used at the same
// time from different threads (the pipeline reads the old version while it
// writes the new one). One reader and one writer at a time.
#ifndef LATENTD_CORPORA_TOKEN_STORE_H_
#define LATENTD_CORPORA_TOKEN_STORE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/doc_batch.h"

namespace latentd {

// Describes the store as a whole; kept in the header.
struct TokenStoreMeta {
  uint64_t num_docs = 0;     // set by Commit from what was appended
  uint64_t num_tokens = 0;   // set by Commit
  uint64_t num_batches = 0;  // set by Commit
  uint32_t num_topics = 0;   // K the topics were drawn for
  uint32_t vocab_size = 0;   // every WordId is < vocab_size
  uint64_t sweep = 0;        // sweeps completed when these topics were written
};

// Sequential pass over a store's batches, in the order they were written.
class BatchReader {
 public:
  virtual ~BatchReader() = default;
  // Fills *batch (cleared first; index and first_doc set) with the next
  // batch. Returns false at the end, an error if the data is damaged.
  virtual absl::StatusOr<bool> Next(DocBatch* batch) = 0;
};

// Writes a new version of a store batch by batch. Nothing is visible to
// readers until Commit(); a writer destroyed without Commit() leaves the old
// version in place and removes what it wrote.
// REQUIRES: the store outlives its writer; one writer per store at a time
// (a second Rewrite() meanwhile is kFailedPrecondition). A batch's index and
// first_doc are ignored (readers set them from the position).
class BatchWriter {
 public:
  virtual ~BatchWriter() = default;
  // Appends one batch. REQUIRES: every word < meta.vocab_size and every
  // topic < meta.num_topics (checked; kInvalidArgument otherwise).
  virtual absl::Status Append(const DocBatch& batch) = 0;
  // Makes the new version durable (FileTokenStore: write, fsync, rename,
  // fsync the directory) and current. The writer is spent afterwards. On
  // failure the old version stays current, except when only the final
  // directory fsync failed: then the new version is current (meta() and
  // Read() say so) but may not survive a crash, and the error says "current
  // but not durable". A caller that must know compares meta() before and
  // after.
  virtual absl::Status Commit() = 0;
  // Like Commit, but the wait for durability (FileTokenStore: the fsync,
  // rename and directory fsync, about 10 ms of device latency a sweep
  // here) runs on a thread of the store's while the caller goes on. The
  // new version is current when this returns: meta() and Read() give it,
  // and the next Rewrite() may start at once. Its commit's outcome is
  // reported by the first of: the next writer's Commit() or
  // CommitInBackground() (which then fails, committing nothing), or
  // TokenStore::WaitDurable(). After a failure the version stays current
  // but not durable (a crash would bring back the one before it) until a
  // later commit succeeds. The in-memory store commits at once.
  virtual absl::Status CommitInBackground() { return Commit(); }
};

class TokenStore {
 public:
  virtual ~TokenStore() = default;
  // Meta of the current (last committed) version.
  virtual const TokenStoreMeta& meta() const = 0;
  // Starts a pass over the current version.
  virtual absl::StatusOr<std::unique_ptr<BatchReader>> Read() = 0;
  // Starts writing a replacement version described by `meta` (its counts are
  // recomputed from what is appended). Used by every sweep: the pipeline
  // reads the current version and appends each batch with its new topics.
  virtual absl::StatusOr<std::unique_ptr<BatchWriter>> Rewrite(
      const TokenStoreMeta& meta) = 0;
  // Waits for a commit running in the background (CommitInBackground) and
  // returns OK if the current version is durable: what a crash would
  // bring back. Call it before anything that must not get ahead of the
  // store on disk (a checkpoint, the end of training). Fails with the
  // background commit's error, or, if the current version was left not
  // durable by an earlier failure, kDataLoss saying so (when only the
  // directory's fsync had failed, it is tried again first).
  virtual absl::Status WaitDurable() { return absl::OkStatus(); }
};

// Calls fn(batch, d) for every document of `store`'s current version, in
// store order (batch.first_doc + d is its index). fn returns void or
// absl::Status; the pass stops at the first error, of the store or of fn,
// and returns it.
template <typename Fn>
absl::Status ForEachDocument(TokenStore* store, Fn&& fn) {
  absl::StatusOr<std::unique_ptr<BatchReader>> reader = store->Read();
  if (!reader.ok()) return reader.status();
  DocBatch batch;
  for (;;) {
    absl::StatusOr<bool> more = (*reader)->Next(&batch);
    if (!more.ok()) return more.status();
    if (!*more) return absl::OkStatus();
    for (size_t d = 0; d < batch.num_docs(); ++d) {
      if constexpr (std::is_void_v<
                        std::invoke_result_t<Fn&, const DocBatch&, size_t>>) {
        fn(static_cast<const DocBatch&>(batch), d);
      } else {
        absl::Status s = fn(static_cast<const DocBatch&>(batch), d);
        if (!s.ok()) return s;
      }
    }
  }
}

// Opens an existing store file. Checks header and version; the blocks are
// checked as they are read.
absl::StatusOr<std::unique_ptr<TokenStore>> OpenFileTokenStore(
    const std::string& path);
// A store at `path` that is empty until its first Rewrite() commits. Fails if
// the directory does not exist. An existing file at `path` is replaced only
// when that first Rewrite() commits.
absl::StatusOr<std::unique_ptr<TokenStore>> CreateFileTokenStore(
    const std::string& path, const TokenStoreMeta& meta);
// A store held in memory.
std::unique_ptr<TokenStore> CreateInMemoryTokenStore(
    const TokenStoreMeta& meta);

}  // namespace latentd

#endif  // LATENTD_CORPORA_TOKEN_STORE_H_
