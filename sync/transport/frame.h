// Frames: the unit the sync transport sends over TCP.
//
// Wire layout (all integers big-endian), a fixed 20-byte header then payload:
//
//   offset 0   u32  magic        kFrameMagic ("LTD1"); anything else is garbage
//   offset 4   u32  payload size bytes that follow the header; must be
//                                <= the receiver's max frame size
//   offset 8   u32  type         message type; see below
//   offset 12  u64  request id   chosen by the caller, echoed in the reply
//   offset 20  ...  payload      protobuf bytes (opaque to the transport)
//
// Types: a request carries an application type in [1, kMaxRequestType]. Its
// reply carries the same type with kReplyBit set, or exactly kErrorReplyType
// when the handler failed (payload = EncodeStatus()).
//
// Thread-safety: pure functions and value types.
#ifndef LATENTD_SYNC_TRANSPORT_FRAME_H_
#define LATENTD_SYNC_TRANSPORT_FRAME_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd::sync {

inline constexpr uint32_t kFrameMagic = 0x4C544431;  // "LTD1"
inline constexpr size_t kFrameHeaderSize = 20;
inline constexpr uint32_t kReplyBit = 0x80000000u;
inline constexpr uint32_t kMaxRequestType = kReplyBit - 1;
inline constexpr uint32_t kErrorReplyType = kReplyBit;  // reply to type 0
// Default largest payload a peer accepts (64 MiB).
inline constexpr uint32_t kDefaultMaxFrameBytes = 64u << 20;

struct FrameHeader {
  uint32_t payload_size = 0;
  uint32_t type = 0;
  uint64_t request_id = 0;
};

struct Frame {
  uint32_t type = 0;
  uint64_t request_id = 0;
  std::string payload;
  // Set by a receiving connection that runs the cluster-key handshake
  // (sync/transport/peer_auth.h): the node id the sender proved the key with.
  // Empty on a connection without authentication. Not on the wire per frame.
  std::string peer_id;
};

// Big-endian u32 to and from 4 bytes (the wire formats' integers).
void PutBigEndian32(uint32_t v, char* out);
uint32_t GetBigEndian32(const char* in);

// Writes the 20-byte header for `header` into `out`.
void EncodeFrameHeader(const FrameHeader& header, char* out);

// Header + payload as one byte string.
std::string EncodeFrame(uint32_t type, uint64_t request_id,
                        std::string_view payload);

// Parses and validates a header. kInvalidArgument for a wrong magic or a
// type 0, kResourceExhausted for a payload larger than `max_payload_bytes`.
// REQUIRES: `data` points at kFrameHeaderSize readable bytes.
absl::StatusOr<FrameHeader> DecodeFrameHeader(const char* data,
                                              uint32_t max_payload_bytes);

// The payload of an error reply: the status code (u32) then its message.
std::string EncodeStatus(const absl::Status& status);
// Inverse of EncodeStatus; a payload too short to hold a code becomes
// kInternal ("malformed error reply"). Never returns OK for a non-OK input.
absl::Status DecodeStatus(std::string_view payload);

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_TRANSPORT_FRAME_H_
