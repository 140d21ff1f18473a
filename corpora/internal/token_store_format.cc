#include "corpora/internal/token_store_format.h"

#include <xxhash.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/absl_compat.h"
#include "corpora/types.h"

namespace latentd::internal {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the token store format is little-endian");

constexpr uint64_t kChecksumSeed = 0x4c54444b53554d31ULL;

template <typename T>
void Put(std::string& out, size_t offset, T value) {
  std::memcpy(out.data() + offset, &value, sizeof(T));
}
template <typename T>
T Get(std::string_view in, size_t offset) {
  T value;
  std::memcpy(&value, in.data() + offset, sizeof(T));
  return value;
}

uint64_t Checksum(std::string_view bytes) {
  return XXH64(bytes.data(), bytes.size(), kChecksumSeed);
}

absl::Status BlockDamage(const std::string& path, uint64_t block,
                         std::string_view what) {
  return absl::DataLossError(
      absl::StrCat(path, ": token store block ", block, ": ", ToAbsl(what)));
}

}  // namespace

std::string EncodeFileHeader(const TokenStoreMeta& meta) {
  std::string out(kFileHeaderBytes, '\0');
  std::memcpy(out.data(), kStoreMagic, sizeof(kStoreMagic));
  Put<uint32_t>(out, 8, kStoreVersion);
  Put<uint32_t>(out, 12, kFileHeaderBytes);
  Put<uint64_t>(out, 16, meta.num_docs);
  Put<uint64_t>(out, 24, meta.num_tokens);
  Put<uint64_t>(out, 32, meta.num_batches);
  Put<uint32_t>(out, 40, meta.num_topics);
  Put<uint32_t>(out, 44, meta.vocab_size);
  Put<uint64_t>(out, 48, meta.sweep);
  Put<uint64_t>(out, 56, Checksum(std::string_view(out).substr(0, 56)));
  return out;
}

absl::StatusOr<TokenStoreMeta> DecodeFileHeader(std::string_view bytes,
                                                const std::string& path) {
  if (bytes.size() < sizeof(kStoreMagic) ||
      std::memcmp(bytes.data(), kStoreMagic, sizeof(kStoreMagic)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a latentd token store (bad magic)"));
  }
  if (bytes.size() < 16) {
    return absl::DataLossError(
        absl::StrCat(path, ": token store header truncated"));
  }
  uint32_t version = Get<uint32_t>(bytes, 8);
  if (version != kStoreVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unsupported token store version ", version,
                     " (this build reads ", kStoreVersion, ")"));
  }
  if (bytes.size() < kFileHeaderBytes) {
    return absl::DataLossError(
        absl::StrCat(path, ": token store header truncated"));
  }
  if (Get<uint32_t>(bytes, 12) != kFileHeaderBytes ||
      Get<uint64_t>(bytes, 56) != Checksum(bytes.substr(0, 56))) {
    return absl::DataLossError(
        absl::StrCat(path, ": token store header checksum mismatch"));
  }
  TokenStoreMeta meta;
  meta.num_docs = Get<uint64_t>(bytes, 16);
  meta.num_tokens = Get<uint64_t>(bytes, 24);
  meta.num_batches = Get<uint64_t>(bytes, 32);
  meta.num_topics = Get<uint32_t>(bytes, 40);
  meta.vocab_size = Get<uint32_t>(bytes, 44);
  meta.sweep = Get<uint64_t>(bytes, 48);
  if (meta.num_topics == 0 || meta.num_topics > kMaxTopics) {
    return absl::DataLossError(
        absl::StrCat(path, ": token store header has impossible values"));
  }
  return meta;
}

