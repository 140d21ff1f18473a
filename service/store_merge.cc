#include "service/store_merge.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/str_cat.h"
#include "base/random.h"
#include "base/status_macros.h"

namespace latentd::service {
namespace {

constexpr uint64_t kIngestStream = 0x696e67657374ULL;  // "ingest"

// Pending tokens of one target document.
struct Pending {
  std::string user;
  std::string id;
  uint64_t last_sequence = 0;
  uint64_t events = 0;
  std::vector<WordId> words;
  std::vector<TopicId> topics;
};

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::string IngestDocId(uint64_t sequence, uint64_t events,
                        std::string_view id) {
  return absl::StrCat("~", sequence, "~", events, "~",
                      absl::string_view(id.data(), id.size()));
}

bool ParseIngestDocId(std::string_view doc_id, uint64_t* sequence,
                      uint64_t* events) {
  if (doc_id.size() < 5 || doc_id[0] != '~') return false;
  const size_t a = doc_id.find('~', 1);
  if (a == std::string_view::npos) return false;
  const size_t b = doc_id.find('~', a + 1);
  if (b == std::string_view::npos) return false;
  return ParseU64(doc_id.substr(1, a - 1), sequence) &&
         ParseU64(doc_id.substr(a + 1, b - a - 1), events);
}

absl::StatusOr<StoreScan> ScanStore(TokenStore* store) {
  StoreScan scan;
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        uint64_t seq, events;
        if (d < batch.doc_ids.size() &&
            ParseIngestDocId(batch.doc_ids[d], &seq, &events)) {
          scan.merged_sequence = std::max(scan.merged_sequence, seq);
          if (d < batch.users.size() && !batch.users[d].empty()) {
            scan.grown_users.insert(batch.users[d]);
          }
        }
      }));
  return scan;
}

namespace {

// The records of one merge grouped by the document they go to.
struct MergePlan {
  std::vector<Pending> fresh;                           // appended
  absl::flat_hash_map<std::string, size_t> fresh_user;  // user -> fresh
  absl::flat_hash_map<std::string, Pending> grow;       // user -> tokens
  uint64_t last_sequence = 0;
};

absl::StatusOr<MergePlan> PlanMerge(std::span<const IngestRecord> records,
                                    uint64_t seed, uint32_t num_topics,
                                    const StoreScan& scan, Vocabulary* vocab,
                                    const TopicAssigner& assign,
                                    MergeResult* result) {
  MergePlan plan;
  std::vector<WordId> ids;
  plan.last_sequence = scan.merged_sequence;
  for (const IngestRecord& r : records) {
    if (r.sequence <= scan.merged_sequence) continue;
    plan.last_sequence = std::max(plan.last_sequence, r.sequence);
    ++result->records;
    Pending* p;
    if (r.user.empty()) {
      p = &plan.fresh.emplace_back();
      // Sent without an id, the document is found by its source (the
      // client's idempotency key) in GetDocumentTopics and similar calls.
      p->id = r.doc_id.empty() ? r.source : r.doc_id;
    } else if (scan.grown_users.contains(r.user)) {
      p = &plan.grow[r.user];
    } else {
      auto [it, added] = plan.fresh_user.try_emplace(r.user, plan.fresh.size());
      if (added) plan.fresh.emplace_back().id = "user";
      p = &plan.fresh[it->second];
    }
    p->user = r.user;
    p->last_sequence = r.sequence;
    ++p->events;
    ids.clear();
    for (const std::string& w : r.words) ids.push_back(vocab->Add(w));
    p->words.insert(p->words.end(), ids.begin(), ids.end());
    if (!r.topics.empty()) {
      // Handed off with its topics: they are kept (the model counts them).
      if (r.topics.size() != ids.size() ||
          std::any_of(r.topics.begin(), r.topics.end(),
                      [&](TopicId k) { return k >= num_topics; })) {
        return absl::InvalidArgumentError(
            absl::StrCat("ingest record ", r.sequence, " carries ",
                         r.topics.size(), " topics for ", ids.size(),
                         " words, or one outside K=", num_topics));
      }
      p->topics.insert(p->topics.end(), r.topics.begin(), r.topics.end());
      continue;
    }
    if (assign == nullptr || ids.empty()) {
      Rng rng = Rng::ForStream(seed, kIngestStream, r.sequence);
      for (size_t i = 0; i < ids.size(); ++i) {
        p->topics.push_back(static_cast<TopicId>(rng.UniformInt(num_topics)));
      }
      continue;
    }
    LATENTD_ASSIGN_OR_RETURN(std::vector<TopicId> topics,
                             assign(ids, r.sequence));
    if (topics.size() != ids.size() ||
        std::any_of(topics.begin(), topics.end(),
                    [&](TopicId k) { return k >= num_topics; })) {
      return absl::InternalError(absl::StrCat(
          "topic assigner gave ", topics.size(), " topics for ", ids.size(),
          " words (record ", r.sequence, "), or one outside K=", num_topics));
    }
    p->topics.insert(p->topics.end(), topics.begin(), topics.end());
  }
  return plan;
}

// Copies `in` to `out`, extending the documents of the users in plan->grow
// (removed from it once done).
void GrowBatch(const DocBatch& in, MergePlan* plan, DocBatch* out,
               MergeResult* result) {
  out->Clear();
  std::vector<WordId> words;
  std::vector<TopicId> topics;
  for (size_t d = 0; d < in.num_docs(); ++d) {
    const std::string& user = in.users[d];
    uint64_t seq, events;
    auto it = user.empty() ? plan->grow.end() : plan->grow.find(user);
    if (it == plan->grow.end() ||
        !ParseIngestDocId(in.doc_ids[d], &seq, &events)) {
      out->AddDocument(in.doc_ids[d], user, in.doc_words(d), in.doc_topics(d));
      continue;
    }
    const Pending& p = it->second;
    auto w = in.doc_words(d);
    auto t = in.doc_topics(d);
    words.assign(w.begin(), w.end());
    topics.assign(t.begin(), t.end());
    words.insert(words.end(), p.words.begin(), p.words.end());
    topics.insert(topics.end(), p.topics.begin(), p.topics.end());
    result->new_tokens += p.words.size();
    out->AddDocument(IngestDocId(p.last_sequence, events + p.events, "user"),
                     user, words, topics);
    plan->grow.erase(it);
  }
}

// The net counts of every planned token, combined and sorted.
void CountNewTokens(const MergePlan& plan, std::vector<WordTopicDelta>* out) {
  std::vector<std::pair<WordId, TopicId>> tokens;
  auto add = [&](const Pending& p) {
    for (size_t i = 0; i < p.words.size(); ++i) {
      tokens.emplace_back(p.words[i], p.topics[i]);
    }
  };
  for (const Pending& p : plan.fresh) add(p);
  for (const auto& [user, p] : plan.grow) add(p);
  std::sort(tokens.begin(), tokens.end());
  out->clear();
  for (const auto& [w, k] : tokens) {
    if (!out->empty() && out->back().word == w && out->back().topic == k) {
      ++out->back().delta;
    } else {
      out->push_back({w, k, 1});
    }
  }
}

}  // namespace

