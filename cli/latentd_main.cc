// latentd: the long-running node daemon. Flags come from the settings table
// (service/daemon_settings.h), so --help, --config files and the docs list
// the same settings. SIGTERM/SIGINT: stop serving, stop training after the
// current sweep, write a checkpoint, exit 0. A restart resumes from it.
// SIGHUP: reopen the log file, re-read the --config file and apply the
// settings marked runtime (a changed restart-only setting is logged and
// left as it is), and read the api-tokens file again (a bad one keeps the
// tokens loaded before); serving and training go on.
//
// A cluster node declared down while alive (its heartbeats came late: it
// was stopped, or starved, longer than --failure-timeout) shuts down as on
// SIGTERM and then executes itself again with the same arguments, so that
// it returns to the cluster as a restarted node does (docs/design.md,
// "Failure detection and failover"); only with fixed --listen and
// --cluster-listen ports, since its API address is its id in the ring.
//
// Once serving (in cluster mode: once joined), the bound addresses are
// written to DIR/ports ("http=host:port" and "tcp=host:port" lines), so a
// port 0 setting can be discovered.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/cpu_features.h"
#include "base/fast_mutexes.h"
#include "base/file_util.h"
#include "base/log.h"
#include "corpora/document_reader.h"
#include "sampler/model_dir.h"
#include "sampler/sampling_kernel.h"
#include "service/api_auth.h"
#include "service/daemon_settings.h"
#include "service/dir_watcher.h"
#include "service/http_gateway.h"
#include "service/redis_ingest.h"
#include "service/rpc_server.h"
#include "service/systemd_notify.h"
#include "sync/transport/peer_auth.h"
#include "sync/transport/tls.h"

namespace {

using latentd::service::DaemonConfig;

// main's arguments, for the re-execution of a node declared down; set once
// declared down (any thread), read after the shutdown.
char** g_argv = nullptr;
std::atomic<bool> g_return_to_cluster{false};
// Why it returns: declared down (false) or its removal rolled back (true).
std::atomic<bool> g_removal_rolled_back{false};

using Values = std::vector<std::pair<std::string, std::string>>;

int Fail(const absl::Status& s) {
  latentd::log::Error("latentd", s.message());
  return s.code() == absl::StatusCode::kInvalidArgument ? 2 : 1;
}

// The stderr latentd started with, kept so that a reload to log-file ""
// can go back to it.
int original_stderr = -1;

// Points stderr (the log) at `path`, appending; "" points it back at the
// stderr the daemon started with. dup2 swaps the descriptor at once, so
// threads logging meanwhile write to the old file or the new one, never
// nowhere.
absl::Status OpenLogFile(const std::string& path) {
  if (original_stderr < 0)
    original_stderr = ::fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 0);
  if (path.empty()) {
    if (original_stderr >= 0) ::dup2(original_stderr, STDERR_FILENO);
    return absl::OkStatus();
  }
  const int fd =
      ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (fd < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "cannot open log file ", path, ": ", std::strerror(errno)));
  }
  const int ok = ::dup2(fd, STDERR_FILENO);
  const int saved = errno;
  ::close(fd);
  if (ok < 0) {
    return absl::InternalError(absl::StrCat("cannot redirect the log to ", path,
                                            ": ", std::strerror(saved)));
  }
  return absl::OkStatus();
}

// Where the running settings came from, for a reload.
struct SettingsSource {
  std::string config_path;  // "" = no --config file
  Values flags;             // given on the command line; they keep winning
};

