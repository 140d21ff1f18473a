// The single-node baseline the cluster benchmarks (cluster_bench,
// elastic_bench) measure a cluster against: one Trainer over the corpus in
// an in-memory token store, K topics, α = 50/K fixed.
//
// Thread-safety: the functions are reentrant; a returned Trainer is the
// caller's alone.
#ifndef LATENTD_OPS_BENCH_SINGLE_NODE_H_
#define LATENTD_OPS_BENCH_SINGLE_NODE_H_

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "corpora/document_reader.h"
#include "sampler/trainer.h"

namespace latentd::bench {

// A Trainer over `reader`'s documents, built into an in-memory token
// store: K = k, α = 50/K fixed, `seed` for the corpus and the sampler,
// `threads` sampler threads, evaluated every `eval_every` sweeps (0:
// never).
absl::StatusOr<std::unique_ptr<Trainer>> MakeBenchTrainer(
    DocumentReader& reader, TopicId k, uint64_t seed, int threads,
    int eval_every);

struct SingleNodeOptions {
  uint64_t max_docs = 0;  // the corpus's first documents only (0: all)
  TopicId topics = 0;
  int threads = 1;
  int sweeps = 0;
  bool evaluate = false;  // the log-likelihood after the last sweep
};

struct SingleNodeFigures {
  double tokens_per_s = 0;           // tokens sampled / sweep seconds
  double cpu_seconds_per_token = 0;  // this process's, all threads
  double ll_per_token = 0;           // after the last sweep (evaluate only)
};

// Runs `o.sweeps` sweeps of MakeBenchTrainer (seed 7) over `corpus`.
absl::StatusOr<SingleNodeFigures> RunSingleNode(const ReaderOptions& corpus,
                                                const SingleNodeOptions& o);

}  // namespace latentd::bench

#endif  // LATENTD_OPS_BENCH_SINGLE_NODE_H_