void EncodeBlock(const DocBatch& batch, EncodedBlock* out) {
  const size_t num_docs = batch.num_docs();
  out->lengths.assign(3 * num_docs, 0);
  uint64_t string_bytes = 0;
  for (size_t d = 0; d < num_docs; ++d) {
    out->lengths[d] = static_cast<uint32_t>(batch.doc_length(d));
    if (!batch.doc_ids.empty()) {
      out->lengths[num_docs + d] =
          static_cast<uint32_t>(batch.doc_ids[d].size());
      string_bytes += batch.doc_ids[d].size();
    }
    if (!batch.users.empty()) {
      out->lengths[2 * num_docs + d] =
          static_cast<uint32_t>(batch.users[d].size());
      string_bytes += batch.users[d].size();
    }
  }
  out->topics.resize(batch.topics.size());
  for (size_t i = 0; i < batch.topics.size(); ++i) {
    out->topics[i] = static_cast<uint16_t>(batch.topics[i]);
  }
  BlockHeader& h = out->header;
  h.num_docs = static_cast<uint32_t>(num_docs);
  h.num_tokens = batch.num_tokens();
  h.payload_bytes =
      kBytesPerDoc * num_docs + kBytesPerToken * h.num_tokens + string_bytes;
  XXH64_state_t* state = XXH64_createState();
  XXH64_reset(state, kChecksumSeed);
  (void)ForEachPayloadPiece(batch, *out, [state](std::string_view piece) {
    XXH64_update(state, piece.data(), piece.size());
    return absl::OkStatus();
  });
  h.payload_checksum = XXH64_digest(state);
  XXH64_freeState(state);
}

std::string EncodeBlockHeader(const BlockHeader& header) {
  std::string out(kBlockHeaderBytes, '\0');
  Put<uint32_t>(out, 0, kBlockMagic);
  Put<uint32_t>(out, 4, header.num_docs);
  Put<uint64_t>(out, 8, header.num_tokens);
  Put<uint64_t>(out, 16, header.payload_bytes);
  Put<uint64_t>(out, 24, header.payload_checksum);
  Put<uint64_t>(out, 32, Checksum(std::string_view(out).substr(0, 32)));
  return out;
}

absl::StatusOr<BlockHeader> DecodeBlockHeader(std::string_view bytes,
                                              uint64_t bytes_left,
                                              const std::string& path,
                                              uint64_t block) {
  if (bytes.size() < kBlockHeaderBytes) {
    return BlockDamage(path, block, "truncated block header");
  }
  if (Get<uint32_t>(bytes, 0) != kBlockMagic ||
      Get<uint64_t>(bytes, 32) != Checksum(bytes.substr(0, 32))) {
    return BlockDamage(path, block, "block header checksum mismatch");
  }
  BlockHeader h;
  h.num_docs = Get<uint32_t>(bytes, 4);
  h.num_tokens = Get<uint64_t>(bytes, 8);
  h.payload_bytes = Get<uint64_t>(bytes, 16);
  h.payload_checksum = Get<uint64_t>(bytes, 24);
  if (h.payload_bytes > kMaxBlockBytes) {
    return BlockDamage(
        path, block,
        absl::StrCat("block of ", h.payload_bytes, " bytes is over the limit"));
  }
  if (h.payload_bytes > bytes_left) {
    return BlockDamage(path, block,
                       absl::StrCat("truncated: block needs ", h.payload_bytes,
                                    " bytes, file has ", bytes_left));
  }
  if (h.num_docs > h.payload_bytes / kBytesPerDoc ||
      h.num_tokens > h.payload_bytes / kBytesPerToken ||
      kBytesPerDoc * h.num_docs + kBytesPerToken * h.num_tokens >
          h.payload_bytes) {
    return BlockDamage(path, block, "document/token counts do not fit");
  }
  return h;
}

