#include "service/internal/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "base/log.h"
#include "service/internal/http_connection.h"

namespace latentd::service::internal {
namespace {

constexpr uint64_t kWakeId = 0;
constexpr uint32_t kArmed = EPOLLIN | EPOLLRDHUP | EPOLLONESHOT;
constexpr uint32_t kArmedToWrite = EPOLLOUT | EPOLLONESHOT;
// How often the acceptor looks for connections past their idle timeout.
constexpr int kTickMs = 100;
constexpr char kRefused[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    "Content-Length: 29\r\nConnection: close\r\n\r\n"
    "too many connections to open\n";
constexpr char kRefusedFromAddress[] =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\n"
    "Content-Length: 39\r\nConnection: close\r\n\r\n"
    "too many connections from your address\n";

void Address(const sockaddr_storage& a, std::string* ip, int* port) {
  char buf[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, buf, sizeof(buf));
    *port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, buf, sizeof(buf));
    *port = ntohs(v6.sin6_port);
  }
  *ip = buf;
}

}  // namespace

HttpServer::HttpServer(const HttpServerOptions& options, RequestFn serve,
                       MetricsRegistry* metrics)
    : options_(options),
      metrics_(metrics, "http", options.max_connections,
               options.max_connections_per_address),
      driver_(options_, std::move(serve), metrics, &stopping_) {
  refused_timeout_ = metrics->AddCounter("latentd_http_requests_refused_total",
                                         "", "reason=\"timeout\"");
}

HttpServer::~HttpServer() { Stop(); }

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpServerOptions& options, RequestFn serve,
    MetricsRegistry* metrics) {
  std::unique_ptr<HttpServer> s(
      new HttpServer(options, std::move(serve), metrics));
  absl::Status listening = s->Listen();
  if (!listening.ok()) {
    s->stopped_ = true;  // no thread to stop
    for (int fd : {s->listen_fd_, s->epoll_fd_, s->wake_fd_}) {
      if (fd >= 0) ::close(fd);
    }
    return listening;
  }
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  for (int i = 0; i < std::max(1, options.threads); ++i) {
    s->workers_.emplace_back([p = s.get()] { p->WorkerLoop(); });
  }
  return s;
}

absl::Status HttpServer::Listen() {
  const std::string where = absl::StrCat(options_.host, ":", options_.port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(options_.port);
  const int gai =
      ::getaddrinfo(options_.host.c_str(), port.c_str(), &hints, &found);
  if (gai != 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot bind HTTP to ", where, ": ", ::gai_strerror(gai)));
  }
  int err = 0;
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    const int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                 a->ai_protocol);
    if (fd < 0) {
      err = errno;
      continue;
    }
    // SO_REUSEADDR only: a restart may bind while old connections linger
    // in TIME_WAIT, but no second process can share a listening port
    // (httplib's defaults also set SO_REUSEPORT).
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 &&
        ::listen(fd, options_.listen_backlog) == 0) {
      listen_fd_ = fd;
    } else {
      err = errno;
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("cannot bind HTTP to ", where, ": ", std::strerror(err)));
  }
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  std::string ip;
  Address(bound, &ip, &port_);
  epoll_fd_ = ::epoll_create1(EPOLL_CLOEXEC);
  wake_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event wake{};
  wake.events = EPOLLIN;  // level-triggered: wakes every worker
  wake.data.u64 = kWakeId;
  if (epoll_fd_ < 0 || wake_fd_ < 0 ||
      ::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wake_fd_, &wake) != 0) {
    return absl::UnavailableError(
        absl::StrCat("HTTP on ", where, ": epoll: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void HttpServer::AcceptLoop() {
  pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
  while (!stopping_.load(std::memory_order_acquire)) {
    const int n = ::poll(fds, 2, kTickMs);
    if (n > 0 && (fds[0].revents & POLLIN) != 0) AcceptAll();
    CloseIdle();
  }
}

void HttpServer::AcceptAll() {
  for (;;) {
    sockaddr_storage peer{};
    socklen_t len = sizeof(peer);
    const int fd = ::accept4(listen_fd_, reinterpret_cast<sockaddr*>(&peer),
                             &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EMFILE || errno == ENFILE) {
        // Out of file descriptors: the backlog keeps the rest until the
        // next tick; one line per 10 s at most.
        metrics_.accept_failures->Add();
        if (const int64_t held = accept_log_.Pass(); held >= 0) {
          log::Warning("latentd http",
                       absl::StrCat("accept: ", std::strerror(errno),
                                    "; retrying every ", kTickMs, " ms (", held,
                                    " more failures since the last "
                                    "line)"));
        }
        ::usleep(kTickMs * 1000);
      }
      return;  // EAGAIN: all taken
    }
    std::string remote_ip;
    int remote_port = 0;
    Address(peer, &remote_ip, &remote_port);
    uint64_t id = 0;  // none: over a cap (only this thread adds)
    std::string_view refusal = kRefused;
    {
      absl::MutexLock lock(&mu_);
      auto from = per_address_.find(remote_ip);
      if (conns_.size() >= static_cast<size_t>(options_.max_connections)) {
        metrics_.refused_max->Add();
      } else if (options_.max_connections_per_address > 0 &&
                 from != per_address_.end() &&
                 from->second >= options_.max_connections_per_address) {
        metrics_.refused_per_address->Add();
        refusal = kRefusedFromAddress;
      } else {
        id = next_id_++;
      }
    }
    if (id == 0) {
      // A TLS client could not read a plain answer: it only sees the close.
      if (!options_.tls) {
        (void)!::send(fd, refusal.data(), refusal.size(),
                      MSG_NOSIGNAL | MSG_DONTWAIT);
      }
      ::close(fd);
      continue;
    }
    auto c = std::make_shared<HttpConnection>(fd, id, options_.limits);
    const int yes = 1;  // no Nagle/delayed-ACK stalls on small answers
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    c->remote_ip = std::move(remote_ip);
    c->remote_port = remote_port;
    sockaddr_storage local{};
    len = sizeof(local);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    Address(local, &c->local_ip, &c->local_port);
    absl::MutexLock lock(&mu_);
    c->idle_since = absl::Now();
    epoll_event ev{};
    ev.events = kArmed;
    ev.data.u64 = c->id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) == 0) {
      ++per_address_[c->remote_ip];
      conns_.emplace(c->id, c);
      metrics_.open->Set(static_cast<double>(conns_.size()));
    }
  }
}

