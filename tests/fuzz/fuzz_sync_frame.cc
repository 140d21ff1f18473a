// libFuzzer harness: what a sync port reads before any handler runs — the
// frame header, an error reply's status, the cluster-key handshake's header
// and messages (both roles), and a frame's MAC. Arbitrary bytes must give
// OK or an error, never a crash, and an accepted header must be in range.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "fuzzer/FuzzedDataProvider.h"
#include "sync/frame.h"
#include "sync/peer_auth.h"
#include "tests/fuzz/fuzz_util.h"

namespace latentd::sync {
namespace {

constexpr uint32_t kMaxPayload = 1 << 20;

void FuzzFrameHeader(std::string_view bytes) {
  std::string header(bytes.substr(0, kFrameHeaderSize));
  header.resize(kFrameHeaderSize, '\0');
  absl::StatusOr<FrameHeader> h = DecodeFrameHeader(header.data(), kMaxPayload);
  if (h.ok()) {
    LATENTD_FUZZ_CHECK(h->type != 0);
    LATENTD_FUZZ_CHECK(h->payload_size <= kMaxPayload);
    // What was accepted encodes back to the same bytes.
    char again[kFrameHeaderSize];
    EncodeFrameHeader(*h, again);
    LATENTD_FUZZ_CHECK(std::string_view(again, kFrameHeaderSize) == header);
  }
}

// Feeds the handshake messages in `fdp` to one side until it fails or is
// done; a side never completes without a proof made with the key.
void FuzzHandshake(PeerHandshake::Role role, FuzzedDataProvider* fdp) {
  static const PeerAuth auth{"0123456789abcdef-cluster-key", "node-0"};
  PeerHandshake side(role, &auth);
  (void)side.Start();
  for (int i = 0; i < 4 && fdp->remaining_bytes() > 0 && !side.done(); ++i) {
    std::string message = fdp->ConsumeRandomLengthString(256);
    message.resize(std::max(message.size(), kHandshakeHeaderSize), '\0');
    absl::StatusOr<HandshakeHeader> h = DecodeHandshakeHeader(message.data());
    uint32_t kind = fdp->ConsumeIntegralInRange<uint32_t>(0, 5);
    if (h.ok()) {
      LATENTD_FUZZ_CHECK(h->body_size <= kMaxHandshakeBody);
      kind = h->kind;
    }
    absl::StatusOr<std::string> reply = side.OnMessage(
        kind, std::string_view(message).substr(kHandshakeHeaderSize));
    if (!reply.ok()) break;
  }
  // Random bytes cannot carry an HMAC under a key they never saw.
  LATENTD_FUZZ_CHECK(!side.done());
}

}  // namespace
}  // namespace latentd::sync

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace latentd::sync;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  FuzzFrameHeader(bytes);
  // An error reply's payload: never OK.
  LATENTD_FUZZ_CHECK(!DecodeStatus(bytes).ok());

  FuzzedDataProvider fdp(data, size);
  const bool server = fdp.ConsumeBool();
  FuzzHandshake(
      server ? PeerHandshake::Role::kServer : PeerHandshake::Role::kClient,
      &fdp);

  // A frame MAC from random bytes never verifies.
  FrameMac mac(std::string(32, 'k'), PeerHandshake::Role::kServer);
  const std::string header = fdp.ConsumeBytesAsString(kFrameHeaderSize);
  const std::string tag = fdp.ConsumeBytesAsString(32);
  const std::string payload = fdp.ConsumeRemainingBytesAsString();
  LATENTD_FUZZ_CHECK(!mac.Verify(header, payload, tag).ok());
  return 0;
}
