// Framed request/reply transport over TCP (standalone Asio), used between
// latentd nodes and by latentctl. See sync/transport/frame.h for the wire
// layout.
//
//   EventLoop  the threads that run every socket, timer and callback.
//   Client     one peer address; pipelined calls matched by request id; lazy
//              connect, reconnect with exponential backoff; per-call timeouts.
//   Server     accepts connections, hands each request frame to a Handler,
//              which replies through a Responder (now or later, any thread).
//
// Authentication (sync/transport/peer_auth.h): with `auth` set on both ends,
// every connection starts with the cluster-key handshake and every frame
// carries a MAC; a peer that fails the handshake, or a frame whose MAC does not
// verify, closes the connection before any frame is delivered. A client
// whose handshake failed backs off as after a failed connect.
//
// TLS (sync/transport/tls.h): with `tls` set, every connection runs TLS before
// anything else (and before the cluster-key handshake). A TLS server tells
// a plaintext client by its first byte and answers its first frame with a
// kFailedPrecondition error saying the port speaks TLS (an HTTP request
// with a 400), then closes; a client whose server's certificate does not
// verify fails its calls with kFailedPrecondition naming the reason.
//
// Connection hygiene (Server): at most max_connections connections open,
// and max_connections_per_address from one client address; one more is
// closed at once (counted in TransportStats). A connection idle between
// frames for idle_timeout, with no call of its own in progress, is closed;
// a client reconnects on its next call. A TLS or cluster-key handshake not
// finished within frame_timeout closes the connection.
//
// Memory. A frame's buffer grows with the bytes that arrive (from 4 KiB,
// doubling up to the announced size), never with what its header
// announces, so a peer that announces a large frame and sends nothing holds
// a few KiB. Before its handshakes are done a connection holds only fixed
// buffers: the TLS record buffers, a cluster-key handshake message (at most
// kMaxHandshakeBody), and, for a plaintext client at a TLS port, at most
// 16 KiB of its first frame. The Server's max_request_bytes_in_flight caps
// the bytes all its connections buffer for frames still arriving.
//
// Failure model. A frame with a bad magic, type 0, a payload over the
// receiver's max_frame_bytes, or a connection that ends mid-frame, or that
// stalls mid-frame longer than frame_timeout, closes that one connection and
// is logged; every other connection goes on. A peer that does not read its
// replies (its pending output exceeds max_pending_write_bytes, or one write
// takes longer than write_timeout) is disconnected. Nothing blocks the event
// loop on a peer: a slow or dead peer only ever fails its own calls.
// Errors: kUnavailable (cannot connect, connection lost, backing off, client
// closed) and kDeadlineExceeded (no reply within the call's timeout); a
// handler's own error status reaches the caller unchanged.
//
// Usage:
//   EventLoop loop(1);
//   auto server = Server::Start(&loop, {.port = 0},
//       [](Frame req, Responder r) { r.Reply(std::move(req.payload)); });
//   Client client(&loop, {.host = "127.0.0.1", .port = (*server)->port()});
//   absl::StatusOr<Frame> reply =
//       client.CallSync(7, "ping", absl::Seconds(1));  // type 7|kReplyBit
#ifndef LATENTD_SYNC_TRANSPORT_TRANSPORT_H_
#define LATENTD_SYNC_TRANSPORT_TRANSPORT_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/transport/frame.h"
#include "sync/transport/peer_auth.h"
#include "sync/transport/tls.h"

namespace latentd::sync {

// Receives one line per notable event (a closed bad connection, a lost
// peer). Called on event-loop threads; must be thread-safe and quick.
using LogFn = std::function<void(std::string_view line)>;
// Writes the line to stderr as a warning of "latentd sync" (base/log.h).
void LogToStderr(std::string_view line);
// The same at info: routine events an operator need not act on.
void LogInfoToStderr(std::string_view line);

namespace internal {
struct LoopImpl;
struct ClientImpl;
struct ServerImpl;
}  // namespace internal

// Owns an io_context and `threads` threads running it. Destruction stops the
// threads (after the Clients and Servers that use it are gone).
// Thread-safety: all methods are thread-safe.
class EventLoop {
 public:
  // REQUIRES: threads >= 1.
  explicit EventLoop(int threads = 1);
  ~EventLoop();
  EventLoop(const EventLoop&) = delete;
  EventLoop& operator=(const EventLoop&) = delete;

