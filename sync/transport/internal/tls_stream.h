// A TLS session over an Asio TCP socket in which OpenSSL reads and writes
// the socket's file descriptor itself: the socket is non-blocking, and
// when OpenSSL wants to read or write (SSL_ERROR_WANT_READ/WRITE) the
// operation waits for the socket (async_wait) and tries again.
//
// Why not asio::ssl::stream: it puts a BIO pair and record buffers of its
// own (17 KiB each, fixed) between OpenSSL and the socket of every
// connection, whatever the connection does. Here a connection holds only
// OpenSSL's session, whose record buffers SSL_MODE_RELEASE_BUFFERS
// (sync/transport/tls.cc) frees while they are empty: an idle connection, or
// one waiting for the rest of a frame, holds a few KiB.
//
// Contract: once async_handshake completed without error, an Asio
// AsyncReadStream and AsyncWriteStream (asio::async_read and
// asio::async_write compose over async_read_some and async_write_some);
// a read and a write may be in flight together, never two of either, and
// nothing else during the handshake. Each operation completes once:
// never from inside the call that started it, on the handler's associated
// executor (by default the socket's). Read and write use the first
// non-empty buffer of the sequence only (as "some" allows). Errors:
// asio::error::eof for the peer's close_notify, asio::ssl::error::
// stream_truncated for a close without it, OpenSSL's own (a refused
// certificate, a failed handshake) as asio::error::get_ssl_category()
// codes, system errors (connection_reset) as they come, and
// bad_descriptor or operation_aborted once the socket was closed. The
// caller closes the socket (next_layer()) to end the connection; a
// pending operation then completes with operation_aborted. No
// close_notify is sent. Writes never raise SIGPIPE.
//
// Thread-safety: none, like the socket: use it on one strand only (the
// connection's); the TlsContext may be shared by any number of streams.
#ifndef LATENTD_SYNC_TRANSPORT_INTERNAL_TLS_STREAM_H_
#define LATENTD_SYNC_TRANSPORT_INTERNAL_TLS_STREAM_H_

#include <cstddef>
#include <memory>
#include <utility>

#include "absl/status/statusor.h"
#include "asio.hpp"
#include "sync/transport/tls.h"

namespace latentd::sync::internal {

class TlsStream {
 public:
  using executor_type = asio::ip::tcp::socket::executor_type;

  // Takes `socket` (open, connected) and makes it non-blocking; the
  // session is a server's or a client's as context.is_server() says.
  // kInternal naming OpenSSL's reason when it cannot make the session.
  static absl::StatusOr<std::unique_ptr<TlsStream>> Create(
      asio::ip::tcp::socket socket, const TlsContext& context);
  ~TlsStream();  // frees the session; the socket closes with it
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // The TCP socket under the session (for its endpoints, shutdown and
  // close); reading or writing it directly corrupts the session.
  asio::ip::tcp::socket& next_layer() { return socket_; }
  executor_type get_executor() { return socket_.get_executor(); }
  // OpenSSL's session (the peer's certificate, the verify result).
  SSL* native_handle() { return ssl_; }

  // Runs the TLS handshake; `handler(const asio::error_code&)`. A client
  // verifies the server's certificate as its TlsContext says (and its
  // name, once SetTlsPeerHost(native_handle(), host) was called); a
  // mutual TLS server verifies the client's. No deadline of its own: the
  // caller closes the socket to give up.
  template <typename Handler>
  void async_handshake(Handler&& handler) {
    auto executor = asio::get_associated_executor(handler, get_executor());
    Run(Op::kHandshake, nullptr, 0,
        asio::bind_executor(executor,
                            [h = std::forward<Handler>(handler)](
                                const asio::error_code& ec, size_t) mutable {
                              std::move(h)(ec);
                            }),
        /*first=*/true);
  }
  // Reads decrypted bytes into the first non-empty buffer of `buffers`;
  // `handler(const asio::error_code&, size_t)`.
  template <typename MutableBuffers, typename Handler>
  void async_read_some(const MutableBuffers& buffers, Handler&& handler) {
    const asio::mutable_buffer b = FirstOf<asio::mutable_buffer>(buffers);
    Run(Op::kRead, b.data(), b.size(), std::forward<Handler>(handler),
        /*first=*/true);
  }
  // Encrypts and writes bytes of the first non-empty buffer of `buffers`;
  // `handler(const asio::error_code&, size_t)`.
  template <typename ConstBuffers, typename Handler>
  void async_write_some(const ConstBuffers& buffers, Handler&& handler) {
    const asio::const_buffer b = FirstOf<asio::const_buffer>(buffers);
    Run(Op::kWrite, const_cast<void*>(b.data()), b.size(),
        std::forward<Handler>(handler), /*first=*/true);
  }

 private:
  enum class Op { kHandshake, kRead, kWrite };
  enum class Want { kNothing, kRead, kWrite };

  TlsStream(asio::ip::tcp::socket socket, SSL* ssl);

  template <typename Buffer, typename Buffers>
  static Buffer FirstOf(const Buffers& buffers) {
    for (auto it = asio::buffer_sequence_begin(buffers);
         it != asio::buffer_sequence_end(buffers); ++it) {
      const Buffer b(*it);
      if (b.size() > 0) return b;
    }
    return Buffer();
  }

  // One attempt at `op` (`size` bytes at `data` for a read or write).
  // kNothing: it is over, with *ec and *n bytes; otherwise OpenSSL waits
  // for the socket to be readable or writable.
  Want Attempt(Op op, void* data, size_t size, size_t* n, asio::error_code* ec);

  // Attempts `op` until it is over, waiting for the socket in between,
  // then completes `handler(ec, n)` on its executor (posted when `first`:
  // never inside the initiating call).
  template <typename Handler>
  void Run(Op op, void* data, size_t size, Handler handler, bool first) {
    size_t n = 0;
    asio::error_code ec;
    const Want want = Attempt(op, data, size, &n, &ec);
    if (want == Want::kNothing) {
      auto executor = asio::get_associated_executor(handler, get_executor());
      auto done = [h = std::move(handler), ec, n]() mutable {
        std::move(h)(ec, n);
      };
      if (first) {
        asio::post(executor, std::move(done));
      } else {
        asio::dispatch(executor, std::move(done));
      }
      return;
    }
    socket_.async_wait(
        want == Want::kRead ? asio::socket_base::wait_read
                            : asio::socket_base::wait_write,
        [this, op, data, size,
         h = std::move(handler)](const asio::error_code& wait_ec) mutable {
          if (wait_ec) {
            auto executor = asio::get_associated_executor(h, get_executor());
            asio::dispatch(executor, [h = std::move(h), wait_ec]() mutable {
              std::move(h)(wait_ec, size_t{0});
            });
            return;
          }
          Run(op, data, size, std::move(h), /*first=*/false);
        });
  }

  asio::ip::tcp::socket socket_;
  SSL* const ssl_;  // owned
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_TRANSPORT_INTERNAL_TLS_STREAM_H_
