// The daemon's settings: ONE table (name, default, bounds, whether it can
// change at runtime, what it does) that feeds latentd's flags, its config
// file, --help and the docs (ExampleConfig() writes ops/latentd.conf).
//
// Precedence: the table's default < the config file (--config) < a flag.
// Settings marked `runtime` can change while the daemon runs: SIGHUP
// re-reads the config file and applies them (cli/latentd_main.cc).
// Config file: "name = value" lines; '#' starts a comment; unknown names and
// bad values are errors naming the file and line.
//
// Thread-safety: pure functions; the table is immutable.
#ifndef LATENTD_SERVICE_DAEMON_SETTINGS_H_
#define LATENTD_SERVICE_DAEMON_SETTINGS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/log.h"
#include "service/dir_watcher.h"
#include "service/http_gateway.h"
#include "service/latentd_service.h"
#include "service/redis_ingest.h"
#include "service/rpc_server.h"

namespace latentd::service {

// Everything latentd runs with, as Options structs of its parts.
struct DaemonConfig {
  ServiceOptions service;
  HttpOptions http;
  RpcOptions rpc;
  bool rpc_enabled = true;
  RedisIngestOptions redis;  // address "" = no Redis stream
  DirWatchOptions watch;     // dir "" = no watched directory
  // Cluster mode if cluster.redis_url is set (LatentdService::JoinCluster;
  // node_id is then the API TCP address, so --listen must be on).
  ClusterLinkOptions cluster;
  // The cluster key file (sync::LoadClusterKey); read into
  // cluster.cluster_key at startup. "" = none (then cluster.insecure).
  std::string cluster_key_file;
  // The API's tokens file (service/api_auth.h); "" = no authentication.
  std::string api_tokens_file;
  // TLS for both APIs (sync::TlsContext::ForServer): the certificate chain
  // and its key, PEM; "" = no TLS. tls_ca_file: the CA a node verifies its
  // peers' API certificates with when it forwards ("" = the system's).
  std::string tls_cert_file, tls_key_file, tls_ca_file;
  // Where the log goes ("" = stderr); SIGHUP reopens it.
  std::string log_file;
  log::Level log_level = log::Level::kInfo;
};

struct SettingSpec {
  std::string name;           // flag --name, config key name
  std::string default_value;  // as text
  std::string bounds;         // for people: "1..65536", "lines|yahoo|..."
  bool runtime = false;       // SIGHUP applies it without a restart
  std::string help;
  // Other names of this setting, accepted as a flag and as a config key: a
  // name it had before (deprecated; the help says so) or one that gensim
  // and Mallet users know ("num-topics"). Each also has a row of its own
  // (below), so that a parser adding one flag per row accepts it.
  std::vector<std::string> aliases;
  // Set on an alias's own row: the setting it names. Such a row has no
  // default, applies like that setting, and is left out of ExampleConfig()
  // and SettingsMarkdown(); the values a reload compares use the real name.
  std::string alias_of;
  // Parses and checks `value`, storing it; kInvalidArgument on a bad one.
  std::function<absl::Status(std::string_view value, DaemonConfig*)> apply;
};

// The table, in the order --help and the example config list it; the
// aliases' rows come last.
const std::vector<SettingSpec>& DaemonSettings();

// The name of the setting `name` (itself or an alias) stands for, "" if none.
std::string CanonicalSettingName(std::string_view name);

// Applies every default, then `file_values`, then `flag_values` (name,
// value pairs; a name not in the table is an error; an alias applies to
// the setting it names).
absl::StatusOr<DaemonConfig> ResolveConfig(
    const std::vector<std::pair<std::string, std::string>>& file_values,
    const std::vector<std::pair<std::string, std::string>>& flag_values);

// The text value of every setting: its default, then `file_values`, then
// `flag_values`, keyed by the setting's name (an alias's value goes to the
// setting it names; an alias row's own entry stays ""). Two of these tell
// which settings a reload changes.
std::map<std::string, std::string> SettingValues(
    const std::vector<std::pair<std::string, std::string>>& file_values,
    const std::vector<std::pair<std::string, std::string>>& flag_values);

// Reads a config file into (name, value) pairs, checking names and syntax;
// a key that is an alias comes back as the name of its setting.
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadConfigFile(
    const std::string& path);

// A commented config file listing every setting with its default (settings
// without a default are commented out).
std::string ExampleConfig();
// The table as Markdown, for docs/operations.md.
std::string SettingsMarkdown();

}  // namespace latentd::service

#endif  // LATENTD_SERVICE_DAEMON_SETTINGS_H_
