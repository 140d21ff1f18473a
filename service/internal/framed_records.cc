#include "service/internal/framed_records.h"

#include <cstring>

#include "xxhash.h"

namespace latentd::service::internal {

void AppendFrame(std::string_view payload, std::string* out) {
  const uint32_t len = static_cast<uint32_t>(payload.size());
  const uint64_t hash = XXH64(payload.data(), payload.size(), 0);
  char header[kFrameHeaderBytes];
  std::memcpy(header, &len, 4);
  std::memcpy(header + 4, &hash, 8);
  out->append(header, kFrameHeaderBytes);
  out->append(payload);
}

bool Frame::ChecksumMatches() const {
  return XXH64(payload.data(), payload.size(), 0) == hash;
}

std::optional<Frame> FrameAt(std::string_view all, size_t pos) {
  if (pos > all.size() || all.size() - pos < kFrameHeaderBytes) {
    return std::nullopt;
  }
  uint32_t len;
  Frame f;
  std::memcpy(&len, all.data() + pos, 4);
  std::memcpy(&f.hash, all.data() + pos + 4, 8);
  if (len > kMaxFramePayload || all.size() - pos - kFrameHeaderBytes < len) {
    return std::nullopt;
  }
  f.payload = all.substr(pos + kFrameHeaderBytes, len);
  f.size = kFrameHeaderBytes + len;
  return f;
}

FrameScan ScanFrames(std::string_view all,
                     const std::function<bool(std::string_view)>& valid) {
  auto intact = [&](size_t pos) -> std::optional<Frame> {
    std::optional<Frame> f = FrameAt(all, pos);
    if (!f || !f->ChecksumMatches() || !valid(f->payload)) return std::nullopt;
    return f;
  };
  FrameScan scan;
  while (scan.end < all.size()) {
    std::optional<Frame> f = intact(scan.end);
    if (!f) break;
    scan.payloads.push_back(f->payload);
    scan.end += f->size;
  }
  // One offset at a time: a damaged length tells nothing about where the
  // next record starts.
  for (size_t p = scan.end + 1; p < all.size(); ++p) {
    if (intact(p)) {
      scan.resumes_at = p;
      break;
    }
  }
  return scan;
}

}  // namespace latentd::service::internal
