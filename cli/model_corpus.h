// A corpus file read as a trained model's corpus was: in the model's format
// unless another is given, tokenized with the model's tokenizer settings
// (settings.txt), each word mapped to the model's id; words the model does
// not know are dropped. Used by `latentctl coherence --corpus` and
// `latentctl evaluate --corpus`.
//
// Thread-safety: reentrant.
#ifndef LATENTD_CLI_MODEL_CORPUS_H_
#define LATENTD_CLI_MODEL_CORPUS_H_

#include <functional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "corpora/types.h"
#include "sampler/model_dir.h"

namespace latentd {

struct ModelCorpusOptions {
  std::string path;        // the corpus (file or directory)
  std::string format;      // "" = the model's corpus format
  std::string vocab_path;  // vocabulary of a uci/ldac corpus
};

// Calls fn(index, ids) for each document of the corpus, in order (index:
// its position among the documents read). Stops at the first error: the
// reader's (naming the file), a bad format name (kInvalidArgument), the
// model's tokenizer settings', or fn's.
absl::Status ForEachModelDocument(
    const LoadedModel& model, const ModelCorpusOptions& corpus,
    const std::function<absl::Status(uint64_t, std::span<const WordId>)>& fn);

}  // namespace latentd

#endif  // LATENTD_CLI_MODEL_CORPUS_H_
