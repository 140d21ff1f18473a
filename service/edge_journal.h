// EdgeJournal: the fsynced, append-only journal of the edges a graph node
// acknowledged (IngestEdges), DIR/graph/ingested_edges.log. An edge is
// acknowledged only after Append() returned, i.e. after its record was
// written and fdatasync'ed; a restart reads every acknowledged edge back.
//
// File: records framed as DIR/ingest.log's are (service/internal/
// framed_records.h: u32 payload length, u64 xxh64 of the payload, the
// payload); a payload is u32 n > 0, then n edges of u64 src, u64 dst
// (src < dst) and f32 weight (finite, > 0), one record per Append (more for
// over kMaxEdgesPerRecord edges).
//
// Beside it, ingested_edges.log.acked (internal/ack_mark.h) holds the
// acknowledged length in bytes, written after the records' fdatasync and
// before Append returns. Open() cuts off a torn tail (bytes after the last
// intact record that hold no intact record, past the mark: an append a
// crash cut, never acknowledged). Damage followed by an intact record, or
// intact records that end before the mark (acknowledged edges lost), is
// kDataLoss naming the file and offsets, the files left as they are.
//
// Older data directories hold DIR/graph/ingested.edges, plain "src dst
// weight" lines: Open() adds its edges to the journal (a rewrite: temp
// file, fsync, rename), removes it and logs that it did.
//
// Thread-safety: none; the owner serializes the calls (GraphIngest does,
// under its ingest_mu_).
#ifndef LATENTD_SERVICE_EDGE_JOURNAL_H_
#define LATENTD_SERVICE_EDGE_JOURNAL_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/file_system.h"
#include "corpora/edge_list.h"
#include "service/internal/ack_mark.h"

namespace latentd::service {

class EdgeJournal {
 public:
  static constexpr char kFileName[] = "ingested_edges.log";
  // The plain-text journal of older versions, read once (see above).
  static constexpr char kLegacyFileName[] = "ingested.edges";
  static constexpr size_t kMaxEdgesPerRecord = size_t{1} << 20;

  // Opens (creating if missing) DIR/ingested_edges.log, first taking in a
  // legacy DIR/ingested.edges (see above), and fills *edges with the edges
  // of its records, in order. Fails with kDataLoss on damage (see above),
  // with the parse error ("PATH:LINE: what") of a malformed legacy file,
  // and naming the path on I/O errors. REQUIRES: `dir` exists.
  static absl::StatusOr<std::unique_ptr<EdgeJournal>> Open(
      const std::string& dir, std::vector<Edge>* edges);
  ~EdgeJournal();

  // Appends `edges` (REQUIRES: src < dst, weight finite and > 0) and
  // fdatasyncs. On failure (kUnavailable naming the file and the cause)
  // nothing is acknowledged: the file is cut back to its previous length
  // (if that fails, the next Append cuts it before it writes, or fails).
  absl::Status Append(const std::vector<Edge>& edges);

  // Closes the file; Append fails afterwards.
  absl::Status Close();

  const std::string& path() const { return path_; }
  uint64_t size_bytes() const { return size_; }

 private:
  EdgeJournal(std::string path, std::unique_ptr<WritableFile> file,
              std::unique_ptr<WritableFile> mark, uint64_t size);

  const std::string path_;
  std::unique_ptr<WritableFile> file_;  // null once closed
  std::unique_ptr<WritableFile> mark_;  // the acknowledged length
  uint64_t size_;                       // the acknowledged length
  // What a failed append left that could not be undone yet (bytes past
  // size_, a mark above it): the next Append undoes it first.
  internal::FailedAppend failed_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_EDGE_JOURNAL_H_
