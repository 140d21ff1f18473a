// HttpResponseWriter: the answer bytes of one HTTP connection that the
// socket has not taken yet, and the non-blocking sends that drain them,
// plain or through TLS. A worker appends a whole answer as its handler
// produces it; whichever worker the epoll set next hands the connection
// (writable, or readable when TLS needs a read first) sends on, so a
// client that does not read holds memory (the answer, already made) but
// no thread.
//
// Thread-safety: none; only the worker serving the connection uses it.
#ifndef LATENTD_SERVICE_INTERNAL_HTTP_RESPONSE_WRITER_H_
#define LATENTD_SERVICE_INTERNAL_HTTP_RESPONSE_WRITER_H_

#include <openssl/ssl.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace latentd::service::internal {

class HttpResponseWriter {
 public:
  enum class Sent {
    kAll,        // nothing left to send
    kWantWrite,  // the socket is full: wait until it is writable
    kWantRead,   // TLS must read first: wait until it is readable
    kFailed,     // the peer is gone or the session broke: drop it
  };

  // REQUIRES before the first Send through TLS: `ssl` has
  // SSL_MODE_ENABLE_PARTIAL_WRITE and SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER
  // (see EnableTlsPartialWrites), as a send resumed after kWantWrite
  // passes the same bytes from a buffer that may have moved.
  static void EnableTlsPartialWrites(SSL* ssl);

  // Queues `bytes` after what is pending.
  void Append(std::string_view bytes) { pending_.append(bytes); }
  bool empty() const { return sent_ == pending_.size(); }
  size_t size() const { return pending_.size() - sent_; }

  // Sends what the socket takes now without blocking, through `ssl` when
  // non-null, else on `fd`. *progress: whether any byte went out. Once
  // all is sent the buffer's memory is given back.
  Sent Send(int fd, SSL* ssl, bool* progress);

 private:
  std::string pending_;
  size_t sent_ = 0;  // bytes of pending_ already sent
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_HTTP_RESPONSE_WRITER_H_
