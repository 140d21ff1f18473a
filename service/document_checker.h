// DocumentChecker: turns the documents a client sends into IngestRecords
// and checks them against the node's limits (ServiceOptions: max_text_bytes,
// max_word_bytes, max_id_bytes, corpus.max_document_tokens). A text is
// tokenized as the corpus was (settings.txt, TrainingLoop::tokenizer); a
// hand-off's words and topics are taken as they are, once checked. Every
// error is kInvalidArgument naming the document, the field and the limit.
//
// Thread-safety: every method may be called from any thread at once.
#ifndef LATENTD_SERVICE_DOCUMENT_CHECKER_H_
#define LATENTD_SERVICE_DOCUMENT_CHECKER_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "corpora/types.h"
#include "service/api.pb.h"
#include "service/ingest_log.h"
#include "service/service_options.h"
#include "service/training_loop.h"

namespace latentd::service {

class DocumentChecker {
 public:
  // `training` (not owned) outlives the checker.
  DocumentChecker(const ServiceOptions& options, const TrainingLoop* training);

  // `text` tokenized as the corpus was, words over max_word_bytes dropped;
  // an error if it is over max_text_bytes or no word is left.
  absl::StatusOr<std::vector<std::string>> TokenizeDocument(
      std::string_view text) const;
  // An error naming the field unless `r` is within the limits: max_id_bytes
  // (user, doc_id, source), max_word_bytes (each word),
  // corpus.max_document_tokens (its words).
  absl::Status CheckLimits(const IngestRecord& r) const;
  // The documents of an Ingest request as records, each tokenized or a
  // hand-off's, and checked; the first bad one fails the call.
  absl::StatusOr<std::vector<IngestRecord>> Records(
      const api::IngestRequest& request) const;
  size_t max_text_bytes() const { return options_.max_text_bytes; }

 private:
  // The words and topics of a handed-off document (api::Document words and
  // topics), checked: only with `local`, without text, one topic per word
  // below K, words non-empty UTF-8 without spaces or control bytes.
  absl::StatusOr<std::vector<std::string>> HandedOffWords(
      const api::Document& d, bool local, std::vector<TopicId>* topics) const;

  const ServiceOptions options_;
  const TrainingLoop& training_;
};

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_DOCUMENT_CHECKER_H_
