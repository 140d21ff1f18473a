#include "sync/transport/transport.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "base/check.h"
#include "base/log.h"
#include "sync/transport/internal/connection.h"
#include "sync/transport/ports.h"

namespace latentd::sync {

void LogToStderr(std::string_view line) { log::Warning("latentd sync", line); }
void LogInfoToStderr(std::string_view line) { log::Info("latentd sync", line); }

// ---------------------------------------------------------------- EventLoop

EventLoop::EventLoop(int threads) : impl_(new internal::LoopImpl) {
  LATENTD_CHECK(threads >= 1);
  // A work guard would need storing; a never-firing timer is simpler: the
  // loop runs until stop().
  for (int i = 0; i < threads; ++i) {
    impl_->threads.emplace_back([this] {
      auto guard = asio::make_work_guard(impl_->io);
      for (;;) {
        try {
          impl_->io.run();
          return;
        } catch (const std::exception& e) {
          LogToStderr(absl::StrCat("event loop handler threw: ", e.what()));
        }
      }
    });
    impl_->ids.push_back(impl_->threads.back().get_id());
  }
}

EventLoop::~EventLoop() {
  impl_->io.stop();
  for (std::thread& t : impl_->threads) t.join();
}

bool EventLoop::InLoopThread() const {
  const auto me = std::this_thread::get_id();
  for (const auto& id : impl_->ids) {
    if (id == me) return true;
  }
  return false;
}

namespace internal {

std::chrono::steady_clock::duration Chrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

// A connection's options from a client's or server's; `owner` keeps
// *stats alive as long as the connection.
template <typename EndpointOptions>
ConnectionOptions MakeConnectionOptions(const EndpointOptions& options,
                                        PeerHandshake::Role role,
                                        TransportStats* stats,
                                        std::shared_ptr<void> owner) {
  ConnectionOptions co;
  co.auth = options.auth;
  co.role = role;
  co.max_frame_bytes = options.max_frame_bytes;
  co.frame_timeout = options.frame_timeout;
  co.write_timeout = options.write_timeout;
  co.max_pending_write_bytes = options.max_pending_write_bytes;
  co.tls = options.tls;
  co.log = options.log;
  co.stats = stats;
  co.stats_owner = std::move(owner);
  return co;
}

// ---------------------------------------------------------------- Client

struct ClientImpl : std::enable_shared_from_this<ClientImpl> {
  struct Pending {
    ReplyCallback done;
    std::unique_ptr<asio::steady_timer> timer;
  };

  ClientImpl(EventLoop* l, ClientOptions o)
      : loop(l),
        strand(asio::make_strand(l->impl()->io)),
        options(std::move(o)),
        backoff(options.initial_backoff) {}

  EventLoop* loop;
  Strand strand;
  ClientOptions options;
  TransportStats stats;
  // All below: on the strand only.
  enum class State {
    kIdle,
    kConnecting,
    kConnected,
    kClosed
  } state = State::kIdle;
  std::shared_ptr<Connection> conn;
  std::vector<std::string> queued;  // frames waiting for the connection
  absl::flat_hash_map<uint64_t, Pending> pending;
  uint64_t next_id = 1;
  absl::Duration backoff;
  std::chrono::steady_clock::time_point retry_at{};
  std::string last_error;

  std::string peer() const {
    return absl::StrCat(options.host, ":", options.port);
  }

  void Finish(uint64_t id, absl::StatusOr<Frame> reply) {
    auto it = pending.find(id);
    if (it == pending.end()) return;  // late reply after a timeout
    ReplyCallback done = std::move(it->second.done);
    if (it->second.timer) it->second.timer->cancel();
    pending.erase(it);
    done(std::move(reply));
  }

  void FailAll(const absl::Status& status) {
    queued.clear();
    std::vector<uint64_t> ids;
    ids.reserve(pending.size());
    for (const auto& [id, p] : pending) ids.push_back(id);
    for (uint64_t id : ids) Finish(id, status);
  }

