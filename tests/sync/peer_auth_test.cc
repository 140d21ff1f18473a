// Peer authentication on the sync port (sync/transport/peer_auth.h): the
// handshake and frame MACs on their own, then through the transport: a peer
// with the wrong key, without a key, or sending garbage or a forged frame never
// gets a frame to the handler, and a peer with the right key does.
#include "sync/transport/peer_auth.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>

#include "absl/synchronization/mutex.h"
#include "base/file_system.h"
#include "base/testing/fault_injection_file_system.h"
#include "gtest/gtest.h"
#include "sync/transport/frame.h"
#include "sync/transport/transport.h"
#include "tests/sync/transport_test_util.h"

namespace latentd::sync {
namespace {

using Role = PeerHandshake::Role;

constexpr uint32_t kEcho = 7;

// Splits a stream of handshake messages into (kind, body) pairs.
struct Message {
  uint32_t kind;
  std::string body;
};
Message Split(const std::string& bytes) {
  absl::StatusOr<HandshakeHeader> h = DecodeHandshakeHeader(bytes.data());
  EXPECT_TRUE(h.ok()) << h.status();
  EXPECT_EQ(bytes.size(), kHandshakeHeaderSize + h->body_size);
  return {h->kind, bytes.substr(kHandshakeHeaderSize)};
}

TEST(PeerHandshake, SameKeyProvesBothSidesAndAgreesOnASessionKey) {
  const PeerAuth a{"0123456789abcdef-cluster", "node-a"};
  const PeerAuth b{"0123456789abcdef-cluster", "node-b"};
  PeerHandshake client(Role::kClient, &a), server(Role::kServer, &b);
  EXPECT_EQ(server.Start(), "");
  Message hello = Split(client.Start());
  auto challenge = server.OnMessage(hello.kind, hello.body);
  ASSERT_TRUE(challenge.ok()) << challenge.status();
  Message c = Split(*challenge);
  auto proof = client.OnMessage(c.kind, c.body);
  ASSERT_TRUE(proof.ok()) << proof.status();
  Message p = Split(*proof);
  auto accept = server.OnMessage(p.kind, p.body);
  ASSERT_TRUE(accept.ok()) << accept.status();
  EXPECT_TRUE(server.done());
  EXPECT_FALSE(client.done());
  Message acc = Split(*accept);
  auto last = client.OnMessage(acc.kind, acc.body);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(*last, "");
  EXPECT_TRUE(client.done());
  EXPECT_EQ(server.peer_id(), "node-a");
  EXPECT_EQ(client.peer_id(), "node-b");
  EXPECT_EQ(server.session_key(), client.session_key());
  EXPECT_EQ(server.session_key().size(), kMacBytes);

  // Frames: each direction verifies in order; a replay, a reorder or a
  // changed byte does not.
  FrameMac cm(client.session_key(), Role::kClient);
  FrameMac sm(server.session_key(), Role::kServer);
  const std::string f1 = EncodeFrame(kEcho, 1, "one");
  const std::string f2 = EncodeFrame(kEcho, 2, "two");
  const std::string m1 = cm.Seal(f1), m2 = cm.Seal(f2);
  const std::string_view v1(f1);
  EXPECT_TRUE(
      sm.Verify(v1.substr(0, kFrameHeaderSize), v1.substr(kFrameHeaderSize), m1)
          .ok());
  // Replaying frame 1 where frame 2 is expected fails.
  EXPECT_EQ(
      sm.Verify(v1.substr(0, kFrameHeaderSize), v1.substr(kFrameHeaderSize), m1)
          .code(),
      absl::StatusCode::kUnauthenticated);
  // A frame sent by the server cannot be reflected back to it.
  FrameMac sm2(server.session_key(), Role::kServer);
  const std::string reflected = sm2.Seal(f1);
  EXPECT_FALSE(sm2.Verify(v1.substr(0, kFrameHeaderSize),
                          v1.substr(kFrameHeaderSize), reflected)
                   .ok());
  std::string altered = f2;
  altered.back() ^= 1;
  FrameMac sm3(server.session_key(), Role::kServer);
  ASSERT_TRUE(sm3.Verify(v1.substr(0, kFrameHeaderSize),
                         v1.substr(kFrameHeaderSize), m1)
                  .ok());
  EXPECT_FALSE(sm3.Verify(std::string_view(altered).substr(0, kFrameHeaderSize),
                          std::string_view(altered).substr(kFrameHeaderSize),
                          m2)
                   .ok());
}

TEST(PeerHandshake, WrongKeyIsRefusedOnBothSides) {
  const PeerAuth good{"0123456789abcdef-cluster", "member"};
  const PeerAuth bad{"fedcba9876543210-another", "intruder"};
  {  // The intruder as client: it cannot check the server's proof.
    PeerHandshake client(Role::kClient, &bad), server(Role::kServer, &good);
    Message hello = Split(client.Start());
    auto challenge = server.OnMessage(hello.kind, hello.body);
    ASSERT_TRUE(challenge.ok());
    Message c = Split(*challenge);
    auto proof = client.OnMessage(c.kind, c.body);
    EXPECT_EQ(proof.status().code(), absl::StatusCode::kUnauthenticated);
    // Had it sent a proof anyway (any 32 bytes), the server refuses it.
    auto accept = server.OnMessage(kProof, std::string(kMacBytes, 'x'));
    EXPECT_EQ(accept.status().code(), absl::StatusCode::kUnauthenticated);
    EXPECT_NE(accept.status().message().find("intruder"), std::string::npos);
    EXPECT_FALSE(server.done());
  }
  {  // The intruder as server: the member client refuses it.
    PeerHandshake client(Role::kClient, &good), server(Role::kServer, &bad);
    Message hello = Split(client.Start());
    auto challenge = server.OnMessage(hello.kind, hello.body);
    ASSERT_TRUE(challenge.ok());
    Message c = Split(*challenge);
    EXPECT_EQ(client.OnMessage(c.kind, c.body).status().code(),
              absl::StatusCode::kUnauthenticated);
    EXPECT_FALSE(client.done());
  }
}

// Arbitrary bytes as handshake messages, in any order: errors, never a
// crash and never done().
TEST(PeerHandshake, GarbageNeverCrashesNorAuthenticates) {
  const PeerAuth auth{"0123456789abcdef-cluster", "node"};
  std::mt19937_64 rng(16);
  for (int iter = 0; iter < 2000; ++iter) {
    PeerHandshake h(iter % 2 ? Role::kClient : Role::kServer, &auth);
    h.Start();
    for (int step = 0; step < 4 && !h.done(); ++step) {
      std::string bytes(rng() % 80, '\0');
      for (char& ch : bytes) ch = static_cast<char>(rng());
      if (bytes.size() >= kHandshakeHeaderSize) {
        (void)DecodeHandshakeHeader(bytes.data());
      }
      const uint32_t kind = 1 + static_cast<uint32_t>(rng() % 4);
      if (!h.OnMessage(kind, bytes).ok()) break;
    }
    EXPECT_FALSE(h.done() && h.role() == Role::kServer) << iter;
  }
  std::string wrong_magic = EncodeFrame(kEcho, 1, "");
  EXPECT_EQ(DecodeHandshakeHeader(wrong_magic.data()).status().code(),
            absl::StatusCode::kUnauthenticated);
  std::string huge = EncodeHandshakeMessage(kHello, "");
  huge[8] = 0x7f;
  EXPECT_EQ(DecodeHandshakeHeader(huge.data()).status().code(),
            absl::StatusCode::kInvalidArgument);
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/latentd_peer_auth_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf " + path_).c_str()); }
  std::string Write(const std::string& name, const std::string& text,
                    mode_t mode) {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    ::chmod(p.c_str(), mode);
    return p;
  }

 private:
  std::string path_;
};

TEST(LoadClusterKey, ReadsTrimsAndRefusesWeakOrExposedKeys) {
  TempDir dir;
  auto key = LoadClusterKey(
      dir.Write("good", "0123456789abcdef0123456789abcdef\n", 0600));
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key, "0123456789abcdef0123456789abcdef");
  auto shortk = LoadClusterKey(dir.Write("short", "abc\n", 0600));
  EXPECT_EQ(shortk.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(shortk.status().message().find("at least"), std::string::npos);
  auto open = LoadClusterKey(
      dir.Write("open", "0123456789abcdef0123456789abcdef\n", 0644));
  EXPECT_NE(open.status().message().find("chmod 600"), std::string::npos)
      << open.status();
  auto missing = LoadClusterKey("/nonexistent/key");
  EXPECT_NE(missing.status().message().find("/nonexistent/key"),
            std::string::npos);
  auto huge = LoadClusterKey(
      dir.Write("huge", std::string(kMaxKeyFileBytes + 1, 'k'), 0600));
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kInvalidArgument);
}

// The key is read through the FileSystem seam: a failing disk gives a clear
// error naming the file, and the key reads again once the fault clears.
TEST(LoadClusterKey, ReadsThroughTheFileSystemSeam) {
  TempDir dir;
  const std::string path =
      dir.Write("key", "0123456789abcdef0123456789abcdef\n", 0600);
  FaultInjectionFileSystem faults;
  ScopedDefaultFileSystem use(&faults);
  faults.Inject({.op = FileOp::kRead, .path_glob = "*/key", .error = EIO});
  auto failed = LoadClusterKey(path);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(failed.status().message().find(path), std::string::npos)
      << failed.status();
  EXPECT_NE(failed.status().message().find("injected fault"), std::string::npos)
      << failed.status();
  EXPECT_GE(faults.failures(), 1);
  faults.Clear();
  auto key = LoadClusterKey(path);
  ASSERT_TRUE(key.ok()) << key.status();
  EXPECT_EQ(*key, "0123456789abcdef0123456789abcdef");
}

// ---------------------------------------------------------------- transport

using testing::ClosedByPeer;
using testing::LogSink;

class AuthTransportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ServerOptions o;
    o.frame_timeout = absl::Milliseconds(500);
    o.auth = std::make_shared<PeerAuth>(PeerAuth{kKey, "server-node"});
    o.log = log_.fn();
    auto server = Server::Start(&loop_, o, [this](Frame f, Responder r) {
      handled_.fetch_add(1);
      r.Reply(f.peer_id + ":" + f.payload);
    });
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
  }
  ClientOptions Opts(std::shared_ptr<const PeerAuth> auth) {
    ClientOptions o;
    o.port = server_->port();
    o.auth = std::move(auth);
    o.log = log_.fn();
    return o;
  }
  int RawConnect() { return testing::RawConnect(server_->port()); }
  static std::string ReadExactly(int fd, size_t n) {
    std::string out(n, '\0');
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::read(fd, out.data() + got, n - got);
      if (r <= 0) break;
      got += static_cast<size_t>(r);
    }
    out.resize(got);
    return out;
  }
  static Message ReadMessage(int fd) {
    std::string header = ReadExactly(fd, kHandshakeHeaderSize);
    if (header.size() != kHandshakeHeaderSize) return {0, ""};
    auto h = DecodeHandshakeHeader(header.data());
    if (!h.ok()) return {0, ""};
    return {h->kind, ReadExactly(fd, h->body_size)};
  }
  static void WriteAll(int fd, const std::string& bytes) {
    ASSERT_EQ(::write(fd, bytes.data(), bytes.size()),
              static_cast<ssize_t>(bytes.size()));
  }

  static constexpr const char* kKey = "the-cluster-key-0123456789";
  LogSink log_;
  EventLoop loop_{1};
  std::unique_ptr<Server> server_;
  std::atomic<int> handled_{0};
};

