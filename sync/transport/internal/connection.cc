#include "sync/transport/internal/connection.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "asio/ssl/error.hpp"
#include "openssl/ssl.h"
#include "openssl/x509.h"
#include "sync/transport/internal/connection_errors.h"
#include "sync/transport/internal/peer_identity.h"

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

}  // namespace

void Connection::AnswerHttpWithHint() {
  // A short blocking write on a connection about to close: the answer fits
  // the socket buffer, and an error only means the client left.
  asio::error_code ec;
  asio::write(socket_.tcp(), asio::buffer(HttpHintAnswer()), ec);
}

Connection::Connection(asio::ip::tcp::socket socket, ConnectionOptions options,
                       FrameFn on_frame, CloseFn on_close)
    : socket_(std::move(socket)),
      read_timer_(socket_.get_executor()),
      idle_timer_(socket_.get_executor()),
      write_timer_(socket_.get_executor()),
      options_(std::move(options)),
      on_frame_(std::move(on_frame)),
      on_close_(std::move(on_close)),
      peer_(PeerName(socket_.tcp())) {
  asio::error_code ec;
  socket_.tcp().set_option(asio::ip::tcp::no_delay(true), ec);
}

void Connection::Start() {
  if (!options_.tls) {
    AfterTls();
    return;
  }
  ArmHandshakeDeadline("TLS handshake");
  if (options_.tls->is_server()) {
    WaitForFirstByte();
  } else {
    StartTlsHandshake();
  }
}

void Connection::ArmHandshakeDeadline(const char* what) {
  auto self = shared_from_this();
  read_timer_.expires_after(ToChrono(options_.frame_timeout));
  read_timer_.async_wait([this, self, what](const asio::error_code& ec) {
    if (ec || closed_ || established_) return;
    options_.stats->connections_rejected.fetch_add(1,
                                                   std::memory_order_relaxed);
    Fail(absl::DeadlineExceededError(
        absl::StrCat(what, " not finished within frame_timeout")));
  });
}

void Connection::WaitForFirstByte() {
  auto self = shared_from_this();
  socket_.tcp().async_wait(
      asio::socket_base::wait_read, [this, self](const asio::error_code& ec) {
        if (closed_) return;
        if (ec) {
          Fail(absl::UnavailableError(ec.message()));
          return;
        }
        unsigned char first = 0;
        asio::error_code peek_ec;
        const size_t n = socket_.tcp().receive(
            asio::buffer(&first, 1), asio::socket_base::message_peek, peek_ec);
        if (peek_ec || n == 0) {
          Fail(absl::OkStatus());  // gone before its first byte
        } else if (LooksLikeTlsHandshake(first)) {
          StartTlsHandshake();
        } else {
          RefusePlaintext();
        }
      });
}

void Connection::StartTlsHandshake() {
  absl::StatusOr<TlsStream*> tls = socket_.StartTls(*options_.tls);
  if (!tls.ok()) {
    Fail(tls.status());
    return;
  }
  if (!options_.tls->is_server() &&
      !SetTlsPeerHost((*tls)->native_handle(), options_.tls_host)) {
    Fail(absl::InvalidArgumentError(
        absl::StrCat("TLS: cannot check the server's certificate against '",
                     options_.tls_host, "': ", TakeOpenSslError())));
    return;
  }
  auto self = shared_from_this();
  (*tls)->async_handshake([this, self](const asio::error_code& ec) {
    if (closed_) return;
    if (ec) {
      options_.stats->connections_rejected.fetch_add(1,
                                                     std::memory_order_relaxed);
      Fail(TlsHandshakeError(ec, *options_.tls, socket_.tls()->native_handle(),
                             options_.tls_host, peer_));
      return;
    }
    AfterTls();
  });
}

