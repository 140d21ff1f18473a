#include "service/internal/http_request_scanner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace latentd::service::internal {
namespace {

// A chunk-size line (hex size, maybe extensions) longer than this is
// refused: nothing legitimate needs more.
constexpr size_t kMaxChunkLine = 1024;

absl::string_view A(std::string_view v) { return {v.data(), v.size()}; }

// `line` without its "\n" or "\r\n".
std::string_view Chomp(std::string_view line) {
  if (!line.empty() && line.back() == '\n') line.remove_suffix(1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

void HttpRequestScanner::Reset() { *this = HttpRequestScanner(limits_); }

HttpRequestScanner::State HttpRequestScanner::Fail(int status,
                                                   std::string message) {
  error_status_ = status;
  error_message_ = std::move(message);
  return State::kError;
}

size_t HttpRequestScanner::NextLine(std::string_view data) {
  const size_t from = std::max(pos_, line_scan_);
  const size_t nl = data.find('\n', from);
  if (nl == std::string_view::npos) {
    line_scan_ = data.size();
    return std::string_view::npos;
  }
  line_scan_ = nl + 1;
  return nl + 1;
}

bool HttpRequestScanner::OnHeader(std::string_view line) {
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) return true;  // httplib skips it
  const absl::string_view name =
      absl::StripAsciiWhitespace(A(line.substr(0, colon)));
  const absl::string_view value =
      absl::StripAsciiWhitespace(A(line.substr(colon + 1)));
  if (absl::EqualsIgnoreCase(name, "Content-Length")) {
    uint64_t n = 0;
    if (value.empty() ||
        !std::all_of(value.begin(), value.end(), absl::ascii_isdigit) ||
        !absl::SimpleAtoi(value, &n)) {
      Fail(400, "malformed Content-Length");
      return false;
    }
    if (has_length_ && n != content_length_) {
      Fail(400, "two different Content-Length headers");
      return false;
    }
    has_length_ = true;
    content_length_ = n;
  } else if (absl::EqualsIgnoreCase(name, "Transfer-Encoding")) {
    if (!absl::EqualsIgnoreCase(value, "chunked")) {
      Fail(400, absl::StrCat("unsupported Transfer-Encoding (only chunked)"));
      return false;
    }
    chunked_ = true;
  } else if (absl::EqualsIgnoreCase(name, "Expect")) {
    expect_continue_ = absl::EqualsIgnoreCase(value, "100-continue");
  }
  return true;
}

bool HttpRequestScanner::EndOfHeaders() {
  if (chunked_) {
    phase_ = Phase::kChunkSize;
    return true;
  }
  if (content_length_ > limits_.max_body_bytes) {
    Fail(413, absl::StrCat("request body over the limit of ",
                           limits_.max_body_bytes, " bytes"));
    return false;
  }
  remaining_ = content_length_;
  phase_ = remaining_ > 0 ? Phase::kBody : Phase::kDone;
  return true;
}

HttpRequestScanner::State HttpRequestScanner::Scan(std::string_view data) {
  if (error_status_ != 0) return State::kError;
  const std::string too_large_headers = absl::StrCat(
      "request headers over the limit of ", limits_.max_header_bytes,
      " bytes or ", limits_.max_headers, " lines");
  while (phase_ != Phase::kDone) {
    switch (phase_) {
      case Phase::kHeaders:
      case Phase::kTrailers: {
        const size_t end = NextLine(data);
        const size_t size =
            (end == std::string_view::npos ? data.size() : end) - pos_;
        if (header_bytes_ + size > limits_.max_header_bytes) {
          return Fail(431, too_large_headers);
        }
        if (end == std::string_view::npos) return State::kIncomplete;
        header_bytes_ += size;
        const std::string_view line = data.substr(pos_, size);
        pos_ = end;
        if (request_line_) {
          request_line_ = false;
          break;
        }
        if (line == "\r\n") {
          if (phase_ == Phase::kTrailers) {
            phase_ = Phase::kDone;
          } else {
            head_size_ = pos_;
            if (!EndOfHeaders()) return State::kError;
          }
          break;
        }
        if (++lines_ > limits_.max_headers) return Fail(431, too_large_headers);
        if (phase_ == Phase::kHeaders && !OnHeader(Chomp(line))) {
          return State::kError;
        }
        break;
      }
      case Phase::kBody:
      case Phase::kChunkData: {
        const uint64_t n = std::min<uint64_t>(remaining_, data.size() - pos_);
        pos_ += n;
        remaining_ -= n;
        if (remaining_ > 0) return State::kIncomplete;
        phase_ = phase_ == Phase::kBody ? Phase::kDone : Phase::kChunkEnd;
        break;
      }
      case Phase::kChunkSize:
      case Phase::kChunkEnd: {
        const size_t end = NextLine(data);
        const size_t size =
            (end == std::string_view::npos ? data.size() : end) - pos_;
        if (size > kMaxChunkLine) return Fail(400, "chunk size line too long");
        if (end == std::string_view::npos) return State::kIncomplete;
        const std::string_view line = data.substr(pos_, size);
        pos_ = end;
        framing_bytes_ += size;
        if (framing_bytes_ > limits_.max_body_bytes) {
          return Fail(413, absl::StrCat("request body over the limit of ",
                                        limits_.max_body_bytes,
                                        " bytes (chunk framing)"));
        }
        if (phase_ == Phase::kChunkEnd) {
          if (line != "\r\n") return Fail(400, "malformed chunk end");
          phase_ = Phase::kChunkSize;
          break;
        }
        const std::string_view hex =
            line.substr(0, line.find_first_not_of("0123456789abcdefABCDEF"));
        uint64_t chunk = 0;
        if (hex.empty() || hex.size() > 15 ||
            !absl::SimpleHexAtoi(A(hex), &chunk)) {
          return Fail(400, "malformed chunk size");
        }
        if (body_bytes_ + chunk > limits_.max_body_bytes) {
          return Fail(413, absl::StrCat("request body over the limit of ",
                                        limits_.max_body_bytes, " bytes"));
        }
        body_bytes_ += chunk;
        remaining_ = chunk;
        phase_ = chunk == 0 ? Phase::kTrailers : Phase::kChunkData;
        break;
      }
      case Phase::kDone:
        break;
    }
  }
  request_size_ = pos_;
  return State::kComplete;
}

}  // namespace latentd::service::internal
