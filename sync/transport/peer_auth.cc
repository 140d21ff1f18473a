#include "sync/transport/peer_auth.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/check.h"
#include "base/file_util.h"
#include "sync/transport/frame.h"

namespace latentd::sync {
namespace {

std::string U16Prefixed(std::string_view s) {
  std::string out(2, '\0');
  out[0] = static_cast<char>((s.size() >> 8) & 0xff);
  out[1] = static_cast<char>(s.size() & 0xff);
  out.append(s.data(), s.size());
  return out;
}

std::string RandomNonce() {
  std::string nonce(kNonceBytes, '\0');
  // RAND_bytes fails only without an entropy source; a fixed nonce would
  // make old proofs replayable, so that is a programmer/platform error.
  LATENTD_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()),
                           static_cast<int>(nonce.size())) == 1);
  return nonce;
}

const char* KindName(uint32_t kind) {
  switch (kind) {
    case kHello:
      return "hello";
    case kChallenge:
      return "challenge";
    case kProof:
      return "proof";
    case kAccept:
      return "accept";
    default:
      return "unknown";
  }
}

absl::Status CheckNodeId(std::string_view id) {
  if (id.size() > kMaxNodeIdBytes) {
    return absl::InvalidArgumentError(absl::StrCat("handshake: node id of ",
                                                   id.size(), " bytes (limit ",
                                                   kMaxNodeIdBytes, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> LoadClusterKey(const std::string& path) {
  // The seam has no permission bits: those come from stat(2) itself.
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster key file ", path, ": ", std::strerror(errno)));
  }
  if ((st.st_mode & S_IRWXO) != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cluster key file ", path,
        " is accessible by other users; restrict it (chmod 600 ", path, ")"));
  }
  // The bytes through the FileSystem seam (base/file_system.h), so tests
  // can fail the read; a key file is small, a huge one is no key.
  absl::StatusOr<std::string> read = ReadFileToString(path, kMaxKeyFileBytes);
  if (!read.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster key file ", path,
                     ": cannot be read: ", read.status().message()));
  }
  std::string key = *std::move(read);
  while (!key.empty() &&
         absl::ascii_isspace(static_cast<unsigned char>(key.back()))) {
    key.pop_back();
  }
  if (key.size() < kMinClusterKeyBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster key file ", path, " holds ", key.size(),
                     " bytes; a key needs at least ", kMinClusterKeyBytes,
                     " (make one with: openssl rand -hex 32 > ", path, ")"));
  }
  return key;
}

std::string HmacSha256(std::string_view key,
                       std::initializer_list<std::string_view> parts) {
  // EVP_MAC_fetch is thread-safe; one fetched HMAC serves every call.
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  LATENTD_CHECK(mac != nullptr);
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(mac);
  LATENTD_CHECK(ctx != nullptr);
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {OSSL_PARAM_construct_utf8_string("digest", digest, 0),
                         OSSL_PARAM_construct_end()};
  LATENTD_CHECK(EVP_MAC_init(ctx,
                             reinterpret_cast<const unsigned char*>(key.data()),
                             key.size(), params) == 1);
  for (std::string_view p : parts) {
    LATENTD_CHECK(
        EVP_MAC_update(ctx, reinterpret_cast<const unsigned char*>(p.data()),
                       p.size()) == 1);
  }
  std::string out(kMacBytes, '\0');
  size_t n = 0;
  LATENTD_CHECK(EVP_MAC_final(ctx, reinterpret_cast<unsigned char*>(out.data()),
                              &n, out.size()) == 1);
  EVP_MAC_CTX_free(ctx);
  out.resize(n);
  return out;
}

std::string EncodeHandshakeMessage(HandshakeKind kind, std::string_view body) {
  std::string out(kHandshakeHeaderSize, '\0');
  PutBigEndian32(kHandshakeMagic, out.data());
  PutBigEndian32(kind, out.data() + 4);
  PutBigEndian32(static_cast<uint32_t>(body.size()), out.data() + 8);
  out.append(body.data(), body.size());
  return out;
}

absl::StatusOr<HandshakeHeader> DecodeHandshakeHeader(const char* data) {
  const uint32_t magic = GetBigEndian32(data);
  if (magic != kHandshakeMagic) {
    return absl::UnauthenticatedError(
        absl::StrCat("peer did not start the cluster-key handshake (got 0x",
                     absl::Hex(magic), "; is it running with --insecure?)"));
  }
  HandshakeHeader h;
  h.kind = GetBigEndian32(data + 4);
  h.body_size = GetBigEndian32(data + 8);
  if (h.kind < kHello || h.kind > kAccept) {
    return absl::InvalidArgumentError(
        absl::StrCat("handshake: unknown message kind ", h.kind));
  }
  if (h.body_size > kMaxHandshakeBody) {
    return absl::InvalidArgumentError(
        absl::StrCat("handshake: message of ", h.body_size,
                     " bytes exceeds the limit of ", kMaxHandshakeBody));
  }
  return h;
}

