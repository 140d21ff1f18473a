#include "sampler/model_snapshot.h"

#include <xxhash.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/file_system.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "corpora/input_file.h"

namespace latentd {
namespace {

constexpr char kMagic[8] = {'L', 'T', 'D', 'M', 'O', 'D', 'E', 'L'};
constexpr uint32_t kVersion = 1;
constexpr uint64_t kChecksumSeed = 0x736e6170;  // "snap"

template <typename T>
void Put(std::string* out, T value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
}

// Reads fixed-size values from a byte string, remembering whether it ran
// past the end.
class Cursor {
 public:
  explicit Cursor(std::string_view data) : data_(data) {}
  template <typename T>
  bool Get(T* value) {
    if (data_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(value, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  size_t remaining() const { return data_.size() - pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

// One whole-file checksum cannot say where the damage is, only how much
// it covers.
std::string ChecksumMismatch(uint64_t file_bytes) {
  return absl::StrCat("checksum mismatch over its ", file_bytes,
                      " bytes (truncated or corrupt file)");
}

absl::Status BadMagic(const std::string& path) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, " is not a latentd model snapshot (bad magic)"));
}

}  // namespace

ModelSnapshot ModelSnapshot::Capture(const TopicTable& table,
                                     std::vector<double> alpha, double beta,
                                     uint64_t sweep, uint64_t seed) {
  ModelSnapshot snap;
  snap.num_topics = table.num_topics();
  snap.vocab_size = static_cast<uint32_t>(table.vocab_size());
  snap.beta = beta;
  snap.sweep = sweep;
  snap.seed = seed;
  snap.tokens = static_cast<uint64_t>(table.TotalTokens());
  snap.alpha = std::move(alpha);
  snap.word_offsets.reserve(table.vocab_size() + 1);
  snap.word_offsets.push_back(0);
  // Sized first: grown by doubling, the copy of a large table held up to
  // twice its entries, and both buffers while it moved.
  size_t nonzeros = 0;
  for (size_t w = 0; w < table.vocab_size(); ++w) {
    nonzeros += table.RowNonZeros(static_cast<WordId>(w));
  }
  snap.entries.reserve(nonzeros);
  ModelRows(table, snap.alpha, beta, sweep, seed)
      .ForEachRow([&snap](WordId, absl::Span<const Entry> row) {
        snap.entries.insert(snap.entries.end(), row.begin(), row.end());
        snap.word_offsets.push_back(snap.entries.size());
      });
  return snap;
}

ModelRows::ModelRows(const ModelSnapshot& snapshot)
    : snapshot_(&snapshot),
      num_topics_(snapshot.num_topics),
      vocab_size_(snapshot.vocab_size),
      beta_(snapshot.beta),
      sweep_(snapshot.sweep),
      seed_(snapshot.seed),
      tokens_(snapshot.tokens),
      alpha_(&snapshot.alpha) {}

ModelRows::ModelRows(const TopicTable& table, const std::vector<double>& alpha,
                     double beta, uint64_t sweep, uint64_t seed)
    : table_(&table),
      num_topics_(table.num_topics()),
      vocab_size_(static_cast<uint32_t>(table.vocab_size())),
      beta_(beta),
      sweep_(sweep),
      seed_(seed),
      tokens_(static_cast<uint64_t>(table.TotalTokens())),
      alpha_(&alpha) {}

std::vector<int64_t> ModelRows::TopicTotals() const {
  if (snapshot_ != nullptr) return snapshot_->TopicTotals();
  std::vector<int64_t> totals(num_topics_);
  for (TopicId k = 0; k < num_topics_; ++k) totals[k] = table_->TopicTotal(k);
  return totals;
}

template <typename Sink>
absl::Status ModelRows::Encode(Sink&& sink) const {
  // Handed to `sink` a piece at a time (about 1 MiB), the checksum kept
  // along the way, so a file of a large model is never whole in memory.
  constexpr size_t kPiece = size_t{1} << 20;
  XXH64_state_t* state = XXH64_createState();
  if (state == nullptr) return absl::ResourceExhaustedError("XXH64 state");
  XXH64_reset(state, kChecksumSeed);
  std::string out;
  out.reserve(kPiece + 4096);
  auto flush = [&]() -> absl::Status {
    XXH64_update(state, out.data(), out.size());
    absl::Status s = sink(std::string_view(out));
    out.clear();
    return s;
  };
  absl::Status status;
  out.append(kMagic, sizeof(kMagic));
  Put(&out, kVersion);
  Put(&out, num_topics_);
  Put(&out, vocab_size_);
  Put(&out, beta_);
  Put(&out, sweep_);
  Put(&out, seed_);
  Put(&out, tokens_);
  for (double a : *alpha_) Put(&out, a);
  ForEachRow([&](WordId, absl::Span<const Entry> row) {
    Put(&out, static_cast<uint32_t>(row.size()));
    for (const Entry& e : row) {
      Put(&out, e.topic);
      Put(&out, e.count);
    }
    if (out.size() >= kPiece) status = flush();
    return status.ok();
  });
  if (status.ok()) status = flush();
  const uint64_t sum = XXH64_digest(state);
  XXH64_freeState(state);
  if (!status.ok()) return status;
  Put(&out, sum);
  return sink(std::string_view(out));
}

std::string ModelRows::Serialize() const {
  std::string out;
  if (snapshot_ != nullptr) {
    out.reserve(64 + alpha_->size() * 8 + vocab_size_ * 4 +
                snapshot_->entries.size() * 8);
  }
  (void)Encode([&out](std::string_view piece) {
    out.append(piece);
    return absl::OkStatus();
  });
  return out;
}

absl::Status ModelRows::WriteDurably(const std::string& path) const {
  LATENTD_ASSIGN_OR_RETURN(
      std::unique_ptr<WritableFile> file,
      FileSystem::Default()->OpenForWrite(path, WriteMode::kTruncate));
  LATENTD_RETURN_IF_ERROR(
      Encode([&file](std::string_view piece) { return file->Append(piece); }));
  LATENTD_RETURN_IF_ERROR(file->Sync());
  return file->Close();
}

std::string ModelSnapshot::Serialize() const {
  return ModelRows(*this).Serialize();
}

absl::Status ModelSnapshot::WriteDurably(const std::string& path) const {
  return ModelRows(*this).WriteDurably(path);
}

absl::Status ModelSnapshot::Save(const std::string& path) const {
  return WriteFileAtomically(path, Serialize());
}

absl::StatusOr<ModelSnapshot> ModelSnapshot::Load(const std::string& path) {
  absl::StatusOr<std::string> data = ReadWholeFile(path);
  if (!data.ok()) return data.status();
  auto damaged = [&](std::string_view what) {
    return absl::DataLossError(
        absl::StrCat("model snapshot ", path, ": ", std::string(what)));
  };
  if (data->size() < sizeof(kMagic) + 8 ||
      std::memcmp(data->data(), kMagic, sizeof(kMagic)) != 0) {
    return BadMagic(path);
  }
  const size_t body = data->size() - 8;
  uint64_t stored_sum;
  std::memcpy(&stored_sum, data->data() + body, 8);
  if (XXH64(data->data(), body, kChecksumSeed) != stored_sum) {
    return damaged(ChecksumMismatch(data->size()));
  }
  Cursor in(
      std::string_view(*data).substr(sizeof(kMagic), body - sizeof(kMagic)));
  ModelSnapshot snap;
  uint32_t version = 0;
  if (!in.Get(&version)) return damaged("truncated header");
  if (version != kVersion) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": unsupported snapshot version ", version,
                     " (expected ", kVersion, ")"));
  }
  if (!in.Get(&snap.num_topics) || !in.Get(&snap.vocab_size) ||
      !in.Get(&snap.beta) || !in.Get(&snap.sweep) || !in.Get(&snap.seed) ||
      !in.Get(&snap.tokens)) {
    return damaged("truncated header");
  }
  if (snap.num_topics == 0 || snap.num_topics > kMaxTopics) {
    return damaged(
        absl::StrCat("number of topics ", snap.num_topics, " out of range"));
  }
  if (in.remaining() / 8 < snap.num_topics ||
      in.remaining() / 4 < snap.vocab_size) {
    return damaged("header sizes exceed the file");
  }
  snap.alpha.resize(snap.num_topics);
  for (double& a : snap.alpha) in.Get(&a);
  snap.word_offsets.reserve(snap.vocab_size + 1);
  snap.word_offsets.push_back(0);
  for (uint32_t w = 0; w < snap.vocab_size; ++w) {
    uint32_t nonzeros = 0;
    if (!in.Get(&nonzeros) || nonzeros > snap.num_topics ||
        in.remaining() / 8 < nonzeros) {
      return damaged(absl::StrCat("bad row of word ", w));
    }
    for (uint32_t i = 0; i < nonzeros; ++i) {
      Entry e;
      in.Get(&e.topic);
      in.Get(&e.count);
      if (e.topic >= snap.num_topics || e.count <= 0) {
        return damaged(absl::StrCat("bad entry in row of word ", w));
      }
      snap.entries.push_back(e);
    }
    snap.word_offsets.push_back(snap.entries.size());
  }
  if (in.remaining() != 0) return damaged("trailing bytes");
  return snap;
}

