// Merging acknowledged ingest records into the token store, and reading back
// what the store says about them.
//
// An ingested document is stored with doc id "~<sequence>~<events>~<client
// id>": the ingest-log sequence of the last record merged into it and, for a
// user's document, how many events it holds. The highest sequence in the
// store is therefore the last merged record (a merge rewrites the store and
// commits it atomically, so it is all or nothing), and replaying the ingest
// log from there is idempotent.
//
// A record with a user joins that user's one growing document (created by
// the first merge that sees the user, extended in place by later ones); a
// record without a user becomes a document of its own. New tokens draw their
// initial topic from Rng::ForStream(seed, kIngestStream, sequence), or, given
// a TopicAssigner, take the topics it returns (the service folds documents
// in against the current model when sampling has stopped); a record that
// carries its topics (IngestRecord::topics, a hand-off) keeps them.
//
// Thread-safety: functions of their arguments; the store and vocabulary must
// not be used by anyone else meanwhile (the training thread, between sweeps).
#ifndef LATENTD_SERVICE_STORE_MERGE_H_
#define LATENTD_SERVICE_STORE_MERGE_H_

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "corpora/vocabulary.h"
#include "sampler/topic_table.h"
#include "service/ingest_log.h"

namespace latentd::service {

// What a pass over the store found out about ingested documents.
struct StoreScan {
  uint64_t merged_sequence = 0;  // highest ingest sequence in the store
  absl::flat_hash_set<std::string> grown_users;  // users with a document
};

// Reads the whole store. Fails if the store is damaged.
absl::StatusOr<StoreScan> ScanStore(TokenStore* store);

struct MergeResult {
  uint64_t records = 0;     // records merged
  uint64_t new_docs = 0;    // documents appended
  uint64_t new_tokens = 0;  // tokens added
  uint64_t new_words = 0;   // words added to the vocabulary
  // With count_added only: the counts the new tokens add to the
  // word-topic table, one +n per (word, topic), sorted by word then topic
  // (what TopicTable::Apply takes). A table kept up to date with these
  // needs no rebuild.
  std::vector<WordTopicDelta> added_counts;
  // Non-empty if the new store version is current but its rename may not
  // survive a crash (the directory's fsync failed): the ingest log must
  // keep the records' words until a later commit is durable.
  std::string not_durable;
};

// Topics for the tokens of one record (`words`, ids in the vocabulary
// after the merge's additions), given the record's ingest sequence; one
// topic per word, each below the model's K.
using TopicAssigner = std::function<absl::StatusOr<std::vector<TopicId>>(
    std::span<const WordId> words, uint64_t sequence)>;

// Adds the words of `records` to *vocab and commits a new version of
// *store holding them (see above). Records at or below
// scan->merged_sequence are skipped; *scan is updated on success. On failure
// the store keeps its old version (the vocabulary may have grown, which is
// harmless: ids are only appended), except when only the store's last
// directory fsync failed (TokenStore's BatchWriter::Commit): the records
// are in the store's current version then, so the merge succeeds (*scan
// updated) with MergeResult::not_durable saying why; retrying it would
// merge them twice. `count_added` fills
// MergeResult::added_counts (a sort of the new tokens; for a caller that
// cannot rebuild its table from the store). `assign`, if set, gives the new
// tokens their topics instead of the random draw; its error (or a wrong
// number or range of topics) fails the merge, as does a record whose own
// topics are not one per word below K (kInvalidArgument). REQUIRES: records
// sorted by sequence.
absl::StatusOr<MergeResult> MergeIntoStore(
    std::span<const IngestRecord> records, uint64_t seed, TokenStore* store,
    Vocabulary* vocab, StoreScan* scan, bool count_added = false,
    const TopicAssigner& assign = nullptr);

// A user's topic counts, summed over the user's documents.
struct UserTopics {
  uint64_t tokens = 0;
  uint64_t events = 0;
  absl::flat_hash_map<uint32_t, uint64_t> topic_counts;  // n_uk, non-zero
};

// Reads the store and totals the topics of every document with a user.
absl::StatusOr<absl::flat_hash_map<std::string, UserTopics>> CollectUsers(
    TokenStore* store);

// "~<sequence>~<events>~<id>" and its parse (false if `doc_id` is not an
// ingested document's id).
std::string IngestDocId(uint64_t sequence, uint64_t events,
                        std::string_view id);
bool ParseIngestDocId(std::string_view doc_id, uint64_t* sequence,
                      uint64_t* events);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_STORE_MERGE_H_
