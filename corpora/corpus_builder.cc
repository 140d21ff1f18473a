#include "corpora/corpus_builder.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <memory>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/file_system.h"
#include "base/random.h"
#include "base/status_macros.h"

namespace latentd {
namespace {

constexpr uint64_t kTopicStream = 1;
constexpr uint64_t kHoldoutStream = 2;
// The scratch store holds provisional ids: any 32-bit id is in range.
constexpr uint32_t kScratchVocabSize = std::numeric_limits<uint32_t>::max();
constexpr WordId kPruned = std::numeric_limits<WordId>::max();

// Groups documents into batches of about `batch_tokens` and appends them.
class BatchSink {
 public:
  BatchSink(BatchWriter* writer, uint64_t batch_tokens)
      : writer_(writer), batch_tokens_(batch_tokens) {}

  absl::Status Add(std::string_view id, std::string_view user,
                   std::span<const WordId> words,
                   std::span<const TopicId> topics) {
    if (batch_.num_docs() > 0 && batch_.num_tokens() + words.size() >
                                     std::numeric_limits<uint32_t>::max()) {
      LATENTD_RETURN_IF_ERROR(Flush());
    }
    batch_.AddDocument(id, user, words, topics);
    ++docs_;
    tokens_ += words.size();
    if (batch_.num_tokens() >= batch_tokens_) return Flush();
    return absl::OkStatus();
  }
  absl::Status Flush() {
    if (batch_.num_docs() == 0) return absl::OkStatus();
    absl::Status status = writer_->Append(batch_);
    batch_.Clear();
    return status;
  }
  uint64_t docs() const { return docs_; }
  uint64_t tokens() const { return tokens_; }

 private:
  BatchWriter* writer_;
  const uint64_t batch_tokens_;
  DocBatch batch_;
  uint64_t docs_ = 0, tokens_ = 0;
};

struct WordCounts {
  Vocabulary vocab;            // provisional ids, in order of first sight
  std::vector<uint64_t> df;    // documents containing the word
  std::vector<uint64_t> tf;    // tokens of the word
  std::vector<uint64_t> last;  // 1 + last document that counted it
};

void Report(const CorpusBuilderOptions& options, int pass, uint64_t docs,
            uint64_t tokens, bool done) {
  if (!options.progress) return;
  if (done || (options.progress_every_docs > 0 &&
               docs % options.progress_every_docs == 0)) {
    options.progress(BuildProgress{pass, docs, tokens, done});
  }
}

// Pass 1: provisional ids and frequencies; documents to `scratch`.
absl::Status CountAndSpill(DocumentReader& reader,
                           const CorpusBuilderOptions& options,
                           TokenStore& scratch, WordCounts* counts) {
  TokenStoreMeta meta;
  meta.num_topics = 1;
  meta.vocab_size = kScratchVocabSize;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchWriter> writer,
                           scratch.Rewrite(meta));
  BatchSink sink(writer.get(), options.batch_tokens);
  RawDocument doc;
  std::vector<WordId> ids;
  std::vector<TopicId> zeros;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader.Next(&doc));
    if (!more) break;
    ids.clear();
    const uint64_t stamp = sink.docs() + 1;
    for (const std::string& word : doc.words) {
      if (word.empty()) continue;
      if (counts->vocab.size() >= Vocabulary::kMaxSize) {
        return absl::ResourceExhaustedError(
            "corpus has more distinct words than a vocabulary can hold");
      }
      WordId id = counts->vocab.Add(word);
      if (id == counts->df.size()) {
        counts->df.push_back(0);
        counts->tf.push_back(0);
        counts->last.push_back(0);
      }
      ++counts->tf[id];
      if (counts->last[id] != stamp) {
        counts->last[id] = stamp;
        ++counts->df[id];
      }
      ids.push_back(id);
    }
    zeros.assign(ids.size(), 0);
    // Every input document keeps its position, even if it became empty, so
    // that document i's random streams do not depend on other documents.
    LATENTD_RETURN_IF_ERROR(sink.Add(doc.id, doc.user, ids, zeros));
    Report(options, 1, sink.docs(), sink.tokens(), false);
  }
  LATENTD_RETURN_IF_ERROR(sink.Flush());
  Report(options, 1, sink.docs(), sink.tokens(), true);
  return writer->Commit();
}

