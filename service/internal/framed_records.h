// The record framing of latentd's checksummed journals (DIR/ingest.log,
// service/ingest_log.h; DIR/graph/ingested_edges.log, service/edge_journal.h):
// each record is a u32 payload length, the u64 xxh64 (seed 0) of the
// payload, then the payload, little-endian. What a payload holds, and what
// to do with damage, is the journal's business; this is the frame alone.
// Pure functions on bytes in memory: thread-safe.
#ifndef LATENTD_SERVICE_INTERNAL_FRAMED_RECORDS_H_
#define LATENTD_SERVICE_INTERNAL_FRAMED_RECORDS_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace latentd::service::internal {

constexpr size_t kFrameHeaderBytes = 12;          // u32 length + u64 hash
constexpr uint32_t kMaxFramePayload = 64u << 20;  // a sanity bound

// Appends one framed record holding `payload` to *out.
// REQUIRES: payload.size() <= kMaxFramePayload.
void AppendFrame(std::string_view payload, std::string* out);

// A frame as it lies in the bytes: its checksum not yet checked.
struct Frame {
  std::string_view payload;
  uint64_t hash = 0;
  size_t size = 0;  // header and payload
  bool ChecksumMatches() const;
};

// The frame at `pos` of `all` if its header and payload lie within `all`
// and its length within kMaxFramePayload; nullopt otherwise.
std::optional<Frame> FrameAt(std::string_view all, size_t pos);

// The records of a journal read whole: the payloads of the intact frames
// (complete, checksum matching, and taken by `valid`) from the start, in
// order, up to the first that is not.
struct FrameScan {
  std::vector<std::string_view> payloads;  // views into the scanned bytes
  size_t end = 0;                          // where the last of them ends
  // npos if no intact frame follows `end`: what is there (if anything) is
  // a torn tail, an append cut by a crash. Else the offset of the first
  // intact frame after `end`: the bytes in between are damage.
  size_t resumes_at = std::string_view::npos;
  bool torn_tail() const { return resumes_at == std::string_view::npos; }
};
FrameScan ScanFrames(std::string_view all,
                     const std::function<bool(std::string_view)>& valid);

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_FRAMED_RECORDS_H_
