// Mutual TLS on the sync port (issue 16, "Must show" 1): a cluster whose
// nodes hold certificates from the cluster CA trains and stays exact over
// TLS; a peer without a certificate, with one from another CA, or without
// TLS at all, sends a delta batch to the owner of the topic totals with the
// right cluster key: refused, and the owner's counts are unchanged. The same
// batch from a client with a certificate from the cluster CA is applied.
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "sync/transport/tls.h"
#include "tests/cluster/cluster_test_util.h"
#include "tests/sync/test_pki.h"

namespace latentd {
namespace {

using sync::testing::TestPki;

TEST_F(ClusterTest, TlsClusterRefusesPeersWithoutTheClusterCa) {
  TestPki pki;
  ASSERT_TRUE(pki.ok()) << "openssl failed";
  const sync::MutualTlsFiles node_files{
      pki.path("server.pem"), pki.path("server.key"), pki.path("ca.pem")};
  ClusterNodeOptions base = Base("async");
  base.max_docs = 300;
  base.tls = node_files;
  auto cluster = LocalCluster::Start(base, 2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // The members train over TLS, and their model stays exact.
  auto run = (*cluster)->RunSweeps(3);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_TRUE((*cluster)->Drain().ok());
  ExpectExact(**cluster);

  ClusterNode* owner = TotalsOwner(**cluster);
  ASSERT_NE(owner, nullptr);
  std::string host;
  uint16_t port = 0;
  ASSERT_TRUE(sync::SplitHostPort(owner->address(), &host, &port).ok());
  const auto auth = std::make_shared<sync::PeerAuth>(
      sync::PeerAuth{kTestClusterKey, "intruder"});
  sync::EventLoop loop(1);
  auto send = [&](std::shared_ptr<const sync::TlsContext> tls) {
    sync::ClientOptions co;
    co.host = host;
    co.port = port;
    co.auth = auth;  // the right key: only TLS keeps these out
    co.tls = std::move(tls);
    co.log = log_.fn();
    sync::Client client(&loop, co);
    return client.CallSync(sync::MESSAGE_TYPE_DELTA_BATCH,
                           TotalsIntrusionBatch("intruder"), absl::Seconds(5));
  };
  const sync::SparseVector before =
      owner->owner().Global(sync::kTopicTotalsKey);
  ASSERT_FALSE(before.empty());

  auto no_cert_tls = sync::TlsContext::ForClient(pki.path("ca.pem"));
  ASSERT_TRUE(no_cert_tls.ok()) << no_cert_tls.status();
  auto no_cert = send(*no_cert_tls);
  EXPECT_FALSE(no_cert.ok());
  auto other_ca_tls = sync::TlsContext::ForMutualClient(
      {pki.path("stranger.pem"), pki.path("stranger.key"), pki.path("ca.pem")});
  ASSERT_TRUE(other_ca_tls.ok()) << other_ca_tls.status();
  auto other_ca = send(*other_ca_tls);
  EXPECT_FALSE(other_ca.ok());
  auto plaintext = send(nullptr);
  EXPECT_FALSE(plaintext.ok());
  EXPECT_EQ(owner->owner().Global(sync::kTopicTotalsKey), before);
  EXPECT_GE(log_.Count("the client presented no certificate"), 1);
  EXPECT_GE(log_.Count("the client's certificate does not verify"), 1);
  EXPECT_GE(log_.Count("a client without TLS reached the TLS port"), 1);

  // Control: the same batch through a certificate from the cluster CA
  // passes TLS and the key (so the refusals above were TLS's) and reaches
  // the owner, which refuses it as from no member of the ring (issue 29).
  auto member_tls = sync::TlsContext::ForMutualClient(node_files);
  ASSERT_TRUE(member_tls.ok()) << member_tls.status();
  auto member = send(*member_tls);
  EXPECT_EQ(member.status().code(), absl::StatusCode::kPermissionDenied)
      << member.status();
  EXPECT_EQ(owner->owner().Global(sync::kTopicTotalsKey), before);
  EXPECT_EQ(owner->owner().stats().refused_not_member, 1u);
}

TEST_F(ClusterTest, TlsFilesThatCannotBeUsedStopTheStart) {
  ClusterNodeOptions base = Base("async");
  base.max_docs = 50;
  base.tls = {"/nonexistent/node.pem", "/nonexistent/node.key",
              "/nonexistent/ca.pem"};
  auto cluster = LocalCluster::Start(base, 1);
  ASSERT_FALSE(cluster.ok());
  EXPECT_EQ(cluster.status().code(), absl::StatusCode::kInvalidArgument)
      << cluster.status();
  EXPECT_NE(cluster.status().message().find("/nonexistent/node.pem"),
            std::string::npos)
      << cluster.status();
}

}  // namespace
}  // namespace latentd
