#include "sampler/model_export.h"

#include <algorithm>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/file_util.h"
#include "base/status_macros.h"
#include "sampler/internal/export_file.h"

namespace latentd {

std::vector<TopicSummary> SummarizeTopics(const ModelRows& model, int top_n) {
  const TopicId K = model.num_topics();
  const std::vector<int64_t> totals = model.TopicTotals();
  const double beta_sum = model.beta() * model.vocab_size();
  // Per topic, a heap of its top_n words so far, the worst in front:
  // O(K * top_n) memory where a copy of the model by topic took as much as
  // the model (68 MB at 200,000 words and K=100). Words come in id order,
  // so a later word that only ties the worst does not enter.
  const auto better = [](const std::pair<WordId, Count>& a,
                         const std::pair<WordId, Count>& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  };
  const size_t n = static_cast<size_t>(std::max(top_n, 0));
  std::vector<std::vector<std::pair<WordId, Count>>> top(K);
  if (n > 0) {
    model.ForEachRow([&](WordId w, absl::Span<const ModelRows::Entry> row) {
      for (const ModelRows::Entry& e : row) {
        auto& heap = top[e.topic];
        const std::pair<WordId, Count> word{w, e.count};
        if (heap.size() < n) {
          heap.push_back(word);
          std::push_heap(heap.begin(), heap.end(), better);
        } else if (better(word, heap.front())) {
          std::pop_heap(heap.begin(), heap.end(), better);
          heap.back() = word;
          std::push_heap(heap.begin(), heap.end(), better);
        }
      }
    });
  }
  std::vector<TopicSummary> out(K);
  for (TopicId k = 0; k < K; ++k) {
    auto& words = top[k];
    std::sort_heap(words.begin(), words.end(), better);
    out[k].topic = k;
    out[k].alpha = model.alpha()[k];
    out[k].tokens = totals[k];
    for (const auto& [w, count] : words) {
      out[k].top_words.emplace_back(
          w, (count + model.beta()) / (totals[k] + beta_sum));
    }
  }
  return out;
}

std::string FormatTopics(const std::vector<TopicSummary>& topics,
                         const Vocabulary& vocab) {
  std::string out;
  for (const TopicSummary& t : topics) {
    absl::StrAppendFormat(&out, "topic %d\talpha=%.4g\ttokens=%d\n", t.topic,
                          t.alpha, t.tokens);
    for (const auto& [w, p] : t.top_words) {
      absl::StrAppendFormat(&out, "  %s\t%.5f\n", vocab.word(w), p);
    }
  }
  return out;
}

absl::Status ExportModelText(const ModelRows& model, const Vocabulary& vocab,
                             int top_n, const std::string& dir) {
  LATENTD_RETURN_IF_ERROR(WriteFileAtomically(
      dir + "/topics.txt", FormatTopics(SummarizeTopics(model, top_n), vocab)));
  LATENTD_ASSIGN_OR_RETURN(
      internal::BufferedExportFile counts_file,
      internal::BufferedExportFile::Open(dir + "/word_topic_counts.tsv"));
  std::string& counts = counts_file.buf();
  absl::Status flushed;
  model.ForEachRow([&](WordId w, absl::Span<const ModelRows::Entry> row) {
    counts += vocab.word(w);
    for (const ModelRows::Entry& e : row) {
      absl::StrAppend(&counts, "\t", e.topic, ":", e.count);
    }
    counts += '\n';
    flushed = counts_file.MaybeFlush();
    return flushed.ok();
  });
  LATENTD_RETURN_IF_ERROR(flushed);
  LATENTD_RETURN_IF_ERROR(counts_file.Commit());
  std::string alpha;
  for (size_t k = 0; k < model.alpha().size(); ++k) {
    absl::StrAppendFormat(&alpha, "%d\t%.8g\n", k, model.alpha()[k]);
  }
  return WriteFileAtomically(dir + "/alpha.txt", alpha);
}

absl::Status ExportDocTopics(TokenStore* store,
                             const std::vector<double>& alpha,
                             const std::string& path) {
  const double alpha_sum = std::accumulate(alpha.begin(), alpha.end(), 0.0);
  LATENTD_ASSIGN_OR_RETURN(internal::BufferedExportFile file,
                           internal::BufferedExportFile::Open(path));
  std::string& out = file.buf();
  std::vector<Count> n_dk(alpha.size(), 0);
  std::vector<TopicId> used;
  LATENTD_RETURN_IF_ERROR(ForEachDocument(
      store, [&](const DocBatch& batch, size_t d) -> absl::Status {
        for (TopicId t : batch.doc_topics(d)) {
          if (n_dk[t]++ == 0) used.push_back(t);
        }
        std::sort(used.begin(), used.end());
        absl::StrAppend(&out, batch.first_doc + d, "\t", batch.doc_ids[d]);
        const double norm = batch.doc_length(d) + alpha_sum;
        for (TopicId k : used) {
          absl::StrAppendFormat(&out, "\t%d:%.5f", k,
                                (n_dk[k] + alpha[k]) / norm);
          n_dk[k] = 0;
        }
        out += '\n';
        used.clear();
        return file.MaybeFlush();
      }));
  return file.Commit();
}

}  // namespace latentd
