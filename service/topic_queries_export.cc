// TopicQueries::ExportModel: the published model's counts, a page of words
// at a time, for `latentctl export` (cli/export_command.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "service/topic_queries.h"

namespace latentd::service {
namespace {

constexpr uint32_t kDefaultPageWords = 10000;
// Words per page stop at about this many bytes of JSON. The first page
// also carries α and n_k (at most kMaxTopics × ~40 bytes, 2.5 MiB), so a
// page stays under the 4 MiB --max-body-bytes default in either encoding,
// should a client hold its answers to it.
constexpr size_t kPageBytes = size_t{1} << 20;
// Upper bounds of a word's JSON size: its braces, keys and quotes, and per
// non-zero topic two numbers with their separators (a topic < 2^16 and a
// count < 2^31).
constexpr size_t kWordJsonBytes = 40;
constexpr size_t kEntryJsonBytes = 18;

}  // namespace

absl::StatusOr<api::ExportModelResponse> TopicQueries::ExportModel(
    const api::ExportModelRequest& request) const {
  std::shared_ptr<const ModelView> v = view();
  const ModelSnapshot& m = v->snapshot;
  const uint32_t first = request.first_word();
  if (first > m.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(
        "first_word ", first, " is past the end of the model's vocabulary of ",
        m.vocab_size, " words (view ", v->version, ")"));
  }
  if (v->vocab.size() < m.vocab_size) {
    return absl::InternalError(absl::StrCat("the published view has ",
                                            v->vocab.size(), " words for ",
                                            m.vocab_size, " rows of counts"));
  }
  api::ExportModelResponse resp;
  *resp.mutable_version() = Version(*v);
  resp.set_topics(m.num_topics);
  resp.set_beta(m.beta);
  resp.set_vocabulary(m.vocab_size);
  resp.set_first_word(first);
  resp.set_cluster(options_.cluster_mode);
  if (first == 0) {
    resp.mutable_alpha()->Add(m.alpha.begin(), m.alpha.end());
    resp.mutable_topic_tokens()->Add(v->totals.begin(), v->totals.end());
  }
  const uint32_t max_words =
      request.max_words() == 0 ? kDefaultPageWords : request.max_words();
  const uint32_t end =
      first + std::min<uint32_t>(max_words, m.vocab_size - first);
  size_t bytes = 0;
  for (uint32_t w = first; w < end; ++w) {
    const uint64_t begin = m.word_offsets[w];
    const uint64_t stop = m.word_offsets[w + 1];
    const std::string& word = v->vocab.word(w);
    bytes += kWordJsonBytes + word.size() + kEntryJsonBytes * (stop - begin);
    if (bytes > kPageBytes && w > first) break;
    api::WordTopicCounts* out = resp.add_words();
    out->set_word(word);
    out->mutable_topics()->Reserve(static_cast<int>(stop - begin));
    out->mutable_counts()->Reserve(static_cast<int>(stop - begin));
    for (uint64_t i = begin; i < stop; ++i) {
      out->add_topics(m.entries[i].topic);
      out->add_counts(m.entries[i].count);
    }
  }
  return resp;
}

}  // namespace latentd::service
