#include "service/cluster/local_cluster.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/synchronization/mutex.h"
#include "base/status_macros.h"
#include "sync/control/membership.h"
#include "sync/transport/ports.h"

namespace latentd {

namespace {

// Whether nothing holds `port` on 127.0.0.1 now (a bind succeeds).
bool CanBind(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

absl::StatusOr<int> PickFreePort() {
  // Drawn below the ephemeral range and below the ports daemons draw to
  // keep (sync/transport/ports.h), so that no other socket's bind takes it
  // before the caller binds it; at random, so that tests running side by
  // side rarely draw the same port.
  const sync::PortRange range =
      sync::PortsBelowEphemeral(sync::kFirstTestPort, sync::kFirstDurablePort);
  if (range.size() < 1000) {
    return absl::UnavailableError(
        absl::StrCat("no port range below the ephemeral ports (from ",
                     sync::FirstEphemeralPort(), ")"));
  }
  // Nor is a port handed out twice in one process: a caller may not bind
  // it before asking for the next (a node's three listeners).
  static absl::Mutex mu(absl::kConstInit);
  static auto* handed_out ABSL_GUARDED_BY(mu) = new absl::flat_hash_set<int>();
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = sync::DrawPort(range);
    absl::MutexLock l(&mu);
    if (handed_out->contains(port) || !CanBind(port)) continue;
    handed_out->insert(port);
    return port;
  }
  return absl::UnavailableError(
      absl::StrCat("no free loopback port in ", range.first, "..", range.last));
}

absl::StatusOr<std::unique_ptr<RedisProcess>> RedisProcess::Start(
    const std::string& binary) {
  std::unique_ptr<RedisProcess> r(new RedisProcess());
  r->binary_ = binary;
  LATENTD_ASSIGN_OR_RETURN(r->port_, PickFreePort());
  LATENTD_RETURN_IF_ERROR(r->Launch());
  return r;
}

void RedisProcess::Kill() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

absl::Status RedisProcess::Restart() {
  Kill();
  return Launch();
}

absl::Status RedisProcess::Launch() {
  const std::string port = std::to_string(port_);
  const pid_t pid = ::fork();
  if (pid < 0) return absl::UnavailableError("fork failed");
  if (pid == 0) {
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, STDOUT_FILENO);
      ::dup2(devnull, STDERR_FILENO);
    }
    ::execlp(binary_.c_str(), binary_.c_str(), "--port", port.c_str(), "--bind",
             "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel",
             "warning", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  pid_ = pid;
  for (int i = 0; i < 250; ++i) {
    auto c = sync::RedisClient::Connect(url(), absl::Milliseconds(200));
    if (c.ok()) {
      auto pong = (*c)->Command({"PING"});
      if (pong.ok()) return absl::OkStatus();
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      pid_ = -1;
      return absl::UnavailableError(
          absl::StrCat(binary_, " exited at start (status ", status, ")"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return absl::UnavailableError("redis-server did not answer in 5 s");
}

RedisProcess::~RedisProcess() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  ::waitpid(pid_, &status, 0);
}

std::string RedisProcess::url() const {
  return absl::StrCat("redis://127.0.0.1:", port_);
}

absl::StatusOr<std::unique_ptr<LocalCluster>> LocalCluster::Start(
    const ClusterNodeOptions& base, int nodes,
    std::vector<absl::Duration> slow_down, int shards) {
  std::unique_ptr<LocalCluster> c(new LocalCluster());
  if (shards < nodes) shards = nodes;
  std::vector<absl::StatusOr<std::unique_ptr<ClusterNode>>> made(nodes);
  std::vector<std::thread> threads;
  for (int i = 0; i < nodes; ++i) {
    ClusterNodeOptions o = base;
    o.shard = static_cast<uint32_t>(i);
    o.num_shards = static_cast<uint32_t>(shards);
    o.expected_members = static_cast<uint32_t>(nodes);
    o.node_id = absl::StrCat("node", i);
    o.listen = "127.0.0.1:0";
    for (std::string* file : {&o.tls.cert_file, &o.tls.key_file}) {
      *file = absl::StrReplaceAll(*file, {{"{node}", o.node_id}});
    }
    if (static_cast<size_t>(i) < slow_down.size()) o.slow_down = slow_down[i];
    threads.emplace_back(
        [&made, i, o]() mutable { made[i] = ClusterNode::Create(o); });
  }
  for (auto& t : threads) t.join();
  for (auto& m : made) {
    if (!m.ok()) return m.status();
    c->nodes_.push_back(std::move(*m));
  }
  return c;
}

LocalCluster::~LocalCluster() {
  for (auto& n : nodes_) n->Stop();
}

absl::StatusOr<LocalClusterRun> LocalCluster::RunSweeps(int sweeps) {
  LocalClusterRun run;
  run.reports.resize(nodes_.size());
  std::vector<absl::Status> status(nodes_.size());
  std::vector<std::thread> threads;
  const auto start = std::chrono::steady_clock::now();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    threads.emplace_back([this, i, sweeps, &run, &status] {
      for (int s = 0; s < sweeps; ++s) {
        // Only the last sweep's likelihood is reported.
        absl::StatusOr<NodeSweepReport> r =
            nodes_[i]->Sweep(/*evaluate=*/s + 1 == sweeps);
        if (!r.ok()) {
          status[i] = r.status();
          break;
        }
        run.reports[i].push_back(*r);
      }
      nodes_[i]->Finish();
    });
  }
  for (auto& t : threads) t.join();
  run.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    LATENTD_RETURN_IF_ERROR(status[i]);
    for (const auto& r : run.reports[i]) run.tokens_sampled += r.tokens;
  }
  return run;
}

absl::StatusOr<int> LocalCluster::Drain(int max_rounds) {
  // Keys handed off by a ring epoch change must reach their new owners
  // before quiet passes can mean the globals are final.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  for (auto& n : nodes_) {
    while (n->pending_handoffs() > 0 || n->ring_changing()) {
      if (absl::Now() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrCat(n->node_id(), " still has ", n->pending_handoffs(),
                         " key hand-off(s) not taken by their new owners"));
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  }
  std::string last_pass;  // what kept the last pass from being quiet
  for (int round = 1; round <= max_rounds; ++round) {
    bool quiet = true;
    last_pass.clear();
    for (auto& n : nodes_) {
      const sync::Synchronizer::PassResult r = n->DrainPass();
      quiet = r.quiet && quiet;
      if (r.quiet) continue;
      absl::StrAppend(&last_pass, last_pass.empty() ? "" : "; ", n->node_id(),
                      r.unavailable.empty()
                          ? " still sent or received changes, or could not "
                            "apply them"
                          : absl::StrCat(" could not reach ",
                                         absl::StrJoin(r.unavailable, ", ")));
    }
    if (quiet && round > 1) return round;
  }
  return absl::DeadlineExceededError(
      absl::StrCat("cluster not quiet after ", max_rounds,
                   " drain rounds (the last: ", last_pass, ")"));
}

double LocalCluster::LogLikelihoodPerToken(const LocalClusterRun& run) const {
  double ll = 0;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    ll += nodes_[i]->OwnedWordLogLikelihood();
    if (!run.reports[i].empty()) {
      ll += run.reports[i].back().doc_log_likelihood;
    }
  }
  return ll / static_cast<double>(total_tokens());
}

uint64_t LocalCluster::total_tokens() const {
  uint64_t t = 0;
  for (const auto& n : nodes_) t += n->tokens();
  return t;
}

}  // namespace latentd
