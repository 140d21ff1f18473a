// `latentctl export DIR --format gensim`: a trained model directory as a
// gensim LdaModel that gensim.models.LdaModel.load opens (OUT/lda.gensim
// and gensim's companion files). gensim saves models as Python pickles, so
// the files are written by gensim itself: latentctl runs the writer of
// python/latentd/gensim_export.py (embedded at build time) with a Python 3
// that has gensim, on the text files `latentctl train` leaves in DIR
// (vocab.txt, word_topic_counts.tsv, alpha.txt, settings.txt). The model's
// topic-word state is latentd's counts and its eta latentd's beta, so
// gensim's topics are latentd's phi.
//
// Thread-safety: reentrant; one call at a time per output directory.
#ifndef LATENTD_CLI_GENSIM_EXPORT_H_
#define LATENTD_CLI_GENSIM_EXPORT_H_

#include <cstdio>
#include <string>

#include "absl/status/status.h"

namespace latentd {

// The file LdaModel.load opens, in the output directory.
inline constexpr char kGensimModelFile[] = "lda.gensim";

// Runs `python -c <writer> model_dir out_dir` (its output to `err`).
// kFailedPrecondition when python cannot be started, or fails (say without
// gensim: the message says to install python3-gensim or give --python),
// naming the interpreter and its exit status.
absl::Status ExportGensim(const std::string& model_dir,
                          const std::string& out_dir, const std::string& python,
                          FILE* err);

}  // namespace latentd

#endif  // LATENTD_CLI_GENSIM_EXPORT_H_
