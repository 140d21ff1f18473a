// Fold-in inference: the topic mixture θ of a new document against a frozen
// model, by Gibbs sampling the document's own assignments with the
// word-topic counts held fixed: p(z=k) ∝ (n_dk + α_k)(n_wk + β)/(n_k + Vβ).
// θ is the average of (n_dk + α_k)/(n_d + Σα) over the kept iterations.
// Deterministic for a given seed and stream. A token costs O(non-zeros of
// its word's row + topics of the document), not O(K) (SparseLDA buckets;
// the smoothing one is constant since the model is frozen).
//
// Thread-safety: a FoldIn holds scratch, one thread at a time; any number of
// FoldIn objects may share one table as long as it does not change.
#ifndef LATENTD_SAMPLER_FOLD_IN_H_
#define LATENTD_SAMPLER_FOLD_IN_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "sampler/topic_table.h"

namespace latentd {

struct InferOptions {
  int iterations = 50;  // Gibbs sweeps over the document
  int burn_in = 20;     // sweeps discarded before θ is averaged
  uint64_t seed = 1;
};

class FoldIn {
 public:
  // The table must outlive this object. REQUIRES: alpha.size() == K.
  FoldIn(const TopicTable& table, std::vector<double> alpha, double beta);

  // θ of the document `words` (ids of known words). `stream` selects the
  // random stream (e.g. the document's index). Fails with kInvalidArgument
  // if the document is empty or a word id is outside the model.
  absl::StatusOr<std::vector<double>> Infer(std::span<const WordId> words,
                                            const InferOptions& options,
                                            uint64_t stream);

  // Topic assignments for the tokens of `words`: the state of the fold-in
  // chain after options.iterations sweeps (burn_in is not used), for a
  // document about to join the model. Word ids at or past the table's
  // vocabulary are words the model has not seen: their rows are empty, so
  // they take their topics from the rest of the document. Fails with
  // kInvalidArgument if the document is empty.
  absl::StatusOr<std::vector<TopicId>> Assign(std::span<const WordId> words,
                                              const InferOptions& options,
                                              uint64_t stream);

  // φ_wk = (n_wk + β)/(n_k + Vβ).
  double Phi(WordId word, TopicId topic) const;
  // p(w | θ) = Σ_k θ_k φ_wk.
  double WordProbability(WordId word, std::span<const double> theta) const;

 private:
  const TopicTable& table_;
  const std::vector<double> alpha_;
  const double beta_;
  double alpha_sum_ = 0;
  void AddDocTopic(TopicId topic);
  void RemoveDocTopic(TopicId topic);
  // The chain both Infer and Assign run: *z ends as the last state; θ is
  // accumulated into *theta if it is not null.
  absl::Status Run(std::span<const WordId> words, const InferOptions& options,
                   uint64_t stream, bool allow_unseen, std::vector<TopicId>* z,
                   std::vector<double>* theta);

  std::vector<double> inv_denom_;      // 1/(n_k + Vβ)
  std::vector<double> smoothing_;      // β/(n_k + Vβ)
  std::vector<double> smoothing_cum_;  // running sum of α_k β/(n_k + Vβ)
  double smoothing_total_ = 0;
  // Per document: n_dk, the topics with n_dk > 0 and their positions.
  std::vector<Count> n_dk_;
  std::vector<TopicId> doc_topics_;
  std::vector<uint32_t> doc_pos_;
  std::vector<double> q_mass_;  // per token: running sum over the row
  // Per distinct word of the document: n_wk/(n_k+Vβ) over its row.
  std::vector<uint32_t> row_begin_;
  std::vector<std::pair<TopicId, double>> row_entries_;
};

struct PerplexityResult {
  uint64_t documents = 0;
  uint64_t scored_tokens = 0;
  double log_likelihood = 0;  // Σ log p(w) over the scored tokens
  double perplexity = 0;      // exp(−log_likelihood / scored_tokens)
  // The held-out log-likelihood per scored token (= −log perplexity).
  double log_likelihood_per_token() const {
    return scored_tokens > 0
               ? log_likelihood / static_cast<double>(scored_tokens)
               : 0.0;
  }
};

// Document completion, one document: if `words` has at least two tokens,
// θ is folded in from its first half (random stream `stream`) and the
// second half's log p(w | θ) is added to *result (documents, scored_tokens
// and log_likelihood; perplexity is set by FinishPerplexity). Shorter
// documents are skipped. Fails only as FoldIn::Infer does.
absl::Status AddDocumentCompletion(FoldIn* fold_in,
                                   std::span<const WordId> words,
                                   const InferOptions& options, uint64_t stream,
                                   PerplexityResult* result);
// Sets result->perplexity; kInvalidArgument if nothing was scored.
absl::Status FinishPerplexity(PerplexityResult* result);

// Held-out perplexity by document completion over every document of
// `store` (AddDocumentCompletion, stream = the document's index in the
// store). Fails if the store is damaged or has nothing to score.
absl::StatusOr<PerplexityResult> DocumentCompletionPerplexity(
    FoldIn* fold_in, TokenStore* store, const InferOptions& options);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_FOLD_IN_H_
