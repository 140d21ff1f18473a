#include "corpora/token_store_repair.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "corpora/doc_batch.h"
#include "corpora/internal/token_store_format.h"
#include "corpora/token_store.h"

namespace latentd {
namespace {

// Sequential reads with look-ahead over a ReadableFile (which only reads
// forward): Peek(n) shows the next n bytes (fewer at the end) without
// consuming them.
class LookaheadFile {
 public:
  explicit LookaheadFile(std::unique_ptr<ReadableFile> file)
      : file_(std::move(file)) {}

  absl::StatusOr<std::string_view> Peek(size_t n) {
    if (buf_.size() - start_ < n && !eof_) {
      buf_.erase(0, start_);
      start_ = 0;
      const size_t want = std::max<size_t>(n - buf_.size(), size_t{1} << 20);
      const size_t old = buf_.size();
      buf_.resize(old + want);
      size_t filled = 0;
      while (filled < want) {
        LATENTD_ASSIGN_OR_RETURN(
            size_t got, file_->Read(buf_.data() + old + filled, want - filled));
        if (got == 0) {
          eof_ = true;
          break;
        }
        filled += got;
      }
      buf_.resize(old + filled);
    }
    return std::string_view(buf_).substr(start_, n);
  }
  // Consumes n bytes (fewer at the end of the file).
  absl::Status Skip(uint64_t n) {
    while (n > 0) {
      if (start_ == buf_.size()) {
        LATENTD_ASSIGN_OR_RETURN(
            std::string_view more,
            Peek(static_cast<size_t>(std::min<uint64_t>(n, 1 << 20))));
        if (more.empty()) break;
      }
      const size_t take =
          static_cast<size_t>(std::min<uint64_t>(n, buf_.size() - start_));
      start_ += take;
      offset_ += take;
      n -= take;
    }
    return absl::OkStatus();
  }
  uint64_t offset() const { return offset_; }
  uint64_t size() const { return file_->size(); }
  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<ReadableFile> file_;
  std::string buf_;
  size_t start_ = 0;
  uint64_t offset_ = 0;
  bool eof_ = false;
};

constexpr uint64_t kPlaceholderDocs = 65536;

// A check's message without the "PATH: " it starts with (the repair's
// report names the file once).
std::string Reason(const absl::Status& status, const std::string& path) {
  absl::string_view m = status.message();
  const std::string prefix = path + ": ";
  if (m.substr(0, prefix.size()) == prefix) m.remove_prefix(prefix.size());
  return std::string(m);
}

struct Segment {
  bool good = false;
  uint64_t offset = 0, bytes = 0;
  uint64_t docs = 0, tokens = 0;
  bool counted_from_header = true;
  std::string reason;
};

// The block header at the file's position, if it verifies.
absl::StatusOr<internal::BlockHeader> HeaderAt(LookaheadFile& f,
                                               uint64_t block) {
  LATENTD_ASSIGN_OR_RETURN(std::string_view head,
                           f.Peek(internal::kBlockHeaderBytes));
  const uint64_t after = f.offset() + head.size();
  return internal::DecodeBlockHeader(head, f.size() - std::min(after, f.size()),
                                     f.path(), block);
}

// Pass 1: the file cut into good blocks and damaged stretches.
absl::StatusOr<std::vector<Segment>> Scan(LookaheadFile& f,
                                          const TokenStoreMeta& meta) {
  std::vector<Segment> segments;
  DocBatch batch;
  LATENTD_RETURN_IF_ERROR(f.Skip(internal::kFileHeaderBytes));
  while (f.offset() < f.size()) {
    const uint64_t block = segments.size();
    absl::StatusOr<internal::BlockHeader> h = HeaderAt(f, block);
    if (h.ok()) {
      Segment s;
      s.offset = f.offset();
      s.bytes = internal::kBlockHeaderBytes + h->payload_bytes;
      s.docs = h->num_docs;
      s.tokens = h->num_tokens;
      LATENTD_ASSIGN_OR_RETURN(std::string_view all, f.Peek(s.bytes));
      absl::Status payload = internal::DecodeBlockPayload(
          *h, all.substr(internal::kBlockHeaderBytes), meta, f.path(), block,
          &batch);
      s.good = payload.ok();
      if (!s.good) s.reason = Reason(payload, f.path());
      LATENTD_RETURN_IF_ERROR(f.Skip(s.bytes));
      segments.push_back(std::move(s));
      continue;
    }
    // No block starts here: the stretch runs to the next header that
    // verifies, or to the end of the file.
    Segment s;
    s.offset = f.offset();
    s.counted_from_header = false;
    s.reason = Reason(h.status(), f.path());
    LATENTD_RETURN_IF_ERROR(f.Skip(1));
    char magic[4];
    std::memcpy(magic, &internal::kBlockMagic, sizeof(magic));
    while (f.offset() < f.size()) {
      LATENTD_ASSIGN_OR_RETURN(std::string_view ahead, f.Peek(1 << 20));
      const size_t at = ahead.find(std::string_view(magic, sizeof(magic)));
      if (at == std::string_view::npos) {
        // Keep the last 3 bytes: a magic may straddle the window.
        if (ahead.size() < sizeof(magic)) {
          LATENTD_RETURN_IF_ERROR(f.Skip(ahead.size()));
          break;
        }
        LATENTD_RETURN_IF_ERROR(f.Skip(ahead.size() - 3));
        continue;
      }
      LATENTD_RETURN_IF_ERROR(f.Skip(at));
      if (HeaderAt(f, block).ok()) break;
      LATENTD_RETURN_IF_ERROR(f.Skip(1));
    }
    s.bytes = f.offset() - s.offset;
    segments.push_back(std::move(s));
  }
  // Document and token counts of the stretches without a header.
  uint64_t docs = 0, tokens = 0;
  const Segment* unknown = nullptr;
  for (const Segment& s : segments) {
    if (s.counted_from_header) {
      docs += s.docs;
      tokens += s.tokens;
    } else if (unknown != nullptr) {
      return absl::DataLossError(absl::StrCat(
          f.path(), ": damaged at bytes ", unknown->offset, " and ", s.offset,
          " where no block header is left: how many documents each held is "
          "not known, so the documents after them cannot keep their indices"));
    } else {
      unknown = &s;
    }
  }
  if (docs > meta.num_docs || tokens > meta.num_tokens ||
      (unknown == nullptr &&
       (docs != meta.num_docs || tokens != meta.num_tokens ||
        segments.size() != meta.num_batches))) {
    return absl::DataLossError(absl::StrCat(
        f.path(), ": its ", segments.size(), " blocks hold ", docs,
        " documents / ", tokens, " tokens, the file header says ",
        meta.num_batches, " blocks / ", meta.num_docs, " / ", meta.num_tokens));
  }
  for (Segment& s : segments) {
    if (s.counted_from_header) continue;
    s.docs = meta.num_docs - docs;
    s.tokens = meta.num_tokens - tokens;
    // Every document and token takes payload bytes: counts a stretch
    // between two good blocks cannot hold are damage in the file header,
    // not lost documents. (A stretch that runs to the end may be a cut.)
    const bool at_end = s.offset + s.bytes >= f.size();
    if (at_end) continue;
    if (s.docs > s.bytes / internal::kBytesPerDoc ||
        s.tokens > s.bytes / internal::kBytesPerToken ||
        s.docs * internal::kBytesPerDoc + s.tokens * internal::kBytesPerToken >
            s.bytes) {
      return absl::DataLossError(absl::StrCat(
          f.path(), ": the damaged stretch at bytes ", s.offset, "..",
          s.offset + s.bytes - 1, " would have held ", s.docs, " documents / ",
          s.tokens,
          " tokens by the file header's counts, more than its bytes can"));
    }
  }
  // More lost than kept is not a repair to make unasked (and bounds the
  // empty documents written by what the file really holds).
  uint64_t kept = 0, lost = 0;
  for (const Segment& s : segments) (s.good ? kept : lost) += s.docs;
  if (lost > kept) {
    return absl::DataLossError(absl::StrCat(
        f.path(), ": damage would lose ", lost, " documents and keep only ",
        kept,
        "; not repaired (restore the file from a backup, or rebuild "
        "the store from the corpus)"));
  }
  return segments;
}

}  // namespace

std::string TokenStoreDamage::Describe() const {
  std::string docs_range = docs == 0 ? "no documents"
                                     : absl::StrCat("documents ", first_doc,
                                                    "..", first_doc + docs - 1);
  return absl::StrCat(docs_range, " (", docs, " documents, ", tokens, " tokens",
                      counted_from_header ? ""
                                          : ", counted from "
                                            "the file header",
                      "; bytes ", offset, "..", offset + bytes - 1,
                      "): ", reason);
}

uint64_t TokenStoreRepair::docs_lost() const {
  uint64_t n = 0;
  for (const TokenStoreDamage& d : damage) n += d.docs;
  return n;
}

uint64_t TokenStoreRepair::tokens_lost() const {
  uint64_t n = 0;
  for (const TokenStoreDamage& d : damage) n += d.tokens;
  return n;
}

absl::StatusOr<TokenStoreRepair> RepairFileTokenStore(const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> store,
                           OpenFileTokenStore(path));
  const TokenStoreMeta meta = store->meta();
  std::vector<Segment> segments;
  {
    LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                             FileSystem::Default()->OpenForRead(path));
    LookaheadFile f(std::move(file));
    LATENTD_ASSIGN_OR_RETURN(segments, Scan(f, meta));
  }
  TokenStoreRepair repair;
  uint64_t first_doc = 0;
  for (const Segment& s : segments) {
    if (!s.good) {
      repair.damage.push_back({.first_doc = first_doc,
                               .docs = s.docs,
                               .tokens = s.tokens,
                               .offset = s.offset,
                               .bytes = s.bytes,
                               .counted_from_header = s.counted_from_header,
                               .reason = s.reason});
    }
    first_doc += s.docs;
  }
  if (repair.damage.empty()) return repair;

  // Pass 2: the good blocks as they were, each damaged one as empty
  // documents; the damaged file keeps a second name.
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchWriter> writer,
                           store->Rewrite(meta));
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                           FileSystem::Default()->OpenForRead(path));
  LookaheadFile f(std::move(file));
  LATENTD_RETURN_IF_ERROR(f.Skip(internal::kFileHeaderBytes));
  DocBatch batch;
  for (size_t i = 0; i < segments.size(); ++i) {
    const Segment& s = segments[i];
    batch.Clear();
    if (s.good) {
      LATENTD_ASSIGN_OR_RETURN(internal::BlockHeader h, HeaderAt(f, i));
      LATENTD_ASSIGN_OR_RETURN(std::string_view all, f.Peek(s.bytes));
      LATENTD_RETURN_IF_ERROR(internal::DecodeBlockPayload(
          h, all.substr(internal::kBlockHeaderBytes), meta, path, i, &batch));
      LATENTD_RETURN_IF_ERROR(writer->Append(batch));
    } else {
      // As empty documents, in batches of at most kPlaceholderDocs.
      for (uint64_t left = s.docs; left > 0;) {
        batch.Clear();
        const uint64_t n = std::min(left, kPlaceholderDocs);
        for (uint64_t d = 0; d < n; ++d) batch.AddDocument("", "", {}, {});
        LATENTD_RETURN_IF_ERROR(writer->Append(batch));
        left -= n;
      }
    }
    LATENTD_RETURN_IF_ERROR(f.Skip(s.bytes));
  }
  LATENTD_ASSIGN_OR_RETURN(repair.kept_aside, KeepDamagedCopy(path));
  LATENTD_RETURN_IF_ERROR(writer->Commit());
  return repair;
}

}  // namespace latentd
