// WarpLDA's files, so that lda_bench can score WarpLDA's model with
// latentd's own held-out evaluation (document completion) on the same split:
//   - the training documents written in the text form WarpLDA's `format`
//     reads (Yahoo!LDA's: two ids, then the words);
//   - a topic dump read back (`warplda --dumpz`, PREFIX.z.estimate: a line
//     per document, its token count, then word:topic for each token) with
//     the vocabulary `format` wrote (PREFIX.vocab: a word a line, its id
//     the line's index; earlier WarpLDAs wrote "id<TAB>word"), as
//     word-topic counts over latentd's word ids;
//   - latentd's own state written in that form (for the test that reading
//     it back scores what latentd scored).
// Not part of the product. Errors name the file and line.
//
// Thread-safety: plain functions; the store is read by the calling thread.
#ifndef LATENTD_OPS_BENCH_WARPLDA_STATE_H_
#define LATENTD_OPS_BENCH_WARPLDA_STATE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "corpora/vocabulary.h"
#include "sampler/topic_table.h"

namespace latentd::bench {

// Writes every document of `store` to `path`, one a line: "dN dN" (N from
// 1) then its words spelled by `vocab`.
absl::Status WriteWarpLdaText(TokenStore* store, const Vocabulary& vocab,
                              const std::string& path);

// Writes the assignments of `store` as PREFIX.z.estimate and `vocab` as
// PREFIX.vocab ("id<TAB>word"), in the forms above (word ids: latentd's).
absl::Status WriteWarpLdaState(TokenStore* store, const Vocabulary& vocab,
                               const std::string& prefix);

// The word-topic counts of the dump at `state_path`, its word ids mapped
// through `vocab_path` to `vocab`'s: one delta per (word, topic) with a
// count, sorted by word then topic (what TopicTable::Apply takes).
// kInvalidArgument, naming file and line, for a malformed line, a topic
// outside [0, num_topics), a word id the vocabulary file does not list or a
// word `vocab` does not hold.
absl::StatusOr<std::vector<WordTopicDelta>> ReadWarpLdaCounts(
    const std::string& state_path, const std::string& vocab_path,
    const Vocabulary& vocab, TopicId num_topics);

}  // namespace latentd::bench

#endif  // LATENTD_OPS_BENCH_WARPLDA_STATE_H_