// Chooses the kept words; fills `vocab` (final ids) and returns the map
// provisional id -> final id (kPruned for dropped words).
std::vector<WordId> Prune(const WordCounts& counts,
                          const CorpusBuilderOptions& options,
                          Vocabulary* vocab, CorpusBuildStats* stats) {
  const size_t n = counts.vocab.size();
  std::vector<WordId> order;
  for (WordId id = 0; id < n; ++id) {
    if (counts.df[id] >= options.min_doc_freq) order.push_back(id);
  }
  std::stable_sort(order.begin(), order.end(), [&](WordId a, WordId b) {
    return counts.tf[a] > counts.tf[b];
  });
  if (options.max_vocab > 0 && order.size() > options.max_vocab) {
    order.resize(options.max_vocab);
  }
  std::vector<WordId> remap(n, kPruned);
  for (WordId id : order) remap[id] = vocab->Add(counts.vocab.word(id));
  stats->raw_vocab_size = n;
  stats->vocab_size = vocab->size();
  stats->pruned_words = n - vocab->size();
  for (WordId id = 0; id < n; ++id) {
    if (remap[id] == kPruned) stats->pruned_tokens += counts.tf[id];
  }
  return remap;
}

struct Outputs {
  std::unique_ptr<BatchWriter> train, heldout;
};

// Pass 2: remaps the scratch store into the final store(s).
absl::Status RemapAndWrite(TokenStore& scratch,
                           const std::vector<WordId>& remap,
                           const CorpusBuilderOptions& options, Outputs& out,
                           CorpusBuildStats* stats) {
  BatchSink train(out.train.get(), options.batch_tokens);
  std::unique_ptr<BatchSink> heldout;
  if (out.heldout) {
    heldout =
        std::make_unique<BatchSink>(out.heldout.get(), options.batch_tokens);
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<BatchReader> reader, scratch.Read());
  DocBatch batch;
  std::vector<WordId> words;
  std::vector<TopicId> topics;
  uint64_t done = 0, done_tokens = 0;
  while (true) {
    LATENTD_ASSIGN_OR_RETURN(bool more, reader->Next(&batch));
    if (!more) break;
    for (size_t d = 0; d < batch.num_docs(); ++d) {
      const uint64_t doc = batch.first_doc + d;
      if (doc % options.shard_count != options.shard_index) {
        ++stats->other_shards_documents;
        continue;
      }
      words.clear();
      for (WordId w : batch.doc_words(d)) {
        if (remap[w] != kPruned) words.push_back(remap[w]);
      }
      if (words.empty()) {
        if (batch.doc_length(d) > 0) ++stats->pruned_documents;
        continue;
      }
      Rng topic_rng = Rng::ForStream(options.seed, kTopicStream, doc);
      topics.resize(words.size());
      for (TopicId& t : topics) {
        t = static_cast<TopicId>(topic_rng.UniformInt(options.num_topics));
      }
      bool hold = heldout != nullptr &&
                  Rng::ForStream(options.seed, kHoldoutStream, doc).Uniform() <
                      options.holdout_fraction;
      BatchSink& sink = hold ? *heldout : train;
      LATENTD_RETURN_IF_ERROR(
          sink.Add(batch.doc_ids[d], batch.users[d], words, topics));
      done_tokens += words.size();
      Report(options, 2, ++done, done_tokens, false);
    }
  }
  LATENTD_RETURN_IF_ERROR(train.Flush());
  if (heldout) LATENTD_RETURN_IF_ERROR(heldout->Flush());
  Report(options, 2, done, done_tokens, true);
  stats->documents = train.docs();
  stats->tokens = train.tokens();
  if (heldout) {
    stats->heldout_documents = heldout->docs();
    stats->heldout_tokens = heldout->tokens();
  }
  return absl::OkStatus();
}

