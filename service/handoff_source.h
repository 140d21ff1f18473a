// The source a handed-off document carries (remove-node --handoff,
// ClusterMember::HandOffDocuments): "handoff:NODE/EPOCH/INDEX", the leaving
// node, the drain epoch of the attempt and the document's index in that
// node's store. The attempt (NODE/EPOCH) names the receivers' staging log
// and the decision in Redis (sync::ReadHandoffOutcome); the whole source
// makes a resend within one attempt idempotent.
//
// Thread-safety: functions of their arguments.
#ifndef LATENTD_SERVICE_HANDOFF_SOURCE_H_
#define LATENTD_SERVICE_HANDOFF_SOURCE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace latentd::service {

struct HandoffAttempt {
  std::string node;
  uint64_t epoch = 0;
  // "NODE/EPOCH": the staging log's name and what a commit call carries.
  std::string key() const;
};

std::string HandoffSource(std::string_view node, uint64_t epoch,
                          uint64_t index);
// The attempt of a hand-off source, or of an attempt key ("NODE/EPOCH");
// nullopt for anything else (an older node's "handoff:NODE/INDEX" too).
std::optional<HandoffAttempt> ParseHandoffSource(std::string_view source);
std::optional<HandoffAttempt> ParseHandoffKey(std::string_view key);

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_HANDOFF_SOURCE_H_
