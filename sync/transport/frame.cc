#include "sync/transport/frame.h"

#include "absl/strings/str_cat.h"

namespace latentd::sync {
void PutBigEndian32(uint32_t v, char* out) {
  for (int i = 3; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

uint32_t GetBigEndian32(const char* in) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

void EncodeFrameHeader(const FrameHeader& header, char* out) {
  PutBigEndian32(kFrameMagic, out);
  PutBigEndian32(header.payload_size, out + 4);
  PutBigEndian32(header.type, out + 8);
  PutBigEndian32(static_cast<uint32_t>(header.request_id >> 32), out + 12);
  PutBigEndian32(static_cast<uint32_t>(header.request_id), out + 16);
}

std::string EncodeFrame(uint32_t type, uint64_t request_id,
                        std::string_view payload) {
  std::string out(kFrameHeaderSize + payload.size(), '\0');
  FrameHeader header;
  header.payload_size = static_cast<uint32_t>(payload.size());
  header.type = type;
  header.request_id = request_id;
  EncodeFrameHeader(header, out.data());
  payload.copy(out.data() + kFrameHeaderSize, payload.size());
  return out;
}

absl::StatusOr<FrameHeader> DecodeFrameHeader(const char* data,
                                              uint32_t max_payload_bytes) {
  const uint32_t magic = GetBigEndian32(data);
  if (magic != kFrameMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame: bad magic 0x", absl::Hex(magic)));
  }
  FrameHeader header;
  header.payload_size = GetBigEndian32(data + 4);
  header.type = GetBigEndian32(data + 8);
  header.request_id = (static_cast<uint64_t>(GetBigEndian32(data + 12)) << 32) |
                      GetBigEndian32(data + 16);
  if (header.type == 0) {
    return absl::InvalidArgumentError("frame: message type 0");
  }
  if (header.payload_size > max_payload_bytes) {
    return absl::ResourceExhaustedError(
        absl::StrCat("frame: payload of ", header.payload_size,
                     " bytes exceeds the limit of ", max_payload_bytes));
  }
  return header;
}

std::string EncodeStatus(const absl::Status& status) {
  std::string out(4, '\0');
  PutBigEndian32(static_cast<uint32_t>(status.code()), out.data());
  const absl::string_view msg = status.message();
  out.append(msg.data(), msg.size());
  return out;
}

absl::Status DecodeStatus(std::string_view payload) {
  if (payload.size() < 4) return absl::InternalError("malformed error reply");
  const uint32_t code = GetBigEndian32(payload.data());
  absl::StatusCode c = static_cast<absl::StatusCode>(code);
  if (code == 0 || code > 16) c = absl::StatusCode::kUnknown;
  payload.remove_prefix(4);
  return absl::Status(c, absl::string_view(payload.data(), payload.size()));
}

}  // namespace latentd::sync