TEST_F(AuthTransportTest, RightKeyIsServedAndNamedAsItsNode) {
  Client client(&loop_,
                Opts(std::make_shared<PeerAuth>(PeerAuth{kKey, "node-7"})));
  for (int i = 0; i < 3; ++i) {
    auto reply = client.CallSync(kEcho, "hi", absl::Seconds(2));
    ASSERT_TRUE(reply.ok()) << reply.status();
    EXPECT_EQ(reply->payload, "node-7:hi");
  }
  EXPECT_EQ(handled_.load(), 3);
}

TEST_F(AuthTransportTest, WrongKeyOrNoKeyIsRefusedAndNothingIsHandled) {
  Client wrong(&loop_, Opts(std::make_shared<PeerAuth>(
                           PeerAuth{"not-the-cluster-key-xyz", "intruder"})));
  auto r1 = wrong.CallSync(kEcho, "delta", absl::Seconds(2));
  EXPECT_EQ(r1.status().code(), absl::StatusCode::kUnavailable) << r1.status();
  EXPECT_NE(r1.status().message().find("did not prove the cluster key"),
            std::string::npos)
      << r1.status();
  Client insecure(&loop_, Opts(nullptr));
  auto r2 = insecure.CallSync(kEcho, "delta", absl::Seconds(2));
  EXPECT_FALSE(r2.ok());
  EXPECT_EQ(handled_.load(), 0);
  EXPECT_TRUE(log_.WaitFor("did not start the cluster-key handshake"));
  // The server goes on serving members.
  Client good(&loop_, Opts(std::make_shared<PeerAuth>(PeerAuth{kKey, "m"})));
  EXPECT_TRUE(good.CallSync(kEcho, "x", absl::Seconds(2)).ok());
  EXPECT_EQ(handled_.load(), 1);
}

