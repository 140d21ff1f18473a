// Synthetic corpora drawn from the LDA generative model with known topics,
// for testing samplers against ground truth:
//   phi_k ~ Dirichlet(beta) over V words, for each topic k < K;
//   for each document d: theta_d ~ Dirichlet(alpha) over K topics,
//   length N_d ~ Poisson(mean_doc_length) (or fixed), at least 1;
//   each token: z ~ theta_d, w ~ phi_z.
// Every draw comes from base/random.h's Rng seeded by `seed`, so a seed
// gives the same corpus on every platform.
//
// Thread-safety: GenerateSyntheticCorpus is reentrant; the result is a plain
// value.
#ifndef LATENTD_CORPORA_SYNTHETIC_CORPUS_H_
#define LATENTD_CORPORA_SYNTHETIC_CORPUS_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/random.h"
#include "corpora/types.h"

namespace latentd {

struct SyntheticCorpusOptions {
  uint32_t num_topics = 10;      // K, in [1, kMaxTopics]
  uint32_t vocab_size = 1000;    // V >= 1; K * V <= 2^26
  uint64_t num_docs = 1000;      // D; D * mean_doc_length <= 2^31
  double mean_doc_length = 100;  // > 0
  bool poisson_length = true;    // false: every document has the rounded mean
  double alpha = 0.1;            // symmetric document-topic prior, > 0
  double beta = 0.01;            // symmetric topic-word prior, > 0
  uint64_t seed = 1;
};

struct SyntheticCorpus {
  uint32_t num_topics = 0;
  uint32_t vocab_size = 0;
  // True topic-word distributions: phi[k * vocab_size + w]; rows sum to 1.
  std::vector<double> phi;
  // True document-topic proportions: theta[d * num_topics + k].
  std::vector<double> theta;
  // Documents as word ids in [0, V), and each token's true topic.
  std::vector<std::vector<WordId>> docs;
  std::vector<std::vector<TopicId>> topics;

  // The name of word id w in WordDocuments(): "w<id>".
  static std::string WordName(WordId w);
  // The documents as words, ready for BuildCorpusFromDocuments. Note that
  // the builder numbers words by frequency: map through its Vocabulary and
  // WordName to compare with phi.
  std::vector<std::vector<std::string>> WordDocuments() const;
  uint64_t num_tokens() const;
};

// Fills `out` with a draw from the symmetric Dirichlet(concentration), in
// log space so that tiny concentrations do not underflow to an all-zero
// vector. REQUIRES: concentration > 0, out non-empty.
void SampleDirichlet(Rng& rng, double concentration, std::span<double> out);

// Draws a corpus. kInvalidArgument if an option is out of its range.
absl::StatusOr<SyntheticCorpus> GenerateSyntheticCorpus(
    const SyntheticCorpusOptions& options);

}  // namespace latentd

#endif  // LATENTD_CORPORA_SYNTHETIC_CORPUS_H_
