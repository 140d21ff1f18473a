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
// A plain-text answer that closes the connection.
std::string PlainAnswer(absl::string_view status, absl::string_view body) {
  return absl::StrCat("HTTP/1.1 ", status,
                      "\r\nContent-Type: text/plain\r\nContent-Length: ",
                      body.size(), "\r\nConnection: close\r\n\r\n", body);
}
const std::string& RefusedFromAddress() {
  static const std::string* answer = new std::string(PlainAnswer(
      "503 Service Unavailable", "too many connections from your address\n"));
  return *answer;
}
// The body starts "This port serves HTTPS" (service/api_client.cc knows it).
const std::string& HttpsOnly() {
  static const std::string* answer = new std::string(
      PlainAnswer("400 Bad Request",
                  "This port serves HTTPS: use https:// (latentctl: --tls-ca "
                  "FILE, or --tls on)\n"));
  return *answer;
}

int Millis(absl::Duration d) {
  return static_cast<int>(
      std::clamp<int64_t>(absl::ToInt64Milliseconds(d), 0, int64_t{1} << 30));
}

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

// Waits up to `ms` for `events` on `fd`; true if ready (or hung up / in
// error, which the next recv or send reports). Only while stopping: a
// worker never waits on a socket otherwise.
bool WaitFor(int fd, short events, int ms) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, ms);
    if (n > 0) return true;
    if (n == 0 || errno != EINTR) return false;
  }
}

}  // namespace

