// One framed TCP connection: a read loop that validates and delivers frames,
// and a bounded write queue. Shared by Client and Server.
//
// Thread-safety: every member runs on the socket's strand; Send and Close
// may be called from any thread (they post onto the strand). Callbacks run
// on the strand. on_close runs exactly once.
#ifndef LATENTD_SYNC_INTERNAL_CONNECTION_H_
#define LATENTD_SYNC_INTERNAL_CONNECTION_H_

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "asio.hpp"
#include "sync/frame.h"
#include "sync/peer_auth.h"
#include "sync/transport.h"

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
  absl::Duration write_timeout = absl::Seconds(10);
  size_t max_pending_write_bytes = size_t{256} << 20;
  LogFn log;
  // Non-null: run the cluster-key handshake first (as `role`) and MAC every
  // frame (sync/peer_auth.h); frames flow only once it has succeeded.
  std::shared_ptr<const PeerAuth> auth;
  PeerHandshake::Role role = PeerHandshake::Role::kServer;
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
  void ReadHandshakeHeader();
  absl::Status HandshakeReadError(const asio::error_code& ec);
  void ReadHandshakeBody(HandshakeHeader header);
  // Sends one handshake message; `then` runs on the strand once written.
  void WriteHandshake(std::string bytes, std::function<void()> then);
  void Established();
  void ReadHeader();
  void ReadPayload(FrameHeader header);
  void DoSend(std::string bytes);
  void WriteNext();
  void Fail(absl::Status why);  // on the strand
  // An HTTP client reached this port: a plain 400 saying where HTTP goes.
  void AnswerHttpWithHint();

  asio::ip::tcp::socket socket_;
  asio::steady_timer read_timer_;
  asio::steady_timer write_timer_;
  ConnectionOptions options_;
  FrameFn on_frame_;
  CloseFn on_close_;
  std::string peer_;
  std::array<char, kFrameHeaderSize> header_{};
  std::array<char, kHandshakeHeaderSize> hs_header_{};
  std::unique_ptr<PeerHandshake> handshake_;  // with options_.auth
  std::unique_ptr<FrameMac> mac_;             // once the handshake is done
  std::string payload_;  // payload, then its MAC when authenticated
  std::deque<std::string> out_;
  size_t out_bytes_ = 0;
  bool writing_ = false;
  bool closed_ = false;
  bool established_ = false;
};

}  // namespace latentd::sync::internal

#endif  // LATENTD_SYNC_INTERNAL_CONNECTION_H_
