// How a node merges its cluster members' answers (service/scatter_merge.h):
// the best `top` across members, replica copies of one document once at
// their best rank, ties broken the same way on every node.
#include "service/scatter_merge.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace latentd::service {
namespace {

api::TopicDocumentsResponse Part(
    uint64_t sweep,
    const std::vector<std::tuple<std::string, double, uint64_t>>& docs) {
  api::TopicDocumentsResponse r;
  r.mutable_version()->set_sweep(sweep);
  r.set_topic(3);
  for (const auto& [id, weight, count] : docs) {
    api::DocumentWeight* d = r.add_documents();
    d->set_document(id);
    d->set_weight(weight);
    d->set_count(count);
    d->set_tokens(100);
  }
  return r;
}

std::vector<std::string> Ids(const api::TopicDocumentsResponse& r) {
  std::vector<std::string> ids;
  for (const api::DocumentWeight& d : r.documents())
    ids.push_back(d.document());
  return ids;
}

google::protobuf::RepeatedPtrField<api::Neighbor> Neighbors(
    const std::vector<std::pair<std::string, double>>& items) {
  google::protobuf::RepeatedPtrField<api::Neighbor> out;
  for (const auto& [id, distance] : items) {
    api::Neighbor* n = out.Add();
    n->set_id(id);
    n->set_distance(distance);
  }
  return out;
}

std::vector<std::string> Ids(
    const google::protobuf::RepeatedPtrField<api::Neighbor>& r) {
  std::vector<std::string> ids;
  for (const api::Neighbor& n : r) ids.push_back(n.id());
  return ids;
}

TEST(MergeTopicDocuments, TakesTheBestAcrossNodesByWeight) {
  const auto a = Part(7, {{"a1", 0.9, 9}, {"a2", 0.5, 5}, {"a3", 0.1, 1}});
  const auto b = Part(8, {{"b1", 0.7, 7}, {"b2", 0.6, 6}, {"b3", 0.05, 1}});
  const api::TopicDocumentsResponse m = MergeTopicDocuments({&a, &b}, 4);
  EXPECT_EQ(Ids(m), (std::vector<std::string>{"a1", "b1", "b2", "a2"}));
  EXPECT_EQ(m.version().sweep(), 7u);  // the first part's (this node's)
  EXPECT_EQ(m.topic(), 3u);
  EXPECT_EQ(m.documents(1).count(), 7u);
}

TEST(MergeTopicDocuments, KeepsAReplicaCopyOnceAtItsBestWeight) {
  const auto a = Part(1, {{"x", 0.8, 8}, {"a", 0.4, 4}});
  const auto b = Part(1, {{"x", 0.81, 8}, {"b", 0.3, 3}});
  const api::TopicDocumentsResponse m = MergeTopicDocuments({&a, &b}, 10);
  EXPECT_EQ(Ids(m), (std::vector<std::string>{"x", "a", "b"}));
  EXPECT_DOUBLE_EQ(m.documents(0).weight(), 0.81);
}

TEST(MergeTopicDocuments, BreaksTiesByCountThenById) {
  const auto a = Part(1, {{"d", 0.5, 2}, {"c", 0.5, 3}});
  const auto b = Part(1, {{"b", 0.5, 2}});
  const api::TopicDocumentsResponse m = MergeTopicDocuments({&a, &b}, 10);
  EXPECT_EQ(Ids(m), (std::vector<std::string>{"c", "b", "d"}));
}

TEST(MergeTopicDocuments, OneNodeAloneIsItsOwnAnswerCutToTop) {
  const auto a = Part(1, {{"a", 0.5, 2}, {"b", 0.4, 3}, {"c", 0.3, 3}});
  EXPECT_EQ(Ids(MergeTopicDocuments({&a}, 2)),
            (std::vector<std::string>{"a", "b"}));
}

TEST(MergeNeighbors, NearestFirstEachIdOnceWithoutTheExcludedOne) {
  const auto a = Neighbors({{"q", 0.0}, {"a1", 0.1}, {"x", 0.4}});
  const auto b =
      Neighbors({{"q", 0.001}, {"x", 0.3}, {"b1", 0.2}, {"b2", 0.2}});
  const auto m = MergeNeighbors({&a, &b}, 3, "q");
  EXPECT_EQ(Ids(m), (std::vector<std::string>{"a1", "b1", "b2"}));
  const auto all = MergeNeighbors({&a, &b}, 10, "q");
  EXPECT_EQ(Ids(all), (std::vector<std::string>{"a1", "b1", "b2", "x"}));
  EXPECT_DOUBLE_EQ(all.Get(3).distance(), 0.3);  // x's nearer copy
}

TEST(MergeNeighbors, NothingExcludedWhenExcludeIsEmpty) {
  const auto a = Neighbors({{"u", 0.2}});
  const auto b = Neighbors({{"v", 0.1}});
  EXPECT_EQ(Ids(MergeNeighbors({&a, &b}, 10, "")),
            (std::vector<std::string>{"v", "u"}));
  EXPECT_TRUE(MergeNeighbors({&a, &b}, 0, "").empty());
}

}  // namespace
}  // namespace latentd::service
