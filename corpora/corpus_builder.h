// Corpus builder: reads documents from a DocumentReader, builds the
// Vocabulary (pruned by document frequency and size) and writes the token
// store(s) the sampler sweeps, with initial topics drawn uniformly.
//
// Two passes, memory bounded by the vocabulary, not the corpus:
//  1. read the input once; give each distinct word a provisional id,
//     count its document and token frequency, and write the documents with
//     provisional ids to a scratch token store (a file when temp_path is set,
//     else in memory);
//  2. prune (min_doc_freq, then the max_vocab most frequent words), number
//     the kept words by decreasing frequency (ties: first seen first), and
//     stream the scratch store into the final store(s), dropping pruned
//     tokens and documents left empty.
// (Re-reading the input instead would tokenize twice and rule out inputs
// that can be read only once; the scratch store is compact and sequential.)
//
// Determinism: the output depends only on the input and the options. The
// initial topics of document i (its position in the input) come from
// Rng::ForStream(seed, 1, i); it is held out iff
// Rng::ForStream(seed, 2, i).Uniform() < holdout_fraction. The vocabulary is
// built from all documents, held-out ones included.
//
// Thread-safety: the functions are reentrant; the stores and reader passed in
// must not be used by anyone else during the build.
#ifndef LATENTD_CORPORA_CORPUS_BUILDER_H_
#define LATENTD_CORPORA_CORPUS_BUILDER_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/document_reader.h"
#include "corpora/token_store.h"
#include "corpora/vocabulary.h"

namespace latentd {

struct BuildProgress {
  int pass = 1;            // 1 (reading) or 2 (writing)
  uint64_t documents = 0;  // documents done in this pass
  uint64_t tokens = 0;     // tokens done in this pass
  bool pass_done = false;  // last report of the pass
};

struct CorpusBuilderOptions {
  uint32_t num_topics = 100;  // K; initial topics uniform in [0, K)
  uint64_t seed = 1;          // topics and the held-out choice
  uint64_t min_doc_freq = 1;  // drop words found in fewer documents
  uint64_t max_vocab = 0;     // keep the most frequent words; 0 = all
  // Target tokens per DocBatch; a batch closes once it reaches this, and a
  // document is never split (a longer document is a batch of its own).
  uint64_t batch_tokens = 16384;
  // Batches sized to the corpus: the final stores' batches close at
  // min(batch_tokens, max(min_batch_tokens, training tokens / min_batches))
  // tokens, so a small corpus still has about min_batches batches. The
  // samplers see the other batches in flight only once they are applied,
  // so the smaller a batch's share of the corpus, the closer parallel
  // sampling is to serial (issue 15). 0: batch_tokens as given.
  uint64_t min_batches = 128;
  uint64_t min_batch_tokens = 1024;
  // Share of documents, in [0, 1), written to the held-out store.
  double holdout_fraction = 0.0;
  // One shard of the input (N nodes sharing one corpus file): only the
  // documents whose position in the input (0-based, every document read)
  // is shard_index mod shard_count are written, training or held out. The
  // vocabulary and its pruning are the whole input's, so every shard of a
  // file has the same words. shard_index < shard_count.
  uint32_t shard_index = 0;
  uint32_t shard_count = 1;
  // Scratch store of pass 1: "" = in memory. It is removed at the end.
  std::string temp_path;
  // Called every progress_every_docs documents and at the end of each pass;
  // empty = silent. StderrProgress() prints to stderr.
  std::function<void(const BuildProgress&)> progress;
  uint64_t progress_every_docs = 100000;
};

struct CorpusBuildStats {
  uint64_t documents = 0;          // written to the training store
  uint64_t tokens = 0;             // in the training store
  uint64_t heldout_documents = 0;  // written to the held-out store
  uint64_t heldout_tokens = 0;
  uint64_t vocab_size = 0;              // words kept
  uint64_t raw_vocab_size = 0;          // distinct words read
  uint64_t pruned_words = 0;            // raw_vocab_size - vocab_size
  uint64_t pruned_tokens = 0;           // tokens of pruned words
  uint64_t pruned_documents = 0;        // documents left empty by pruning
  uint64_t other_shards_documents = 0;  // read, left to the other shards
  ReadStats read;  // the reader's: empty documents, malformed records, ...

  // One line for logs.
  std::string Summary() const;
};

struct BuiltCorpus {
  Vocabulary vocab;  // WordId i of the stores is vocab.word(i)
  CorpusBuildStats stats;
};

// Builds from `reader` into `train` (and `heldout`), each replaced by a
// committed Rewrite with meta {num_topics, vocab size, sweep 0}. Errors:
// kInvalidArgument for bad options (holdout_fraction > 0 needs `heldout`),
// or when no document is left for training ("empty corpus"): the stores
// then keep their old versions; the reader's and stores' errors as they
// come. REQUIRES: train != nullptr.
absl::StatusOr<BuiltCorpus> BuildCorpus(DocumentReader& reader,
                                        const CorpusBuilderOptions& options,
                                        TokenStore* train,
                                        TokenStore* heldout = nullptr);

// Opens `input`, builds into file stores created at `train_path` (and
// `heldout_path`, needed iff holdout_fraction > 0). An empty temp_path
// becomes train_path + ".pass1".
absl::StatusOr<BuiltCorpus> BuildCorpusFiles(
    const ReaderOptions& input, CorpusBuilderOptions options,
    const std::string& train_path, const std::string& heldout_path = "");

// For tests: builds from documents given as lists of normalised words.
absl::StatusOr<BuiltCorpus> BuildCorpusFromDocuments(
    std::vector<std::vector<std::string>> docs,
    const CorpusBuilderOptions& options, TokenStore* train,
    TokenStore* heldout = nullptr);

// A progress callback printing one line per report to stderr.
std::function<void(const BuildProgress&)> StderrProgress();

}  // namespace latentd

#endif  // LATENTD_CORPORA_CORPUS_BUILDER_H_
