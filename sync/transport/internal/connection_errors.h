// What a framed connection (connection.h) tells its peer or its log when
// a handshake fails or the wrong protocol arrives: the errors name the
// likely cause (a certificate from another CA, a port without TLS, a
// refused cluster key), and an HTTP client gets a plain answer saying
// where HTTP goes.
//
// Thread-safety: pure functions.
#ifndef LATENTD_SYNC_TRANSPORT_INTERNAL_CONNECTION_ERRORS_H_
#define LATENTD_SYNC_TRANSPORT_INTERNAL_CONNECTION_ERRORS_H_

#include <openssl/ssl.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "asio.hpp"
#include "sync/transport/peer_auth.h"
#include "sync/transport/tls.h"

namespace latentd::sync::internal {

// The error of a failed TLS handshake (`ec`) with `peer` on a connection
// using `tls`, whose session is `ssl`; a client names the `server_name`
// the certificate had to carry.
absl::Status TlsHandshakeError(const asio::error_code& ec,
                               const TlsContext& tls, SSL* ssl,
                               absl::string_view server_name,
                               absl::string_view peer);

// The error of a failed cluster-key handshake read or write, saying what
// the peer most likely refused.
absl::Status PeerHandshakeError(const asio::error_code& ec, bool mutual_tls,
                                PeerHandshake::Role role);

// The first bytes of a frame header are an HTTP/1.x request's (curl or a
// browser at a framed port). REQUIRES: kFrameHeaderSize readable bytes.
bool LooksLikeHttp(const char* bytes);

// The plain 400 answer to an HTTP client at a framed port; its body
// starts "This port speaks latentd's framed protobuf" (api_client.cc
// knows it).
const std::string& HttpHintAnswer();

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_TRANSPORT_INTERNAL_CONNECTION_ERRORS_H_