// SIGHUP: re-reads the config file and applies what may change at runtime.
// Every failure is logged; the daemon goes on with what it had.
void Reload(const SettingsSource& source, latentd::service::LatentdService* s,
            Values* file_values, std::string* log_file) {
  using latentd::service::DaemonSettings;
  (void)latentd::service::NotifySystemdReloading();
  Values next_file = *file_values;
  if (!source.config_path.empty()) {
    auto read = latentd::service::ReadConfigFile(source.config_path);
    if (!read.ok()) {
      latentd::log::Error(
          "latentd", absl::StrFormat("reload: %s; settings unchanged",
                                     std::string(read.status().message())));
      (void)latentd::service::NotifySystemd("READY=1");
      return;
    }
    next_file = std::move(*read);
  }
  auto next = latentd::service::ResolveConfig(next_file, source.flags);
  if (!next.ok()) {
    latentd::log::Error("latentd",
                        absl::StrFormat("reload: %s; settings unchanged",
                                        std::string(next.status().message())));
    (void)latentd::service::NotifySystemd("READY=1");
    return;
  }
  *log_file = next->log_file;
  latentd::log::SetLevel(next->log_level);
  absl::Status reopened = OpenLogFile(*log_file);  // rotated or moved
  if (!reopened.ok()) {
    latentd::log::Warning("latentd",
                          absl::StrFormat("reload: %s", reopened.message()));
  }
  const auto before =
      latentd::service::SettingValues(*file_values, source.flags);
  const auto after = latentd::service::SettingValues(next_file, source.flags);
  int applied = 0;
  for (const auto& spec : DaemonSettings()) {
    const std::string& was = before.at(spec.name);
    const std::string& now = after.at(spec.name);
    if (was == now) continue;
    latentd::log::Info(
        "latentd",
        absl::StrFormat(
            "reload: %s: '%s' -> '%s'%s", spec.name, was, now,
            spec.runtime ? "" : " (not applied: restart to change)"));
    applied += spec.runtime;
  }
  absl::Status st = s->Reconfigure(next->service);
  if (!st.ok()) {
    latentd::log::Warning("latentd",
                          absl::StrFormat("reload: %s", st.message()));
  }
  *file_values = std::move(next_file);
  latentd::log::Info("latentd",
                     absl::StrFormat("reloaded (%d runtime setting%s changed)",
                                     applied, applied == 1 ? "" : "s"));
  (void)latentd::service::NotifySystemd("READY=1");
}

// SIGHUP: reads the API tokens file again; a bad file keeps the tokens the
// daemon had (both front ends check against the new set at once).
// True if the file was reloaded.
bool ReloadTokens(const std::string& path,
                  latentd::service::ApiTokens* tokens) {
  absl::StatusOr<size_t> n = tokens->Reload(path);
  if (!n.ok()) {
    latentd::log::Error(
        "latentd",
        absl::StrFormat("reload: api-tokens not reloaded, the tokens loaded "
                        "before stay: %s",
                        std::string(n.status().message())));
    return false;
  }
  latentd::log::Info(
      "latentd", absl::StrFormat("reload: api-tokens %s: %d token%s", path, *n,
                                 *n == 1 ? "" : "s"));
  return true;
}

// Raises the open-files soft limit to the hard limit (the connection caps
// need a descriptor each) and warns if the caps could still exceed it.
void RaiseOpenFilesLimit(const DaemonConfig& config) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return;
  if (limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
    ::getrlimit(RLIMIT_NOFILE, &limit);
  }
  const uint64_t caps =
      (config.http.port >= 0 ? config.http.max_connections : 0) +
      (config.rpc_enabled ? config.rpc.max_connections : 0);
  if (limit.rlim_cur != RLIM_INFINITY && caps + 256 > limit.rlim_cur) {
    latentd::log::Warning(
        "latentd",
        absl::StrFormat("the connection caps (%d in all) come near the "
                        "open-files limit %d: past it new connections wait "
                        "in the backlog (raise LimitNOFILE / ulimit -n, or "
                        "lower the *-max-connections settings)",
                        caps, static_cast<uint64_t>(limit.rlim_cur)));
  }
}

