#include "service/internal/http_response_writer.h"

#include <openssl/err.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

namespace latentd::service::internal {

void HttpResponseWriter::EnableTlsPartialWrites(SSL* ssl) {
  SSL_set_mode(
      ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
}

HttpResponseWriter::Sent HttpResponseWriter::Send(int fd, SSL* ssl,
                                                  bool* progress) {
  *progress = false;
  while (!empty()) {
    const char* from = pending_.data() + sent_;
    if (ssl != nullptr) {
      // Never shorter than an interrupted SSL_write's length: what is
      // left only grows until it is sent.
      const int n = static_cast<int>(std::min<size_t>(size(), 1 << 30));
      ERR_clear_error();
      const int r = SSL_write(ssl, from, n);
      if (r > 0) {
        sent_ += static_cast<size_t>(r);
        *progress = true;
        continue;
      }
      const int e = SSL_get_error(ssl, r);
      if (e == SSL_ERROR_WANT_WRITE) return Sent::kWantWrite;
      if (e == SSL_ERROR_WANT_READ) return Sent::kWantRead;
      if (e == SSL_ERROR_SYSCALL && errno == EINTR) continue;
      return Sent::kFailed;
    }
    const ssize_t r = ::send(fd, from, size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (r > 0) {
      sent_ += static_cast<size_t>(r);
      *progress = true;
      continue;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return Sent::kWantWrite;
    }
    return Sent::kFailed;
  }
  std::string().swap(pending_);  // an answer may have been large
  sent_ = 0;
  return Sent::kAll;
}

}  // namespace latentd::service::internal
