// HttpRequestScanner: finds where one HTTP/1.1 request ends in the bytes a
// connection has received so far, without parsing more than the framing,
// and refuses one that is over the limits before it is read whole:
//   - the request line and headers (and a chunked body's trailers) end
//     with an empty line; over max_header_bytes or max_headers lines:
//     431 Request Header Fields Too Large;
//   - the body is Content-Length bytes, or chunks ("Transfer-Encoding:
//     chunked") up to the zero-size chunk and its trailers; a body over
//     max_body_bytes, counted as announced (Content-Length) or as the chunk
//     data arrives: 413 Payload Too Large; chunk framing over the body
//     limit again (tiny chunks) counts the same;
//   - a malformed Content-Length or chunk size, two different
//     Content-Lengths, or another Transfer-Encoding: 400.
// The framing follows cpp-httplib 0.11's parser (lines end at '\n'; only
// "\r\n" ends the headers), so the request handed to it is exactly the
// bytes scanned here.
//
// Usage: feed the connection's buffer, from the request's first byte, each
// time bytes are appended (the prefix scanned before must not change);
// Reset() before the next request.
//
// Thread-safety: none; one scanner per connection, used by one thread at
// a time.
#ifndef LATENTD_SERVICE_INTERNAL_HTTP_REQUEST_SCANNER_H_
#define LATENTD_SERVICE_INTERNAL_HTTP_REQUEST_SCANNER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace latentd::service::internal {

struct HttpRequestLimits {
  // Request line + header lines (+ trailer lines), in bytes.
  size_t max_header_bytes = 64 << 10;
  // Header lines (+ trailer lines).
  int max_headers = 100;
  // Body bytes (a chunked body's data; its framing counts against the same
  // figure again).
  size_t max_body_bytes = 4 << 20;
};

class HttpRequestScanner {
 public:
  enum class State { kIncomplete, kComplete, kError };

  explicit HttpRequestScanner(const HttpRequestLimits& limits)
      : limits_(limits) {}

  // Scans `data` (the request from its first byte, maybe more after it)
  // from where the last call stopped. kComplete: request_size() bytes are
  // one whole request. kError: error_status() / error_message() say why;
  // the connection should be answered and closed.
  State Scan(std::string_view data);

  size_t request_size() const { return request_size_; }
  int error_status() const { return error_status_; }
  const std::string& error_message() const { return error_message_; }
  // The headers are complete and asked for "Expect: 100-continue" before a
  // body that has not arrived whole yet.
  bool awaits_continue() const {
    return expect_continue_ && phase_ != Phase::kHeaders &&
           phase_ != Phase::kDone;
  }
  // The bytes of the request line and headers (blank line included) once
  // they have all arrived; 0 before.
  size_t head_size() const { return head_size_; }
  // The Content-Length the headers announced (0 if none, or chunked).
  uint64_t announced_body_bytes() const {
    return chunked_ ? 0 : content_length_;
  }
  // Some byte of a request has been scanned (a request is in progress).
  bool started() const { return pos_ > 0 || line_scan_ > 0; }

  void Reset();

 private:
  enum class Phase {
    kHeaders,
    kBody,
    kChunkSize,
    kChunkData,
    kChunkEnd,
    kTrailers,
    kDone
  };
  // The next line's end ('\n' included) from pos_, or npos.
  size_t NextLine(std::string_view data);
  State Fail(int status, std::string message);
  // One header line (without its line end); false after Fail.
  bool OnHeader(std::string_view line);
  bool EndOfHeaders();

  HttpRequestLimits limits_;
  Phase phase_ = Phase::kHeaders;
  size_t pos_ = 0;        // bytes consumed
  size_t line_scan_ = 0;  // searched for '\n' up to here
  int lines_ = 0;         // header + trailer lines, request line excluded
  size_t header_bytes_ = 0;
  bool request_line_ = true;
  bool has_length_ = false;
  uint64_t content_length_ = 0;
  bool chunked_ = false;
  bool expect_continue_ = false;
  uint64_t remaining_ = 0;      // body or chunk bytes still to come
  uint64_t body_bytes_ = 0;     // chunk data so far
  uint64_t framing_bytes_ = 0;  // chunk size lines and CRLFs so far
  size_t request_size_ = 0;
  size_t head_size_ = 0;
  int error_status_ = 0;
  std::string error_message_;
};

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_HTTP_REQUEST_SCANNER_H_