  void StartCall(uint32_t type, std::string payload, absl::Duration timeout,
                 ReplyCallback done) {
    if (state == State::kClosed) {
      done(absl::UnavailableError(absl::StrCat(peer(), ": client closed")));
      return;
    }
    if (state == State::kIdle && std::chrono::steady_clock::now() < retry_at) {
      done(absl::UnavailableError(absl::StrCat(peer(), " unavailable (",
                                               last_error, "); backing off")));
      return;
    }
    const uint64_t id = next_id++;
    Pending p;
    p.done = std::move(done);
    p.timer = std::make_unique<asio::steady_timer>(strand);
    p.timer->expires_after(Chrono(timeout));
    std::weak_ptr<ClientImpl> weak = weak_from_this();
    p.timer->async_wait([weak, id, this](const asio::error_code& ec) {
      if (ec) return;
      auto self = weak.lock();
      if (!self) return;
      Finish(id, absl::DeadlineExceededError(
                     absl::StrCat("no reply from ", peer(), " in time")));
    });
    pending.emplace(id, std::move(p));
    std::string frame = EncodeFrame(type, id, payload);
    if (state == State::kConnected) {
      conn->Send(std::move(frame));
      return;
    }
    queued.push_back(std::move(frame));
    if (state == State::kIdle) Connect();
  }

  void Connect() {
    state = State::kConnecting;
    auto self = shared_from_this();
    auto resolver = std::make_shared<asio::ip::tcp::resolver>(strand);
    auto socket = std::make_shared<asio::ip::tcp::socket>(strand);
    auto timer = std::make_shared<asio::steady_timer>(strand);
    timer->expires_after(Chrono(options.connect_timeout));
    timer->async_wait([resolver, socket](const asio::error_code& ec) {
      if (ec) return;
      resolver->cancel();
      asio::error_code ignored;
      socket->close(ignored);
    });
    resolver->async_resolve(
        options.host, std::to_string(options.port),
        [this, self, resolver, socket, timer](
            const asio::error_code& ec,
            asio::ip::tcp::resolver::results_type results) {
          if (ec) {
            timer->cancel();
            ConnectFailed(ec);
            return;
          }
          asio::async_connect(
              *socket, results,
              [this, self, socket, timer](const asio::error_code& ec2,
                                          const asio::ip::tcp::endpoint&) {
                timer->cancel();
                if (ec2) {
                  ConnectFailed(ec2);
                  return;
                }
                Connected(std::move(*socket));
              });
        });
  }

  void ConnectFailed(const asio::error_code& ec) {
    if (state == State::kClosed) return;
    state = State::kIdle;
    last_error = ec == asio::error::operation_aborted
                     ? std::string("connect timed out")
                     : ec.message();
    retry_at = std::chrono::steady_clock::now() + Chrono(backoff);
    backoff = std::min(backoff * 2, options.max_backoff);
    FailAll(absl::UnavailableError(
        absl::StrCat("cannot connect to ", peer(), ": ", last_error)));
  }

  void Connected(asio::ip::tcp::socket socket) {
    if (state == State::kClosed) {
      asio::error_code ignored;
      socket.close(ignored);
      return;
    }
    state = State::kConnected;
    // With a handshake, success is known only at the first reply.
    if (!options.auth && !options.tls) backoff = options.initial_backoff;
    stats.connections_opened.fetch_add(1, std::memory_order_relaxed);
    ConnectionOptions co = MakeConnectionOptions(
        options, PeerHandshake::Role::kClient, &stats, shared_from_this());
    co.tls_host = options.host;
    std::weak_ptr<ClientImpl> weak = weak_from_this();
    conn = std::make_shared<Connection>(
        std::move(socket), std::move(co),
        [weak](Frame frame) {
          if (auto self = weak.lock()) self->OnReply(std::move(frame));
        },
        [weak](const absl::Status& status) {
          if (auto self = weak.lock()) self->OnClosed(status);
        });
    // The connection holds a strong ref to us through stats_owner only
    // while it lives; we drop it on close.
    conn->Start();
    for (std::string& f : queued) conn->Send(std::move(f));
    queued.clear();
  }

  void OnReply(Frame frame) {
    backoff = options.initial_backoff;
    if (frame.type == kErrorReplyType) {
      Finish(frame.request_id, DecodeStatus(frame.payload));
    } else if ((frame.type & kReplyBit) == 0) {
      conn->Close(absl::InvalidArgumentError(
          absl::StrCat("peer sent a request frame (type ", frame.type,
                       ") on a client connection")));
    } else {
      Finish(frame.request_id, std::move(frame));
    }
  }

