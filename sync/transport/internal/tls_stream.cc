#include "sync/transport/internal/tls_stream.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include "absl/strings/str_cat.h"
#include "asio/ssl/error.hpp"

namespace latentd::sync::internal {

absl::StatusOr<std::unique_ptr<TlsStream>> TlsStream::Create(
    asio::ip::tcp::socket socket, const TlsContext& context) {
  asio::error_code ec;
  socket.non_blocking(true, ec);
  if (ec) {
    return absl::InternalError(absl::StrCat(
        "TLS: cannot make the socket non-blocking: ", ec.message()));
  }
  ERR_clear_error();
  SSL* ssl = SSL_new(context.native());
  if (ssl == nullptr || !SetSocketWithoutSigpipe(ssl, socket.native_handle())) {
    SSL_free(ssl);
    return absl::InternalError(
        absl::StrCat("TLS: cannot start a session: ", TakeOpenSslError()));
  }
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
