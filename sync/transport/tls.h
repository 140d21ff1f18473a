// TLS contexts (OpenSSL's SSL_CTX) for the framed transport
// (sync/transport/transport.h) and the HTTP gateway: a server context from
// a certificate chain and its private key, a client context that verifies
// the server's certificate against a CA file (or the system's CAs).
//
// What TLS gives latentd: confidentiality and integrity of API traffic, and
// to a client, proof that it talks to the server the CA vouches for (the
// certificate's name or IP must match the address dialled). Who may call
// what is the API tokens' job (service/api_auth.h), not TLS's: no client
// certificates are asked for.
//
// Server and client contexts accept TLS 1.2 and 1.3 only.
//
// Thread-safety: a TlsContext is immutable once made; any number of
// connections on any threads may use it at once.
#ifndef LATENTD_SYNC_TRANSPORT_TLS_H_
#define LATENTD_SYNC_TRANSPORT_TLS_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

typedef struct ssl_st SSL;          // NOLINT: OpenSSL's own name
typedef struct ssl_ctx_st SSL_CTX;  // NOLINT

namespace latentd::sync {

// What a client asks for: TLS or not, and the CA file that the server's
// certificate must chain to ("" = the system's CAs); the certificate must
// also name the host or IP address dialled.
struct ClientTls {
  bool enabled = false;
  std::string ca_file;  // PEM
};

// The files of the sync port's mutual TLS: this node's certificate chain
// and key (PEM), and the cluster CA (PEM) every peer's certificate must
// chain to. All three, or none (TLS off).
struct MutualTlsFiles {
  std::string cert_file;
  std::string key_file;
  std::string ca_file;
  bool enabled() const {
    return !cert_file.empty() || !key_file.empty() || !ca_file.empty();
  }
};

class TlsContext {
 public:
  // A server's context: `cert_file` holds the certificate (then any
  // intermediates) in PEM, `key_file` its private key in PEM.
  // kInvalidArgument naming the file and OpenSSL's reason when either
  // cannot be read or parsed, or when the key does not match the
  // certificate.
  static absl::StatusOr<std::shared_ptr<const TlsContext>> ForServer(
      const std::string& cert_file, const std::string& key_file);
  // A client's context: verifies the server's chain against the PEM CA
  // certificates in `ca_file`, or the system's default CAs when it is "".
  // kInvalidArgument naming the file when it cannot be read or holds no
  // certificate.
  static absl::StatusOr<std::shared_ptr<const TlsContext>> ForClient(
      const std::string& ca_file);
  // Mutual TLS, server side: presents files.cert_file and requires every
  // client to present a certificate chaining to files.ca_file (a client
  // without one, or with one from another CA, fails the handshake).
  // Client side: presents files.cert_file too, and verifies the server's
  // chain against files.ca_file (and its name, as ForClient). Either:
  // kInvalidArgument naming the file (or the missing one) when any of the
  // three is missing, unreadable or unparsable, or the key does not match.
  static absl::StatusOr<std::shared_ptr<const TlsContext>> ForMutualServer(
      const MutualTlsFiles& files);
  static absl::StatusOr<std::shared_ptr<const TlsContext>> ForMutualClient(
      const MutualTlsFiles& files);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;

  bool is_server() const { return server_; }
  // True for ForMutualServer/ForMutualClient contexts.
  bool is_mutual() const { return mutual_; }
  // The CA file peers are verified against ("" = system CAs; a plain
  // server context verifies none), for messages.
  const std::string& ca_file() const { return ca_file_; }
  // OpenSSL's handle, owned by this context: each connection's session
  // is SSL_new(native()).
  SSL_CTX* native() const { return context_.get(); }

 private:
  struct FreeContext {
    void operator()(SSL_CTX* ctx) const;
  };
  // A context with OpenSSL's settings common to all (TLS 1.2 and up, no
  // compression or renegotiation, buffers released while empty);
  // kInternal if OpenSSL cannot make one.
  static absl::StatusOr<std::shared_ptr<TlsContext>> Make(bool server,
                                                          bool mutual,
                                                          std::string ca_file);
  // A mutual-TLS context (server or client) with its certificate, key and
  // CA loaded; the caller sets what verifies the peer.
  static absl::StatusOr<std::shared_ptr<TlsContext>> MakeMutual(
      bool server, const MutualTlsFiles& files);
  TlsContext(bool server, bool mutual, std::string ca_file, SSL_CTX* ctx);
  const bool server_;
  const bool mutual_;
  const std::string ca_file_;
  const std::unique_ptr<SSL_CTX, FreeContext> context_;
};

// Makes `ssl` (a client connection) check that the server's certificate
// names `host`: a DNS name against its subjectAltName/CN, an IP address
// against its IP subjectAltNames; also sets SNI for a name. False if
// OpenSSL refuses the parameters.
bool SetTlsPeerHost(SSL* ssl, const std::string& host);

// Node identities in certificates (docs/operations.md, "Per-node
// certificates"): a member certificate names its node id as a
// subjectAltName URI "latentd-node:<id>" (ops/issue-node-cert.sh).
inline constexpr char kNodeIdUriPrefix[] = "latentd-node:";

// The node ids the peer certificate of `ssl` names (its "latentd-node:"
// URIs, prefix removed), in certificate order; empty if it has no
// certificate or names none.
std::vector<std::string> PeerCertificateNodeIds(SSL* ssl);

// Binds `ssl` to the socket `fd` as SSL_set_fd does, except that its
// writes use send(MSG_NOSIGNAL): OpenSSL's socket BIO writes with
// write(2), which raises SIGPIPE (and kills a process that has not ignored
// it) on a connection the peer has reset. The socket is not closed with
// the session. False, OpenSSL's error queued, if the BIO cannot be made.
bool SetSocketWithoutSigpipe(SSL* ssl, int fd);

// The most recent OpenSSL error on this thread as text ("" if none); clears
// the thread's error queue.
std::string TakeOpenSslError();

// True if `first_byte` opens a TLS record of type handshake (a
// ClientHello): how a TLS port tells a plaintext client from a TLS one.
inline bool LooksLikeTlsHandshake(unsigned char first_byte) {
  return first_byte == 0x16;
}

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_TRANSPORT_TLS_H_
