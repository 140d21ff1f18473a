// latentctl's client side: commands against a running latentd (status,
// topics, infer, profile, ingest, checkpoint) over framed protobuf/TCP
// (default) or HTTP. A model directory argument instead means offline
// (cli/query_commands.h).
//
// Thread-safety: reentrant; each command opens its own connection.
#ifndef LATENTD_CLI_CLIENT_COMMANDS_H_
#define LATENTD_CLI_CLIENT_COMMANDS_H_

#include <cstdio>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "sampler/fold_in.h"

namespace latentd {

struct DaemonAddress {
  std::string addr;              // "" = the protocol's default
  std::string protocol = "tcp";  // tcp | http (protobuf) | json
};

// Adds --addr and --protocol to `cmd`.
void AddDaemonAddressOptions(CLI::App* cmd, DaemonAddress* address);

// The daemon-only subcommands (status, profile, ingest, checkpoint).
struct DaemonCommands {
  DaemonAddress address;
  CLI::App* status = nullptr;
  CLI::App* profile = nullptr;
  CLI::App* ingest = nullptr;
  CLI::App* checkpoint = nullptr;
  std::string user;
  int top = 5;
  std::string text;
};
void AddDaemonCommands(CLI::App* app, DaemonCommands* commands);
// Runs the one that was parsed; nullopt if none was.
std::optional<absl::Status> RunDaemonCommands(const DaemonCommands& commands,
                                              FILE* in, FILE* out);

// `topics` against a daemon: the same text as the offline command.
absl::Status RunRemoteTopics(const DaemonAddress& address, int top,
                             std::optional<int64_t> topic, FILE* out);
// `infer` against a daemon: stdin lines in, "<line>\t<k>:<θ> ..." out.
absl::Status RunRemoteInfer(const DaemonAddress& address,
                            const InferOptions& options, int top, FILE* in,
                            FILE* out, FILE* err);

}  // namespace latentd

#endif  // LATENTD_CLI_CLIENT_COMMANDS_H_
