#include "sync/transport/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstdint>
#include <utility>

#include "absl/strings/str_cat.h"
#include "asio.hpp"

namespace latentd::sync {
namespace {

// The socket BIO of SetSocketWithoutSigpipe: the descriptor is the BIO's
// data; the socket is not closed with the BIO.
int SocketOf(BIO* bio) {
  return static_cast<int>(reinterpret_cast<intptr_t>(BIO_get_data(bio)));
}

int NoSigpipeWrite(BIO* bio, const char* data, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n =
        ::send(SocketOf(bio), data, static_cast<size_t>(size), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<int>(n);
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_write(bio);
    return -1;
  }
}

int SocketRead(BIO* bio, char* data, int size) {
  BIO_clear_retry_flags(bio);
  for (;;) {
    const ssize_t n = ::recv(SocketOf(bio), data, static_cast<size_t>(size), 0);
    if (n > 0) return static_cast<int>(n);
    if (n == 0) {
      BIO_set_flags(bio, BIO_FLAGS_IN_EOF);  // OpenSSL: BIO_eof()
      return 0;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) BIO_set_retry_read(bio);
    return -1;
  }
}

long SocketCtrl(BIO* bio, int cmd, long, void* ptr) {  // NOLINT: OpenSSL's
  switch (cmd) {
    case BIO_C_GET_FD:
      if (ptr != nullptr) *static_cast<int*>(ptr) = SocketOf(bio);
      return SocketOf(bio);
    case BIO_CTRL_EOF:
      return BIO_test_flags(bio, BIO_FLAGS_IN_EOF) != 0 ? 1 : 0;
    case BIO_CTRL_FLUSH:
      return 1;
    default:
      return 0;
  }
}

// The method, made once (OpenSSL keeps no reference to free).
const BIO_METHOD* NoSigpipeSocketMethod() {
  static BIO_METHOD* const method = [] {
    BIO_METHOD* m = BIO_meth_new(
        BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
        "latentd socket");
    if (m == nullptr) return m;
    BIO_meth_set_write(m, NoSigpipeWrite);
    BIO_meth_set_read(m, SocketRead);
    BIO_meth_set_ctrl(m, SocketCtrl);
    BIO_meth_set_create(m, [](BIO* bio) {
      BIO_set_init(bio, 1);
      return 1;
    });
    return m;
  }();
  return method;
}

}  // namespace

std::string TakeOpenSslError() {
  std::string last;
  while (const unsigned long e = ERR_get_error()) {  // NOLINT: OpenSSL type
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    const char* reason = ERR_reason_error_string(e);
    last = reason != nullptr ? reason : buf;
  }
  return last;
}

TlsContext::TlsContext(bool server, bool mutual, std::string ca_file,
                       SSL_CTX* ctx)
    : server_(server),
      mutual_(mutual),
      ca_file_(std::move(ca_file)),
      context_(ctx) {}

TlsContext::~TlsContext() = default;

void TlsContext::FreeContext::operator()(SSL_CTX* ctx) const {
  SSL_CTX_free(ctx);
}

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::Make(
    bool server, bool mutual, std::string ca_file) {
  TakeOpenSslError();
  SSL_CTX* ctx =
      SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  if (ctx == nullptr) {
    return absl::InternalError(absl::StrCat(
        "TLS: OpenSSL cannot make a context: ", TakeOpenSslError()));
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  // Writes may be partial and retried from a moved buffer (the HTTP
  // server's and the transport's non-blocking sockets). Record buffers are
  // freed while a connection has nothing in them, so an idle or stalled
  // TLS connection holds a few KiB, not ~34 KiB.
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
                            SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                            SSL_MODE_RELEASE_BUFFERS);
  return std::shared_ptr<TlsContext>(
      new TlsContext(server, mutual, std::move(ca_file), ctx));
}

namespace {

// Loads the certificate chain and its key into `ctx`.
absl::Status UseCertificate(SSL_CTX* ctx, const std::string& cert_file,
                            const std::string& key_file) {
  TakeOpenSslError();
  if (SSL_CTX_use_certificate_chain_file(ctx, cert_file.c_str()) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS certificate ", cert_file,
                     ": cannot be used: ", TakeOpenSslError()));
  }
  if (SSL_CTX_use_PrivateKey_file(ctx, key_file.c_str(), SSL_FILETYPE_PEM) !=
      1) {
    const std::string why = TakeOpenSslError();
    if (why.find("mismatch") != std::string::npos) {  // a key, not this one's
      return absl::InvalidArgumentError(
          absl::StrCat("TLS key ", key_file, " does not match the certificate ",
                       cert_file, ": ", why));
    }
    return absl::InvalidArgumentError(
        absl::StrCat("TLS key ", key_file, ": cannot be used: ", why));
  }
  if (SSL_CTX_check_private_key(ctx) != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS key ", key_file, " does not match the certificate ",
                     cert_file, ": ", TakeOpenSslError()));
  }
  return absl::OkStatus();
}

// Makes `ctx` verify peers against the CAs in `ca_file` ("" = the system's).
absl::Status LoadCa(SSL_CTX* ctx, const std::string& ca_file) {
  TakeOpenSslError();
  const int loaded = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                                     : SSL_CTX_load_verify_locations(
                                           ctx, ca_file.c_str(), nullptr);
  if (loaded != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        ca_file.empty() ? std::string("the system's CA certificates")
                        : absl::StrCat("TLS CA file ", ca_file),
        ": cannot be loaded: ", TakeOpenSslError()));
  }
  return absl::OkStatus();
}

