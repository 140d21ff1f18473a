// The status page's files (service/status_page/), embedded in the binary at
// build time by cmake/EmbedFiles.cmake; HttpGateway serves them at GET / and
// GET /status_page/<file>. Nothing else is fetched: the page draws from the
// daemon's own API (POST /v1/Status, GET /v1/ListTopics).
//
// Thread-safety: immutable static data.
#ifndef LATENTD_SERVICE_INTERNAL_STATUS_PAGE_H_
#define LATENTD_SERVICE_INTERNAL_STATUS_PAGE_H_

#include <span>
#include <string_view>

namespace latentd::service::internal {

struct StaticAsset {
  std::string_view path;          // the URL path it is served at
  std::string_view content_type;  // its Content-Type
  std::string_view body;
};

// Every file of the page, the page itself ("/") first.
std::span<const StaticAsset> StatusPageAssets();

}  // namespace latentd::service::internal

#endif  // LATENTD_SERVICE_INTERNAL_STATUS_PAGE_H_
