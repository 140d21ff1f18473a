#include "cli/client_commands.h"

#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "cli/daemon_wait.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "service/api_client.h"

namespace latentd {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using service::ApiClient;
using service::Method;

absl::StatusOr<std::unique_ptr<ApiClient>> Connect(const DaemonAddress& a) {
  return ConnectDaemon(a);
}

// One scalar field's value (element `index` of a repeated one) as text.
std::string FieldText(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return absl::StrCat(rep ? r->GetRepeatedInt32(m, f, index)
                              : r->GetInt32(m, f));
    case FieldDescriptor::CPPTYPE_INT64:
      return absl::StrCat(rep ? r->GetRepeatedInt64(m, f, index)
                              : r->GetInt64(m, f));
    case FieldDescriptor::CPPTYPE_UINT32:
      return absl::StrCat(rep ? r->GetRepeatedUInt32(m, f, index)
                              : r->GetUInt32(m, f));
    case FieldDescriptor::CPPTYPE_UINT64:
      return absl::StrCat(rep ? r->GetRepeatedUInt64(m, f, index)
                              : r->GetUInt64(m, f));
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return absl::StrFormat(
          "%g", rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f));
    case FieldDescriptor::CPPTYPE_FLOAT:
      return absl::StrFormat(
          "%g", rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f));
    case FieldDescriptor::CPPTYPE_BOOL:
      return (rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f)) ? "yes"
                                                                        : "no";
    case FieldDescriptor::CPPTYPE_ENUM:
      return rep ? r->GetRepeatedEnum(m, f, index)->name()
                 : r->GetEnum(m, f)->name();
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string v =
          rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
      return v.empty() ? "-" : v;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return "...";  // not reached: messages are flattened
  }
  return "";
}

// Every field of `m`, zero values included, as "prefix.name: value" lines;
// a repeated scalar as one comma-separated line ("-" when empty).
// `skip(field)`: leave a top-level field out. Fields with presence that
// are not set (a section that does not apply to this node) are left out.
void AppendFieldLines(
    const Message& m, const std::string& prefix, std::string* out,
    const std::function<bool(const FieldDescriptor*)>& skip = nullptr) {
  const google::protobuf::Descriptor* d = m.GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (skip && skip(f)) continue;
    if (!f->is_repeated() && f->has_presence() &&
        !m.GetReflection()->HasField(m, f)) {
      continue;  // not set: not this node's (or not computed yet)
    }
    const std::string name = prefix + f->name();
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      if (!f->is_repeated()) {
        AppendFieldLines(m.GetReflection()->GetMessage(m, f), name + ".", out);
      }
      continue;  // no repeated messages in the messages printed this way
    }
    std::vector<std::string> values;
    if (f->is_repeated()) {
      const int n = m.GetReflection()->FieldSize(m, f);
      for (int j = 0; j < n; ++j) values.push_back(FieldText(m, f, j));
      if (values.empty()) values.push_back("-");
    } else {
      values.push_back(FieldText(m, f, 0));
    }
    absl::StrAppend(out, name, ": ", absl::StrJoin(values, ", "), "\n");
  }
}

// Status as "field: value" lines, only the sections that apply: no
// cluster fields on a single node, no topic-model fields on a graph-only
// node, no unset section (graph, heldout).
std::string StatusText(const api::StatusResponse& r) {
  static const absl::flat_hash_set<std::string> kCluster = {
      "node_id", "cluster_members", "unavailable_peers", "ring_epoch"};
  static const absl::flat_hash_set<std::string> kNodeWide = {
      "training", "uptime_seconds", "graph"};
  const bool clustered = !r.node_id().empty();
  const bool topic_model = r.has_version();
  std::string text;
  AppendFieldLines(r, "", &text, [&](const FieldDescriptor* f) {
    if (kCluster.contains(f->name())) return !clustered;
    return !topic_model && !kNodeWide.contains(f->name());
  });
  return text;
}

