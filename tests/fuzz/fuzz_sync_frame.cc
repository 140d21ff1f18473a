// libFuzzer harness: what a sync port reads before any handler runs — the
// frame header, an error reply's status, the cluster-key handshake's header
// and messages (both roles), the binding of the node id a peer proves to
// its certificate's, and a frame's MAC. Arbitrary bytes must give OK or
// an error, never a crash, and an accepted header must be in range.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fuzzer/FuzzedDataProvider.h"
#include "sync/transport/frame.h"
#include "sync/transport/internal/peer_identity.h"
#include "sync/transport/peer_auth.h"
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

// A client claiming a fuzzed node id runs the whole handshake with a
// server of the same key: the server sees exactly the id the client
// proved, and the certificate rule (internal::CheckPeerIdentity) admits it
// iff its certificate names that id, or names none and none is required.
void FuzzIdentity(FuzzedDataProvider* fdp) {
  const std::string key = "0123456789abcdef-cluster-key";
  const PeerAuth client_auth{key, fdp->ConsumeRandomLengthString(64)};
  const PeerAuth server_auth{key, "node-0"};
  PeerHandshake client(PeerHandshake::Role::kClient, &client_auth);
  PeerHandshake server(PeerHandshake::Role::kServer, &server_auth);
  std::string message = client.Start();
  PeerHandshake* to = &server;
  for (int i = 0; i < 4 && !message.empty(); ++i) {
    absl::StatusOr<HandshakeHeader> h = DecodeHandshakeHeader(message.data());
    LATENTD_FUZZ_CHECK(h.ok());
    absl::StatusOr<std::string> reply = to->OnMessage(
        h->kind, std::string_view(message).substr(kHandshakeHeaderSize));
    if (!reply.ok()) return;  // an id the handshake does not carry
    message = *reply;
    to = to == &server ? &client : &server;
  }
  LATENTD_FUZZ_CHECK(server.done() && client.done());
  LATENTD_FUZZ_CHECK(server.peer_id() == client_auth.node_id);
  LATENTD_FUZZ_CHECK(client.peer_id() == server_auth.node_id);
  std::vector<std::string> cert_ids;
  const int n = fdp->ConsumeIntegralInRange<int>(0, 3);
  bool named = false;
  for (int i = 0; i < n; ++i) {
    cert_ids.push_back(fdp->ConsumeBool() ? client_auth.node_id
                                          : fdp->ConsumeRandomLengthString(64));
    named = named || cert_ids.back() == client_auth.node_id;
  }
  const bool require = fdp->ConsumeBool();
  const bool admitted =
      internal::CheckPeerIdentity("peer", server.peer_id(), cert_ids, require)
          .ok();
  LATENTD_FUZZ_CHECK(admitted == (named || (cert_ids.empty() && !require)));
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

  FuzzIdentity(&fdp);

  // A frame MAC from random bytes never verifies.
  FrameMac mac(std::string(32, 'k'), PeerHandshake::Role::kServer);
  const std::string header = fdp.ConsumeBytesAsString(kFrameHeaderSize);
  const std::string tag = fdp.ConsumeBytesAsString(32);
  const std::string payload = fdp.ConsumeRemainingBytesAsString();
  LATENTD_FUZZ_CHECK(!mac.Verify(header, payload, tag).ok());
  return 0;
}
