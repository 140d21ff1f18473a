#include "cli/model_corpus.h"

#include <memory>
#include <optional>
#include <vector>

#include "base/status_macros.h"
#include "corpora/document_reader.h"

namespace latentd {

absl::Status ForEachModelDocument(
    const LoadedModel& model, const ModelCorpusOptions& corpus,
    const std::function<absl::Status(uint64_t, std::span<const WordId>)>& fn) {
  ReaderOptions reader;
  reader.path = corpus.path;
  reader.vocab_path = corpus.vocab_path;
  std::string format = corpus.format;
  if (format.empty()) {
    auto it = model.settings.find("corpus.format");
    format = it != model.settings.end() ? it->second : "lines";
  }
  LATENTD_ASSIGN_OR_RETURN(reader.format, ParseCorpusFormat(format));
  LATENTD_ASSIGN_OR_RETURN(reader.tokenizer,
                           GetTokenizerSettings(model.settings));
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<DocumentReader> docs,
                           OpenDocumentReader(reader));
  RawDocument doc;
  std::vector<WordId> ids;
  for (uint64_t index = 0;; ++index) {
    LATENTD_ASSIGN_OR_RETURN(bool more, docs->Next(&doc));
    if (!more) break;
    ids.clear();
    for (const std::string& w : doc.words) {
      if (std::optional<WordId> id = model.vocab.Find(w)) ids.push_back(*id);
    }
    LATENTD_RETURN_IF_ERROR(fn(index, ids));
  }
  return absl::OkStatus();
}

}  // namespace latentd