PeerHandshake::PeerHandshake(Role role, const PeerAuth* auth)
    : role_(role),
      auth_(auth),
      expect_(role == Role::kClient ? kChallenge : kHello) {}

std::string PeerHandshake::Transcript() const {
  return absl::StrCat("latentd-sync-v1", client_nonce_, server_nonce_,
                      U16Prefixed(client_id_), U16Prefixed(server_id_));
}

std::string PeerHandshake::Start() {
  if (role_ == Role::kServer) return std::string();
  client_nonce_ = RandomNonce();
  client_id_ = auth_->node_id.substr(0, kMaxNodeIdBytes);
  return EncodeHandshakeMessage(kHello, client_nonce_ + client_id_);
}

absl::StatusOr<std::string> PeerHandshake::OnMessage(uint32_t kind,
                                                     std::string_view body) {
  if (done_ || kind != expect_) {
    return absl::InvalidArgumentError(
        absl::StrCat("handshake: got a ", KindName(kind), " message, expected ",
                     done_ ? "none" : KindName(expect_)));
  }
  switch (kind) {
    case kHello: {  // server
      if (body.size() < kNonceBytes) {
        return absl::InvalidArgumentError("handshake: hello too short");
      }
      client_nonce_ = std::string(body.substr(0, kNonceBytes));
      client_id_ = std::string(body.substr(kNonceBytes));
      if (absl::Status s = CheckNodeId(client_id_); !s.ok()) return s;
      server_nonce_ = RandomNonce();
      server_id_ = auth_->node_id.substr(0, kMaxNodeIdBytes);
      const std::string t = Transcript();
      expect_ = kProof;
      return EncodeHandshakeMessage(
          kChallenge,
          absl::StrCat(server_nonce_, HmacSha256(auth_->key, {"server", t}),
                       server_id_));
    }
    case kChallenge: {  // client
      if (body.size() < kNonceBytes + kMacBytes) {
        return absl::InvalidArgumentError("handshake: challenge too short");
      }
      server_nonce_ = std::string(body.substr(0, kNonceBytes));
      const std::string_view proof = body.substr(kNonceBytes, kMacBytes);
      server_id_ = std::string(body.substr(kNonceBytes + kMacBytes));
      if (absl::Status s = CheckNodeId(server_id_); !s.ok()) return s;
      const std::string t = Transcript();
      if (!ConstantTimeEqual(proof, HmacSha256(auth_->key, {"server", t}))) {
        return absl::UnauthenticatedError(absl::StrCat(
            "peer '", server_id_,
            "' did not prove the cluster key (a different --cluster-key?)"));
      }
      expect_ = kAccept;
      return EncodeHandshakeMessage(kProof,
                                    HmacSha256(auth_->key, {"client", t}));
    }
    case kProof: {  // server
      const std::string t = Transcript();
      if (!ConstantTimeEqual(body, HmacSha256(auth_->key, {"client", t}))) {
        return absl::UnauthenticatedError(absl::StrCat(
            "peer claiming to be '", client_id_,
            "' did not prove the cluster key (a different --cluster-key?)"));
      }
      session_key_ = HmacSha256(auth_->key, {"session", t});
      peer_id_ = client_id_;
      done_ = true;
      return EncodeHandshakeMessage(kAccept, "");
    }
    case kAccept: {  // client
      if (!body.empty()) {
        return absl::InvalidArgumentError("handshake: accept with a body");
      }
      session_key_ = HmacSha256(auth_->key, {"session", Transcript()});
      peer_id_ = server_id_;
      done_ = true;
      return std::string();
    }
  }
  return absl::InvalidArgumentError("handshake: unknown message kind");
}

FrameMac::FrameMac(std::string session_key, PeerHandshake::Role role)
    : key_(std::move(session_key)),
      send_dir_(role == PeerHandshake::Role::kClient ? 'c' : 's'),
      recv_dir_(role == PeerHandshake::Role::kClient ? 's' : 'c') {}

namespace {
std::string SeqBytes(char dir, uint64_t seq) {
  std::string out(9, '\0');
  out[0] = dir;
  PutBigEndian32(static_cast<uint32_t>(seq >> 32), out.data() + 1);
  PutBigEndian32(static_cast<uint32_t>(seq), out.data() + 5);
  return out;
}
}  // namespace

std::string FrameMac::Seal(std::string_view frame) {
  return HmacSha256(key_, {SeqBytes(send_dir_, send_seq_++), frame});
}

absl::Status FrameMac::Verify(std::string_view header, std::string_view payload,
                              std::string_view mac) {
  const uint64_t seq = recv_seq_++;
  if (!ConstantTimeEqual(
          mac, HmacSha256(key_, {SeqBytes(recv_dir_, seq), header, payload}))) {
    return absl::UnauthenticatedError(absl::StrCat(
        "frame ", seq, " failed its MAC (forged, altered or replayed)"));
  }
  return absl::OkStatus();
}

bool ConstantTimeEqual(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace latentd::sync