// The final stores' batch size for a corpus of `kept_tokens` tokens
// (CorpusBuilderOptions::min_batches).
uint64_t FinalBatchTokens(const CorpusBuilderOptions& options,
                          uint64_t kept_tokens) {
  if (options.min_batches == 0) return options.batch_tokens;
  const auto training = static_cast<uint64_t>(static_cast<double>(kept_tokens) *
                                              (1.0 - options.holdout_fraction));
  return std::min(options.batch_tokens,
                  std::max<uint64_t>(options.min_batch_tokens,
                                     training / options.min_batches));
}

absl::Status ValidateOptions(const CorpusBuilderOptions& options,
                             const TokenStore* heldout) {
  if (options.num_topics == 0 || options.num_topics > kMaxTopics) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_topics ", options.num_topics, " not in [1, ", kMaxTopics, "]"));
  }
  if (options.batch_tokens == 0 || options.min_batch_tokens == 0) {
    return absl::InvalidArgumentError(
        "batch_tokens and min_batch_tokens must be > 0");
  }
  if (!(options.holdout_fraction >= 0.0 && options.holdout_fraction < 1.0)) {
    return absl::InvalidArgumentError("holdout_fraction must be in [0, 1)");
  }
  if (options.shard_count == 0 || options.shard_index >= options.shard_count) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", options.shard_index, "/", options.shard_count,
                     ": the index must be below the count (0/1: everything)"));
  }
  if (options.holdout_fraction > 0.0 && heldout == nullptr) {
    return absl::InvalidArgumentError(
        "holdout_fraction > 0 needs a held-out store");
  }
  return absl::OkStatus();
}

absl::Status EmptyCorpusError(const CorpusBuildStats& s) {
  std::string message = absl::StrCat(
      "empty corpus: no document left for training (", s.read.records,
      " records read, ", s.read.empty_documents, " empty, ", s.read.malformed,
      " malformed, ", s.pruned_documents, " emptied by pruning, ",
      s.heldout_documents, " held out, ", s.other_shards_documents,
      " left to other shards)");
  if (!s.read.messages.empty()) {
    // Which records were malformed and why, not only how many.
    absl::StrAppend(&message, "; the first malformed records: ",
                    absl::StrJoin(s.read.messages, "; "));
  }
  if (!s.read.format_hint.empty()) {
    absl::StrAppend(&message, "; ", s.read.format_hint);
  }
  return absl::InvalidArgumentError(message);
}

// Opens the writers of pass 2 and runs it; commits only a non-empty corpus.
absl::Status WriteFinal(TokenStore& scratch, const std::vector<WordId>& remap,
                        const CorpusBuilderOptions& options,
                        uint32_t vocab_size, TokenStore* train,
                        TokenStore* heldout, CorpusBuildStats* stats) {
  TokenStoreMeta meta;
  meta.num_topics = options.num_topics;
  meta.vocab_size = vocab_size;
  Outputs out;
  LATENTD_ASSIGN_OR_RETURN(out.train, train->Rewrite(meta));
  if (options.holdout_fraction > 0.0) {
    LATENTD_ASSIGN_OR_RETURN(out.heldout, heldout->Rewrite(meta));
  }
  LATENTD_RETURN_IF_ERROR(RemapAndWrite(scratch, remap, options, out, stats));
  if (stats->documents == 0) return EmptyCorpusError(*stats);
  LATENTD_RETURN_IF_ERROR(out.train->Commit());
  if (out.heldout) LATENTD_RETURN_IF_ERROR(out.heldout->Commit());
  return absl::OkStatus();
}

}  // namespace

