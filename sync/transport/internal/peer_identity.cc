#include "sync/transport/internal/peer_identity.h"

#include "absl/strings/str_cat.h"
#include "sync/transport/tls.h"

namespace latentd::sync::internal {

absl::Status CheckPeerIdentity(const std::string& peer,
                               const std::string& claimed,
                               const std::vector<std::string>& cert_ids,
                               bool require) {
  if (cert_ids.empty()) {
    if (!require) return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat(
        "identity refused: peer ", peer, " claims node id '", claimed,
        "' but its certificate names no node id (a subjectAltName URI ",
        kNodeIdUriPrefix,
        "<id>: ops/issue-node-cert.sh); per-node certificates are required"));
  }
  for (const std::string& id : cert_ids) {
    if (id == claimed) return absl::OkStatus();
  }
  return absl::PermissionDeniedError(
      absl::StrCat("identity refused: peer ", peer, " claims node id '",
                   claimed, "' but its certificate is node '", cert_ids.front(),
                   "''s; a member speaks only as itself"));
}

}  // namespace latentd::sync::internal