absl::StatusOr<MergeResult> MergeIntoStore(
    std::span<const IngestRecord> records, uint64_t seed, TokenStore* store,
    Vocabulary* vocab, StoreScan* scan, bool count_added,
    const TopicAssigner& assign) {
  MergeResult result;
  const size_t old_vocab = vocab->size();
  LATENTD_ASSIGN_OR_RETURN(
      MergePlan plan, PlanMerge(records, seed, store->meta().num_topics, *scan,
                                vocab, assign, &result));
  if (result.records == 0) return result;
  result.new_words = vocab->size() - old_vocab;
  if (count_added) CountNewTokens(plan, &result.added_counts);

  TokenStoreMeta meta = store->meta();
  meta.vocab_size = static_cast<uint32_t>(vocab->size());
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, store->Read());
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchWriter> writer,
                           store->Rewrite(meta));
  DocBatch in, out;
  for (;;) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&in));
    if (!more) break;
    if (plan.grow.empty()) {
      LATENTD_RETURN_IF_ERROR(writer->Append(in));
    } else {
      GrowBatch(in, &plan, &out, &result);
      LATENTD_RETURN_IF_ERROR(writer->Append(out));
    }
  }
  if (!plan.grow.empty()) {
    return absl::DataLossError(
        absl::StrCat("token store lost the document of user '",
                     plan.grow.begin()->first, "'"));
  }
  out.Clear();
  for (const Pending& p : plan.fresh) {
    out.AddDocument(
        IngestDocId(p.last_sequence, p.user.empty() ? 0 : p.events, p.id),
        p.user, p.words, p.topics);
    result.new_tokens += p.words.size();
    ++result.new_docs;
  }
  // The highest sequence is in the store either way: a grown document's id
  // carries the last sequence merged into it.
  if (out.num_docs() > 0) LATENTD_RETURN_IF_ERROR(writer->Append(out));
  const uint64_t tokens_before = store->meta().num_tokens;
  absl::Status committed = writer->Commit();
  if (!committed.ok()) {
    // Every merge adds tokens: if the count moved, the new version is
    // current and only its durability failed.
    if (store->meta().num_tokens == tokens_before) return committed;
    result.not_durable = std::string(committed.message());
  }
  scan->merged_sequence = plan.last_sequence;
  for (const auto& [user, index] : plan.fresh_user) {
    scan->grown_users.insert(user);
  }
  return result;
}

absl::StatusOr<absl::flat_hash_map<std::string, UserTopics>> CollectUsers(
    TokenStore* store) {
  absl::flat_hash_map<std::string, UserTopics> users;
  LATENTD_RETURN_IF_ERROR(
      ForEachDocument(store, [&](const DocBatch& batch, size_t d) {
        if (d >= batch.users.size() || batch.users[d].empty()) return;
        UserTopics& u = users[batch.users[d]];
        uint64_t seq, events = 1;
        if (!ParseIngestDocId(batch.doc_ids[d], &seq, &events)) events = 1;
        u.events += events;
        for (TopicId t : batch.doc_topics(d)) ++u.topic_counts[t];
        u.tokens += batch.doc_length(d);
      }));
  return users;
}

}  // namespace latentd::service