// TLS for both APIs, from tls-cert and tls-key; nullptr without.
absl::StatusOr<std::shared_ptr<const latentd::sync::TlsContext>> ApiTls(
    const DaemonConfig& config) {
  if (config.tls_cert_file.empty() && config.tls_key_file.empty()) {
    return nullptr;
  }
  auto tls = latentd::sync::TlsContext::ForServer(config.tls_cert_file,
                                                  config.tls_key_file);
  if (!tls.ok()) return tls.status();
  latentd::log::Info("latentd", absl::StrCat("TLS on both APIs (certificate ",
                                             config.tls_cert_file, ")"));
  return tls;
}

int Serve(const DaemonConfig& config, const SettingsSource& source,
          Values file_values) {
  // Block the signals the main thread waits for in every thread.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  std::string log_file = config.log_file;
  if (absl::Status s = OpenLogFile(log_file); !s.ok()) return Fail(s);
  latentd::log::SetLevel(config.log_level);
  latentd::log::Info("latentd", absl::StrCat("sampling with ",
                                             latentd::CpuPathsDescription()));

  // API authentication: on with a tokens file, checked before anything
  // starts so that a bad file is the start-up error.
  std::unique_ptr<latentd::service::ApiTokens> tokens;
  if (!config.api_tokens_file.empty()) {
    auto t = latentd::service::ApiTokens::Load(config.api_tokens_file);
    if (!t.ok()) return Fail(t.status());
    tokens = std::make_unique<latentd::service::ApiTokens>(std::move(*t));
    if (!config.cluster.redis_url.empty() && tokens->PeerToken().empty()) {
      return Fail(absl::InvalidArgumentError(absl::StrCat(
          "api-tokens ", config.api_tokens_file,
          ": cluster mode needs an admin token in it, which the node gives "
          "its peers when it forwards a user's events or profile query")));
    }
    latentd::log::Info("latentd",
                       absl::StrCat("API authentication on (tokens from ",
                                    config.api_tokens_file, ")"));
  }
  auto tls = ApiTls(config);
  if (!tls.ok()) return Fail(tls.status());
  RaiseOpenFilesLimit(config);
  latentd::service::MetricsRegistry metrics;
  latentd::service::ServiceOptions service_options = config.service;
  if (tokens != nullptr) service_options.peer_token = tokens->PeerToken();
  if (*tls != nullptr) {
    service_options.peer_tls = {.enabled = true, .ca_file = config.tls_ca_file};
  }
  // Removed from its cluster by an operator: shut down as on SIGTERM.
  service_options.on_left_cluster = [] { ::kill(::getpid(), SIGTERM); };
  // Declared down while alive: shut down, then start again (below).
  if (config.rpc.port != 0 && !absl::EndsWith(config.cluster.listen, ":0")) {
    service_options.on_declared_down = [] {
      g_return_to_cluster = true;
      ::kill(::getpid(), SIGTERM);
    };
  }
  // Its removal rolled back (a failed hand-off): the same, to sample again
  // as the active member the ring has it as. (The sync address is kept in
  // DIR/cluster.address; the API port is the node's id, so it must be
  // fixed.)
  if (config.rpc.port != 0) {
    service_options.on_removal_rolled_back = [] {
      g_removal_rolled_back = true;
      g_return_to_cluster = true;
      ::kill(::getpid(), SIGTERM);
    };
  }
  if (!latentd::PathExists(latentd::ModelPaths(config.service.data_dir)
                               .tokens())) {  // the corpus is read now
    const std::string warning =
        latentd::MissingVocabularyWarning(config.service.corpus);
    if (!warning.empty()) latentd::log::Warning("latentd", warning);
  }
  auto service =
      latentd::service::LatentdService::Open(service_options, &metrics);
  if (!service.ok()) return Fail(service.status());

  std::string ports;
  std::unique_ptr<latentd::service::HttpGateway> http;
  if (config.http.port >= 0) {
    latentd::service::HttpOptions http_options = config.http;
    http_options.tokens = tokens.get();
    http_options.tls = *tls;
    auto g = latentd::service::HttpGateway::Start(http_options, service->get(),
                                                  &metrics);
    if (!g.ok()) return Fail(g.status());
    http = std::move(*g);
    absl::StrAppend(&ports, "http=", config.http.host, ":", http->port(), "\n");
    latentd::log::Info(
        "latentd",
        absl::StrFormat("HTTP on %s:%d", config.http.host, http->port()));
  }
  std::unique_ptr<latentd::service::RpcServer> rpc;
  if (config.rpc_enabled) {
    latentd::service::RpcOptions rpc_options = config.rpc;
    rpc_options.tokens = tokens.get();
    rpc_options.tls = *tls;
    auto r = latentd::service::RpcServer::Start(rpc_options, service->get(),
                                                &metrics);
    if (!r.ok()) return Fail(r.status());
    rpc = std::move(*r);
    absl::StrAppend(&ports, "tcp=", config.rpc.host, ":", rpc->port(), "\n");
    latentd::log::Info(
        "latentd",
        absl::StrFormat("protobuf/TCP on %s:%d", config.rpc.host, rpc->port()));
  }
  if (!config.cluster.redis_url.empty()) {
    // Cluster mode: the node's id is its API TCP address, where peers
    // forward users' events and profile queries.
    if (rpc == nullptr) {
      return Fail(absl::InvalidArgumentError(
          "cluster mode (--cluster-redis) needs the TCP API (--listen)"));
    }
    latentd::ClusterLinkOptions cluster = config.cluster;
    cluster.node_id = absl::StrCat(config.rpc.host, ":", rpc->port());
    if (!config.cluster_key_file.empty()) {
      absl::StatusOr<std::string> key =
          latentd::sync::LoadClusterKey(config.cluster_key_file);
      if (!key.ok()) return Fail(key.status());
      cluster.cluster_key = *std::move(key);
    }
    absl::Status joined = (*service)->JoinCluster(std::move(cluster));
    if (!joined.ok()) return Fail(joined);
  }
  (*service)->Start();
  std::unique_ptr<latentd::service::RedisIngester> redis;
  if (!config.redis.address.empty()) {
    redis = std::make_unique<latentd::service::RedisIngester>(
        config.redis, service->get(), &metrics);
    redis->Start();
  }
  std::unique_ptr<latentd::service::DirWatcher> watch;
  if (!config.watch.dir.empty()) {
    watch = std::make_unique<latentd::service::DirWatcher>(
        config.watch, service->get(), &metrics);
    watch->Start();
  }
  absl::Status written =
      latentd::WriteFileAtomically(config.service.data_dir + "/ports", ports);
  if (!written.ok()) return Fail(written);
  latentd::log::Info("latentd", absl::StrFormat("serving (data in %s)",
                                                config.service.data_dir));
  if (absl::Status n = latentd::service::NotifySystemd("READY=1"); !n.ok()) {
    latentd::log::Warning("latentd", n.message());
  }

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    latentd::log::Info("latentd", "SIGHUP, reloading");
    Reload(source, service->get(), &file_values, &log_file);
    if (tokens != nullptr &&
        ReloadTokens(config.api_tokens_file, tokens.get()) &&
        !config.cluster.redis_url.empty()) {
      // The admin token this node forwards users' calls to their owners
      // with follows the file too.
      if (std::string peer = tokens->PeerToken(); !peer.empty()) {
        (*service)->SetPeerToken(std::move(peer));
        latentd::log::Info("latentd",
                           "reload: forwarding to peers with the file's first "
                           "admin token");
      } else {
        latentd::log::Error(
            "latentd",
            "reload: the tokens file holds no admin token; this node keeps "
            "forwarding to its peers with the one it had");
      }
    }
  }
  const bool again = g_return_to_cluster.load();
  latentd::log::Info(
      "latentd",
      again ? std::string(g_removal_rolled_back.load()
                              ? "this node's removal was rolled back: "
                                "shutting down, then starting again to "
                                "sample as a member"
                              : "declared down by the cluster: shutting "
                                "down, then starting again to return to it")
            : absl::StrFormat("signal %d, shutting down", sig));
  if (absl::Status n =
          latentd::service::NotifySystemd(again ? "RELOADING=1" : "STOPPING=1");
      !n.ok()) {
    latentd::log::Warning("latentd", n.message());
  }
  if (watch) watch->Stop();
  if (redis) redis->Stop();
  if (http) http->Stop();
  if (rpc) rpc->Stop();
  absl::Status stopped = (*service)->Stop();
  if (!stopped.ok()) return Fail(stopped);
  latentd::log::Info("latentd", "stopped cleanly");
  if (again) {
    // Every listener is closed (the log file is close-on-exec); the same
    // pid, arguments and data directory.
    ::execv("/proc/self/exe", g_argv);
    return Fail(absl::InternalError(absl::StrCat(
        "could not start again (exec /proc/self/exe): ", std::strerror(errno),
        "; restart it from its data directory to return to the cluster")));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  g_argv = argv;
  latentd::DisableMutexDeadlockDetection();
  CLI::App app{
      "latentd: the latentd node daemon. Trains LDA continuously on what it "
      "is fed (a corpus, the Ingest API, a watched directory, a Redis "
      "stream) and answers queries over HTTP/JSON and framed protobuf/TCP. "
      "With --graph-edges it also trains a graph factorization on an edge "
      "list and serves vertex embeddings, link scores and nearest vertices "
      "(and takes new edges). "
      "With --cluster-redis it is one node of a training cluster: it takes "
      "users' events and profile queries, and writes DIR/ports, once every "
      "member has joined; a node with --graph-edges and no corpus is then "
      "a node of a graph cluster (each trains on the share of the edge "
      "list the ring gives it; --graph-consensus).\n"
      "Every setting below may also be given in the --config file as "
      "'name = value'; a flag wins over the file."};
  app.set_version_flag("--version", "latentd 0.1.0");
  app.footer(absl::StrCat("Environment: ", latentd::kCpuCapHelp,
                          "; the start-up log names the paths in use. ",
                          latentd::kMutexDeadlockDetectionHelp, "."));
  std::string config_path;
  bool print_config = false, print_docs = false;
  app.add_option("--config", config_path, "Config file ('name = value')");
  app.add_flag("--print-config", print_config,
               "Print an example config with every setting and exit");
  app.add_flag("--print-docs", print_docs,
               "Print the settings table as Markdown and exit");
  std::map<std::string, std::string> flag_values;
  for (const auto& s : latentd::service::DaemonSettings()) {
    // An alias's row has no default of its own: its setting's help says it.
    CLI::Option* option = app.add_option(
        "--" + s.name, flag_values[s.name],
        s.alias_of.empty()
            ? absl::StrCat(s.help, " [", s.bounds, "; default '",
                           s.default_value, "'",
                           s.runtime ? "" : "; restart to change", "]")
            : s.help);
    // An on|off setting given bare (`--cluster-join`, `--join`) is on.
    if (s.bounds == "on|off") option->expected(0, 1)->default_str("on");
  }
  CLI11_PARSE(app, argc, argv);
  if (print_config || print_docs) {
    std::fputs(print_config ? latentd::service::ExampleConfig().c_str()
                            : latentd::service::SettingsMarkdown().c_str(),
               stdout);
    return 0;
  }
  Values file, flags;
  if (!config_path.empty()) {
    auto read = latentd::service::ReadConfigFile(config_path);
    if (!read.ok()) return Fail(read.status());
    file = std::move(*read);
  }
  for (const auto& s : latentd::service::DaemonSettings()) {
    if (app.count("--" + s.name) > 0) {
      flags.emplace_back(s.name, flag_values[s.name]);
    }
  }
  auto config = latentd::service::ResolveConfig(file, flags);
  if (!config.ok()) return Fail(config.status());
  if (config->service.data_dir.empty()) {
    latentd::log::Error("latentd", "--data-dir is required");
    return 2;
  }
  return Serve(*config, {config_path, flags}, std::move(file));
}
