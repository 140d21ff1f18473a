// ClusterRouter's pure parts: how a record travels to a peer
// (AddDocument) and the ring that places replica copies (ReplicaRing).
#include "service/cluster_router.h"

#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hashring/ring_config.h"

namespace latentd::service {
namespace {

// A hand-off's record keeps its words and topics as they are (the text
// tokenizer would drop "the" and "1984" and split "c++"); any other goes
// as text.
TEST(ClusterRouter, SendsAHandOffsWordsAndTopicsAsTheyAre) {
  IngestRecord handed;
  handed.doc_id = "d1";
  handed.source = "handoff:127.0.0.1:9/3";
  handed.words = {"the", "1984", "c++"};
  handed.topics = {0, 2, 1};
  IngestRecord plain;
  plain.doc_id = "d2";
  plain.user = "u";
  plain.words = {"oil", "price"};
  api::IngestRequest req;
  ClusterRouter::AddDocument(handed, &req);
  ClusterRouter::AddDocument(plain, &req);
  ASSERT_EQ(req.documents_size(), 2);
  const api::Document& h = req.documents(0);
  EXPECT_EQ(std::vector<std::string>(h.words().begin(), h.words().end()),
            handed.words);
  EXPECT_EQ(std::vector<uint32_t>(h.topics().begin(), h.topics().end()),
            (std::vector<uint32_t>{0, 2, 1}));
  EXPECT_TRUE(h.text().empty());
  EXPECT_EQ(h.source(), handed.source);
  const api::Document& p = req.documents(1);
  EXPECT_EQ(p.text(), "oil price");
  EXPECT_EQ(p.words_size() + p.topics_size(), 0);
  EXPECT_EQ(p.user(), "u");
}

// The placement ring lists every member for each key, so that a caller
// can skip those that may not hold copies and still find enough.
TEST(ClusterRouter, ReplicaRingListsEveryMember) {
  ClusterRouterOptions options;
  options.cluster_mode = true;
  ClusterRouter router(options);
  hashring::RingConfig config;
  for (const char* id : {"a:1", "b:1", "c:1", "d:1"}) {
    config.members.push_back({.id = id, .address = id});
  }
  config.version = 7;
  auto ring = router.ReplicaRing(config);
  ASSERT_TRUE(ring.ok()) << ring.status();
  for (uint64_t key : {1ULL, 99ULL, 123456789ULL}) {
    std::set<hashring::MemberIndex> seen;
    for (hashring::MemberIndex m : (*ring)->Replicas(key)) seen.insert(m);
    EXPECT_EQ(seen.size(), config.members.size()) << key;
  }
}

}  // namespace
}  // namespace latentd::service