  void OnClosed(const absl::Status& status) {
    const bool established = conn == nullptr || conn->established();
    conn.reset();
    if (state == State::kClosed) return;
    state = State::kIdle;
    last_error = status.ok() ? "connection closed by peer"
                             : std::string(status.message());
    if (!established) {
      // The handshake failed: retrying at once would only fail again.
      retry_at = std::chrono::steady_clock::now() + Chrono(backoff);
      backoff = std::min(backoff * 2, options.max_backoff);
    }
    // A server certificate that does not verify is no transient failure:
    // its code (kFailedPrecondition) reaches the caller.
    const absl::StatusCode code =
        !established && status.code() == absl::StatusCode::kFailedPrecondition
            ? status.code()
            : absl::StatusCode::kUnavailable;
    FailAll(absl::Status(
        code, absl::StrCat("connection to ", peer(), " lost: ", last_error)));
  }

  void DoClose() {
    if (state == State::kClosed) return;
    state = State::kClosed;
    if (conn) conn->Close(absl::OkStatus());
    conn.reset();
    FailAll(absl::UnavailableError(absl::StrCat(peer(), ": client closed")));
  }
};

}  // namespace internal

Client::Client(EventLoop* loop, ClientOptions options)
    : impl_(std::make_shared<internal::ClientImpl>(loop, std::move(options))) {}

Client::~Client() { Close(); }

void Client::Call(uint32_t type, std::string payload, absl::Duration timeout,
                  ReplyCallback done) {
  LATENTD_CHECK(type >= 1 && type <= kMaxRequestType);
  if (payload.size() > impl_->options.max_frame_bytes) {
    done(absl::InvalidArgumentError(absl::StrCat(
        "request of ", payload.size(), " bytes exceeds max_frame_bytes")));
    return;
  }
  asio::post(impl_->strand, [impl = impl_, type, p = std::move(payload),
                             timeout, d = std::move(done)]() mutable {
    impl->StartCall(type, std::move(p), timeout, std::move(d));
  });
}

absl::StatusOr<Frame> Client::CallSync(uint32_t type, std::string payload,
                                       absl::Duration timeout) {
  LATENTD_CHECK(!impl_->loop->InLoopThread());
  auto promise = std::make_shared<std::promise<absl::StatusOr<Frame>>>();
  std::future<absl::StatusOr<Frame>> future = promise->get_future();
  Call(type, std::move(payload), timeout,
       [promise](absl::StatusOr<Frame> reply) {
         promise->set_value(std::move(reply));
       });
  return future.get();
}

void Client::Close() {
  if (impl_->loop->InLoopThread()) {
    asio::dispatch(impl_->strand, [impl = impl_] { impl->DoClose(); });
    return;
  }
  std::promise<void> done;
  asio::post(impl_->strand, [impl = impl_, &done] {
    impl->DoClose();
    done.set_value();
  });
  done.get_future().wait();
}

const TransportStats& Client::stats() const { return impl_->stats; }
std::string Client::peer() const { return impl_->peer(); }

// ---------------------------------------------------------------- Server

struct Responder::State {
  std::shared_ptr<internal::Connection> conn;
  uint32_t type = 0;
  uint64_t request_id = 0;
  std::atomic<bool> replied{false};
};

void Responder::Reply(absl::StatusOr<std::string> payload) const {
  if (state_ == nullptr) return;
  if (state_->replied.exchange(true, std::memory_order_acq_rel)) return;
  if (payload.ok()) {
    state_->conn->Send(
        EncodeFrame(state_->type | kReplyBit, state_->request_id, *payload));
  } else {
    state_->conn->Send(EncodeFrame(kErrorReplyType, state_->request_id,
                                   EncodeStatus(payload.status())));
  }
}

namespace internal {

struct ServerImpl : std::enable_shared_from_this<ServerImpl> {
  ServerImpl(EventLoop* l, ServerOptions o, Handler h)
      : loop(l),
        acceptor(asio::make_strand(l->impl()->io)),
        options(std::move(o)),
        handler(std::move(h)) {}

  EventLoop* loop;
  asio::ip::tcp::acceptor acceptor;
  ServerOptions options;
  Handler handler;
  // Shared with metric collectors that may outlive the server.
  std::shared_ptr<TransportStats> shared_stats =
      std::make_shared<TransportStats>();
  TransportStats& stats = *shared_stats;
  uint16_t port = 0;
  // The accept chain's state: one accept outstanding at a time, so these
  // are touched by one handler at a time.
  int accept_backoff_ms = 0;
  log::Throttle accept_log{absl::Seconds(10)};

  absl::Mutex mu;
  bool stopped ABSL_GUARDED_BY(mu) = false;
  int running_handlers ABSL_GUARDED_BY(mu) = 0;
  struct Open {
    std::weak_ptr<Connection> conn;
    std::string address;  // the client's IP
  };
  absl::flat_hash_map<Connection*, Open> conns ABSL_GUARDED_BY(mu);
  absl::flat_hash_map<std::string, int> per_address ABSL_GUARDED_BY(mu);

