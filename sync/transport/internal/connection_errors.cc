#include "sync/transport/internal/connection_errors.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "asio/ssl/error.hpp"
#include "openssl/x509.h"
#include "sync/transport/frame.h"

namespace latentd::sync::internal {

absl::Status TlsHandshakeError(const asio::error_code& ec,
                               const TlsContext& tls, SSL* ssl,
                               absl::string_view server_name,
                               absl::string_view peer) {
  const bool client = !tls.is_server();
  std::string why = ec.message();
  absl::StatusCode code = absl::StatusCode::kUnavailable;
  const long verified =  // NOLINT: OpenSSL's type
      SSL_get_verify_result(ssl);
  if (client && verified != X509_V_OK) {
    // Not worth a retry: the same certificate comes back.
    code = absl::StatusCode::kFailedPrecondition;
    why = absl::StrCat("the server's certificate does not verify (",
                       X509_verify_cert_error_string(verified), ") against ",
                       tls.ca_file().empty()
                           ? std::string("the system's CAs")
                           : absl::StrCat("the CA in ", tls.ca_file()),
                       " for '", server_name, "'");
  } else if (!client && tls.is_mutual() &&
             ec.category() == asio::error::get_ssl_category()) {
    // The sync port's mutual TLS: say what was wrong with the client's
    // certificate (none, or not from the cluster CA).
    // (OpenSSL may drop a certificate that failed verification, so the
    // verify result decides first.)
    why = verified != X509_V_OK
              ? absl::StrCat("the client's certificate does not verify (",
                             X509_verify_cert_error_string(verified),
                             ") against the cluster CA in ", tls.ca_file())
              : absl::StrCat(
                    "the client presented no certificate (this "
                    "port wants one from the cluster CA in ",
                    tls.ca_file(), "): ", why);
  } else if (ec == asio::error::eof ||
             ec == asio::ssl::error::stream_truncated ||
             ec == asio::error::connection_reset) {
    why = client ? "the server closed the connection (does this port serve "
                   "TLS? a latentd port without TLS closes on a TLS hello)"
                 : "the client closed the connection";
  }
  return absl::Status(
      code, absl::StrCat("TLS handshake with ", peer, " failed: ", why));
}

absl::Status PeerHandshakeError(const asio::error_code& ec, bool mutual_tls,
                                PeerHandshake::Role role) {
  if (mutual_tls && role == PeerHandshake::Role::kClient) {
    // TLS 1.3: the server checks the client's certificate after the
    // client's handshake is done, so its refusal arrives here: as its
    // alert, or, when this side wrote first, as the reset that follows.
    if (ec.category() == asio::error::get_ssl_category()) {
      return absl::UnavailableError(absl::StrCat(
          "the server refused this node's TLS certificate (is it from the "
          "cluster CA?): ",
          ec.message()));
    }
    if (ec == asio::error::broken_pipe || ec == asio::error::connection_reset) {
      return absl::UnavailableError(absl::StrCat(
          "the server dropped the connection after the TLS handshake (it "
          "refused this node's TLS certificate? is it from the cluster CA?): ",
          ec.message()));
    }
  }
  if (ec != asio::error::eof) return absl::UnavailableError(ec.message());
  return absl::UnauthenticatedError(
      role == PeerHandshake::Role::kClient
          ? "the peer closed the connection during the cluster-key "
            "handshake (it refused this node's key, or runs without one)"
          : "the peer closed the connection during the cluster-key "
            "handshake");
}

bool LooksLikeHttp(const char* bytes) {
  for (const char* method :
       {"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH "}) {
    const size_t n = std::strlen(method);
    if (n <= kFrameHeaderSize && std::memcmp(bytes, method, n) == 0) {
      return true;
    }
  }
  return false;
}

const std::string& HttpHintAnswer() {
  static constexpr absl::string_view kBody =
      "This port speaks latentd's framed protobuf protocol, not HTTP.\n"
      "Send HTTP/JSON to the daemon's --http address (see DIR/ports).\n";
  static const std::string* answer = new std::string(
      absl::StrCat("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
                   "Connection: close\r\nContent-Length: ",
                   kBody.size(), "\r\n\r\n", kBody));
  return *answer;
}

}  // namespace latentd::sync::internal
