// One framed TCP connection: a read loop that validates and delivers frames,
// and a bounded write queue. Shared by Client and Server. With TLS
// (ConnectionOptions::tls) the TLS handshake comes first, then the
// cluster-key handshake if any, then frames, all through the TLS stream.
//
// Thread-safety: every member runs on the socket's strand; Send and Close
// may be called from any thread (they post onto the strand). Callbacks run
// on the strand. on_close runs exactly once.
#ifndef LATENTD_SYNC_TRANSPORT_INTERNAL_CONNECTION_H_
#define LATENTD_SYNC_TRANSPORT_INTERNAL_CONNECTION_H_

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "asio.hpp"
#include "sync/transport/frame.h"
#include "sync/transport/internal/maybe_tls_socket.h"
#include "sync/transport/peer_auth.h"
#include "sync/transport/tls.h"
#include "sync/transport/transport.h"

namespace latentd::sync::internal {

using Strand = asio::strand<asio::io_context::executor_type>;

struct LoopImpl {
  asio::io_context io;
  std::vector<std::thread> threads;
  std::vector<std::thread::id> ids;
};

struct ConnectionOptions {
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  absl::Duration frame_timeout = absl::Seconds(10);
  // Server side: a connection between frames (and no call of its own
  // waiting for a reply) this long is closed. Infinite: never.
  absl::Duration idle_timeout = absl::InfiniteDuration();
  // Non-null: TLS first, as the client or server its is_server() says.
  std::shared_ptr<const TlsContext> tls;
  // Client with tls: the name or address the server's certificate must
  // carry.
  std::string tls_host;
  absl::Duration write_timeout = absl::Seconds(10);
  size_t max_pending_write_bytes = size_t{256} << 20;
  LogFn log;
  // Non-null: run the cluster-key handshake first (as `role`) and MAC every
  // frame (sync/transport/peer_auth.h); frames flow only once it has succeeded.
  std::shared_ptr<const PeerAuth> auth;
  PeerHandshake::Role role = PeerHandshake::Role::kServer;
  // Server: the budget for payload bytes of frames still arriving, shared
  // by the listener's connections through stats->request_bytes_in_flight.
  // 0: none.
  size_t max_request_bytes_in_flight = 0;
  TransportStats* stats = nullptr;    // not owned; outlives the connection
  std::shared_ptr<void> stats_owner;  // keeps *stats alive
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using FrameFn = std::function<void(Frame frame)>;
  // `status` is OK for an orderly close (EOF between frames, local Close()).
  using CloseFn = std::function<void(const absl::Status& status)>;

  Connection(asio::ip::tcp::socket socket, ConnectionOptions options,
             FrameFn on_frame, CloseFn on_close);

  // Starts the read loop. Call once, on the strand.
  void Start();
  // Queues `bytes` (one or more encoded frames).
  void Send(std::string bytes);
  // Closes; `why` is logged when not OK.
  void Close(absl::Status why);

  asio::any_io_executor executor() { return socket_.get_executor(); }
  const std::string& peer() const { return peer_; }
  // True once frames may flow: no handshake is configured, or it succeeded.
  // On the strand only.
  bool established() const { return established_; }

 private:
  // TLS: the server tells a TLS client from a plaintext one by its first
  // byte; both sides then run the TLS handshake (bounded by frame_timeout).
  // Closes the connection unless established within frame_timeout;
  // `what` (a string literal) names the handshake in the error.
  void ArmHandshakeDeadline(const char* what);
  void WaitForFirstByte();
  void StartTlsHandshake();
  // A plaintext client reached a TLS port: answers its first frame with
  // an error saying so (an HTTP request with a 400), then closes.
  void RefusePlaintext();
  void RefusedPlaintext();  // closes, logging why
  // After TLS (or without it): the cluster-key handshake or frames.
  void AfterTls();
  // Server: closes the connection once it has been idle_timeout between
  // frames with no call of its own in progress.
  void ArmIdleTimer();
  void ReadHandshakeHeader();
  // PeerHandshakeError (connection_errors.h) for this connection.
  absl::Status HandshakeError(const asio::error_code& ec) const;
  void ReadHandshakeBody(HandshakeHeader header);
  // Sends one handshake message; `then` runs on the strand once written.
  void WriteHandshake(std::string bytes, std::function<void()> then);
  void Established();
  void ReadHeader();
  void ReadPayload(FrameHeader header);
  // Reads more of the frame's payload into payload_ (grown as bytes come,
  // up to `want` bytes), then delivers the frame once all are there.
  void ReadPayloadSome(FrameHeader header, size_t want);
  void DeliverFrame(const FrameHeader& header);
  // Grows payload_ towards `want` bytes, charging the listener's budget;
  // false (the budget is spent) closes the connection.
  bool GrowPayload(size_t want);
  // Gives the budget back for what payload_ holds (the frame was delivered
  // or the connection closed).
  void ReleasePayload();
  void DoSend(std::string bytes);
  void WriteNext();
  void Fail(absl::Status why);  // on the strand
  // Server: a request announced over max_frame_bytes. Its error reply
  // (`why`) is queued, its payload read into a small buffer and dropped
  // (at most kMaxDiscardBytes, within frame_timeout), and the connection
  // closed once the reply is written: the client, still sending, reads
  // why instead of a reset.
  void RefuseOversizedFrame(const char* header, absl::Status why);
  void DiscardSome(size_t left, absl::Status why);
  static constexpr size_t kMaxDiscardBytes = size_t{64} << 20;
  // An HTTP client reached this port: a plain 400 saying where HTTP goes.
  void AnswerHttpWithHint();

  MaybeTlsSocket socket_;
  asio::steady_timer read_timer_;
  asio::steady_timer idle_timer_;
  uint64_t idle_generation_ = 0;  // a fired idle wait of an older one: stale
  int calls_in_progress_ = 0;     // server: frames delivered, not answered
  asio::steady_timer write_timer_;
  ConnectionOptions options_;
  FrameFn on_frame_;
  CloseFn on_close_;
  std::string peer_;
  std::array<char, kFrameHeaderSize> header_{};
  std::array<char, kHandshakeHeaderSize> hs_header_{};
  std::unique_ptr<PeerHandshake> handshake_;  // with options_.auth
  // With mutual TLS: the node ids the peer's certificate names.
  std::vector<std::string> cert_ids_;
  // OK unless the node id the peer proved the key with is not one its
  // certificate names (or it names none and auth requires one).
  absl::Status CheckPeerIdentity() const;
  std::unique_ptr<FrameMac> mac_;  // once the handshake is done
  std::string payload_;            // payload, then its MAC when authenticated
  size_t payload_filled_ = 0;      // bytes of payload_ read so far
  size_t payload_charged_ = 0;     // bytes of the budget payload_ holds
  std::deque<std::string> out_;
  size_t out_bytes_ = 0;
  bool writing_ = false;
  absl::Status close_once_written_;  // non-OK: close when out_ empties
  bool closed_ = false;
  bool established_ = false;
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_TRANSPORT_INTERNAL_CONNECTION_H_