std::string CorpusBuildStats::Summary() const {
  return absl::StrCat(
      documents, " documents, ", tokens, " tokens, vocabulary ", vocab_size,
      " (", pruned_words, " words / ", pruned_tokens, " tokens pruned, ",
      pruned_documents, " documents emptied); held out ", heldout_documents,
      " documents, ", heldout_tokens, " tokens; ",
      other_shards_documents > 0
          ? absl::StrCat(other_shards_documents, " left to other shards; ")
          : "",
      "input: ", read.Summary());
}

absl::StatusOr<BuiltCorpus> BuildCorpus(DocumentReader& reader,
                                        const CorpusBuilderOptions& options,
                                        TokenStore* train,
                                        TokenStore* heldout) {
  LATENTD_RETURN_IF_ERROR(ValidateOptions(options, heldout));
  std::unique_ptr<TokenStore> scratch;
  if (options.temp_path.empty()) {
    scratch = CreateInMemoryTokenStore(TokenStoreMeta{});
  } else {
    LATENTD_ASSIGN_OR_RETURN(
        scratch, CreateFileTokenStore(options.temp_path, TokenStoreMeta{}));
  }
  struct RemoveTemp {
    const std::string& path;
    ~RemoveTemp() {
      if (!path.empty()) (void)FileSystem::Default()->Remove(path);
    }
  } remove_temp{options.temp_path};

  BuiltCorpus result;
  WordCounts counts;
  LATENTD_RETURN_IF_ERROR(CountAndSpill(reader, options, *scratch, &counts));
  result.stats.read = reader.stats();
  std::vector<WordId> remap =
      Prune(counts, options, &result.vocab, &result.stats);
  uint64_t kept_tokens = 0;
  for (uint64_t tf : counts.tf) kept_tokens += tf;
  kept_tokens -= result.stats.pruned_tokens;
  counts = WordCounts();  // free pass-1 memory before pass 2
  CorpusBuilderOptions final_options = options;
  final_options.batch_tokens = FinalBatchTokens(options, kept_tokens);
  LATENTD_RETURN_IF_ERROR(WriteFinal(*scratch, remap, final_options,
                                     static_cast<uint32_t>(result.vocab.size()),
                                     train, heldout, &result.stats));
  return result;
}

absl::StatusOr<BuiltCorpus> BuildCorpusFiles(const ReaderOptions& input,
                                             CorpusBuilderOptions options,
                                             const std::string& train_path,
                                             const std::string& heldout_path) {
  if (options.holdout_fraction > 0.0 && heldout_path.empty()) {
    return absl::InvalidArgumentError(
        "holdout_fraction > 0 needs a held-out store path");
  }
  if (options.temp_path.empty()) options.temp_path = train_path + ".pass1";
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<DocumentReader> reader,
                           OpenDocumentReader(input));
  TokenStoreMeta meta;
  meta.num_topics = options.num_topics;
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<TokenStore> train,
                           CreateFileTokenStore(train_path, meta));
  std::unique_ptr<TokenStore> heldout;
  if (options.holdout_fraction > 0.0) {
    LATENTD_ASSIGN_OR_RETURN(heldout, CreateFileTokenStore(heldout_path, meta));
  }
  return BuildCorpus(*reader, options, train.get(), heldout.get());
}

absl::StatusOr<BuiltCorpus> BuildCorpusFromDocuments(
    std::vector<std::vector<std::string>> docs,
    const CorpusBuilderOptions& options, TokenStore* train,
    TokenStore* heldout) {
  std::unique_ptr<DocumentReader> reader =
      NewInMemoryDocumentReader(std::move(docs));
  return BuildCorpus(*reader, options, train, heldout);
}

std::function<void(const BuildProgress&)> StderrProgress() {
  return [](const BuildProgress& p) {
    std::fprintf(stderr, "corpus pass %d: %llu documents, %llu tokens%s\n",
                 p.pass, static_cast<unsigned long long>(p.documents),
                 static_cast<unsigned long long>(p.tokens),
                 p.pass_done ? " (done)" : "");
  };
}

}  // namespace latentd