void Connection::RefusePlaintext() {
  auto self = shared_from_this();
  asio::async_read(
      socket_.tcp(), asio::buffer(header_),
      [this, self](const asio::error_code& ec, size_t) {
        if (closed_) return;
        options_.stats->connections_rejected.fetch_add(
            1, std::memory_order_relaxed);
        absl::StatusOr<FrameHeader> header =
            DecodeFrameHeader(header_.data(), options_.max_frame_bytes);
        if (ec || !header.ok()) {
          if (!ec && LooksLikeHttp(header_.data())) {
            // Read what came (so that the close is no reset that loses the
            // answer), then say where HTTP goes.
            asio::error_code drain;
            std::string sink(socket_.tcp().available(drain), '\0');
            if (!drain && !sink.empty()) {
              socket_.tcp().read_some(asio::buffer(sink), drain);
            }
            AnswerHttpWithHint();
          }
          RefusedPlaintext();
          return;
        }
        // A framed call without TLS: read (at most 16 KiB of) it, so that
        // the close is no reset that loses the answer; its reply is the
        // error. Nothing it announces is allocated.
        constexpr size_t kMaxDrain = 16 << 10;
        payload_.assign(std::min<size_t>(header->payload_size, kMaxDrain),
                        '\0');
        asio::async_read(
            socket_.tcp(), asio::buffer(payload_),
            [this, self, id = header->request_id](const asio::error_code& e2,
                                                  size_t) {
              if (closed_) return;
              if (!e2) {
                const std::string reply = EncodeFrame(
                    kErrorReplyType, id,
                    EncodeStatus(absl::FailedPreconditionError(
                        "this port speaks TLS; connect with TLS (latentctl: "
                        "--tls-ca FILE, or --tls on for the system's CAs)")));
                asio::error_code ignored;
                asio::write(socket_.tcp(), asio::buffer(reply), ignored);
              }
              RefusedPlaintext();
            });
      });
}

void Connection::RefusedPlaintext() {
  Fail(absl::InvalidArgumentError(
      "a client without TLS reached the TLS port (answered with an error "
      "saying so)"));
}

void Connection::AfterTls() {
  if (socket_.tls() != nullptr && options_.tls && options_.tls->is_mutual()) {
    cert_ids_ = PeerCertificateNodeIds(socket_.tls()->native_handle());
  }
  if (!options_.auth) {
    established_ = true;
    read_timer_.cancel();
    ReadHeader();
    if (!writing_) WriteNext();  // frames sent during the TLS handshake
    return;
  }
  handshake_ =
      std::make_unique<PeerHandshake>(options_.role, options_.auth.get());
  ArmHandshakeDeadline("cluster-key handshake");
  std::string hello = handshake_->Start();
  if (!hello.empty()) WriteHandshake(std::move(hello), nullptr);
  ReadHandshakeHeader();
}

absl::Status Connection::CheckPeerIdentity() const {
  if (!options_.tls || !options_.tls->is_mutual()) return absl::OkStatus();
  return internal::CheckPeerIdentity(peer_, handshake_->peer_id(), cert_ids_,
                                     options_.auth->require_node_certificate);
}

absl::Status Connection::HandshakeError(const asio::error_code& ec) const {
  return PeerHandshakeError(ec, options_.tls && options_.tls->is_mutual(),
                            options_.role);
}

void Connection::ReadHandshakeHeader() {
  auto self = shared_from_this();
  asio::async_read(socket_, asio::buffer(hs_header_),
                   [this, self](const asio::error_code& ec, size_t n) {
                     if (closed_) return;
                     if (ec) {
                       Fail(HandshakeError(ec));
                       return;
                     }
                     options_.stats->bytes_received.fetch_add(
                         n, std::memory_order_relaxed);
                     absl::StatusOr<HandshakeHeader> header =
                         DecodeHandshakeHeader(hs_header_.data());
                     if (!header.ok()) {
                       options_.stats->connections_rejected.fetch_add(
                           1, std::memory_order_relaxed);
                       Fail(header.status());
                       return;
                     }
                     ReadHandshakeBody(*header);
                   });
}

