#include "cli/similar_command.h"

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "service/api_dispatch.h"

namespace latentd {
namespace {

void PrintAnswer(
    const google::protobuf::RepeatedPtrField<api::Neighbor>& neighbors,
    const api::SimilarityStaleness& s,
    const google::protobuf::RepeatedPtrField<std::string>& missing, FILE* out) {
  int rank = 0;
  for (const api::Neighbor& n : neighbors) {
    absl::FPrintF(out, "%d\t%s\t%.4f\tview %d\n", ++rank, n.id(), n.distance(),
                  n.view());
  }
  absl::FPrintF(out,
                "# %d of %d indexed (%s); their θ from view %d or later, the "
                "model now at view %d (sweep %d)\n",
                neighbors.size(), s.indexed(), s.exact() ? "exact" : "HNSW",
                s.oldest_view(), s.current().view(), s.current().sweep());
  absl::FPrintF(out, "%s", PartialNote(missing));
}

// Sends `q` as `method` and prints the answer (its JSON with --json).
template <typename Req, typename Resp>
absl::Status AskAndPrint(service::ApiClient& api, service::Method method,
                         const Req& q, bool json, FILE* out) {
  Resp r;
  LATENTD_RETURN_IF_ERROR(api.Call(method, q, &r));
  if (json) {
    absl::FPrintF(out, "%s\n", service::ToJson(r));
  } else {
    PrintAnswer(r.neighbors(), r.staleness(), r.missing_members(), out);
  }
  return absl::OkStatus();
}

}  // namespace

CLI::App* AddSimilarCommand(CLI::App* app, SimilarCommandOptions* o) {
  CLI::App* cmd = app->add_subcommand(
      "similar",
      "The documents or users most like one (Hellinger distance between "
      "topic mixtures), from a running daemon");
  CLI::Option* doc =
      cmd->add_option("--doc", o->doc,
                      "A document of the model: a training document's "
                      "corpus id, or an ingested document's id");
  CLI::Option* text = cmd->add_option(
      "--text", o->text, "A new text: its topics are inferred first");
  CLI::Option* user = cmd->add_option("--user", o->user, "A user id");
  doc->excludes(text)->excludes(user);
  text->excludes(user);
  cmd->add_option("--top", o->top, "Neighbours to print")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  AddDaemonAddressOptions(cmd, &o->address);
  AddJsonOption(cmd, &o->json);
  return cmd;
}

absl::Status RunSimilar(const SimilarCommandOptions& o, FILE* out) {
  if (o.doc.empty() && o.text.empty() && o.user.empty()) {
    return absl::InvalidArgumentError(
        "give one of --doc ID, --text \"...\" or --user ID");
  }
  LATENTD_ASSIGN_OR_RETURN(std::unique_ptr<service::ApiClient> api,
                           ConnectDaemon(o.address));
  if (!o.user.empty()) {
    api::SimilarUsersRequest q;
    q.set_user(o.user);
    q.set_top(o.top);
    return AskAndPrint<api::SimilarUsersRequest, api::SimilarUsersResponse>(
        *api, service::Method::kSimilarUsers, q, o.json, out);
  }
  api::SimilarDocumentsRequest q;
  q.set_document(o.doc);
  q.set_text(o.text);
  q.set_top(o.top);
  return AskAndPrint<api::SimilarDocumentsRequest,
                     api::SimilarDocumentsResponse>(
      *api, service::Method::kSimilarDocuments, q, o.json, out);
}

}  // namespace latentd
