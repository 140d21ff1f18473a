// On-disk layout of a token store file (format version 1), little-endian:
//
//   file header, 64 bytes:
//     0  magic "LTDTOKS\0"         8  u32 version      12 u32 header bytes
//     16 u64 num_docs              24 u64 num_tokens   32 u64 num_batches
//     40 u32 num_topics            44 u32 vocab_size   48 u64 sweep
//     56 u64 XXH64 of bytes 0..55
//   then num_batches blocks, each:
//     block header, 40 bytes:
//       0 u32 magic "LTDB"   4 u32 num_docs D   8 u64 num_tokens T
//       16 u64 payload bytes  24 u64 XXH64 of the payload
//       32 u64 XXH64 of block-header bytes 0..31
//     payload: u32 doc lengths[D], u32 id lengths[D], u32 user lengths[D],
//              u32 words[T], u16 topics[T], id bytes, user bytes.
//
// Every size is checked against kMaxBlockBytes and the bytes left in the
// file before anything is allocated. Thread-compatible pure functions.
#ifndef LATENTD_CORPORA_INTERNAL_TOKEN_STORE_FORMAT_H_
#define LATENTD_CORPORA_INTERNAL_TOKEN_STORE_FORMAT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/doc_batch.h"
#include "corpora/token_store.h"

namespace latentd::internal {

inline constexpr char kStoreMagic[8] = {'L', 'T', 'D', 'T', 'O', 'K', 'S', 0};
inline constexpr uint32_t kStoreVersion = 1;
inline constexpr size_t kFileHeaderBytes = 64;
inline constexpr uint32_t kBlockMagic = 0x4244544c;  // "LTDB"
inline constexpr size_t kBlockHeaderBytes = 40;
// A block larger than this is damage, never data (the writer refuses to
// write one).
inline constexpr uint64_t kMaxBlockBytes = uint64_t{1} << 30;
// Fixed payload bytes per document (3 u32) and per token (u32 + u16).
inline constexpr uint64_t kBytesPerDoc = 12;
inline constexpr uint64_t kBytesPerToken = 6;

std::string EncodeFileHeader(const TokenStoreMeta& meta);
// Decodes and checks the header: bad magic / unsupported version are
// kInvalidArgument, short or checksum mismatch kDataLoss. `path` is for
// messages only.
absl::StatusOr<TokenStoreMeta> DecodeFileHeader(std::string_view bytes,
                                                const std::string& path);

struct BlockHeader {
  uint32_t num_docs = 0;
  uint64_t num_tokens = 0;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

// Payload pieces of one batch, ready to be appended after the header.
struct EncodedBlock {
  BlockHeader header;
  std::vector<uint32_t> lengths;  // doc lengths, id lengths, user lengths
  std::vector<uint16_t> topics;
  // The payload is: lengths, batch.words, topics, ids, users.
};
// Encodes `batch`. REQUIRES: ValidateBatch(batch, ...) passed.
void EncodeBlock(const DocBatch& batch, EncodedBlock* out);
std::string EncodeBlockHeader(const BlockHeader& header);
// Calls `sink(bytes)` for each piece of the payload in order.
template <typename Sink>
absl::Status ForEachPayloadPiece(const DocBatch& batch,
                                 const EncodedBlock& block, Sink&& sink);

// Checks the block header (magic, checksum, sizes against `bytes_left`
// after the header and kMaxBlockBytes). Damage is kDataLoss naming path and
// block number.
absl::StatusOr<BlockHeader> DecodeBlockHeader(std::string_view bytes,
                                              uint64_t bytes_left,
                                              const std::string& path,
                                              uint64_t block);
// Checks the payload checksum and contents and fills *batch (cleared
// first; index/first_doc left to the caller).
absl::Status DecodeBlockPayload(const BlockHeader& header,
                                std::string_view payload,
                                const TokenStoreMeta& meta,
                                const std::string& path, uint64_t block,
                                DocBatch* batch);

// Checks a batch before it is appended: consistent offsets and sizes,
// words < meta.vocab_size, topics < meta.num_topics, fits one block.
// kInvalidArgument otherwise.
absl::Status ValidateBatch(const DocBatch& batch, const TokenStoreMeta& meta);
// Counts an appended batch into meta (documents, tokens, batches).
void CountAppended(const DocBatch& batch, TokenStoreMeta* meta);
// Checks the meta given to Rewrite (1 <= num_topics <= kMaxTopics).
absl::Status ValidateMeta(const TokenStoreMeta& meta);

// --- implementation of the template ---

template <typename Sink>
absl::Status ForEachPayloadPiece(const DocBatch& batch,
                                 const EncodedBlock& block, Sink&& sink) {
  auto bytes = [](const auto& v) {
    return std::string_view(reinterpret_cast<const char*>(v.data()),
                            v.size() * sizeof(v[0]));
  };
  absl::Status s = sink(bytes(block.lengths));
  if (s.ok()) s = sink(bytes(batch.words));
  if (s.ok()) s = sink(bytes(block.topics));
  for (size_t d = 0; s.ok() && d < batch.doc_ids.size(); ++d) {
    s = sink(std::string_view(batch.doc_ids[d]));
  }
  for (size_t d = 0; s.ok() && d < batch.users.size(); ++d) {
    s = sink(std::string_view(batch.users[d]));
  }
  return s;
}

}  // namespace latentd::internal

#endif  // LATENTD_CORPORA_INTERNAL_TOKEN_STORE_FORMAT_H_