std::string ProfileText(const api::GetUserProfileResponse& r) {
  std::string out =
      absl::StrFormat("user %s: %d events, %d tokens (model sweep %d)\n",
                      r.user(), r.events(), r.tokens(), r.version().sweep());
  for (const api::TopicWeight& t : r.topics()) {
    std::vector<std::string> words;
    for (const api::WordWeight& w : t.top_words()) words.push_back(w.word());
    absl::StrAppendFormat(&out, "  topic %d\t%.4f\t%s\n", t.topic(), t.weight(),
                          absl::StrJoin(words, " "));
  }
  return out;
}

std::string DocumentText(const api::GetDocumentTopicsResponse& r) {
  std::string out =
      absl::StrFormat("document %s: %d tokens (model sweep %d)\n", r.document(),
                      r.tokens(), r.version().sweep());
  absl::flat_hash_map<uint32_t, uint64_t> counts;
  for (const api::TopicCount& c : r.counts()) counts[c.topic()] = c.count();
  for (const api::TopicWeight& t : r.topics()) {
    std::vector<std::string> words;
    for (const api::WordWeight& w : t.top_words()) words.push_back(w.word());
    auto it = counts.find(t.topic());
    absl::StrAppendFormat(&out, "  topic %d\t%.4f\t%d\t%s\n", t.topic(),
                          t.weight(), it == counts.end() ? 0 : it->second,
                          absl::StrJoin(words, " "));
  }
  return out + PartialNote(r.missing_members());
}

std::string TopicDocumentsText(const api::TopicDocumentsResponse& r) {
  std::string out =
      absl::StrFormat("topic %d: top documents (model sweep %d)\n", r.topic(),
                      r.version().sweep());
  for (const api::DocumentWeight& d : r.documents()) {
    absl::StrAppendFormat(&out, "  %s\t%.4f\t%d/%d\n", d.document(), d.weight(),
                          d.count(), d.tokens());
  }
  return out + PartialNote(r.missing_members());
}

void Print(FILE* out, bool json, const Message& m, const std::string& text) {
  absl::FPrintF(out, "%s", json ? service::ToJson(m) + "\n" : text);
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

absl::Status RunIngest(const DaemonCommands& c, ApiClient& api, FILE* in,
                       FILE* out) {
  api::IngestResponse total;
  api::IngestRequest q;
  auto flush = [&]() -> absl::Status {
    if (q.documents_size() == 0) return absl::OkStatus();
    api::IngestResponse r;
    LATENTD_RETURN_IF_ERROR(api.Call(Method::kIngest, q, &r));
    if (total.accepted() == 0) total.set_first_sequence(r.first_sequence());
    total.set_accepted(total.accepted() + r.accepted());
    total.set_last_sequence(r.last_sequence());
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
      if (q.documents_size() == 100) LATENTD_RETURN_IF_ERROR(flush());
    }
  }
  LATENTD_RETURN_IF_ERROR(flush());
  Print(out, c.json, total,
        absl::StrFormat("accepted %d documents\n", total.accepted()));
  if (!c.wait_merged) return absl::OkStatus();
  const uint64_t logged =
      total.last_sequence() == 0
          ? 0
          : total.last_sequence() - total.first_sequence() + 1;
  if (logged < total.accepted()) {
    absl::FPrintF(stderr,
                  "latentctl ingest: %d of the documents went to their "
                  "owners in the cluster; --wait-merged waits for the %d "
                  "this node logged\n",
                  total.accepted() - logged, logged);
  }
  LATENTD_ASSIGN_OR_RETURN(
      api::StatusResponse st,
      WaitMerged(api, total, absl::Seconds(c.merge_timeout)));
  if (!c.json) {
    absl::FPrintF(out, "merged into the model at sweep %d\n",
                  st.version().sweep());
  }
  return absl::OkStatus();
}

}  // namespace

