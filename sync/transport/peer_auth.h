// Peer authentication on the sync port: a shared cluster key, a mutual
// challenge-response handshake at connection start, and a MAC on every
// frame after it (docs/operations.md, "Security").
//
// Threat model. Whoever holds the cluster key is a member: it may send
// count deltas, key hand-offs and progress, as any node. Whoever does not
// hold it cannot open a connection that gets a single frame applied, cannot
// alter, reorder, replay or inject frames on a connection between members,
// and learns nothing about the key from watching or answering handshakes.
// Not covered: confidentiality (the sync port carries word hashes and topic
// counts in the clear), and one key holder impersonating another: with the
// key alone any holder may claim any node id (a claimed id is bound to its
// connection only, so it cannot speak for another id on that connection).
// Per-node certificates close that: with mutual TLS, a peer whose
// certificate names node ids (sync/transport/tls.h, PeerCertificateNodeIds) is
// refused if its hello claims another (TransportStats::identity_refused).
//
// Handshake (every message: a 12-byte header, magic "LTDH", u32 kind, u32
// body size, then the body; integers big-endian):
//   client -> server  kHello      client nonce (32) | client node id
//   server -> client  kChallenge  server nonce (32) | server proof (32) |
//                                 server node id
//   client -> server  kProof      client proof (32)
//   server -> client  kAccept     (empty)
// T = "latentd-sync-v1" | client nonce | server nonce | u16 len | client id
//     | u16 len | server id;
// server proof = HMAC-SHA256(key, "server" | T), client proof = ... "client"
// | T, session key = HMAC-SHA256(key, "session" | T). Each frame after the
// handshake is followed by HMAC-SHA256(session key, direction ('c' client
// to server, 's' back) | u64 sequence number of the frame in its direction
// | the 20-byte header | payload). Both nonces are fresh random bytes, so
// no proof or frame of an old connection is accepted on a new one.
//
// Thread-safety: LoadClusterKey and the free functions are thread-safe.
// A PeerHandshake or FrameMac is used by one connection's strand only.
#ifndef LATENTD_SYNC_TRANSPORT_PEER_AUTH_H_
#define LATENTD_SYNC_TRANSPORT_PEER_AUTH_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace latentd::sync {

inline constexpr uint32_t kHandshakeMagic = 0x4C544448;  // "LTDH"
inline constexpr size_t kHandshakeHeaderSize = 12;
inline constexpr size_t kMaxHandshakeBody = 1024;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMacBytes = 32;
inline constexpr size_t kMaxNodeIdBytes = 512;
inline constexpr size_t kMinClusterKeyBytes = 16;

// What one side of the sync port proves and claims.
struct PeerAuth {
  std::string key;      // the shared cluster key; never logged
  std::string node_id;  // this side's node id, bound into the proofs
  // With mutual TLS: refuse a peer whose certificate names no node id
  // (sync/transport/tls.h, kNodeIdUriPrefix). A peer whose certificate names
  // node ids is always refused if it claims another id (Connection).
  bool require_node_certificate = false;
};

inline constexpr size_t kMaxKeyFileBytes = 64 * 1024;

// Reads a cluster key file (through FileSystem::Default(),
// base/file_system.h): its bytes with trailing whitespace (a final newline)
// removed. kInvalidArgument naming the file if it cannot be read, is over
// kMaxKeyFileBytes, holds fewer than kMinClusterKeyBytes, or is readable
// or writable by users other than its owner and group ("chmod 600 FILE").
absl::StatusOr<std::string> LoadClusterKey(const std::string& path);

// HMAC-SHA256 of the concatenation of `parts` under `key` (OpenSSL).
std::string HmacSha256(std::string_view key,
                       std::initializer_list<std::string_view> parts);

// True if `a` and `b` are equal, in time that depends only on their lengths
// (never on where they first differ): for comparing secrets (MACs, tokens).
// Thread-safe.
bool ConstantTimeEqual(std::string_view a, std::string_view b);

enum HandshakeKind : uint32_t {
  kHello = 1,
  kChallenge = 2,
  kProof = 3,
  kAccept = 4,
};

struct HandshakeHeader {
  uint32_t kind = 0;
  uint32_t body_size = 0;
};

// A whole handshake message (header and body).
std::string EncodeHandshakeMessage(HandshakeKind kind, std::string_view body);
// Parses a header. kUnauthenticated for a wrong magic (the peer speaks no
// handshake: is it running with --insecure?), kInvalidArgument for an
// unknown kind or a body over kMaxHandshakeBody.
// REQUIRES: `data` points at kHandshakeHeaderSize readable bytes.
absl::StatusOr<HandshakeHeader> DecodeHandshakeHeader(const char* data);

// The handshake of one connection, without I/O: the connection sends what
// Start() and OnMessage() return and feeds it every message it reads.
class PeerHandshake {
 public:
  enum class Role { kClient, kServer };
  // `auth` must outlive this object.
  PeerHandshake(Role role, const PeerAuth* auth);

  // The first message to send: the client's kHello; "" for the server.
  std::string Start();
  // Takes one received message; returns the message to send next (maybe
  // "") or kUnauthenticated (a proof that does not verify: a wrong key) or
  // kInvalidArgument (malformed, out of order). After an error the
  // connection must close. REQUIRES: !done().
  absl::StatusOr<std::string> OnMessage(uint32_t kind, std::string_view body);

  // True once both sides are proven (client: kAccept read; server: kProof
  // verified).
  bool done() const { return done_; }
  Role role() const { return role_; }
  // The node id the peer proved the key with ("" before done()).
  const std::string& peer_id() const { return peer_id_; }
  // The session key for FrameMac (valid once done()).
  const std::string& session_key() const { return session_key_; }

 private:
  std::string Transcript() const;

  Role role_;
  const PeerAuth* auth_;
  bool done_ = false;
  uint32_t expect_;  // the next kind to read
  std::string client_nonce_, server_nonce_;
  std::string client_id_, server_id_;
  std::string peer_id_;
  std::string session_key_;
};

// Per-connection frame MACs with a sequence number per direction.
class FrameMac {
 public:
  FrameMac(std::string session_key, PeerHandshake::Role role);
  // The MAC to append to the next frame this side sends (`frame`: header
  // and payload).
  std::string Seal(std::string_view frame);
  // Checks the MAC of the next frame received; kUnauthenticated if it does
  // not verify (a forged, altered, replayed or reordered frame).
  absl::Status Verify(std::string_view header, std::string_view payload,
                      std::string_view mac);

 private:
  std::string key_;
  char send_dir_, recv_dir_;
  uint64_t send_seq_ = 0, recv_seq_ = 0;
};

}  // namespace latentd::sync

#endif  // LATENTD_SYNC_TRANSPORT_PEER_AUTH_H_
