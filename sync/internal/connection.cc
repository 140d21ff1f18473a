#include "sync/internal/connection.h"

#include <chrono>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace latentd::sync::internal {
namespace {

std::chrono::steady_clock::duration ToChrono(absl::Duration d) {
  return absl::ToChronoNanoseconds(d);
}

std::string PeerName(const asio::ip::tcp::socket& socket) {
  asio::error_code ec;
  const auto ep = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return absl::StrCat(ep.address().to_string(), ":", ep.port());
}

// The first bytes of an HTTP/1.x request (curl or a browser at this port).
bool LooksLikeHttp(const char* bytes) {
  for (const char* method :
       {"GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "OPTIONS ", "PATCH "}) {
    const size_t n = std::strlen(method);
    if (n <= kFrameHeaderSize && std::memcmp(bytes, method, n) == 0) {
      return true;
    }
  }
  return false;
}

}  // namespace

void Connection::AnswerHttpWithHint() {
  static constexpr absl::string_view kBody =
      "This port speaks latentd's framed protobuf protocol, not HTTP.\n"
      "Send HTTP/JSON to the daemon's --http address (see DIR/ports).\n";
  const std::string answer = absl::StrCat(
      "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n"
      "Connection: close\r\nContent-Length: ",
      kBody.size(), "\r\n\r\n", kBody);
  // A short blocking write on a connection about to close: the answer fits
  // the socket buffer, and an error only means the client left.
  asio::error_code ec;
  asio::write(socket_, asio::buffer(answer), ec);
}

Connection::Connection(asio::ip::tcp::socket socket, ConnectionOptions options,
                       FrameFn on_frame, CloseFn on_close)
    : socket_(std::move(socket)),
      read_timer_(socket_.get_executor()),
      write_timer_(socket_.get_executor()),
      options_(std::move(options)),
      on_frame_(std::move(on_frame)),
      on_close_(std::move(on_close)),
      peer_(PeerName(socket_)) {
  asio::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
}

void Connection::Start() { ReadHeader(); }

void Connection::ReadHeader() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(header_),
                   [this, self](const asio::error_code& ec, size_t n) {
                     if (closed_) return;
                     if (ec) {
                       if (ec == asio::error::eof && n == 0) {
                         Fail(absl::OkStatus());
                       } else if (ec == asio::error::eof) {
                         Fail(absl::DataLossError(absl::StrCat(
                             "truncated frame: connection ended after ", n,
                             " of the header's ", kFrameHeaderSize, " bytes")));
                       } else {
                         Fail(absl::UnavailableError(ec.message()));
                       }
                       return;
                     }
                     absl::StatusOr<FrameHeader> header = DecodeFrameHeader(
                         header_.data(), options_.max_frame_bytes);
                     if (!header.ok()) {
                       options_.stats->connections_rejected.fetch_add(
                           1, std::memory_order_relaxed);
                       if (LooksLikeHttp(header_.data())) {
                         AnswerHttpWithHint();
                         Fail(absl::InvalidArgumentError(
                             "an HTTP request reached the framed protobuf "
                             "port (answered 400 with a hint)"));
                         return;
                       }
                       Fail(header.status());
                       return;
                     }
                     options_.stats->bytes_received.fetch_add(
                         kFrameHeaderSize, std::memory_order_relaxed);
                     ReadPayload(*header);
                   });
}

void Connection::ReadPayload(FrameHeader header) {
  payload_.assign(header.payload_size, '\0');
  auto self = shared_from_this();
  if (header.payload_size > 0) {
    read_timer_.expires_after(ToChrono(options_.frame_timeout));
    read_timer_.async_wait([this, self](const asio::error_code& ec) {
      if (ec || closed_) return;
      options_.stats->connections_rejected.fetch_add(1,
                                                     std::memory_order_relaxed);
      Fail(absl::DeadlineExceededError("frame stalled past frame_timeout"));
    });
  }
  asio::async_read(
      socket_, asio::buffer(payload_.data(), payload_.size()),
      [this, self, header](const asio::error_code& ec, size_t n) {
        read_timer_.cancel();
        if (closed_) return;
        if (ec) {
          if (ec == asio::error::eof) {
            options_.stats->connections_rejected.fetch_add(
                1, std::memory_order_relaxed);
            Fail(absl::DataLossError(
                absl::StrCat("truncated frame: connection ended after ", n,
                             " of ", header.payload_size, " payload bytes")));
          } else {
            Fail(absl::UnavailableError(ec.message()));
          }
          return;
        }
        options_.stats->bytes_received.fetch_add(n, std::memory_order_relaxed);
        options_.stats->frames_received.fetch_add(1, std::memory_order_relaxed);
        Frame frame;
        frame.type = header.type;
        frame.request_id = header.request_id;
        frame.payload = std::move(payload_);
        payload_.clear();
        on_frame_(std::move(frame));
        if (!closed_) ReadHeader();
      });
}

void Connection::Send(std::string bytes) {
  asio::dispatch(executor(),
                 [self = shared_from_this(), b = std::move(bytes)]() mutable {
                   self->DoSend(std::move(b));
                 });
}

void Connection::DoSend(std::string bytes) {
  if (closed_) return;
  out_bytes_ += bytes.size();
  out_.push_back(std::move(bytes));
  if (out_bytes_ > options_.max_pending_write_bytes) {
    options_.stats->connections_rejected.fetch_add(1,
                                                   std::memory_order_relaxed);
    Fail(absl::ResourceExhaustedError(absl::StrCat(
        "peer is not reading: ", out_bytes_, " bytes queued for it")));
    return;
  }
  if (!writing_) WriteNext();
}

void Connection::WriteNext() {
  if (out_.empty() || closed_) {
    writing_ = false;
    return;
  }
  writing_ = true;
  auto self = shared_from_this();
  write_timer_.expires_after(ToChrono(options_.write_timeout));
  write_timer_.async_wait([this, self](const asio::error_code& ec) {
    if (ec || closed_) return;
    options_.stats->connections_rejected.fetch_add(1,
                                                   std::memory_order_relaxed);
    Fail(absl::DeadlineExceededError("write stalled past write_timeout"));
  });
  asio::async_write(
      socket_, asio::buffer(out_.front()),
      [this, self](const asio::error_code& ec, size_t n) {
        write_timer_.cancel();
        if (closed_) return;
        if (ec) {
          Fail(absl::UnavailableError(ec.message()));
          return;
        }
        options_.stats->bytes_sent.fetch_add(n, std::memory_order_relaxed);
        options_.stats->frames_sent.fetch_add(1, std::memory_order_relaxed);
        out_bytes_ -= out_.front().size();
        out_.pop_front();
        WriteNext();
      });
}

void Connection::Close(absl::Status why) {
  asio::dispatch(executor(), [self = shared_from_this(), w = std::move(why)]() {
    self->Fail(w);
  });
}

void Connection::Fail(absl::Status why) {
  if (closed_) return;
  closed_ = true;
  if (!why.ok() && options_.log) {
    options_.log(
        absl::StrCat("closing connection with ", peer_, ": ", why.ToString()));
  }
  asio::error_code ec;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  read_timer_.cancel();
  write_timer_.cancel();
  out_.clear();
  out_bytes_ = 0;
  CloseFn done = std::move(on_close_);
  if (done) done(why);
}

}  // namespace latentd::sync::internal
