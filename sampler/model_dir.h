// The model directory that `latentctl train` writes and every reader of a
// model (topics, infer, later the daemon) opens:
//
//   model.bin              ModelSnapshot (binary; what training resumes from)
//   model.prev.bin         the snapshot before it (sampler/checkpoint_files.h)
//   vocab.txt              Vocabulary, line i = WordId i
//   settings.txt           key=value: how the corpus was read and tokenized
//                          and the training settings (text, for people too)
//   tokens.lts             the training token store with current topics
//   heldout.lts            the held-out token store (if any)
//   topics.txt, word_topic_counts.tsv, alpha.txt, doc_topics.tsv  exports
//   pyldavis.json, mallet_*, doc_topic.csv, topic_word.csv  exports for
//                          other tools (sampler/tool_exports.h), if written
//
// Thread-safety: pure functions; a loaded model is a plain value.
#ifndef LATENTD_SAMPLER_MODEL_DIR_H_
#define LATENTD_SAMPLER_MODEL_DIR_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/tokenizer.h"
#include "corpora/vocabulary.h"
#include "sampler/model_snapshot.h"

namespace latentd {

struct ModelPaths {
  explicit ModelPaths(std::string dir) : dir(std::move(dir)) {}
  std::string dir;
  std::string snapshot() const { return dir + "/model.bin"; }
  std::string prev_snapshot() const { return dir + "/model.prev.bin"; }
  std::string vocab() const { return dir + "/vocab.txt"; }
  std::string settings() const { return dir + "/settings.txt"; }
  std::string tokens() const { return dir + "/tokens.lts"; }
  std::string heldout() const { return dir + "/heldout.lts"; }
  std::string doc_topics() const { return dir + "/doc_topics.tsv"; }
  // Every file a model directory may hold (the list at the top of this
  // file): a directory holding any of them holds a model, which `latentctl
  // train` and `latentctl export` replace only when told to (--overwrite).
  std::vector<std::string> all() const;
  // The files of all() that exist.
  std::vector<std::string> existing() const;
};

// Creates `dir` if it does not exist (not its parents); kInvalidArgument
// naming it and the reason otherwise.
absl::Status MakeModelDirectory(const std::string& dir);
// Removes `files` (a model's, ModelPaths::existing); kPermissionDenied
// naming the first that cannot go (the ones before it are gone).
absl::Status RemoveModelFiles(const std::vector<std::string>& files);

// Ordered key=value settings.
using ModelSettings = std::map<std::string, std::string>;

absl::Status SaveSettings(const ModelSettings& settings,
                          const std::string& path);
// Fails naming the line if a line is not key=value.
absl::StatusOr<ModelSettings> LoadSettings(const std::string& path);

// Settings keys of the tokenizer, so inference tokenizes as training did.
void PutTokenizerSettings(const TokenizerOptions& options,
                          ModelSettings* settings);
// Missing keys keep the defaults; a malformed value is an error.
absl::StatusOr<TokenizerOptions> GetTokenizerSettings(
    const ModelSettings& settings);

struct LoadedModel {
  ModelSnapshot snapshot;
  Vocabulary vocab;
  ModelSettings settings;
};

// Loads model.bin, vocab.txt and settings.txt of `dir`. Fails with the
// file's error, or kFailedPrecondition if vocabulary and snapshot disagree.
absl::StatusOr<LoadedModel> LoadModelDir(const std::string& dir);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_MODEL_DIR_H_