  // Counts the connection from `address` in, or says which cap refuses it.
  bool Admit(const std::string& address) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    if (options.max_connections > 0 &&
        conns.size() >= static_cast<size_t>(options.max_connections)) {
      stats.connections_refused_max.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    if (options.max_connections_per_address > 0) {
      auto it = per_address.find(address);
      if (it != per_address.end() &&
          it->second >= options.max_connections_per_address) {
        stats.connections_refused_per_address.fetch_add(
            1, std::memory_order_relaxed);
        return false;
      }
    }
    return true;
  }

  void Forget(Connection* c) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    auto it = conns.find(c);
    if (it == conns.end()) return;
    auto a = per_address.find(it->second.address);
    if (a != per_address.end() && --a->second <= 0) per_address.erase(a);
    conns.erase(it);
    stats.connections_open.store(static_cast<int64_t>(conns.size()),
                                 std::memory_order_relaxed);
  }

  void Accept() {
    auto self = shared_from_this();
    acceptor.async_accept(
        asio::make_strand(loop->impl()->io),
        [this, self](const asio::error_code& ec, asio::ip::tcp::socket s) {
          {
            absl::MutexLock l(&mu);
            if (stopped) return;
          }
          if (ec) {
            if (ec == asio::error::operation_aborted) return;
            RetryAcceptLater(ec);
            return;
          }
          accept_backoff_ms = 0;
          OnAccepted(std::move(s));
          Accept();
        });
  }

  // An accept failed (EMFILE or ENFILE: out of file descriptors, which a
  // retry at once would meet again and again): waits 10 ms, doubling up to
  // 1 s while it keeps failing, with one log line per 10 s at most. The
  // pending connections wait in the listen backlog.
  void RetryAcceptLater(const asio::error_code& ec) {
    accept_backoff_ms = std::clamp(2 * accept_backoff_ms, 10, 1000);
    stats.accept_failures.fetch_add(1, std::memory_order_relaxed);
    if (const int64_t held = accept_log.Pass(); held >= 0 && options.log) {
      options.log(absl::StrCat("accept failed: ", ec.message(),
                               "; retrying in ", accept_backoff_ms, " ms (",
                               held, " more failures since the last line)"));
    }
    auto self = shared_from_this();
    auto timer = std::make_shared<asio::steady_timer>(
        loop->impl()->io, std::chrono::milliseconds(accept_backoff_ms));
    timer->async_wait([this, self, timer](const asio::error_code& wait) {
      if (wait) return;
      {
        absl::MutexLock l(&mu);
        if (stopped) return;
      }
      Accept();
    });
  }

  void OnAccepted(asio::ip::tcp::socket socket) {
    asio::error_code ec;
    const std::string address =
        socket.remote_endpoint(ec).address().to_string();
    {
      absl::MutexLock l(&mu);
      if (!Admit(address)) {
        socket.close(ec);
        return;
      }
    }
    stats.connections_opened.fetch_add(1, std::memory_order_relaxed);
    ConnectionOptions co = MakeConnectionOptions(
        options, PeerHandshake::Role::kServer, &stats, shared_from_this());
    co.idle_timeout = options.idle_timeout;
    co.max_request_bytes_in_flight = options.max_request_bytes_in_flight;
    std::weak_ptr<ServerImpl> weak = weak_from_this();
    // The frame callback needs the connection it belongs to: a cell filled
    // in right after construction (before Start, so before any frame).
    auto cell = std::make_shared<std::weak_ptr<Connection>>();
    auto conn = std::make_shared<Connection>(
        std::move(socket), std::move(co),
        [weak, cell](Frame frame) {
          auto self = weak.lock();
          auto c = cell->lock();
          if (self && c) self->Dispatch(c, std::move(frame));
        },
        [weak, cell](const absl::Status&) {
          auto self = weak.lock();
          auto c = cell->lock();
          if (!self || !c) return;
          absl::MutexLock l(&self->mu);
          self->Forget(c.get());
        });
    *cell = conn;
    {
      absl::MutexLock l(&mu);
      if (stopped) return;
      conns.emplace(conn.get(), Open{conn, address});
      ++per_address[address];
      stats.connections_open.store(static_cast<int64_t>(conns.size()),
                                   std::memory_order_relaxed);
    }
    asio::dispatch(conn->executor(), [conn] { conn->Start(); });
  }

