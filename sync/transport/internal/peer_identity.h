// Binding a sync peer's node id to its certificate (sync/transport/peer_auth.h,
// "Threat model"): the rule the connection applies once the cluster-key
// handshake is done, kept apart from the I/O so that it can be tested and
// fuzzed alone.
//
// Thread-safety: a pure function.
#ifndef LATENTD_SYNC_TRANSPORT_INTERNAL_PEER_IDENTITY_H_
#define LATENTD_SYNC_TRANSPORT_INTERNAL_PEER_IDENTITY_H_

#include <string>
#include <vector>

#include "absl/status/status.h"

namespace latentd::sync::internal {

// OK if a peer (at address `peer`) that proved the cluster key as node
// `claimed` may be that node, given the node ids its TLS certificate
// names (PeerCertificateNodeIds): one of them is `claimed`, or it names
// none and `require` is false. Otherwise kPermissionDenied with a line
// for the log naming both ids.
absl::Status CheckPeerIdentity(const std::string& peer,
                               const std::string& claimed,
                               const std::vector<std::string>& cert_ids,
                               bool require);

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_TRANSPORT_INTERNAL_PEER_IDENTITY_H_
