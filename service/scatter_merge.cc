#include "service/scatter_merge.h"

#include <algorithm>
#include <string>

#include "absl/container/flat_hash_set.h"

namespace latentd::service {
namespace {

// The items of `parts` sorted by `better`, the first of each id kept, at
// most `top` of them, `exclude` left out.
template <typename Item, typename Better, typename IdOf>
google::protobuf::RepeatedPtrField<Item> BestDistinct(
    const std::vector<const google::protobuf::RepeatedPtrField<Item>*>& parts,
    uint32_t top, std::string_view exclude, Better better, IdOf id_of) {
  std::vector<const Item*> all;
  for (const auto* part : parts) {
    for (const Item& item : *part) all.push_back(&item);
  }
  std::stable_sort(all.begin(), all.end(), [&](const Item* a, const Item* b) {
    return better(*a, *b);
  });
  google::protobuf::RepeatedPtrField<Item> out;
  absl::flat_hash_set<std::string_view> seen;
  for (const Item* item : all) {
    if (static_cast<uint32_t>(out.size()) >= top) break;
    const std::string_view id = id_of(*item);
    if ((!exclude.empty() && id == exclude) || !seen.insert(id).second) {
      continue;
    }
    *out.Add() = *item;
  }
  return out;
}

}  // namespace

api::TopicDocumentsResponse MergeTopicDocuments(
    const std::vector<const api::TopicDocumentsResponse*>& parts,
    uint32_t top) {
  api::TopicDocumentsResponse out;
  *out.mutable_version() = parts[0]->version();
  out.set_topic(parts[0]->topic());
  std::vector<const google::protobuf::RepeatedPtrField<api::DocumentWeight>*>
      documents;
  for (const api::TopicDocumentsResponse* p : parts) {
    documents.push_back(&p->documents());
  }
  *out.mutable_documents() = BestDistinct(
      documents, top, /*exclude=*/"",
      [](const api::DocumentWeight& a, const api::DocumentWeight& b) {
        if (a.weight() != b.weight()) return a.weight() > b.weight();
        if (a.count() != b.count()) return a.count() > b.count();
        return a.document() < b.document();
      },
      [](const api::DocumentWeight& d) -> std::string_view {
        return d.document();
      });
  return out;
}

google::protobuf::RepeatedPtrField<api::Neighbor> MergeNeighbors(
    const std::vector<const google::protobuf::RepeatedPtrField<api::Neighbor>*>&
        parts,
    uint32_t top, std::string_view exclude) {
  return BestDistinct(
      parts, top, exclude,
      [](const api::Neighbor& a, const api::Neighbor& b) {
        if (a.distance() != b.distance()) return a.distance() < b.distance();
        return a.id() < b.id();
      },
      [](const api::Neighbor& n) -> std::string_view { return n.id(); });
}

}  // namespace latentd::service