  // True when called from one of this loop's threads.
  bool InLoopThread() const;

  internal::LoopImpl* impl() { return impl_.get(); }

 private:
  std::unique_ptr<internal::LoopImpl> impl_;
};

// Byte and event counters; each is a relaxed atomic (monotone, approximate
// across counters).
struct TransportStats {
  std::atomic<uint64_t> bytes_sent{0};
  std::atomic<uint64_t> bytes_received{0};
  std::atomic<uint64_t> frames_sent{0};
  std::atomic<uint64_t> frames_received{0};
  std::atomic<uint64_t> connections_opened{0};
  // Connections closed for garbage, truncated, oversized or stalled frames,
  // a failed handshake, or a peer that did not read.
  std::atomic<uint64_t> connections_rejected{0};
  // Server: connections open now; closed at once for the caps (all
  // connections, one address's); closed after idle_timeout.
  std::atomic<int64_t> connections_open{0};
  std::atomic<uint64_t> connections_refused_max{0};
  std::atomic<uint64_t> connections_refused_per_address{0};
  std::atomic<uint64_t> connections_idle_closed{0};
  // Server: accepts that failed (out of file descriptors), each followed by
  // a back-off of 10 ms doubling to 1 s.
  std::atomic<uint64_t> accept_failures{0};
  // Server: payload bytes buffered now for frames still arriving (the
  // max_request_bytes_in_flight budget's use), and frames whose
  // connection was closed because the budget was spent.
  std::atomic<int64_t> request_bytes_in_flight{0};
  std::atomic<uint64_t> frames_over_budget{0};
  // Server: handshakes refused because the node id claimed is not the one
  // the peer's certificate names (PeerAuth::bind_identity).
  std::atomic<uint64_t> identity_refused{0};
};

struct ClientOptions {
  std::string host = "127.0.0.1";  // name or address
  uint16_t port = 0;
  // Largest reply payload accepted; a larger one closes the connection.
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  // Limit for resolving plus connecting; a failure counts as one attempt.
  absl::Duration connect_timeout = absl::Seconds(2);
  // After a failed connect, calls fail fast with kUnavailable for `backoff`;
  // each further failure doubles it, up to max_backoff; success resets it.
  absl::Duration initial_backoff = absl::Milliseconds(50);
  absl::Duration max_backoff = absl::Seconds(2);
  // A reply stalled mid-frame this long closes the connection.
  absl::Duration frame_timeout = absl::Seconds(10);
  // A single write taking longer than this closes the connection.
  absl::Duration write_timeout = absl::Seconds(10);
  // Unsent request bytes above this close the connection.
  size_t max_pending_write_bytes = size_t{256} << 20;
  // Non-null: prove the cluster key to the server and require its proof.
  // Null: no authentication (the server must have none either).
  std::shared_ptr<const PeerAuth> auth = nullptr;
  // Non-null (a TlsContext::ForClient): TLS, verifying that the server's
  // certificate chains to the context's CAs and names `host`.
  std::shared_ptr<const TlsContext> tls = nullptr;
  LogFn log = LogToStderr;
};

// The reply to one call: the reply frame (type = request type | kReplyBit,
// the payload) or why there is none.
using ReplyCallback = std::function<void(absl::StatusOr<Frame> reply)>;

// A connection to one peer. Calls are pipelined on one TCP connection.
// Thread-safety: all methods are thread-safe. Callbacks run on an event-loop
// thread, at most one at a time per Client, and must not block.
class Client {
 public:
  // Does not connect yet: the first call does. `loop` must outlive this.
  Client(EventLoop* loop, ClientOptions options);
  ~Client();  // Close()
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  // Sends a request of `type` (REQUIRES: 1 <= type <= kMaxRequestType) and
  // calls `done` exactly once: with the reply, with the handler's error, with
  // kDeadlineExceeded after `timeout`, or with kUnavailable (not connected,
  // lost, backing off, closed). Payloads over the limit fail with
  // kInvalidArgument without being sent.
  void Call(uint32_t type, std::string payload, absl::Duration timeout,
            ReplyCallback done);