void Connection::ReadHandshakeBody(HandshakeHeader header) {
  payload_.assign(header.body_size, '\0');
  auto self = shared_from_this();
  asio::async_read(
      socket_, asio::buffer(payload_.data(), payload_.size()),
      [this, self, header](const asio::error_code& ec, size_t n) {
        if (closed_) return;
        if (ec) {
          Fail(HandshakeError(ec));
          return;
        }
        options_.stats->bytes_received.fetch_add(n, std::memory_order_relaxed);
        absl::StatusOr<std::string> reply =
            handshake_->OnMessage(header.kind, payload_);
        payload_.clear();
        if (!reply.ok()) {
          options_.stats->connections_rejected.fetch_add(
              1, std::memory_order_relaxed);
          Fail(reply.status());
          return;
        }
        if (handshake_->done()) {
          if (absl::Status id = CheckPeerIdentity(); !id.ok()) {
            options_.stats->identity_refused.fetch_add(
                1, std::memory_order_relaxed);
            options_.stats->connections_rejected.fetch_add(
                1, std::memory_order_relaxed);
            Fail(id);
            return;
          }
        }
        if (!handshake_->done()) {
          if (!reply->empty()) WriteHandshake(std::move(*reply), nullptr);
          ReadHandshakeHeader();
        } else if (reply->empty()) {
          Established();  // client: the server accepted us
        } else {
          // Server: frames flow once the client has its kAccept.
          WriteHandshake(std::move(*reply), [this] { Established(); });
        }
      });
}

void Connection::WriteHandshake(std::string bytes, std::function<void()> then) {
  auto buf = std::make_shared<std::string>(std::move(bytes));
  auto self = shared_from_this();
  asio::async_write(socket_, asio::buffer(*buf),
                    [this, self, buf, then = std::move(then)](
                        const asio::error_code& ec, size_t n) {
                      if (closed_) return;
                      if (ec) {
                        Fail(HandshakeError(ec));
                        return;
                      }
                      options_.stats->bytes_sent.fetch_add(
                          n, std::memory_order_relaxed);
                      if (then) then();
                    });
}

void Connection::Established() {
  established_ = true;
  read_timer_.cancel();
  mac_ = std::make_unique<FrameMac>(handshake_->session_key(), options_.role);
  // Frames queued during the handshake get their MACs now, in order.
  for (std::string& frame : out_) {
    const std::string mac = mac_->Seal(frame);
    out_bytes_ += mac.size();
    frame += mac;
  }
  ReadHeader();
  if (!writing_) WriteNext();
}

void Connection::ArmIdleTimer() {
  if (options_.role != PeerHandshake::Role::kServer ||
      options_.idle_timeout == absl::InfiniteDuration()) {
    return;
  }
  const uint64_t generation = ++idle_generation_;
  idle_timer_.expires_after(ToChrono(options_.idle_timeout));
  auto self = shared_from_this();
  idle_timer_.async_wait([this, self, generation](const asio::error_code& ec) {
    if (ec || closed_ || generation != idle_generation_) return;
    if (calls_in_progress_ > 0 || writing_) {  // busy, not idle
      ArmIdleTimer();
      return;
    }
    options_.stats->connections_idle_closed.fetch_add(
        1, std::memory_order_relaxed);
    Fail(absl::OkStatus());
  });
}

void Connection::ReadHeader() {
  auto self = shared_from_this();
  ArmIdleTimer();
  asio::async_read(
      socket_, asio::buffer(header_),
      [this, self](const asio::error_code& ec, size_t n) {
        ++idle_generation_;  // a frame began: not idle
        idle_timer_.cancel();
        if (closed_) return;
        if (ec) {
          if (ec == asio::error::eof && n == 0) {
            Fail(absl::OkStatus());
          } else if (ec == asio::error::eof) {
            Fail(absl::DataLossError(
                absl::StrCat("truncated frame: connection ended after ", n,
                             " of the header's ", kFrameHeaderSize, " bytes")));
          } else {
            Fail(absl::UnavailableError(ec.message()));
          }
          return;
        }
        absl::StatusOr<FrameHeader> header =
            DecodeFrameHeader(header_.data(), options_.max_frame_bytes);
        if (!header.ok()) {
          options_.stats->connections_rejected.fetch_add(
              1, std::memory_order_relaxed);
          if (!socket_.tls() && LooksLikeHttp(header_.data())) {
            AnswerHttpWithHint();
            Fail(absl::InvalidArgumentError(
                "an HTTP request reached the framed protobuf "
                "port (answered 400 with a hint)"));
            return;
          }
          if (header.status().code() == absl::StatusCode::kResourceExhausted &&
              options_.role == PeerHandshake::Role::kServer) {
            RefuseOversizedFrame(header_.data(), header.status());
            return;
          }
          Fail(header.status());
          return;
        }
        options_.stats->bytes_received.fetch_add(kFrameHeaderSize,
                                                 std::memory_order_relaxed);
        ReadPayload(*header);
      });
}