absl::Status DecodeBlockPayload(const BlockHeader& h, std::string_view payload,
                                const TokenStoreMeta& meta,
                                const std::string& path, uint64_t block,
                                DocBatch* batch) {
  if (payload.size() != h.payload_bytes) {
    return BlockDamage(path, block, "truncated payload");
  }
  if (Checksum(payload) != h.payload_checksum) {
    return BlockDamage(path, block, "payload checksum mismatch");
  }
  batch->Clear();
  const size_t nd = h.num_docs, nt = h.num_tokens;
  const char* p = payload.data();
  std::vector<uint32_t> lengths(3 * nd);
  // An empty batch (or one without tokens) is valid; memcpy must not see
  // the null data() of an empty vector even for 0 bytes (UBSan).
  if (nd > 0) std::memcpy(lengths.data(), p, 4 * lengths.size());
  p += 4 * lengths.size();
  uint64_t token_sum = 0, string_sum = 0;
  batch->doc_offsets.resize(nd + 1);
  for (size_t d = 0; d < nd; ++d) {
    token_sum += lengths[d];
    string_sum += uint64_t{lengths[nd + d]} + lengths[2 * nd + d];
    batch->doc_offsets[d + 1] = static_cast<uint32_t>(token_sum);
  }
  if (token_sum != nt ||
      kBytesPerDoc * nd + kBytesPerToken * nt + string_sum != h.payload_bytes) {
    return BlockDamage(path, block, "inconsistent lengths");
  }
  batch->words.resize(nt);
  if (nt > 0) std::memcpy(batch->words.data(), p, 4 * nt);
  p += 4 * nt;
  batch->topics.resize(nt);
  uint32_t max_word = 0, max_topic = 0;
  for (size_t i = 0; i < nt; ++i) {
    uint16_t t;
    std::memcpy(&t, p + 2 * i, 2);
    batch->topics[i] = t;
    max_topic = std::max<uint32_t>(max_topic, t);
    max_word = std::max(max_word, batch->words[i]);
  }
  p += 2 * nt;
  if (nt > 0 && (max_word >= meta.vocab_size || max_topic >= meta.num_topics)) {
    return BlockDamage(path, block, "word or topic id out of range");
  }
  batch->doc_ids.resize(nd);
  batch->users.resize(nd);
  for (size_t d = 0; d < nd; ++d) {
    batch->doc_ids[d].assign(p, lengths[nd + d]);
    p += lengths[nd + d];
  }
  for (size_t d = 0; d < nd; ++d) {
    batch->users[d].assign(p, lengths[2 * nd + d]);
    p += lengths[2 * nd + d];
  }
  return absl::OkStatus();
}

absl::Status ValidateBatch(const DocBatch& batch, const TokenStoreMeta& meta) {
  const auto& off = batch.doc_offsets;
  const size_t nd = off.empty() ? 0 : off.size() - 1;
  if (off.empty() || off[0] != 0 || off.back() != batch.words.size()) {
    return absl::InvalidArgumentError("batch doc_offsets do not span words");
  }
  for (size_t d = 0; d < nd; ++d) {
    if (off[d + 1] < off[d]) {
      return absl::InvalidArgumentError("batch doc_offsets decrease");
    }
  }
  if (batch.topics.size() != batch.words.size()) {
    return absl::InvalidArgumentError("batch topics and words differ in size");
  }
  if ((!batch.doc_ids.empty() && batch.doc_ids.size() != nd) ||
      (!batch.users.empty() && batch.users.size() != nd)) {
    return absl::InvalidArgumentError(
        "batch doc_ids/users must be empty or one per document");
  }
  uint64_t bytes = kBytesPerDoc * nd + kBytesPerToken * batch.words.size();
  for (const std::string& s : batch.doc_ids) bytes += s.size();
  for (const std::string& s : batch.users) bytes += s.size();
  if (bytes > kMaxBlockBytes || nd > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "batch of ", bytes, " bytes is over the block limit ", kMaxBlockBytes));
  }
  for (size_t i = 0; i < batch.words.size(); ++i) {
    if (batch.words[i] >= meta.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(
          "word id ", batch.words[i], " >= vocab_size ", meta.vocab_size));
    }
    if (batch.topics[i] >= meta.num_topics) {
      return absl::InvalidArgumentError(absl::StrCat(
          "topic ", batch.topics[i], " >= num_topics ", meta.num_topics));
    }
  }
  return absl::OkStatus();
}

void CountAppended(const DocBatch& batch, TokenStoreMeta* meta) {
  meta->num_docs += batch.num_docs();
  meta->num_tokens += batch.num_tokens();
  meta->num_batches += 1;
}

absl::Status ValidateMeta(const TokenStoreMeta& meta) {
  if (meta.num_topics == 0 || meta.num_topics > kMaxTopics) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_topics ", meta.num_topics, " not in [1, ", kMaxTopics, "]"));
  }
  return absl::OkStatus();
}

}  // namespace latentd::internal