absl::Status ModelSnapshot::VerifyFile(const std::string& path) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file,
                           FileSystem::Default()->OpenForRead(path));
  const uint64_t size = file->size();
  if (size < sizeof(kMagic) + 8) return BadMagic(path);
  std::unique_ptr<XXH64_state_t, decltype(&XXH64_freeState)> state(
      XXH64_createState(), &XXH64_freeState);
  XXH64_reset(state.get(), kChecksumSeed);
  std::string buf(1 << 20, '\0');
  const uint64_t body = size - 8;
  uint64_t done = 0;
  while (done < body) {
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(buf.size(), body - done));
    LATENTD_ASSIGN_OR_RETURN(size_t got, file->Read(buf.data(), want));
    if (got == 0) break;  // shrank since it was opened
    if (done == 0 && (got < sizeof(kMagic) ||
                      std::memcmp(buf.data(), kMagic, sizeof(kMagic)) != 0)) {
      return BadMagic(path);
    }
    XXH64_update(state.get(), buf.data(), got);
    done += got;
  }
  uint64_t stored_sum = 0;
  LATENTD_ASSIGN_OR_RETURN(size_t got,
                           file->Read(reinterpret_cast<char*>(&stored_sum), 8));
  if (done != body || got != 8 || XXH64_digest(state.get()) != stored_sum) {
    return absl::DataLossError(
        absl::StrCat("model snapshot ", path, ": ", ChecksumMismatch(size)));
  }
  return absl::OkStatus();
}

std::unique_ptr<TopicTable> ModelSnapshot::ToTable() const {
  auto table = std::make_unique<TopicTable>(vocab_size, num_topics);
  std::vector<WordTopicDelta> deltas;
  deltas.reserve(entries.size());
  for (uint32_t w = 0; w < vocab_size; ++w) {
    for (uint64_t i = word_offsets[w]; i < word_offsets[w + 1]; ++i) {
      deltas.push_back({w, entries[i].topic, entries[i].count});
    }
  }
  // Load() has checked every entry, so this cannot fail.
  absl::Status s = table->Apply(deltas);
  (void)s;
  table->Quiesce();
  return table;
}

std::vector<int64_t> ModelSnapshot::TopicTotals() const {
  std::vector<int64_t> totals(num_topics, 0);
  for (const Entry& e : entries) totals[e.topic] += e.count;
  return totals;
}

}  // namespace latentd
