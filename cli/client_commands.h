// latentctl's client side: commands against a running latentd (status,
// topics, infer, profile, ingest, checkpoint) over framed protobuf/TCP
// (default) or HTTP. A model directory argument instead means offline
// (cli/query_commands.h).
//
// Output: human-readable text by default; with --json the machine form, the
// API's protobuf JSON mapping (api.proto field names in lowerCamelCase), one
// JSON value per line. topics and infer print the same text and the same
// JSON offline and against a daemon.
//
// Thread-safety: reentrant; each command opens its own connection.
#ifndef LATENTD_CLI_CLIENT_COMMANDS_H_
#define LATENTD_CLI_CLIENT_COMMANDS_H_

#include <cstdio>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "cli/query_commands.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "service/api_client.h"
#include "sync/transport/tls.h"

namespace latentd {

struct DaemonAddress {
  std::string addr;              // "" = the protocol's default
  std::string protocol = "tcp";  // tcp | http (protobuf) | json
  std::string token;             // --token; "" = $LATENTD_TOKEN, if set
  std::string tls_ca;            // --tls-ca: TLS, verified against this CA
  std::string tls = "auto";      // --tls: on | off | auto (on with --tls-ca)
  double wait_seconds = 10;      // --wait: retry a refused connection so long
};

// Adds --addr, --protocol, --token, --tls-ca, --tls and --wait to `cmd`.
void AddDaemonAddressOptions(CLI::App* cmd, DaemonAddress* address);
// TLS towards the daemon: on with --tls-ca (verified against it) or --tls
// on (the system's CAs); --tls off wins.
sync::ClientTls DaemonTls(const DaemonAddress& address);
// A client of the daemon `address` names (with its token); does not connect
// yet. Until its first call succeeds it waits up to --wait for a daemon
// that refuses connections (still starting; cli/daemon_wait.h), saying so
// once on stderr. kInvalidArgument for a bad --protocol or address.
absl::StatusOr<std::unique_ptr<service::ApiClient>> ConnectDaemon(
    const DaemonAddress& address);
// The bearer token to send: --token, else $LATENTD_TOKEN, else "".
std::string DaemonToken(const DaemonAddress& address);
// Adds --json (print JSON instead of text) to `cmd`; every latentctl
// command with structured output has it, with this help.
void AddJsonOption(CLI::App* cmd, bool* json);
// The line a text answer ends with when cluster members named in
// `missing` (a response's missing_members) did not answer: "# partial
// answer: ..."; "" when none is missing.
std::string PartialNote(
    const google::protobuf::RepeatedPtrField<std::string>& missing);

// The daemon-only subcommands (status, profile, ingest, checkpoint,
// document, topic-documents).
struct DaemonCommands {
  DaemonAddress address;
  bool json = false;
  CLI::App* status = nullptr;
  CLI::App* profile = nullptr;
  CLI::App* ingest = nullptr;
  CLI::App* checkpoint = nullptr;
  CLI::App* document = nullptr;         // a document's topic mixture
  CLI::App* topic_documents = nullptr;  // a topic's top documents
  std::string user;
  std::string document_id;
  uint32_t topic = 0;
  int top = 5;
  int words = 5;  // document: each printed topic's top words
  std::string text;
  bool wait_merged = false;    // ingest --wait-merged
  double merge_timeout = 120;  // ingest --merge-timeout, seconds
};
void AddDaemonCommands(CLI::App* app, DaemonCommands* commands);
// Runs the one that was parsed; nullopt if none was. Text: status prints
// "field: value" lines (nested fields as "version.sweep"), profile a
// header line and one line per topic, ingest "accepted N documents" (with
// --wait-merged, once they are in the model, then "merged into the model
// at sweep S"),
// checkpoint "checkpoint written at sweep N: PATH", document a header line
// and one line per topic ("  topic K\tθ\tn_dk\twords"), topic-documents a
// header line and one line per document ("  ID\tθ\tn_dk/n_d").
std::optional<absl::Status> RunDaemonCommands(const DaemonCommands& commands,
                                              FILE* in, FILE* out);

// `topics` against a daemon (options.model_dir is ignored); prints what
// RunTopics prints. Fails with kOutOfRange for a topic the model lacks.
absl::Status RunRemoteTopics(const DaemonAddress& address,
                             const TopicsCommandOptions& options, FILE* out);
// `infer` against a daemon (options.model_dir is ignored): stdin lines in,
// what RunInfer prints out; a line the daemon refuses (no known word) is
// reported on `err` and the rest go on; other errors end the command.
absl::Status RunRemoteInfer(const DaemonAddress& address,
                            const InferCommandOptions& options, FILE* in,
                            FILE* out, FILE* err);

}  // namespace latentd

#endif  // LATENTD_CLI_CLIENT_COMMANDS_H_
