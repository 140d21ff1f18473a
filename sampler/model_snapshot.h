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
// Thread-safety: a plain value; Capture reads the table, which must not
// change meanwhile.
#ifndef LATENTD_SAMPLER_MODEL_SNAPSHOT_H_
#define LATENTD_SAMPLER_MODEL_SNAPSHOT_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
  // The file's bytes (layout above), checksum included.
  std::string Serialize() const;
  // Writes Serialize()'s bytes to `path` (created or truncated) in pieces,
  // never whole in memory, then fsyncs and closes it. On failure the file
  // may hold part of them.
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

 private:
  // Hands the file's bytes to sink(std::string_view) -> absl::Status in
  // pieces; stops at the first error.
  template <typename Sink>
  absl::Status Encode(Sink&& sink) const;
};

}  // namespace latentd

#endif  // LATENTD_SAMPLER_MODEL_SNAPSHOT_H_
