// Topic coherence: how often a topic's top words occur together in the
// documents of a reference corpus (the training documents unless told
// otherwise). Two standard measures, per topic and averaged over topics,
// both from document co-occurrence (a document either contains a word or
// not; how often does not matter):
//
// Let v_1..v_M be the topic's M most probable words (by n_wk, ties by word
// id — the order of topics.txt), N the number of documents, D(v) the
// documents containing v, D(v, u) the documents containing both.
//
// UMass (Mimno et al. 2011, "Optimizing semantic coherence in topic
// models"), with its +1 smoothing:
//   C_UMass = mean over 1 <= l < m <= M of log((D(v_m, v_l) + 1) / D(v_l))
// Mimno's paper sums the M(M-1)/2 terms; the mean (gensim's u_mass) is that
// sum divided by M(M-1)/2, so topics with fewer words compare. A pair whose
// more probable word v_l never occurs in the reference corpus (D(v_l) = 0:
// possible only with another corpus than the training one) is undefined
// and left out. Values are <= log 2 per pair and usually negative; higher
// is more coherent.
//
// NPMI (Bouma 2009, normalised PMI; Aletras & Stevenson 2013, Röder et al.
// 2015's C_NPMI with the whole document as the window), with no smoothing:
//   P(v) = D(v)/N, P(v, u) = D(v, u)/N,
//   NPMI(v, u) = log(P(v, u) / (P(v) P(u))) / -log P(v, u),
//   C_NPMI = mean over the M(M-1)/2 pairs of NPMI.
// Bouma's limits stand for the undefined cases: a pair that never occurs
// together scores -1, a pair found in every document (P(v, u) = 1) scores
// 1. Values lie in [-1, 1]; higher is more coherent. (gensim adds ε = 1e-12
// inside the log instead, which moves never-co-occurring pairs from -1 to a
// little above it.)
//
// The mean over topics leaves out topics without a value (fewer than two
// words with counts, or UMass with no defined pair).
//
// The gensim convention (CoherenceConvention::kGensim) computes what
// gensim 4's CoherenceModel does, so that numbers compare across tools:
//   u_mass: mean over the same pairs of log((D(v_m, v_l)/N + ε) / (D(v_l)/N))
//           with ε = 1e-12 (a pair with D(v_l) = 0 scores 0 and counts);
//   c_npmi: with P as above, mean over the pairs of
//           log((P(v, u) + ε) / (P(v) P(u))) / -log(P(v, u) + ε),
//           the whole document as the window (gensim's c_npmi with a
//           window_size no shorter than the longest document); a pair
//           with a word in no document is left out.
//
// Thread-safety: CoherenceCounter is not thread-safe (one feeder); the
// functions are pure and read the store, which must not be rewritten
// meanwhile.
#ifndef LATENTD_SAMPLER_COHERENCE_H_
#define LATENTD_SAMPLER_COHERENCE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "sampler/model_snapshot.h"

namespace latentd {

enum class CoherenceConvention {
  kMimno,   // Mimno's +1 (UMass) and Bouma's limits (NPMI): the default
  kGensim,  // gensim's ε = 1e-12 in both (header comment)
};

// "mimno" or "gensim"; kInvalidArgument names the text otherwise.
absl::StatusOr<CoherenceConvention> ParseCoherenceConvention(
    std::string_view text);
const char* CoherenceConventionName(CoherenceConvention c);

struct CoherenceOptions {
  int top_words = 10;  // M, the words per topic scored
  CoherenceConvention convention = CoherenceConvention::kMimno;
};

struct TopicCoherence {
  TopicId topic = 0;
  std::vector<WordId> words;    // v_1..v_M, most probable first
  std::optional<double> umass;  // none: no defined pair
  std::optional<double> npmi;   // none: fewer than two words
};

struct CoherenceReport {
  std::vector<TopicCoherence> topics;  // topic k at index k
  std::optional<double> mean_umass;    // over the topics with a value
  std::optional<double> mean_npmi;
  uint64_t documents = 0;  // N, the reference documents read
  int top_words = 0;       // M asked for
  CoherenceConvention convention = CoherenceConvention::kMimno;
};

// Counts document (co-)occurrence of the given words, document by document.
class CoherenceCounter {
 public:
  // `words[k]`: topic k's top words, most probable first, distinct within a
  // topic. REQUIRES: every word < vocab_size.
  CoherenceCounter(
      std::vector<std::vector<WordId>> words, uint32_t vocab_size,
      int top_words,
      CoherenceConvention convention = CoherenceConvention::kMimno);

  // Adds one reference document (its words, repeats allowed). Words >=
  // vocab_size are ignored (not in the model).
  void AddDocument(std::span<const WordId> document);

  // The measures over the documents added so far.
  CoherenceReport Report() const;

 private:
  std::vector<std::vector<WordId>> words_;
  int top_words_;
  CoherenceConvention convention_;
  // Dense index of each scored word (-1: not scored), its D(v), and per
  // topic the M×M pair counts D(v_i, v_j), i < j.
  std::vector<int32_t> slot_;
  std::vector<uint64_t> doc_freq_;
  std::vector<std::vector<uint64_t>> pair_counts_;
  // Per scored word, the (topic, rank) places it has.
  std::vector<std::vector<std::pair<TopicId, int>>> places_;
  uint64_t documents_ = 0;
  // Scratch of AddDocument: the document each slot was last seen in, and
  // the slots present in the current one.
  std::vector<uint32_t> seen_in_doc_;
  uint32_t stamp_ = 0;
  std::vector<int32_t> present_;
  // Per topic, the ranks of its words present in the current document,
  // and the topics with any (emptied again before AddDocument returns).
  std::vector<std::vector<int>> ranks_present_;
  std::vector<TopicId> touched_;
};

// Each topic's `top_words` most probable words (by count, ties by word id;
// fewer where the topic has fewer words with counts).
std::vector<std::vector<WordId>> TopicTopWords(const ModelRows& model,
                                               int top_words);

// The coherence of `model`'s topics over the documents of `store`.
// REQUIRES: options.top_words >= 2 (kInvalidArgument otherwise).
// Errors: the store's if it cannot be read.
absl::StatusOr<CoherenceReport> StoreCoherence(const ModelRows& model,
                                               TokenStore* store,
                                               const CoherenceOptions& options);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_COHERENCE_H_