// A raw peer that lies in its proof, sends garbage, stalls, or, once
// authenticated, sends a frame with a wrong MAC: its connection closes and
// the handler never sees a frame.
TEST_F(AuthTransportTest, ForgedProofsGarbageAndForgedFramesAreNeverApplied) {
  {  // garbage instead of a hello
    int fd = RawConnect();
    WriteAll(fd, "\x01\x02 garbage garbage garbage garbage");
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // a plain frame, as an --insecure node would send
    int fd = RawConnect();
    WriteAll(fd, EncodeFrame(kEcho, 1, "unauthenticated delta"));
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // nothing at all: the handshake times out (frame_timeout, 500 ms)
    int fd = RawConnect();
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // a made-up proof
    const PeerAuth fake{"guessed-key-guessed-key", "intruder"};
    PeerHandshake h(Role::kClient, &fake);
    int fd = RawConnect();
    WriteAll(fd, h.Start());
    Message c = ReadMessage(fd);
    EXPECT_EQ(c.kind, kChallenge);
    WriteAll(fd, EncodeHandshakeMessage(kProof, std::string(kMacBytes, 'p')));
    WriteAll(fd, EncodeFrame(kEcho, 1, "forged") + std::string(kMacBytes, 0));
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // authenticated, then a frame whose MAC is wrong
    const PeerAuth member{kKey, "member"};
    PeerHandshake h(Role::kClient, &member);
    int fd = RawConnect();
    WriteAll(fd, h.Start());
    Message c = ReadMessage(fd);
    auto proof = h.OnMessage(c.kind, c.body);
    ASSERT_TRUE(proof.ok()) << proof.status();
    WriteAll(fd, *proof);
    Message a = ReadMessage(fd);
    ASSERT_TRUE(h.OnMessage(a.kind, a.body).ok());
    ASSERT_TRUE(h.done());
    FrameMac mac(h.session_key(), Role::kClient);
    const std::string frame = EncodeFrame(kEcho, 1, "real");
    std::string forged = EncodeFrame(kEcho, 2, "forged");
    WriteAll(fd, frame + mac.Seal(frame));  // a good frame: served
    std::string reply = ReadExactly(fd, kFrameHeaderSize);
    ASSERT_EQ(reply.size(), kFrameHeaderSize);
    WriteAll(fd, forged + mac.Seal(frame));  // the MAC of another frame
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  EXPECT_EQ(handled_.load(), 1);  // only the real frame
  EXPECT_TRUE(log_.WaitFor("failed its MAC"));
  EXPECT_TRUE(log_.WaitFor("handshake not finished"));
  EXPECT_TRUE(log_.WaitFor("claiming to be 'intruder'"));
  Client good(&loop_, Opts(std::make_shared<PeerAuth>(PeerAuth{kKey, "m"})));
  EXPECT_TRUE(good.CallSync(kEcho, "x", absl::Seconds(2)).ok());
}

}  // namespace
}  // namespace latentd::sync
