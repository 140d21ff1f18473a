#include "cli/client_commands.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "corpora/status_macros.h"
#include "service/api_client.h"

namespace latentd {
namespace {

using service::ApiClient;
using service::Method;

absl::StatusOr<std::unique_ptr<ApiClient>> Connect(const DaemonAddress& a) {
  LATENTD_ASSIGN_OR_RETURN(service::Protocol p,
                           service::ParseProtocol(a.protocol));
  std::string addr = a.addr;
  if (addr.empty()) {
    addr = p == service::Protocol::kTcp ? "127.0.0.1:7071" : "127.0.0.1:7070";
  }
  return ApiClient::Create(addr, p);
}

absl::Status PrintJson(const google::protobuf::Message& m, FILE* out) {
  absl::FPrintF(out, "%s\n", service::ToJson(m));
  return absl::OkStatus();
}

bool ReadLine(FILE* in, std::string* line) {
  line->clear();
  char buf[1 << 16];
  while (fgets(buf, sizeof(buf), in) != nullptr) {
    *line += buf;
    if (!line->empty() && line->back() == '\n') {
      line->pop_back();
      return true;
    }
  }
  return !line->empty();
}

}  // namespace

void AddDaemonAddressOptions(CLI::App* cmd, DaemonAddress* address) {
  cmd->add_option("--addr", address->addr,
                  "Daemon address host:port (default 127.0.0.1:7071 for "
                  "tcp, 127.0.0.1:7070 for http/json)");
  cmd->add_option("--protocol", address->protocol,
                  "tcp: framed protobuf | http: protobuf over HTTP | json: "
                  "HTTP/JSON")
      ->check(CLI::IsMember({"tcp", "http", "json"}))
      ->capture_default_str();
}

void AddDaemonCommands(CLI::App* app, DaemonCommands* c) {
  c->status = app->add_subcommand(
      "status", "A running daemon's state (sweep, tokens/s, queues, ...)");
  AddDaemonAddressOptions(c->status, &c->address);
  c->profile = app->add_subcommand("profile", "A user's topic profile");
  c->profile->add_option("user", c->user, "User id")->required();
  c->profile->add_option("--top", c->top, "Topics")->capture_default_str();
  AddDaemonAddressOptions(c->profile, &c->address);
  c->ingest = app->add_subcommand(
      "ingest",
      "Send documents to a daemon: --text, or stdin one per line; "
      "acknowledged once durable");
  c->ingest->add_option("--user", c->user, "User id of every document");
  c->ingest->add_option("--text", c->text, "One document's text");
  AddDaemonAddressOptions(c->ingest, &c->address);
  c->checkpoint = app->add_subcommand(
      "checkpoint", "Make a running daemon write a checkpoint now");
  AddDaemonAddressOptions(c->checkpoint, &c->address);
}

std::optional<absl::Status> RunDaemonCommands(const DaemonCommands& c, FILE* in,
                                              FILE* out) {
  if (!c.status->parsed() && !c.profile->parsed() && !c.ingest->parsed() &&
      !c.checkpoint->parsed()) {
    return std::nullopt;
  }
  absl::StatusOr<std::unique_ptr<ApiClient>> client = Connect(c.address);
  if (!client.ok()) return client.status();
  ApiClient& api = **client;
  if (c.status->parsed()) {
    api::StatusResponse r;
    absl::Status s = api.Call(Method::kStatus, api::StatusRequest(), &r);
    return s.ok() ? PrintJson(r, out) : s;
  }
  if (c.profile->parsed()) {
    api::GetUserProfileRequest q;
    q.set_user(c.user);
    q.set_top(c.top);
    api::GetUserProfileResponse r;
    absl::Status s = api.Call(Method::kGetUserProfile, q, &r);
    return s.ok() ? PrintJson(r, out) : s;
  }
  if (c.checkpoint->parsed()) {
    api::CheckpointResponse r;
    absl::Status s =
        api.Call(Method::kCheckpoint, api::CheckpointRequest(), &r);
    return s.ok() ? PrintJson(r, out) : s;
  }
  // ingest
  uint64_t accepted = 0;
  api::IngestRequest q;
  auto flush = [&]() -> absl::Status {
    if (q.documents_size() == 0) return absl::OkStatus();
    api::IngestResponse r;
    LATENTD_RETURN_IF_ERROR(api.Call(Method::kIngest, q, &r));
    accepted += r.accepted();
    q.clear_documents();
    return absl::OkStatus();
  };
  auto add = [&](const std::string& text) {
    api::Document* d = q.add_documents();
    d->set_text(text);
    d->set_user(c.user);
  };
  if (!c.text.empty()) {
    add(c.text);
  } else {
    std::string line;
    while (ReadLine(in, &line)) {
      if (line.empty()) continue;
      add(line);
      if (q.documents_size() == 100) {
        absl::Status s = flush();
        if (!s.ok()) return s;
      }
    }
  }
  absl::Status s = flush();
  if (!s.ok()) return s;
  absl::FPrintF(out, "accepted %d documents\n", accepted);
  return absl::OkStatus();
}

absl::Status RunRemoteTopics(const DaemonAddress& address, int top,
                             std::optional<int64_t> topic, FILE* out) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api, Connect(address));
  std::vector<api::Topic> topics;
  if (topic.has_value()) {
    if (*topic < 0 || *topic > UINT32_MAX) {
      return absl::OutOfRangeError(
          absl::StrCat("topic ", *topic, " does not exist"));
    }
    api::GetTopicRequest q;
    q.set_topic(static_cast<uint32_t>(*topic));
    q.set_top_words(top);
    api::GetTopicResponse r;
    LATENTD_RETURN_IF_ERROR(api->Call(Method::kGetTopic, q, &r));
    topics.push_back(r.topic());
  } else {
    api::ListTopicsRequest q;
    q.set_top_words(top);
    api::ListTopicsResponse r;
    LATENTD_RETURN_IF_ERROR(api->Call(Method::kListTopics, q, &r));
    topics.assign(r.topics().begin(), r.topics().end());
  }
  for (const api::Topic& t : topics) {
    absl::FPrintF(out, "topic %d\talpha=%g\ttokens=%d\n", t.id(), t.alpha(),
                  t.tokens());
    for (const api::WordWeight& w : t.top_words()) {
      absl::FPrintF(out, "  %s\t%.6f\n", w.word(), w.probability());
    }
  }
  return absl::OkStatus();
}

absl::Status RunRemoteInfer(const DaemonAddress& address,
                            const InferOptions& options, int top, FILE* in,
                            FILE* out, FILE* err) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api, Connect(address));
  std::string line;
  for (uint64_t n = 1; ReadLine(in, &line); ++n) {
    api::InferDocumentRequest q;
    q.set_text(line);
    q.set_seed(options.seed);
    q.set_iterations(options.iterations);
    q.set_burn_in(options.burn_in);
    q.set_top(top);
    api::InferDocumentResponse r;
    absl::Status s = api->Call(Method::kInferDocument, q, &r);
    if (!s.ok()) {
      if (s.code() != absl::StatusCode::kInvalidArgument) return s;
      absl::FPrintF(err, "line %d: %s\n", n, s.message());
      continue;
    }
    std::string text = line;
    for (const api::TopicWeight& t : r.topics()) {
      absl::StrAppendFormat(&text, "\t%d:%.4f", t.topic(), t.weight());
    }
    absl::FPrintF(out, "%s\n", text);
  }
  return absl::OkStatus();
}

}  // namespace latentd