HttpServer::HttpServer(const HttpServerOptions& options, RequestFn serve,
                       MetricsRegistry* metrics)
    : options_(options),
      serve_(std::move(serve)),
      metrics_(metrics, "http", options.max_connections,
               options.max_connections_per_address) {
  constexpr char kRefusedName[] = "latentd_http_requests_refused_total";
  refused_body_ = metrics->AddCounter(
      kRefusedName,
      "HTTP requests refused before they were read whole, and their "
      "connections closed (reason: body 413, headers 431, malformed 400, "
      "bytes_in_flight 503, timeout: not arrived within the request or "
      "read timeout, auth: refused on its headers, 401 or 403, its body "
      "never read)",
      "reason=\"body\"");
  refused_headers_ =
      metrics->AddCounter(kRefusedName, "", "reason=\"headers\"");
  refused_malformed_ =
      metrics->AddCounter(kRefusedName, "", "reason=\"malformed\"");
  refused_budget_ =
      metrics->AddCounter(kRefusedName, "", "reason=\"bytes_in_flight\"");
  refused_timeout_ =
      metrics->AddCounter(kRefusedName, "", "reason=\"timeout\"");
  refused_head_ = metrics->AddCounter(kRefusedName, "", "reason=\"auth\"");
  bytes_in_flight_ = metrics->AddGauge(
      "latentd_http_request_bytes_in_flight",
      "Bytes of HTTP requests received and not yet served, all connections");
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
        refusal = RefusedFromAddress();
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
  bytes_in_flight_->Set(
      static_cast<double>(in_flight_.load(std::memory_order_relaxed)));
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

HttpServer::TlsStep HttpServer::Handshake(Conn* c) {
  if (c->ssl == nullptr) {
    unsigned char first = 0;
    const ssize_t n = ::recv(c->fd, &first, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return TlsStep::kWait;
    if (n <= 0) return TlsStep::kFailed;  // gone before its first byte
    if (!sync::LooksLikeTlsHandshake(first)) {
      // Plain HTTP: read what it sent (so that the close is no reset
      // that loses the answer), say where HTTPS is, close.
      char sink[4096];
      for (int i = 0; i < 16; ++i) {
        if (::recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0) break;
      }
      (void)!::send(c->fd, HttpsOnly().data(), HttpsOnly().size(),
                    MSG_NOSIGNAL | MSG_DONTWAIT);
      ::shutdown(c->fd, SHUT_WR);
      return TlsStep::kFailed;
    }
    c->ssl = SSL_new(options_.tls->native());
    if (c->ssl == nullptr || !sync::SetSocketWithoutSigpipe(c->ssl, c->fd)) {
      log::Warning("latentd http", absl::StrCat("TLS: cannot start a session: ",
                                                sync::TakeOpenSslError()));
      return TlsStep::kFailed;
    }
    HttpResponseWriter::EnableTlsPartialWrites(c->ssl);
    SSL_set_accept_state(c->ssl);
  }
  for (;;) {
    ERR_clear_error();
    const int r = SSL_do_handshake(c->ssl);
    if (r == 1) {
      c->tls_ready = true;
      return TlsStep::kDone;
    }
    const int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ) return TlsStep::kWait;
    if (e == SSL_ERROR_WANT_WRITE) return TlsStep::kWaitWritable;
    if (e == SSL_ERROR_SYSCALL && errno == EINTR) continue;
    log::Debug("latentd http", absl::StrCat("TLS handshake with ", c->remote_ip,
                                            ":", c->remote_port, " failed: ",
                                            sync::TakeOpenSslError()));
    return TlsStep::kFailed;
  }
}

void HttpServer::Serve(const std::shared_ptr<Conn>& c) {
  if (options_.tls && !c->tls_ready) {
    const TlsStep step = Handshake(c.get());
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
  const Await next = Advance(c.get(), &progress);
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

HttpServer::Await HttpServer::Advance(Conn* c, bool* progress) {
  for (;;) {
    if (!c->out.empty()) {
      switch (SendPending(c, progress)) {
        case HttpResponseWriter::Sent::kAll:
          break;
        case HttpResponseWriter::Sent::kWantWrite:
          return Await::kSendWritable;
        case HttpResponseWriter::Sent::kWantRead:
          return Await::kSendReadable;
        case HttpResponseWriter::Sent::kFailed:
          return Await::kDrop;
      }
    }
    if (c->closing) {
      if (c->linger) Linger(c);
      return Await::kDrop;
    }
    const Served served = ServeOne(c);
    if (served == Served::kClose) {
      c->closing = true;
      continue;
    }
    if (served == Served::kAnswered || !c->out.empty()) continue;
    switch (Receive(c)) {
      case Fill::kMore:
        break;
      case Fill::kWait:
        return Await::kRequest;
      case Fill::kWaitWritable:
        return Await::kRequestWritable;
      case Fill::kClosed:
        c->closing = true;  // after a refusal's answer, if one waits
        break;
    }
  }
}

HttpResponseWriter::Sent HttpServer::SendPending(Conn* c, bool* progress) {
  for (;;) {
    bool sent = false;
    const HttpResponseWriter::Sent s = c->out.Send(c->fd, c->ssl, &sent);
    *progress = *progress || sent;
    if (!stopping_.load(std::memory_order_acquire) ||
        s == HttpResponseWriter::Sent::kAll ||
        s == HttpResponseWriter::Sent::kFailed) {
      return s;
    }
    // Stopping: no epoll set to come back to, so the answer to a request
    // in progress is sent here, each stall bounded by write_timeout.
    const short events =
        s == HttpResponseWriter::Sent::kWantRead ? POLLIN : POLLOUT;
    if (!WaitFor(c->fd, events, Millis(options_.write_timeout))) {
      return HttpResponseWriter::Sent::kFailed;
    }
  }
}

HttpServer::Fill HttpServer::Receive(Conn* c) {
  char chunk[16 << 10];
  ssize_t n = 0;
  if (c->ssl != nullptr) {
    for (;;) {
      ERR_clear_error();
      const int r = SSL_read(c->ssl, chunk, sizeof(chunk));
      if (r > 0) {
        n = r;
        break;
      }
      const int e = SSL_get_error(c->ssl, r);
      if (e == SSL_ERROR_WANT_READ) return Fill::kWait;
      if (e == SSL_ERROR_WANT_WRITE) return Fill::kWaitWritable;
      if (e == SSL_ERROR_SYSCALL && errno == EINTR) continue;
      return Fill::kClosed;  // close_notify, EOF or an error
    }
  } else {
    for (;;) {
      n = ::recv(c->fd, chunk, sizeof(chunk), 0);
      if (n > 0) break;
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return Fill::kWait;
      }
      return Fill::kClosed;
    }
  }
  const size_t after = c->in.size() + static_cast<size_t>(n);
  if (after > c->charged) {
    const int64_t more = static_cast<int64_t>(after - c->charged);
    const int64_t before =
        in_flight_.fetch_add(more, std::memory_order_relaxed);
    c->charged = after;
    if (options_.max_request_bytes_in_flight > 0 &&
        static_cast<size_t>(before + more) >
            options_.max_request_bytes_in_flight) {
      Refuse(c, 503,
             absl::StrCat("the server holds ",
                          options_.max_request_bytes_in_flight,
                          " bytes of requests in flight already (its "
                          "budget); retry later"),
             refused_budget_);
      return Fill::kClosed;
    }
  }
  c->in.append(chunk, static_cast<size_t>(n));
  absl::MutexLock lock(&mu_);
  c->last_byte = absl::Now();
  if (c->request_since == absl::InfinitePast()) c->request_since = c->last_byte;
  return Fill::kMore;
}

HttpServer::Served HttpServer::ServeOne(Conn* c) {
  if (c->in.empty()) return Served::kNeedMore;
  const HttpRequestScanner::State state = c->scanner.Scan(c->in);
  if (state == HttpRequestScanner::State::kError) {
    const int status = c->scanner.error_status();
    Refuse(c, status, c->scanner.error_message(),
           status == 413   ? refused_body_
           : status == 431 ? refused_headers_
                           : refused_malformed_);
    return Served::kClose;
  }
  if (!c->head_checked && c->scanner.head_size() > 0) {
    c->head_checked = true;
    if (options_.check_head) {
      const std::optional<HttpHeadAnswer> refused = options_.check_head(
          std::string_view(c->in).substr(0, c->scanner.head_size()));
      if (refused.has_value()) {
        refused_head_->Add();
        AnswerAndClose(c, *refused);
        return Served::kClose;
      }
    }
  }
  if (state == HttpRequestScanner::State::kIncomplete) {
    if (c->scanner.awaits_continue() && !c->sent_continue) {
      // The client waits for this before it sends the body; httplib,
      // which sees the whole request later, need not say it again.
      c->sent_continue = true;
      c->out.Append("HTTP/1.1 100 Continue\r\n\r\n");
    }
    return Served::kNeedMore;
  }
  const size_t size = c->scanner.request_size();
  bool keep = true;
  {
    HttpConnectionStream stream(c, size);
    const bool stopping = stopping_.load(std::memory_order_acquire);
    bool closed = false;
    keep = serve_(stream, stopping, &closed) && !closed && !stopping;
  }
  c->in.erase(0, size);
  c->scanner.Reset();
  c->sent_continue = false;
  c->head_checked = false;
  {
    absl::MutexLock lock(&mu_);
    c->request_since = c->in.empty() ? absl::InfinitePast() : c->last_byte;
  }
  Uncharge(c);
  return keep ? Served::kAnswered : Served::kClose;
}

void HttpServer::Uncharge(Conn* c) {
  if (c->in.capacity() > (64 << 10) && c->in.size() < (16 << 10)) {
    c->in.shrink_to_fit();  // a large request is gone: give its memory back
  }
  if (c->charged > c->in.size()) {
    in_flight_.fetch_sub(static_cast<int64_t>(c->charged - c->in.size()),
                         std::memory_order_relaxed);
    c->charged = c->in.size();
  }
}

void HttpServer::Refuse(Conn* c, int status, const std::string& message,
                        Counter* reason) {
  reason->Add();
  const char* text = status == 413   ? "413 Payload Too Large"
                     : status == 431 ? "431 Request Header Fields Too Large"
                     : status == 503 ? "503 Service Unavailable"
                                     : "400 Bad Request";
  const char* code = status == 400   ? "INVALID_ARGUMENT"
                     : status == 503 ? "UNAVAILABLE"
                                     : "RESOURCE_EXHAUSTED";
  // The body is an api.Error in JSON, as the gateway's other errors (the
  // messages are ours: nothing to escape).
  HttpHeadAnswer answer;
  answer.status = status;
  answer.reason = std::string(text).substr(4);
  answer.body =
      absl::StrCat("{\"code\":\"", code, "\",\"message\":\"", message, "\"}");
  log::Debug("latentd http",
             absl::StrCat("refused a request from ", c->remote_ip, ":",
                          c->remote_port, " (", text, "): ", message));
  AnswerAndClose(c, answer);
}

void HttpServer::AnswerAndClose(Conn* c, const HttpHeadAnswer& a) {
  std::string answer = absl::StrCat("HTTP/1.1 ", a.status, " ", a.reason,
                                    "\r\nContent-Type: ", a.content_type,
                                    "\r\nContent-Length: ", a.body.size());
  for (const auto& [name, value] : a.headers) {
    absl::StrAppend(&answer, "\r\n", name, ": ", value);
  }
  absl::StrAppend(&answer, "\r\nConnection: close\r\n\r\n", a.body);
  c->out.Append(answer);
  c->closing = true;
  c->linger = true;
}

void HttpServer::Linger(Conn* c) {
  ::shutdown(c->fd, SHUT_WR);
  char sink[4096];
  for (int i = 0; i < 16; ++i) {
    if (::recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0) break;
  }
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
  Conn& c = *it->second;
  in_flight_.fetch_sub(static_cast<int64_t>(c.charged),
                       std::memory_order_relaxed);
  c.charged = 0;
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