void Connection::ReadPayload(FrameHeader header) {
  const size_t want = header.payload_size + (mac_ ? kMacBytes : 0);
  payload_.clear();
  payload_filled_ = 0;
  if (want == 0) {
    DeliverFrame(header);
    return;
  }
  auto self = shared_from_this();
  read_timer_.expires_after(ToChrono(options_.frame_timeout));
  read_timer_.async_wait([this, self](const asio::error_code& ec) {
    if (ec || closed_) return;
    options_.stats->connections_rejected.fetch_add(1,
                                                   std::memory_order_relaxed);
    Fail(absl::DeadlineExceededError("frame stalled past frame_timeout"));
  });
  ReadPayloadSome(header, want);
}

bool Connection::GrowPayload(size_t want) {
  // Start small and double: what is held follows what arrived.
  constexpr size_t kFirstChunk = 4096;
  const size_t size =
      std::min(want, std::max(kFirstChunk, 2 * payload_.size()));
  if (size > payload_charged_ && options_.max_request_bytes_in_flight > 0) {
    const int64_t more = static_cast<int64_t>(size - payload_charged_);
    const int64_t before = options_.stats->request_bytes_in_flight.fetch_add(
        more, std::memory_order_relaxed);
    if (static_cast<size_t>(before + more) >
        options_.max_request_bytes_in_flight) {
      options_.stats->request_bytes_in_flight.fetch_sub(
          more, std::memory_order_relaxed);
      options_.stats->frames_over_budget.fetch_add(1,
                                                   std::memory_order_relaxed);
      options_.stats->connections_rejected.fetch_add(1,
                                                     std::memory_order_relaxed);
      Fail(absl::ResourceExhaustedError(absl::StrCat(
          "frame of ", want, " bytes refused: this listener's budget of ",
          options_.max_request_bytes_in_flight,
          " request bytes in flight is spent (max_request_bytes_in_flight)")));
      return false;
    }
    payload_charged_ = size;
  }
  payload_.resize(size);
  return true;
}

void Connection::RefuseOversizedFrame(const char* header, absl::Status why) {
  const FrameHeader h = *DecodeFrameHeader(header, UINT32_MAX);
  ++calls_in_progress_;  // the reply answers it
  DoSend(EncodeFrame(kErrorReplyType, h.request_id, EncodeStatus(why)));
  if (closed_) return;
  const size_t left = size_t{h.payload_size} + (mac_ ? kMacBytes : 0);
  if (left > kMaxDiscardBytes) {
    Fail(why);
    return;
  }
  auto self = shared_from_this();
  read_timer_.expires_after(ToChrono(options_.frame_timeout));
  read_timer_.async_wait([this, self, why](const asio::error_code& ec) {
    if (ec || closed_) return;
    Fail(why);  // the client stalled; the reply may not have reached it
  });
  payload_.assign(std::min<size_t>(left, 16 << 10), '\0');
  DiscardSome(left, std::move(why));
}

void Connection::DiscardSome(size_t left, absl::Status why) {
  if (left == 0) {
    read_timer_.cancel();
    payload_.clear();
    if (!writing_) {
      Fail(why);
    } else {
      close_once_written_ = std::move(why);
    }
    return;
  }
  auto self = shared_from_this();
  socket_.async_read_some(
      asio::buffer(payload_.data(), std::min(left, payload_.size())),
      [this, self, left, why](const asio::error_code& ec, size_t n) {
        if (closed_) return;
        options_.stats->bytes_received.fetch_add(n, std::memory_order_relaxed);
        if (ec) {
          read_timer_.cancel();
          Fail(why);
          return;
        }
        DiscardSome(left - n, why);
      });
}

