// MaybeTlsSocket: what a framed connection (connection.h) reads and writes
// through — a TCP socket, or a TLS stream over it once StartTls() ran.
//
// Thread-safety: none; on the connection's strand only.
#ifndef LATENTD_SYNC_TRANSPORT_INTERNAL_MAYBE_TLS_SOCKET_H_
#define LATENTD_SYNC_TRANSPORT_INTERNAL_MAYBE_TLS_SOCKET_H_

#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "asio.hpp"
#include "sync/transport/internal/tls_stream.h"
#include "sync/transport/tls.h"

namespace latentd::sync::internal {

// A TCP socket, or a TLS stream over one once StartTls() ran: what the
// connection reads and writes through (an Asio AsyncReadStream and
// AsyncWriteStream). On the connection's strand only.
class MaybeTlsSocket {
 public:
  using executor_type = asio::ip::tcp::socket::executor_type;

  explicit MaybeTlsSocket(asio::ip::tcp::socket socket)
      : plain_(std::move(socket)) {}
  // From here on reads and writes go through TLS (the handshake is the
  // caller's). On failure (OpenSSL cannot make a session) the socket is
  // gone with it: the connection is over. REQUIRES: called once, before
  // any TLS read or write.
  absl::StatusOr<TlsStream*> StartTls(const TlsContext& context) {
    absl::StatusOr<std::unique_ptr<TlsStream>> tls =
        TlsStream::Create(std::move(plain_), context);
    if (!tls.ok()) return tls.status();
    tls_ = *std::move(tls);
    return tls_.get();
  }
  TlsStream* tls() { return tls_.get(); }
  asio::ip::tcp::socket& tcp() { return tls_ ? tls_->next_layer() : plain_; }
  executor_type get_executor() { return tcp().get_executor(); }

  template <typename Buffers, typename Handler>
  void async_read_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_read_some(buffers, std::forward<Handler>(handler));
    } else {
      plain_.async_read_some(buffers, std::forward<Handler>(handler));
    }
  }
  template <typename Buffers, typename Handler>
  void async_write_some(const Buffers& buffers, Handler&& handler) {
    if (tls_) {
      tls_->async_write_some(buffers, std::forward<Handler>(handler));
    } else {
      plain_.async_write_some(buffers, std::forward<Handler>(handler));
    }
  }

 private:
  asio::ip::tcp::socket plain_;  // moved into tls_ by StartTls
  std::unique_ptr<TlsStream> tls_;
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_TRANSPORT_INTERNAL_MAYBE_TLS_SOCKET_H_
