// Cluster fault and consistency tests (label cluster): 3 in-process nodes
// on 127.0.0.1 with a private redis-server, over the first 600 documents of
// the test corpus (about 116k tokens; node i gets documents i, i+3, ...),
// K = 20.
//
//   SspBound...       one node slowed down; no node ever starts a sweep
//                     more than s ahead of the slowest (async as control)
//   KilledPeer...     a node dies mid-run; the others report it unavailable
//                     and finish their sweeps (ssp:1, so a hang is possible)
//   BadFrames...      garbage, truncated and oversized frames to a node's
//                     port close those connections and are logged; the
//                     cluster trains on and ends exact
//   WrongKeyPeers...  a delta batch from a peer with a wrong key, no key,
//                     or the key but another node's name, is refused and
//                     the owner's counts are unchanged; the same batch from
//                     a key holder in its own name is applied
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "sync/transport/frame.h"
#include "tests/cluster/cluster_test_util.h"

namespace latentd {
namespace {

// Watches sweeps start and end across nodes; records the largest lead of a
// starting sweep over the slowest node's current sweep.
struct SweepTracker {
  absl::Mutex mu;
  std::map<std::string, uint64_t> completed;
  uint64_t max_lead = 0;
  void Install(ClusterNodeOptions* o, int nodes) {
    for (int i = 0; i < nodes; ++i) completed[absl::StrCat("node", i)] = 0;
    o->on_sweep_start = [this](const std::string&, uint64_t t) {
      absl::MutexLock l(&mu);
      uint64_t slowest = UINT64_MAX;
      for (const auto& [id, c] : completed) slowest = std::min(slowest, c);
      // The slowest node is in sweep slowest + 1.
      if (t > slowest + 1) max_lead = std::max(max_lead, t - (slowest + 1));
    };
    o->on_sweep_end = [this](const std::string& node, uint64_t t) {
      absl::MutexLock l(&mu);
      completed[node] = t;
    };
  }
};

uint64_t RunWithSlowNode(ClusterTest* test, const std::string& consistency,
                         double* fast_wait_seconds) {
  ClusterNodeOptions base = test->Base(consistency);
  base.max_docs = 600;
  SweepTracker tracker;
  tracker.Install(&base, 3);
  auto cluster = LocalCluster::Start(
      base, 3,
      {absl::ZeroDuration(), absl::ZeroDuration(), absl::Milliseconds(150)});
  EXPECT_TRUE(cluster.ok()) << cluster.status();
  if (!cluster.ok()) return 0;
  auto run = (*cluster)->RunSweeps(10);
  EXPECT_TRUE(run.ok()) << run.status();
  *fast_wait_seconds = 0;
  for (int i = 0; i < 2; ++i) {
    for (const auto& r : run->reports[i]) *fast_wait_seconds += r.wait_seconds;
  }
  absl::MutexLock l(&tracker.mu);
  return tracker.max_lead;
}

TEST_F(ClusterTest, SspBoundHoldsWithASlowNode) {
  double waited = 0;
  const uint64_t lead = RunWithSlowNode(this, "ssp:1", &waited);
  std::printf("ssp:1: largest lead %llu sweeps, fast nodes waited %.2f s\n",
              static_cast<unsigned long long>(lead), waited);
  EXPECT_LE(lead, 1u);
  EXPECT_GT(waited, 0.3);  // the bound was actually exercised
  const uint64_t bsp_lead = RunWithSlowNode(this, "bsp", &waited);
  EXPECT_EQ(bsp_lead, 0u);
  // Control: without a bound the fast nodes run ahead.
  const uint64_t async_lead = RunWithSlowNode(this, "async", &waited);
  std::printf("async: largest lead %llu sweeps\n",
              static_cast<unsigned long long>(async_lead));
  EXPECT_GT(async_lead, 1u);
}

TEST_F(ClusterTest, KilledPeerDoesNotStopTheOthers) {
  ClusterNodeOptions base = Base("ssp:1");
  base.max_docs = 600;
  base.call_timeout = absl::Milliseconds(500);
  base.dead_after = absl::Seconds(1);
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto& nodes = (*cluster)->nodes();
  absl::Notification done;
  std::vector<absl::Status> status(2);
  std::vector<uint64_t> sweeps(2, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&, i] {
      for (int s = 0; s < 12; ++s) {
        auto r = nodes[i]->Sweep();
        if (!r.ok()) {
          status[i] = r.status();
          break;
        }
        sweeps[i] = r->sweep;
      }
    });
  }
  // node2 runs two sweeps, then dies: its server, synchronizer and
  // heartbeats stop without a goodbye (as under SIGKILL, its sockets close
  // and nothing answers any more).
  for (int s = 0; s < 2; ++s) ASSERT_TRUE(nodes[2]->Sweep().ok());
  nodes[2]->Stop();
  std::thread watcher([&] {
    for (auto& t : threads) t.join();
    done.Notify();
  });
  if (!done.WaitForNotificationWithTimeout(absl::Seconds(120))) {
    ADD_FAILURE() << "surviving nodes hung";
    std::_Exit(1);
  }
  watcher.join();
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(status[i].ok()) << status[i];
    EXPECT_EQ(sweeps[i], 12u);
    const auto down = nodes[i]->UnavailablePeers();
    EXPECT_EQ(down, std::vector<std::string>{"node2"});
  }
  EXPECT_GE(log_.Count("node2 unavailable"), 2);
}

int RawConnect(const std::string& address) {
  const size_t colon = address.rfind(':');
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port =
      htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  return fd;
}

// True if the peer closed `fd` within 3 s.
bool ClosedByPeer(int fd) {
  timeval tv{3, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  char buf[256];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n == 0) return true;
    if (n < 0) return errno != EAGAIN && errno != EWOULDBLOCK;
  }
}

