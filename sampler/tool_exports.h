// Exports of a trained model in the files other tools read: pyLDAvis,
// Mallet and plain CSV. Each is written from the model's counts (the
// snapshot: topic–word) and the training token store (document–topic, from
// the tokens' current topics), smoothed as the model is:
//   φ_kw = (n_wk + β) / (n_k + Vβ)          (topic–word)
//   θ_dk = (n_dk + α_k) / (n_d + Σ_k α_k)    (document–topic)
// so every row of either matrix sums to 1.
//
// Files, by format (written into the output directory):
//   pyldavis  pyldavis.json: one JSON object with exactly the arguments of
//             pyLDAvis.prepare — topic_term_dists (K×V, φ), doc_topic_dists
//             (D×K, θ), doc_lengths (D), vocab (V), term_frequency (V, the
//             word's tokens in the corpus, Σ_k n_wk). Use:
//             pyLDAvis.prepare(**json.load(open("pyldavis.json"))).
//   mallet    the files Mallet's train-topics writes (Mallet 2.0.8 layouts):
//             mallet_topic_keys.txt (--output-topic-keys): per topic
//               "<k>\t<α_k>\t<w1> <w2> ... <wN> \n", the N most frequent
//               words (count order), α with at most 5 decimals;
//             mallet_doc_topics.txt (--output-doc-topics, dense):
//               "<d>\t<name>\t<θ_d0>\t...\t<θ_d,K-1>\n", name = the document
//               id ("no-name" if none);
//             mallet_state.gz (--output-state, gzip): "#doc source pos
//               typeindex type topic", "#alpha : α_0 α_1 ... ", "#beta : β",
//               then one "<d> <source> <pos> <typeindex> <type> <topic>" line
//               per token, source "NA" (Mallet's when there is none).
//             Numbers in doc-topics and state as Java's Double.toString.
//   csv       doc_topic.csv: header "doc,id,topic_0,...,topic_<K-1>", one
//             row of θ per document; topic_word.csv: header
//             "topic,<word 0>,...,<word V-1>", one row of φ per topic.
//             RFC 4180 quoting where a field needs it.
// Floats in pyldavis.json and the CSV files carry 9 significant digits.
//
// Thread-safety: pure functions; the store must not be rewritten meanwhile.
#ifndef LATENTD_SAMPLER_TOOL_EXPORTS_H_
#define LATENTD_SAMPLER_TOOL_EXPORTS_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "corpora/token_store.h"
#include "corpora/vocabulary.h"
#include "sampler/model_snapshot.h"

namespace latentd {

enum class ToolFormat { kPyldavis, kMallet, kCsv };

// "pyldavis", "mallet", "csv"; kInvalidArgument listing them otherwise.
absl::StatusOr<ToolFormat> ParseToolFormat(std::string_view name);
std::string_view ToolFormatName(ToolFormat format);

// The file names `format` writes, in the order above.
std::vector<std::string> ToolExportFiles(ToolFormat format);

struct ToolExportOptions {
  // Words per topic in mallet_topic_keys.txt (Mallet's --num-top-words).
  int top_words = 20;
};

// Writes the files of `format` into the existing directory `dir`, each
// atomically (a failure leaves the files there before it unchanged).
// REQUIRES: vocab.size() == model.vocab_size.
// Errors: kFailedPrecondition if the store does not belong to the model
// (another K or V, or another sweep: model.bin and tokens.lts out of step);
// kInvalidArgument for mallet if a word holds whitespace (Mallet's files
// separate words by spaces); the store's error if it cannot be read; the
// file's error if one cannot be written.
absl::Status ExportForTool(const ModelSnapshot& model, const Vocabulary& vocab,
                           TokenStore* store, ToolFormat format,
                           const ToolExportOptions& options,
                           const std::string& dir);

// How Java's Double.toString prints `v` (Mallet's numbers): the shortest
// decimal that reads back as `v`, "0.25", "5.0", "1.0E-4", "1.2345678E7".
std::string JavaDoubleString(double v);

}  // namespace latentd

#endif  // LATENTD_SAMPLER_TOOL_EXPORTS_H_
