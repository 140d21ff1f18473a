#include "sync/transport/internal/tls_stream.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "asio/ssl/error.hpp"

namespace latentd::sync::internal {
namespace {

// OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a
// connection the peer has reset; this one sends with MSG_NOSIGNAL (as Asio
// does), so that a library write never kills the process. The descriptor
// is the BIO's data; the socket is not closed with the BIO.
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

absl::StatusOr<std::unique_ptr<TlsStream>> TlsStream::Create(
    asio::ip::tcp::socket socket, const TlsContext& context) {
  asio::error_code ec;
  socket.non_blocking(true, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat(
        "TLS: cannot make the socket non-blocking: ", ec.message()));
  }
  ERR_clear_error();
  const BIO_METHOD* method = NoSigpipeSocketMethod();
  SSL* ssl = method != nullptr ? SSL_new(context.native()) : nullptr;
  BIO* bio = ssl != nullptr ? BIO_new(method) : nullptr;
  if (bio == nullptr) {
    SSL_free(ssl);
    return absl::InternalError(
        absl::StrCat("TLS: cannot start a session: ", TakeOpenSslError()));
  }
  BIO_set_data(bio, reinterpret_cast<void*>(
                        static_cast<intptr_t>(socket.native_handle())));
  SSL_set_bio(ssl, bio, bio);  // the session owns the BIO
  if (context.is_server()) {
    SSL_set_accept_state(ssl);
  } else {
    SSL_set_connect_state(ssl);
  }
  return std::unique_ptr<TlsStream>(new TlsStream(std::move(socket), ssl));
}

TlsStream::TlsStream(asio::ip::tcp::socket socket, SSL* ssl)
    : socket_(std::move(socket)), ssl_(ssl) {}

TlsStream::~TlsStream() { SSL_free(ssl_); }

TlsStream::Want TlsStream::Attempt(Op op, void* data, size_t size, size_t* n,
                                   asio::error_code* ec) {
  *n = 0;
  *ec = asio::error_code();
  if (!socket_.is_open()) {
    // Closed (and its descriptor perhaps another connection's by now):
    // OpenSSL must not touch it.
    *ec = asio::error::bad_descriptor;
    return Want::kNothing;
  }
  if (op != Op::kHandshake && size == 0) return Want::kNothing;
  const int len = static_cast<int>(std::min<size_t>(size, INT_MAX));
  ERR_clear_error();  // the queue is the thread's, shared by connections
  errno = 0;
  int r = 0;
  switch (op) {
    case Op::kHandshake:
      r = SSL_do_handshake(ssl_);
      break;
    case Op::kRead:
      r = SSL_read(ssl_, data, len);
      break;
    case Op::kWrite:
      r = SSL_write(ssl_, data, len);
      break;
  }
  const int saved_errno = errno;
  if (r > 0) {
    if (op != Op::kHandshake) *n = static_cast<size_t>(r);
    return Want::kNothing;
  }
  switch (SSL_get_error(ssl_, r)) {
    case SSL_ERROR_WANT_READ:
      return Want::kRead;
    case SSL_ERROR_WANT_WRITE:
      return Want::kWrite;
    case SSL_ERROR_ZERO_RETURN:  // close_notify
      *ec = asio::error::eof;
      break;
    case SSL_ERROR_SYSCALL:
      if (const unsigned long e = ERR_get_error()) {  // NOLINT: OpenSSL's
        *ec = asio::error_code(static_cast<int>(e),
                               asio::error::get_ssl_category());
      } else if (saved_errno != 0) {
        *ec = asio::error_code(saved_errno, asio::error::get_system_category());
      } else {  // EOF without close_notify (OpenSSL 1.1)
        *ec = asio::ssl::error::stream_truncated;
      }
      break;
    case SSL_ERROR_SSL: {
      const unsigned long e = ERR_get_error();  // NOLINT: OpenSSL's type
#ifdef SSL_R_UNEXPECTED_EOF_WHILE_READING
      if (ERR_GET_REASON(e) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
        *ec = asio::ssl::error::stream_truncated;  // EOF, no close_notify
        break;
      }
#endif
      *ec = asio::error_code(static_cast<int>(e),
                             asio::error::get_ssl_category());
      break;
    }
    default:
      *ec = asio::ssl::error::unexpected_result;
      break;
  }
  ERR_clear_error();
  return Want::kNothing;
}

}  // namespace latentd::sync::internal