void HttpServer::CloseIdle() {
  std::vector<std::shared_ptr<Conn>> closing;  // closed outside the lock
  const absl::Time now = absl::Now();
  size_t late_requests = 0;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, c] : conns_) {
    if (c->busy) continue;
    if (c->write_since != absl::InfinitePast()) {
      // An answer the client does not read: no byte taken for
      // write_timeout.
      if (now - c->write_since > options_.write_timeout) closing.push_back(c);
    } else if (c->request_since != absl::InfinitePast()) {
      // A request in progress: whole within request_timeout, no gap over
      // read_timeout.
      if (now - c->request_since > options_.request_timeout ||
          now - c->last_byte > options_.read_timeout) {
        closing.push_back(c);
        ++late_requests;
      }
    } else if (now - c->idle_since > options_.idle_timeout) {
      closing.push_back(c);
    }
  }
  for (const auto& c : closing) Drop(c->id);
  metrics_.timed_out->Add(closing.size());
  refused_timeout_->Add(late_requests);
  driver_.UpdateGauge();
}

void HttpServer::WorkerLoop() {
  for (;;) {
    epoll_event ev{};
    const int n = ::epoll_wait(epoll_fd_, &ev, 1, -1);
    if (n < 0 && errno != EINTR) {
      log::Error("latentd http",
                 absl::StrCat("epoll_wait: ", std::strerror(errno)));
      return;
    }
    if (n <= 0) continue;
    // A copy: epoll_event is packed, so its u64 may be misaligned.
    const uint64_t id = ev.data.u64;
    if (id == kWakeId) return;  // Stop()
    std::shared_ptr<Conn> c;
    {
      absl::MutexLock lock(&mu_);
      auto it = conns_.find(id);
      // Gone: closed as idle just before its bytes came.
      if (it == conns_.end() || it->second->busy) continue;
      c = it->second;
      c->busy = true;
    }
    Serve(c);
  }
}

void HttpServer::Serve(const std::shared_ptr<Conn>& c) {
  if (options_.tls && !c->tls_ready) {
    const TlsStep step = driver_.Handshake(c.get());
    if (step != TlsStep::kDone) {
      absl::MutexLock lock(&mu_);
      if (step == TlsStep::kFailed) {
        Drop(c->id);
      } else {
        // Idle until the next bytes; a handshake keeps the connect time, so
        // the idle timeout bounds all of it.
        Rearm(c, c->idle_since,
              step == TlsStep::kWait ? kArmed : kArmedToWrite);
      }
      return;
    }
    absl::MutexLock lock(&mu_);
    c->idle_since = absl::Now();
  }
  bool progress = false;
  const Await next = driver_.Advance(c.get(), &progress);
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu_);
  switch (next) {
    case Await::kDrop:
      Drop(c->id);
      return;
    case Await::kSendWritable:
    case Await::kSendReadable:
      if (progress || c->write_since == absl::InfinitePast()) {
        c->write_since = now;
      }
      Rearm(c, c->idle_since,
            next == Await::kSendWritable ? kArmedToWrite : kArmed);
      return;
    case Await::kRequest:
    case Await::kRequestWritable:
      break;
  }
  c->write_since = absl::InfinitePast();
  if (c->scanner.started()) {
    if (c->request_since == absl::InfinitePast()) c->request_since = now;
  } else {
    c->request_since = absl::InfinitePast();
  }
  Rearm(c, c->scanner.started() ? c->idle_since : now,
        next == Await::kRequest ? kArmed : kArmedToWrite);
}

void HttpServer::Rearm(const std::shared_ptr<Conn>& c, absl::Time since,
                       uint32_t events) {
  if (!stopping_.load(std::memory_order_acquire)) {
    // Back in the epoll set; re-armed under mu_ so that CloseIdle cannot
    // close the socket in between.
    c->busy = false;
    c->idle_since = since;
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = c->id;
    if (::epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, c->fd, &ev) == 0) return;
  }
  Drop(c->id);
}

void HttpServer::Drop(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  ::epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, it->second->fd, nullptr);
  // Not busy (or its own worker drops it): no other thread reads these.
  driver_.Release(it->second.get());
  auto from = per_address_.find(it->second->remote_ip);
  if (from != per_address_.end() && --from->second <= 0) {
    per_address_.erase(from);
  }
  conns_.erase(it);
  metrics_.open->Set(static_cast<double>(conns_.size()));
}

void HttpServer::Stop() {
  if (stopped_) return;
  stopped_ = true;
  stopping_.store(true, std::memory_order_release);
  const uint64_t one = 1;
  (void)!::write(wake_fd_, &one, sizeof(one));
  acceptor_.join();
  ::close(listen_fd_);  // new connections are refused from here on
  for (std::thread& t : workers_) t.join();
  {
    absl::MutexLock lock(&mu_);
    while (!conns_.empty()) Drop(conns_.begin()->first);
  }
  ::close(epoll_fd_);
  ::close(wake_fd_);
}

}  // namespace latentd::service::internal