absl::Status CheckMutualFiles(const MutualTlsFiles& files) {
  if (files.cert_file.empty() || files.key_file.empty() ||
      files.ca_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS on the sync port needs all three of --cluster-tls-cert, "
        "--cluster-tls-key and --cluster-tls-ca");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::ForServer(
    const std::string& cert_file, const std::string& key_file) {
  if (cert_file.empty() || key_file.empty()) {
    return absl::InvalidArgumentError(
        "TLS needs both a certificate (--tls-cert) and its key (--tls-key)");
  }
  absl::StatusOr<std::shared_ptr<TlsContext>> made = Make(true, false, "");
  if (!made.ok()) return made.status();
  std::shared_ptr<TlsContext> t = *std::move(made);
  if (absl::Status s = UseCertificate(t->native(), cert_file, key_file);
      !s.ok()) {
    return s;
  }
  return std::shared_ptr<const TlsContext>(std::move(t));
}

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::ForClient(
    const std::string& ca_file) {
  absl::StatusOr<std::shared_ptr<TlsContext>> made =
      Make(false, false, ca_file);
  if (!made.ok()) return made.status();
  std::shared_ptr<TlsContext> t = *std::move(made);
  if (absl::Status s = LoadCa(t->native(), ca_file); !s.ok()) return s;
  SSL_CTX_set_verify(t->native(), SSL_VERIFY_PEER, nullptr);
  return std::shared_ptr<const TlsContext>(std::move(t));
}

absl::StatusOr<std::shared_ptr<TlsContext>> TlsContext::MakeMutual(
    bool server, const MutualTlsFiles& files) {
  if (absl::Status s = CheckMutualFiles(files); !s.ok()) return s;
  absl::StatusOr<std::shared_ptr<TlsContext>> made =
      Make(server, true, files.ca_file);
  if (!made.ok()) return made.status();
  std::shared_ptr<TlsContext> t = *std::move(made);
  SSL_CTX* ctx = t->native();
  if (absl::Status s = UseCertificate(ctx, files.cert_file, files.key_file);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = LoadCa(ctx, files.ca_file); !s.ok()) return s;
  return t;
}

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::ForMutualServer(
    const MutualTlsFiles& files) {
  absl::StatusOr<std::shared_ptr<TlsContext>> made = MakeMutual(true, files);
  if (!made.ok()) return made.status();
  std::shared_ptr<TlsContext> t = *std::move(made);
  SSL_CTX* ctx = t->native();
  // The CA names sent in the CertificateRequest (owned by ctx once set).
  STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.ca_file.c_str());
  if (names == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("TLS CA file ", files.ca_file,
                     ": holds no certificate: ", TakeOpenSslError()));
  }
  SSL_CTX_set_client_CA_list(ctx, names);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
                     nullptr);
  // Session resumption with client certificates needs a context id.
  static constexpr unsigned char kSessionContext[] = "latentd-sync";
  SSL_CTX_set_session_id_context(ctx, kSessionContext,
                                 sizeof(kSessionContext) - 1);
  return std::shared_ptr<const TlsContext>(std::move(t));
}

absl::StatusOr<std::shared_ptr<const TlsContext>> TlsContext::ForMutualClient(
    const MutualTlsFiles& files) {
  absl::StatusOr<std::shared_ptr<TlsContext>> made = MakeMutual(false, files);
  if (!made.ok()) return made.status();
  std::shared_ptr<TlsContext> t = *std::move(made);
  SSL_CTX_set_verify(t->native(), SSL_VERIFY_PEER, nullptr);
  return std::shared_ptr<const TlsContext>(std::move(t));
}

std::vector<std::string> PeerCertificateNodeIds(SSL* ssl) {
  std::vector<std::string> ids;
  X509* cert = SSL_get0_peer_certificate(ssl);
  if (cert == nullptr) return ids;
  auto* names = static_cast<GENERAL_NAMES*>(
      X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  if (names == nullptr) return ids;
  const std::string_view prefix(kNodeIdUriPrefix);
  for (int i = 0; i < sk_GENERAL_NAME_num(names); ++i) {
    const GENERAL_NAME* name = sk_GENERAL_NAME_value(names, i);
    if (name->type != GEN_URI) continue;
    const ASN1_IA5STRING* uri = name->d.uniformResourceIdentifier;
    const std::string_view text(
        reinterpret_cast<const char*>(ASN1_STRING_get0_data(uri)),
        static_cast<size_t>(ASN1_STRING_length(uri)));
    if (text.size() > prefix.size() &&
        text.substr(0, prefix.size()) == prefix) {
      ids.emplace_back(text.substr(prefix.size()));
    }
  }
  GENERAL_NAMES_free(names);
  return ids;
}

bool SetTlsPeerHost(SSL* ssl, const std::string& host) {
  asio::error_code ec;
  asio::ip::make_address(host, ec);
  if (!ec) {  // an IP address: matched against IP subjectAltNames
    return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) ==
           1;
  }
  SSL_set_tlsext_host_name(ssl, host.c_str());
  return SSL_set1_host(ssl, host.c_str()) == 1;
}

bool SetSocketWithoutSigpipe(SSL* ssl, int fd) {
  const BIO_METHOD* method = NoSigpipeSocketMethod();
  BIO* bio = method != nullptr ? BIO_new(method) : nullptr;
  if (bio == nullptr) return false;
  BIO_set_data(bio, reinterpret_cast<void*>(static_cast<intptr_t>(fd)));
  SSL_set_bio(ssl, bio, bio);  // the session owns the BIO
  return true;
}

}  // namespace latentd::sync