  void Dispatch(const std::shared_ptr<Connection>& conn, Frame frame) {
    if ((frame.type & kReplyBit) != 0) {
      stats.connections_rejected.fetch_add(1, std::memory_order_relaxed);
      conn->Close(absl::InvalidArgumentError(
          absl::StrCat("reply frame (type 0x", absl::Hex(frame.type),
                       ") sent to a server")));
      return;
    }
    {
      absl::MutexLock l(&mu);
      if (stopped) return;
      ++running_handlers;
    }
    Responder responder;
    responder.state_ = std::make_shared<Responder::State>();
    responder.state_->conn = conn;
    responder.state_->type = frame.type;
    responder.state_->request_id = frame.request_id;
    handler(std::move(frame), std::move(responder));
    absl::MutexLock l(&mu);
    --running_handlers;
  }

  void Stop() {
    std::vector<std::shared_ptr<Connection>> open;
    {
      absl::MutexLock l(&mu);
      if (stopped) return;
      stopped = true;
      for (auto& [key, o] : conns) {
        if (auto c = o.conn.lock()) open.push_back(std::move(c));
      }
      conns.clear();
      per_address.clear();
      stats.connections_open.store(0, std::memory_order_relaxed);
    }
    asio::post(acceptor.get_executor(), [self = shared_from_this()] {
      asio::error_code ec;
      self->acceptor.close(ec);
    });
    for (auto& c : open) c->Close(absl::OkStatus());
    if (loop->InLoopThread()) return;
    absl::MutexLock l(&mu);
    mu.Await(absl::Condition(
        +[](int* n) { return *n == 0; }, &running_handlers));
  }
};

}  // namespace internal

absl::StatusOr<std::unique_ptr<Server>> Server::Start(EventLoop* loop,
                                                      ServerOptions options,
                                                      Handler handler) {
  auto impl = std::make_shared<internal::ServerImpl>(loop, std::move(options),
                                                     std::move(handler));
  asio::error_code ec;
  const asio::ip::address address =
      asio::ip::make_address(impl->options.host, ec);
  if (ec) {
    return absl::InvalidArgumentError(absl::StrCat(
        "bad listen address '", impl->options.host, "': ", ec.message()));
  }
  const auto bind = [&](uint16_t port) {
    const asio::ip::tcp::endpoint endpoint(address, port);
    impl->acceptor.open(endpoint.protocol(), ec);
    if (!ec)
      impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) impl->acceptor.bind(endpoint, ec);
    if (ec && impl->acceptor.is_open()) {
      asio::error_code ignored;
      impl->acceptor.close(ignored);
    }
    return !ec;
  };
  bool bound = false;
  if (impl->options.port == 0 && impl->options.durable_port) {
    const PortRange range = PortsBelowEphemeral(kFirstDurablePort, 1 << 16);
    if (range.size() >= 1000) {
      for (int attempt = 0; attempt < 64 && !bound; ++attempt) {
        bound = bind(static_cast<uint16_t>(DrawPort(range)));
      }
    }
    if (!bound) {
      // Said, since a restart may then find the port taken.
      impl->options.log(absl::StrCat(
          "no port to keep could be bound on ", impl->options.host, " between ",
          kFirstDurablePort, " and the ephemeral range (from ",
          FirstEphemeralPort(), "); the kernel picks one"));
    }
  }
  if (!bound) bind(impl->options.port);
  if (!ec) impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on ", impl->options.host, ":",
                     impl->options.port, ": ", ec.message()));
  }
  impl->port = impl->acceptor.local_endpoint(ec).port();
  asio::post(impl->acceptor.get_executor(), [impl] { impl->Accept(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::shared_ptr<internal::ServerImpl> impl)
    : impl_(std::move(impl)) {}
Server::~Server() { Stop(); }
uint16_t Server::port() const { return impl_->port; }
void Server::Stop() { impl_->Stop(); }
const TransportStats& Server::stats() const { return impl_->stats; }
std::shared_ptr<const TransportStats> Server::shared_stats() const {
  return impl_->shared_stats;
}

absl::Status SplitHostPort(const std::string& address, std::string* host,
                           uint16_t* port) {
  const size_t colon = address.rfind(':');
  uint32_t p = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(address).substr(colon + 1), &p) ||
      p > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("address '", address, "' is not host:port"));
  }
  *host = address.substr(0, colon);
  *port = static_cast<uint16_t>(p);
  return absl::OkStatus();
}

}  // namespace latentd::sync