void AddDaemonAddressOptions(CLI::App* cmd, DaemonAddress* address) {
  cmd->add_option("--addr", address->addr,
                  "Daemon address host:port: its --listen address for tcp "
                  "(default 127.0.0.1:7071), its --http address for "
                  "http/json (default 127.0.0.1:7070)");
  cmd->add_option("--protocol", address->protocol,
                  "tcp: framed protobuf | http: protobuf over HTTP | json: "
                  "HTTP/JSON")
      ->check(CLI::IsMember({"tcp", "http", "json"}))
      ->capture_default_str();
  cmd->add_option("--token", address->token,
                  "Bearer token for a daemon with api-tokens (default: "
                  "$LATENTD_TOKEN)");
  cmd->add_option("--tls-ca", address->tls_ca,
                  "Talk TLS (HTTPS for http/json) to a daemon with tls-cert, "
                  "verifying its certificate against this CA file (PEM) and "
                  "the host name or IP of --addr");
  cmd->add_option("--tls", address->tls,
                  "on: TLS, verified against the system's CAs (or --tls-ca); "
                  "off: plain; auto: TLS when --tls-ca is given")
      ->check(CLI::IsMember({"on", "off", "auto"}))
      ->capture_default_str();
  cmd->add_option("--wait", address->wait_seconds,
                  "Seconds to keep retrying while the daemon refuses "
                  "connections (it listens once its model is loaded); 0: "
                  "fail at once")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
}

sync::ClientTls DaemonTls(const DaemonAddress& address) {
  sync::ClientTls tls;
  tls.enabled =
      address.tls == "on" || (address.tls == "auto" && !address.tls_ca.empty());
  tls.ca_file = address.tls_ca;
  return tls;
}

absl::StatusOr<std::unique_ptr<ApiClient>> ConnectDaemon(
    const DaemonAddress& a) {
  LATENTD_ASSIGN_OR_RETURN(service::Protocol p,
                           service::ParseProtocol(a.protocol));
  std::string addr = a.addr;
  if (addr.empty()) {
    addr = p == service::Protocol::kTcp ? "127.0.0.1:7071" : "127.0.0.1:7070";
  }
  auto connect = [addr, p, a]() -> absl::StatusOr<std::unique_ptr<ApiClient>> {
    LATENTD_ASSIGN_OR_RETURN(
        std::unique_ptr<ApiClient> client,
        ApiClient::Create(addr, p, absl::Seconds(30),
                          /*explain_wrong_port=*/true, DaemonTls(a)));
    client->set_token(DaemonToken(a));
    return client;
  };
  // A bad address or CA file is an error now, not at the first call.
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> first, connect());
  auto notice = [addr, wait = a.wait_seconds](const absl::Status& s) {
    absl::FPrintF(stderr,
                  "latentctl: waiting up to %g s for the daemon at %s to "
                  "listen (%s; --wait)\n",
                  wait, addr, s.message());
  };
  return std::make_unique<WaitingApiClient>(
      std::move(first), std::move(connect), absl::Seconds(a.wait_seconds),
      std::move(notice));
}

std::string DaemonToken(const DaemonAddress& address) {
  if (!address.token.empty()) return address.token;
  const char* env = std::getenv("LATENTD_TOKEN");
  return env == nullptr ? "" : env;
}

std::string PartialNote(
    const google::protobuf::RepeatedPtrField<std::string>& missing) {
  if (missing.empty()) return "";
  return absl::StrCat("# partial answer: no answer from cluster member",
                      missing.size() == 1 ? " " : "s ",
                      absl::StrJoin(missing, ", "), "\n");
}

void AddJsonOption(CLI::App* cmd, bool* json) {
  cmd->add_flag("--json", *json,
                "Print JSON (the API's protobuf JSON, one object per line) "
                "instead of text");
}

