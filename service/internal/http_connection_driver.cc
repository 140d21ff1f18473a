#include "service/internal/http_connection_driver.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "base/log.h"

namespace latentd::service::internal {
namespace {

// A plain-text answer that closes the connection.
std::string PlainAnswer(absl::string_view status, absl::string_view body) {
  return absl::StrCat("HTTP/1.1 ", status,
                      "\r\nContent-Type: text/plain\r\nContent-Length: ",
                      body.size(), "\r\nConnection: close\r\n\r\n", body);
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

HttpConnectionDriver::HttpConnectionDriver(const HttpServerOptions& options,
                                           RequestFn serve,
                                           MetricsRegistry* metrics,
                                           const std::atomic<bool>* stopping)
    : options_(options), serve_(std::move(serve)), stopping_(*stopping) {
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
  refused_head_ = metrics->AddCounter(kRefusedName, "", "reason=\"auth\"");
  bytes_in_flight_ = metrics->AddGauge(
      "latentd_http_request_bytes_in_flight",
      "Bytes of HTTP requests received and not yet served, all connections");
}

void HttpConnectionDriver::Release(HttpConnection* c) {
  in_flight_.fetch_sub(static_cast<int64_t>(c->charged),
                       std::memory_order_relaxed);
  c->charged = 0;
}

void HttpConnectionDriver::UpdateGauge() {
  bytes_in_flight_->Set(
      static_cast<double>(in_flight_.load(std::memory_order_relaxed)));
}

HttpConnectionDriver::TlsStep HttpConnectionDriver::Handshake(
    HttpConnection* c) {
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

HttpConnectionDriver::Await HttpConnectionDriver::Advance(HttpConnection* c,
                                                          bool* progress) {
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
      if (c->discard_left > 0) {
        switch (Discard(c)) {
          case Fill::kMore:
            break;  // all dropped
          case Fill::kWait:
            return Await::kRequest;
          case Fill::kWaitWritable:
            return Await::kRequestWritable;
          case Fill::kClosed:
            return Await::kDrop;
        }
      }
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

HttpResponseWriter::Sent HttpConnectionDriver::SendPending(HttpConnection* c,
                                                           bool* progress) {
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

HttpConnectionDriver::Fill HttpConnectionDriver::ReadSome(HttpConnection* c,
                                                          char* into,
                                                          size_t size,
                                                          size_t* n) {
  if (c->ssl != nullptr) {
    for (;;) {
      ERR_clear_error();
      const int r = SSL_read(c->ssl, into, static_cast<int>(size));
      if (r > 0) {
        *n = static_cast<size_t>(r);
        return Fill::kMore;
      }
      const int e = SSL_get_error(c->ssl, r);
      if (e == SSL_ERROR_WANT_READ) return Fill::kWait;
      if (e == SSL_ERROR_WANT_WRITE) return Fill::kWaitWritable;
      if (e == SSL_ERROR_SYSCALL && errno == EINTR) continue;
      return Fill::kClosed;  // close_notify, EOF or an error
    }
  }
  for (;;) {
    const ssize_t r = ::recv(c->fd, into, size, 0);
    if (r > 0) {
      *n = static_cast<size_t>(r);
      return Fill::kMore;
    }
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return Fill::kWait;
    return Fill::kClosed;
  }
}

HttpConnectionDriver::Fill HttpConnectionDriver::Discard(HttpConnection* c) {
  char sink[16 << 10];
  while (c->discard_left > 0) {
    size_t n = 0;
    const Fill f = ReadSome(
        c, sink, std::min<uint64_t>(sizeof(sink), c->discard_left), &n);
    if (f != Fill::kMore) return f;
    c->discard_left -= n;
    c->last_byte = absl::Now();
  }
  return Fill::kMore;
}

HttpConnectionDriver::Fill HttpConnectionDriver::Receive(HttpConnection* c) {
  char chunk[16 << 10];
  size_t n = 0;
  if (const Fill f = ReadSome(c, chunk, sizeof(chunk), &n); f != Fill::kMore) {
    return f;
  }
  const size_t after = c->in.size() + n;
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
  c->in.append(chunk, n);
  c->last_byte = absl::Now();
  if (c->request_since == absl::InfinitePast()) c->request_since = c->last_byte;
  return Fill::kMore;
}

HttpConnectionDriver::Served HttpConnectionDriver::ServeOne(HttpConnection* c) {
  if (c->in.empty()) return Served::kNeedMore;
  const HttpRequestScanner::State state = c->scanner.Scan(c->in);
  if (state == HttpRequestScanner::State::kError) {
    const int status = c->scanner.error_status();
    if (status == 413 && c->scanner.head_size() > 0) {
      // Refused on its Content-Length: the rest of the body is read and
      // dropped after the answer (a client sending it reads the 413).
      const uint64_t sent = c->in.size() - c->scanner.head_size();
      const uint64_t body = c->scanner.announced_body_bytes();
      c->discard_left =
          std::min(body > sent ? body - sent : 0, kMaxDiscardBytes);
      c->in.clear();
      Uncharge(c);
    }
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
  c->request_since = c->in.empty() ? absl::InfinitePast() : c->last_byte;
  Uncharge(c);
  return keep ? Served::kAnswered : Served::kClose;
}

void HttpConnectionDriver::Uncharge(HttpConnection* c) {
  if (c->in.capacity() > (64 << 10) && c->in.size() < (16 << 10)) {
    c->in.shrink_to_fit();  // a large request is gone: give its memory back
  }
  if (c->charged > c->in.size()) {
    in_flight_.fetch_sub(static_cast<int64_t>(c->charged - c->in.size()),
                         std::memory_order_relaxed);
    c->charged = c->in.size();
  }
}

void HttpConnectionDriver::Refuse(HttpConnection* c, int status,
                                  const std::string& message, Counter* reason) {
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

void HttpConnectionDriver::AnswerAndClose(HttpConnection* c,
                                          const HttpHeadAnswer& a) {
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

void HttpConnectionDriver::Linger(HttpConnection* c) {
  ::shutdown(c->fd, SHUT_WR);
  char sink[4096];
  for (int i = 0; i < 16; ++i) {
    if (::recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT) <= 0) break;
  }
}

}  // namespace latentd::service::internal
