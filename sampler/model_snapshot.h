// ModelSnapshot: the binary form of a trained model — hyperparameters,
// progress and every non-zero word-topic count — that training resumes from
// and that inference and the topic listings read.
//
// File layout (little-endian): magic "LTDMODEL", u32 format version, u32 K,
// u32 V, f64 β, u64 sweep, u64 seed, u64 tokens, K × f64 α, then per word
// u32 non-zeros and that many (u32 topic, i32 count) pairs, and last the
// XXH64 of everything before it. Save writes atomically (temp file, fsync,
// rename, fsync directory). Load checks sizes before it allocates and reports
// a truncated, corrupt or foreign file as an error naming the path.
//
// ModelRows, below, is what the writers and the summaries read: a view of a
// snapshot or of a table at rest, so that training writes its model
// without a copy of it.
//
// Thread-safety: a plain value; Capture reads the table, which must not
// change meanwhile.
#ifndef LATENTD_SAMPLER_MODEL_SNAPSHOT_H_
#define LATENTD_SAMPLER_MODEL_SNAPSHOT_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "sampler/topic_table.h"

namespace latentd {

struct ModelSnapshot {
  uint32_t num_topics = 0;
  uint32_t vocab_size = 0;
  double beta = 0.01;
  uint64_t sweep = 0;   // sweeps completed
  uint64_t seed = 1;    // the training seed, so a resume draws the same
  uint64_t tokens = 0;  // Σ_k n_k
  std::vector<double> alpha;
  // word_offsets[w] .. word_offsets[w+1] index entries of word w.
  std::vector<uint64_t> word_offsets;
  struct Entry {
    TopicId topic;
    Count count;
  };
  std::vector<Entry> entries;

  // Copies the counts of `table` (sorted by topic within a word).
  static ModelSnapshot Capture(const TopicTable& table,
                               std::vector<double> alpha, double beta,
                               uint64_t sweep, uint64_t seed);
  // As ModelRows's (below), of these counts.
  std::string Serialize() const;
  absl::Status WriteDurably(const std::string& path) const;
  absl::Status Save(const std::string& path) const;
  static absl::StatusOr<ModelSnapshot> Load(const std::string& path);
  // Checks magic and checksum of the file at `path` without decoding it,
  // reading it in 1 MiB pieces (no copy of the file in memory). Errors as
  // Load's. Cheap enough to run before every checkpoint.
  static absl::Status VerifyFile(const std::string& path);

  // A table holding these counts.
  std::unique_ptr<TopicTable> ToTable() const;
  // n_k computed from the entries.
  std::vector<int64_t> TopicTotals() const;
};

// A model's header fields and rows (each word's non-zero counts, sorted by
// topic), read from a ModelSnapshot or straight from a TopicTable. Over a
// table it copies one row at a time: the trained model is written and
// summarized without a second copy of it (50 MB at 200 M tokens, K=100).
//
// Thread-safety: a view. What it views must outlive it; a table must not
// change while it is read (no sweep, no sync running).
class ModelRows {
 public:
  using Entry = ModelSnapshot::Entry;

  // Implicit, as std::string_view from std::string: whatever reads a
  // model's rows reads a snapshot's.
  ModelRows(const ModelSnapshot& snapshot);  // NOLINT(runtime/explicit)
  ModelRows(const TopicTable& table, const std::vector<double>& alpha,
            double beta, uint64_t sweep, uint64_t seed);

  uint32_t num_topics() const { return num_topics_; }
  uint32_t vocab_size() const { return vocab_size_; }
  double beta() const { return beta_; }
  uint64_t sweep() const { return sweep_; }
  uint64_t seed() const { return seed_; }
  uint64_t tokens() const { return tokens_; }
  const std::vector<double>& alpha() const { return *alpha_; }
  // n_k.
  std::vector<int64_t> TopicTotals() const;

  // Calls fn(WordId, absl::Span<const Entry>) for every word in id order;
  // the span lives until fn returns. An fn that returns bool stops the walk
  // with false.
  template <typename Fn>
  void ForEachRow(Fn&& fn) const;

  // The file's bytes (layout above), checksum included.
  std::string Serialize() const;
  // Writes Serialize()'s bytes to `path` (created or truncated) in pieces,
  // never whole in memory, then fsyncs and closes it. On failure the file
  // may hold part of them.
  absl::Status WriteDurably(const std::string& path) const;

 private:
  // Hands the file's bytes to sink(std::string_view) -> absl::Status in
  // pieces; stops at the first error.
  template <typename Sink>
  absl::Status Encode(Sink&& sink) const;

  const ModelSnapshot* snapshot_ = nullptr;  // one of these two
  const TopicTable* table_ = nullptr;
  uint32_t num_topics_;
  uint32_t vocab_size_;
  double beta_;
  uint64_t sweep_;
  uint64_t seed_;
  uint64_t tokens_;
  const std::vector<double>* alpha_;
};

template <typename Fn>
void ModelRows::ForEachRow(Fn&& fn) const {
  std::vector<Entry> row;
  for (uint32_t w = 0; w < vocab_size_; ++w) {
    absl::Span<const Entry> span;
    if (snapshot_ != nullptr) {
      span = absl::MakeConstSpan(
          snapshot_->entries.data() + snapshot_->word_offsets[w],
          snapshot_->word_offsets[w + 1] - snapshot_->word_offsets[w]);
    } else {
      row.clear();
      table_->ForEachNonZero(w, [&row](TopicId k, Count c) {
        row.push_back({k, c});
      });
      std::sort(row.begin(), row.end(), [](const Entry& a, const Entry& b) {
        return a.topic < b.topic;
      });
      span = row;
    }
    using Result = std::invoke_result_t<Fn&, WordId, absl::Span<const Entry>>;
    if constexpr (std::is_same_v<Result, bool>) {
      if (!fn(static_cast<WordId>(w), span)) return;
    } else {
      fn(static_cast<WordId>(w), span);
    }
  }
}

}  // namespace latentd

#endif  // LATENTD_SAMPLER_MODEL_SNAPSHOT_H_