void AddDaemonCommands(CLI::App* app, DaemonCommands* c) {
  c->status = app->add_subcommand(
      "status", "A running daemon's state (sweep, tokens/s, queues, ...)");
  AddDaemonAddressOptions(c->status, &c->address);
  AddJsonOption(c->status, &c->json);
  c->profile = app->add_subcommand("profile", "A user's topic profile");
  c->profile->add_option("user", c->user, "User id")->required();
  c->profile->add_option("--top", c->top, "Topics")->capture_default_str();
  AddDaemonAddressOptions(c->profile, &c->address);
  AddJsonOption(c->profile, &c->json);
  c->ingest = app->add_subcommand(
      "ingest",
      "Send documents to a daemon: --text, or stdin one per line; "
      "acknowledged once durable");
  c->ingest->add_option("--user", c->user, "User id of every document");
  c->ingest->add_option("--text", c->text, "One document's text");
  c->ingest->add_flag("--wait-merged", c->wait_merged,
                      "Return only once the documents are merged into the "
                      "model the queries read (a profile or infer right "
                      "after sees them); polls Status");
  c->ingest
      ->add_option("--merge-timeout", c->merge_timeout,
                   "Seconds --wait-merged waits at most")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  AddDaemonAddressOptions(c->ingest, &c->address);
  AddJsonOption(c->ingest, &c->json);
  c->checkpoint = app->add_subcommand(
      "checkpoint", "Make a running daemon write a checkpoint now");
  AddDaemonAddressOptions(c->checkpoint, &c->address);
  AddJsonOption(c->checkpoint, &c->json);
  c->document = app->add_subcommand(
      "document",
      "A document's topic mixture and counts, by its id (a training "
      "document's corpus id, or an ingested document's id)");
  c->document->add_option("id", c->document_id, "Document id")->required();
  c->document->add_option("--top", c->top, "Topics (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  c->document
      ->add_option("--words", c->words,
                   "Each printed topic's most probable words (0: none)")
      ->check(CLI::Range(0, 50))
      ->capture_default_str();
  AddDaemonAddressOptions(c->document, &c->address);
  AddJsonOption(c->document, &c->json);
  c->topic_documents = app->add_subcommand(
      "topic-documents", "The documents with the highest weight in a topic");
  c->topic_documents->add_option("topic", c->topic, "Topic id")->required();
  c->topic_documents->add_option("--top", c->top, "Documents (at most 1000)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  AddDaemonAddressOptions(c->topic_documents, &c->address);
  AddJsonOption(c->topic_documents, &c->json);
}

std::optional<absl::Status> RunDaemonCommands(const DaemonCommands& c, FILE* in,
                                              FILE* out) {
  if (!c.status->parsed() && !c.profile->parsed() && !c.ingest->parsed() &&
      !c.checkpoint->parsed() && !c.document->parsed() &&
      !c.topic_documents->parsed()) {
    return std::nullopt;
  }
  absl::StatusOr<std::unique_ptr<ApiClient>> client = Connect(c.address);
  if (!client.ok()) return client.status();
  ApiClient& api = **client;
  if (c.status->parsed()) {
    api::StatusResponse r;
    LATENTD_RETURN_IF_ERROR(
        api.Call(Method::kStatus, api::StatusRequest(), &r));
    Print(out, c.json, r, StatusText(r));
    return absl::OkStatus();
  }
  if (c.profile->parsed()) {
    api::GetUserProfileRequest q;
    q.set_user(c.user);
    q.set_top(c.top);
    api::GetUserProfileResponse r;
    LATENTD_RETURN_IF_ERROR(api.Call(Method::kGetUserProfile, q, &r));
    Print(out, c.json, r, ProfileText(r));
    return absl::OkStatus();
  }
  if (c.document->parsed()) {
    api::GetDocumentTopicsRequest q;
    q.set_document(c.document_id);
    q.set_top(static_cast<uint32_t>(c.top));
    q.set_top_words(static_cast<uint32_t>(c.words));
    api::GetDocumentTopicsResponse r;
    LATENTD_RETURN_IF_ERROR(api.Call(Method::kGetDocumentTopics, q, &r));
    Print(out, c.json, r, DocumentText(r));
    return absl::OkStatus();
  }
  if (c.topic_documents->parsed()) {
    api::TopicDocumentsRequest q;
    q.set_topic(c.topic);
    q.set_top(static_cast<uint32_t>(c.top));
    api::TopicDocumentsResponse r;
    LATENTD_RETURN_IF_ERROR(api.Call(Method::kTopicDocuments, q, &r));
    Print(out, c.json, r, TopicDocumentsText(r));
    return absl::OkStatus();
  }
  if (c.checkpoint->parsed()) {
    api::CheckpointResponse r;
    LATENTD_RETURN_IF_ERROR(
        api.Call(Method::kCheckpoint, api::CheckpointRequest(), &r));
    Print(out, c.json, r,
          absl::StrFormat("checkpoint written at sweep %d: %s\n", r.sweep(),
                          r.path()));
    return absl::OkStatus();
  }
  return RunIngest(c, api, in, out);
}

absl::Status RunRemoteTopics(const DaemonAddress& address,
                             const TopicsCommandOptions& o, FILE* out) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api, Connect(address));
  api::ListTopicsResponse topics;
  if (o.topic.has_value()) {
    if (*o.topic < 0 || *o.topic > UINT32_MAX) {
      return absl::OutOfRangeError(
          absl::StrCat("topic ", *o.topic, " does not exist"));
    }
    api::GetTopicRequest q;
    q.set_topic(static_cast<uint32_t>(*o.topic));
    q.set_top_words(o.top);
    api::GetTopicResponse r;
    LATENTD_RETURN_IF_ERROR(api->Call(Method::kGetTopic, q, &r));
    *topics.mutable_version() = r.version();
    *topics.add_topics() = r.topic();
  } else {
    api::ListTopicsRequest q;
    q.set_top_words(o.top);
    LATENTD_RETURN_IF_ERROR(api->Call(Method::kListTopics, q, &topics));
  }
  if (o.json) {
    absl::FPrintF(out, "%s\n", TopicsJson(topics));
    return absl::OkStatus();
  }
  for (const api::Topic& t : topics.topics()) {
    absl::FPrintF(out, "topic %d\talpha=%g\ttokens=%d\n", t.id(), t.alpha(),
                  t.tokens());
    for (const api::WordWeight& w : t.top_words()) {
      absl::FPrintF(out, "  %s\t%.6f\n", w.word(), w.probability());
    }
  }
  return absl::OkStatus();
}

absl::Status RunRemoteInfer(const DaemonAddress& address,
                            const InferCommandOptions& o, FILE* in, FILE* out,
                            FILE* err) {
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<ApiClient> api, Connect(address));
  std::string line;
  for (uint64_t n = 1; ReadLine(in, &line); ++n) {
    api::InferDocumentRequest q;
    q.set_text(line);
    q.set_seed(o.infer.seed);
    q.set_iterations(o.infer.iterations);
    q.set_burn_in(o.infer.burn_in);
    q.set_top(o.top);
    q.set_top_words(std::max(o.words, 0));
    api::InferDocumentResponse r;
    absl::Status s = api->Call(Method::kInferDocument, q, &r);
    if (!s.ok()) {
      if (s.code() != absl::StatusCode::kInvalidArgument) return s;
      absl::FPrintF(err, "infer: line %d: %s\n", n, s.message());
      absl::FPrintF(out, "%s\n",
                    o.json ? InferErrorJsonLine(n, std::string(s.message()))
                           : absl::StrCat(n));
      continue;
    }
    absl::FPrintF(out, "%s\n",
                  o.json ? InferJsonLine(n, r) : InferTextLine(n, r));
  }
  return absl::OkStatus();
}

}  // namespace latentd