  // Call() and wait for it. REQUIRES: not called on a loop thread.
  absl::StatusOr<Frame> CallSync(uint32_t type, std::string payload,
                                 absl::Duration timeout);

  // Disconnects and fails every pending call with kUnavailable. After it
  // returns no callback of this Client runs (when called off the loop;
  // from a loop thread, pending callbacks may still run shortly after).
  // Idempotent.
  void Close();

  const TransportStats& stats() const;
  std::string peer() const;  // "host:port"

 private:
  std::shared_ptr<internal::ClientImpl> impl_;
};

// Sends the reply to one request. Copyable; Reply() may be called from any
// thread, at most once across all copies (later calls are ignored). If the
// connection is gone the reply is dropped. A reply never sent leaves the
// caller to time out.
class Responder {
 public:
  Responder() = default;
  // An OK payload is sent as type | kReplyBit, an error as kErrorReplyType.
  void Reply(absl::StatusOr<std::string> payload) const;

 private:
  friend struct internal::ServerImpl;
  struct State;
  std::shared_ptr<State> state_;
};

// Called on a loop thread once per request frame. Must not block: long work
// goes elsewhere and replies later through the Responder.
using Handler = std::function<void(Frame request, Responder responder)>;

struct ServerOptions {
  std::string host = "127.0.0.1";  // address to bind
  uint16_t port = 0;               // 0 picks a free port; see port()
  // With port 0: a port the caller will keep and listen on again after a
  // restart, drawn below the kernel's ephemeral range (sync/transport/
  // ports.h); any free port if none there can be bound.
  bool durable_port = false;
  uint32_t max_frame_bytes = kDefaultMaxFrameBytes;
  absl::Duration frame_timeout = absl::Seconds(10);
  absl::Duration write_timeout = absl::Seconds(10);
  size_t max_pending_write_bytes = size_t{256} << 20;
  // Non-null: every connection must pass the cluster-key handshake before
  // any of its frames reach the handler; each Frame then names its
  // peer_id. Null: no authentication.
  std::shared_ptr<const PeerAuth> auth = nullptr;
  // Non-null (a TlsContext::ForServer): TLS on every connection.
  std::shared_ptr<const TlsContext> tls = nullptr;
  // Connections open at once, and from one client IP address; 0: no cap.
  int max_connections = 0;
  int max_connections_per_address = 0;
  // Idle connections (between frames, no call in progress) are closed
  // after this long; infinite: never.
  absl::Duration idle_timeout = absl::InfiniteDuration();
  // Payload bytes all connections together may hold for frames still
  // arriving; a frame that would take more closes its connection
  // (kResourceExhausted, logged, TransportStats::frames_over_budget).
  // 0: no budget (each frame is still bounded by max_frame_bytes).
  size_t max_request_bytes_in_flight = 0;
  LogFn log = LogToStderr;
};

// Thread-safety: all methods are thread-safe.
class Server {
 public:
  // Binds and starts accepting. kUnavailable if the address cannot be bound.
  // `loop` must outlive the Server.
  static absl::StatusOr<std::unique_ptr<Server>> Start(EventLoop* loop,
                                                       ServerOptions options,
                                                       Handler handler);
  ~Server();  // Stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;

  // Stops accepting, closes every connection, and waits for handlers that
  // are running to return; no handler starts afterwards. REQUIRES: not
  // called from inside a handler. Idempotent.
  void Stop();

  const TransportStats& stats() const;
  // The same counters, kept alive as long as the caller holds them (for a
  // metrics collector that outlives the server).
  std::shared_ptr<const TransportStats> shared_stats() const;

 private:
  explicit Server(std::shared_ptr<internal::ServerImpl> impl);
  std::shared_ptr<internal::ServerImpl> impl_;
};

// Splits "host:port" (the host non-empty, the port 0..65535);
// kInvalidArgument naming the address otherwise.
absl::Status SplitHostPort(const std::string& address, std::string* host,
                           uint16_t* port);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_TRANSPORT_TRANSPORT_H_