void Connection::ReleasePayload() {
  if (payload_charged_ > 0) {
    options_.stats->request_bytes_in_flight.fetch_sub(
        static_cast<int64_t>(payload_charged_), std::memory_order_relaxed);
    payload_charged_ = 0;
  }
}

void Connection::ReadPayloadSome(FrameHeader header, size_t want) {
  if (payload_filled_ == payload_.size() && !GrowPayload(want)) return;
  auto self = shared_from_this();
  socket_.async_read_some(
      asio::buffer(payload_.data() + payload_filled_,
                   payload_.size() - payload_filled_),
      [this, self, header, want](const asio::error_code& ec, size_t n) {
        if (closed_) return;
        payload_filled_ += n;
        options_.stats->bytes_received.fetch_add(n, std::memory_order_relaxed);
        if (ec) {
          read_timer_.cancel();
          if (ec == asio::error::eof) {
            options_.stats->connections_rejected.fetch_add(
                1, std::memory_order_relaxed);
            Fail(absl::DataLossError(
                absl::StrCat("truncated frame: connection ended after ",
                             payload_filled_, " of ", want, " payload bytes")));
          } else {
            Fail(absl::UnavailableError(ec.message()));
          }
          return;
        }
        if (payload_filled_ < want) {
          ReadPayloadSome(header, want);
          return;
        }
        read_timer_.cancel();
        DeliverFrame(header);
      });
}

void Connection::DeliverFrame(const FrameHeader& header) {
  ReleasePayload();
  Frame frame;
  if (mac_) {
    const std::string_view all(payload_);
    absl::Status verified = mac_->Verify(
        std::string_view(header_.data(), header_.size()),
        all.substr(0, header.payload_size), all.substr(header.payload_size));
    if (!verified.ok()) {
      options_.stats->connections_rejected.fetch_add(1,
                                                     std::memory_order_relaxed);
      Fail(verified);
      return;
    }
    payload_.resize(header.payload_size);
    frame.peer_id = handshake_->peer_id();
  } else if (!cert_ids_.empty()) {
    // TLS without the cluster key: the certificate names the sender.
    frame.peer_id = cert_ids_.front();
  }
  options_.stats->frames_received.fetch_add(1, std::memory_order_relaxed);
  frame.type = header.type;
  frame.request_id = header.request_id;
  frame.payload = std::move(payload_);
  payload_.clear();
  payload_filled_ = 0;
  if (options_.role == PeerHandshake::Role::kServer) ++calls_in_progress_;
  on_frame_(std::move(frame));
  if (!closed_) ReadHeader();
}

void Connection::Send(std::string bytes) {
  asio::dispatch(executor(),
                 [self = shared_from_this(), b = std::move(bytes)]() mutable {
                   self->DoSend(std::move(b));
                 });
}

void Connection::DoSend(std::string bytes) {
  if (closed_) return;
  // A server sends only replies, one per request.
  if (options_.role == PeerHandshake::Role::kServer && calls_in_progress_ > 0) {
    --calls_in_progress_;
  }
  if (mac_) bytes += mac_->Seal(bytes);
  out_bytes_ += bytes.size();
  out_.push_back(std::move(bytes));
  if (out_bytes_ > options_.max_pending_write_bytes) {
    options_.stats->connections_rejected.fetch_add(1,
                                                   std::memory_order_relaxed);
    Fail(absl::ResourceExhaustedError(absl::StrCat(
        "peer is not reading: ", out_bytes_, " bytes queued for it")));
    return;
  }
  if (!writing_ && established_) WriteNext();
}

void Connection::WriteNext() {
  if (out_.empty() || closed_) {
    writing_ = false;
    if (!closed_ && !close_once_written_.ok()) Fail(close_once_written_);
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
  socket_.tcp().shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.tcp().close(ec);
  read_timer_.cancel();
  idle_timer_.cancel();
  write_timer_.cancel();
  out_.clear();
  out_bytes_ = 0;
  ReleasePayload();  // the buffer goes with the connection
  CloseFn done = std::move(on_close_);
  if (done) done(why);
}

}  // namespace latentd::sync::internal
