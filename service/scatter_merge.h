// How a node merges the answers of a query it scattered to its cluster's
// members (DocumentQueries' TopicDocuments, SimilarDocuments and
// SimilarUsers in cluster mode; TopicQueries' user profiles): each member ranks
// its own documents or users; the merged answer is the best `top` of them all,
// an item that several members hold (replica copies of one document, by
// its id) counted once, at its best rank.
//
// Pure functions of their arguments; thread-compatible.
#ifndef LATENTD_SERVICE_SCATTER_MERGE_H_
#define LATENTD_SERVICE_SCATTER_MERGE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "google/protobuf/repeated_ptr_field.h"
#include "service/api.pb.h"
#include "service/cluster_router.h"

namespace latentd::service {

// The `top` documents of `parts` by decreasing weight (ties by larger
// count, then by key), each key once (its highest weight kept), into a
// response with parts[0]'s version and topic (parts[0] is this node's
// answer). REQUIRES: !parts.empty().
api::TopicDocumentsResponse MergeTopicDocuments(
    const std::vector<const api::TopicDocumentsResponse*>& parts, uint32_t top);

// The `top` neighbours of `parts` by increasing distance (ties by id),
// each id once (its smallest distance kept), `exclude` (if not empty) left
// out.
google::protobuf::RepeatedPtrField<api::Neighbor> MergeNeighbors(
    const std::vector<const google::protobuf::RepeatedPtrField<api::Neighbor>*>&
        parts,
    uint32_t top, std::string_view exclude);

// The members whose answers failed, but for errors of code `ignored` (the
// member answered: it has no such item).
template <typename Response>
void AddMissing(const std::vector<ClusterRouter::PeerAnswer>& answers,
                absl::StatusCode ignored, Response* out) {
  for (const ClusterRouter::PeerAnswer& a : answers) {
    if (!a.status.ok() && a.status.code() != ignored) {
      out->add_missing_members(a.member);
    }
  }
}

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_SCATTER_MERGE_H_