TEST_F(ClusterTest, BadFramesAreRejectedAndTheNodeServesOn) {
  ClusterNodeOptions base = Base("async");
  base.max_docs = 600;
  // The frame decoder itself, as an --insecure cluster runs it (with a key,
  // none of these bytes gets past the handshake: WrongKeyPeers... below).
  base.cluster_key.clear();
  base.insecure = true;
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const std::string target = (*cluster)->nodes()[0]->address();
  absl::StatusOr<LocalClusterRun> run;
  std::thread trainer([&] { run = (*cluster)->RunSweeps(10); });

  {  // garbage
    int fd = RawConnect(target);
    const std::string junk(64, '\x5a');
    ASSERT_EQ(::write(fd, junk.data(), junk.size()), 64);
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // truncated: a header promising 1000 bytes, 10 sent, then EOF
    int fd = RawConnect(target);
    const std::string f = sync::EncodeFrame(1, 1, std::string(1000, 'x'));
    ASSERT_GT(::write(fd, f.data(), sync::kFrameHeaderSize + 10), 0);
    ::shutdown(fd, SHUT_WR);
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // oversized: a header announcing 1 GiB (the limit is 64 MiB)
    int fd = RawConnect(target);
    char header[sync::kFrameHeaderSize];
    sync::EncodeFrameHeader({1u << 30, 1, 1}, header);
    ASSERT_EQ(::write(fd, header, sizeof(header)),
              static_cast<ssize_t>(sizeof(header)));
    EXPECT_TRUE(ClosedByPeer(fd));
    ::close(fd);
  }
  {  // a well-formed frame whose payload is not a DeltaBatch: an error
     // reply, and the connection stays usable
    sync::EventLoop loop(1);
    sync::ClientOptions co;
    co.port =
        static_cast<uint16_t>(std::stoi(target.substr(target.rfind(':') + 1)));
    sync::Client client(&loop, co);
    auto r = client.CallSync(sync::MESSAGE_TYPE_DELTA_BATCH, "\xff\xff\xff",
                             absl::Seconds(5));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
    sync::DeltaBatch bad;  // topic out of range
    bad.set_node_id("intruder");
    bad.set_sequence(1);
    bad.set_dimension(20);
    bad.set_changes_only(true);
    bad.add_keys(42);
    bad.mutable_deltas()->add_sizes(1);
    bad.mutable_deltas()->add_topics(99);
    bad.mutable_deltas()->add_counts(5);
    r = client.CallSync(sync::MESSAGE_TYPE_DELTA_BATCH, bad.SerializeAsString(),
                        absl::Seconds(5));
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  }
  trainer.join();
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE((*cluster)->Drain().ok());
  ExpectExact(**cluster);
  EXPECT_EQ(log_.Count("bad magic"), 1);
  EXPECT_EQ(log_.Count("truncated frame"), 1);
  EXPECT_EQ(log_.Count("exceeds the limit"), 1);
  EXPECT_GE((*cluster)->nodes()[0]->counters().rounds.load(), 1u);
}

TEST_F(ClusterTest, WrongKeyPeersAreRefusedAndTheModelIsUnchanged) {
  ClusterNodeOptions base = Base("async");
  base.max_docs = 300;
  auto cluster = LocalCluster::Start(base, 3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ClusterNode* owner = TotalsOwner(**cluster);
  ASSERT_NE(owner, nullptr);
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(sync::SplitHostPort(owner->address(), &host, &port).ok());
  sync::EventLoop loop(1);
  auto send = [&](std::shared_ptr<const sync::PeerAuth> auth,
                  const std::string& node_id) {
    sync::ClientOptions co;
    co.host = host;
    co.port = port;
    co.auth = std::move(auth);
    co.log = log_.fn();
    sync::Client client(&loop, co);
    return client.CallSync(sync::MESSAGE_TYPE_DELTA_BATCH,
                           TotalsIntrusionBatch(node_id), absl::Seconds(5));
  };
  const sync::SparseVector before =
      owner->owner().Global(sync::kTopicTotalsKey);

  auto wrong = send(std::make_shared<sync::PeerAuth>(sync::PeerAuth{
                        "not-this-cluster's-key-000", "intruder"}),
                    "intruder");
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kUnavailable)
      << wrong.status();
  EXPECT_NE(wrong.status().message().find("did not prove the cluster key"),
            std::string::npos)
      << wrong.status();
  auto none = send(nullptr, "intruder");
  EXPECT_FALSE(none.ok());
  // A key holder may speak only in the name it proved.
  auto forged = send(std::make_shared<sync::PeerAuth>(
                         sync::PeerAuth{kTestClusterKey, "intruder"}),
                     "node1");
  EXPECT_EQ(forged.status().code(), absl::StatusCode::kPermissionDenied)
      << forged.status();
  EXPECT_EQ(owner->owner().Global(sync::kTopicTotalsKey), before);
  EXPECT_GE(log_.Count("did not prove the cluster key"), 1);
  EXPECT_GE(log_.Count("did not start the cluster-key handshake"), 1);
  EXPECT_EQ(log_.Count("arrived on the connection of node 'intruder'"), 1);

  // The same batch, from a key holder in its own name: it is no member of
  // the ring, so the owner refuses it too (issue 29).
  auto member = send(std::make_shared<sync::PeerAuth>(
                         sync::PeerAuth{kTestClusterKey, "intruder"}),
                     "intruder");
  EXPECT_EQ(member.status().code(), absl::StatusCode::kPermissionDenied)
      << member.status();
  EXPECT_EQ(owner->owner().Global(sync::kTopicTotalsKey), before);
  EXPECT_EQ(owner->owner().stats().refused_not_member, 1u);
}

}  // namespace
}  // namespace latentd
