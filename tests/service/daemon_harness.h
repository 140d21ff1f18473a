// Test harness for multi-process service tests: a private redis-server on a
// Unix socket (no TCP port at all, unless the test places it in a network
// namespace of its own), latentd processes on 127.0.0.1 with ports picked
// by the daemon (port 0, read back from DIR/ports), and API clients over
// every protocol. Nothing talks to any other address than loopback and the
// test's own namespaces (tests/service/netns_topology.h).
#ifndef LATENTD_TESTS_SERVICE_DAEMON_HARNESS_H_
#define LATENTD_TESTS_SERVICE_DAEMON_HARNESS_H_

#include <hiredis/hiredis.h>
#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "service/api_client.h"
#include "tests/testdata/test_corpus.h"

namespace latentd::testing {

// A fresh directory under $TMPDIR (or /tmp), removed at destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Runs argv[0] with args; stdout/stderr go to `log_path`. Returns the pid.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path);
// Sends `sig` and waits up to `timeout_s`; returns the exit status (as from
// waitpid) or -1 on timeout (the process is then killed with SIGKILL).
int StopProcess(pid_t pid, int sig, double timeout_s);

// Where a RedisServer runs besides its Unix socket.
struct RedisPlacement {
  // Non-empty: redis-server runs under this command prefix (e.g. {"ip",
  // "netns", "exec", NS}).
  std::vector<std::string> exec_prefix;
  // Non-empty "HOST:PORT": it also listens on TCP there (tcp_address()).
  std::string tcp;
};

class RedisServer {
 public:
  // Starts redis-server in `dir` listening only on dir/redis.sock (and on
  // `placement.tcp` if given). With
  // `persistent`, it keeps its data in an append-only file in `dir`
  // (fsynced on every write), as an operator runs it: a Restart() finds
  // what was written before the Kill(). Otherwise nothing is saved.
  // With `password`, it requires AUTH (--requirepass): address() then
  // carries the password (sync/control/redis_url.h) and Connect()
  // authenticates.
  explicit RedisServer(const std::string& dir, bool persistent = false,
                       std::string password = "",
                       RedisPlacement placement = {});
  ~RedisServer();
  bool ok() const { return ok_; }
  std::string address() const {
    return password_.empty() ? "unix:" + socket_
                             : "unix://:" + password_ + "@" + socket_;
  }
  // placement.tcp as a --cluster-redis address (with the password); empty
  // if it listens on the Unix socket only.
  std::string tcp_address() const;
  // A connection for the test's own commands (over the Unix socket).
  redisContext* Connect() const;
  // SIGKILL and wait: clients find the socket gone.
  void Kill();
  // Starts it again (same socket, same directory); ok() once it answers.
  bool Restart();

 private:
  bool Start();
  std::string dir_, socket_, password_;
  bool persistent_ = false;
  RedisPlacement placement_;
  pid_t pid_ = -1;
  bool ok_ = false;
};

class Daemon {
 public:
  // Starts $LATENTD_BIN --data-dir dir --http 127.0.0.1:0 --listen
  // 127.0.0.1:0 (each unless `args` has it) plus `args`, and (if `wait`)
  // waits for dir/ports. The
  // daemon is killed when the thread that started it exits
  // (PR_SET_PDEATHSIG), so start daemons from the test's main thread and
  // wait for several at once with WaitForPorts(). A non-empty
  // `exec_prefix` runs it under that command (e.g. {"ip", "netns", "exec",
  // NS}, which execs it: pid() is still the daemon's).
  Daemon(const std::string& data_dir, const std::vector<std::string>& args,
         bool wait = true, const std::vector<std::string>& exec_prefix = {});
  // Waits for dir/ports (up to 60 s); false if the daemon exited first.
  bool WaitForPorts();
  ~Daemon();  // SIGKILL if still running
  bool ok() const { return ok_; }
  // Whether its process has not been stopped (Stop) or seen exit yet.
  bool running() const { return pid_ > 0; }
  // Whether its process has exited by itself since (not reaped before);
  // then *status is its wait status and running() false.
  bool Exited(int* status);
  pid_t pid() const { return pid_; }
  const std::string& data_dir() const { return dir_; }
  const std::string& http() const { return http_; }
  const std::string& tcp() const { return tcp_; }
  const std::string& log_path() const { return log_; }
  std::string Log() const;
  // SIGTERM (or `sig`) and wait; returns the wait status, -1 on timeout.
  int Stop(int sig = 15, double timeout_s = 60);
  std::unique_ptr<service::ApiClient> Client(service::Protocol p) const;

 private:
  std::string dir_, log_, http_, tcp_;
  pid_t pid_ = -1;
  bool ok_ = false;
};

// XADD of one document entry (fields id, user, text) to `stream`; fails
// the test on an error.
void XAdd(redisContext* c, const std::string& stream, const std::string& id,
          const std::string& user, const std::string& text);
// Entries of `stream` delivered to the group "latentd" and not yet
// acknowledged; -1 if unknown.
long long RedisPending(redisContext* c, const std::string& stream);

// Writes a cluster key file (mode 600) into `dir` and returns the flags
// that give it to a daemon: {"--cluster-key", FILE}. Every node of one
// cluster gets the same file.
std::vector<std::string> ClusterKeyArgs(const std::string& dir);

// Polls Status until `pred` holds (up to timeout_s). Returns the last one.
template <typename Pred>
absl::StatusOr<api::StatusResponse> WaitStatus(service::ApiClient* c, Pred pred,
                                               double timeout_s);

}  // namespace latentd::testing

#include "tests/service/daemon_harness_inl.h"

#endif  // LATENTD_TESTS_SERVICE_DAEMON_HARNESS_H_
