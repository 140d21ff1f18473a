#include "tests/service/daemon_harness.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "gtest/gtest.h"

namespace latentd::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void SleepMs(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

}  // namespace

TempDir::TempDir() {
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern =
      std::string(tmp ? tmp : "/tmp") + "/latentd-test-XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  path_ = ::mkdtemp(buf.data()) ? buf.data() : "";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (!path_.empty() && std::getenv("LATENTD_KEEP_TEST_DIRS") == nullptr) {
    std::filesystem::remove_all(path_, ec);
  }
}

pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path) {
  const pid_t pid = ::fork();
  if (pid != 0) return pid;
  // Never outlive the test, even if it crashes.
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  std::vector<char*> args;
  for (const std::string& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  ::execvp(args[0], args.data());
  ::_exit(127);
}

int StopProcess(pid_t pid, int sig, double timeout_s) {
  if (pid <= 0) return -1;
  ::kill(pid, sig);
  const auto end =
      std::chrono::steady_clock::now() +
      std::chrono::milliseconds(static_cast<int>(timeout_s * 1000));
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    const pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0) return -1;
    SleepMs(20);
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

RedisServer::RedisServer(const std::string& dir, bool persistent,
                         std::string password, RedisPlacement placement)
    : dir_(dir),
      socket_(dir + "/redis.sock"),
      password_(std::move(password)),
      persistent_(persistent),
      placement_(std::move(placement)) {
  Start();
}

std::string RedisServer::tcp_address() const {
  if (placement_.tcp.empty()) return "";
  return password_.empty() ? placement_.tcp
                           : "redis://:" + password_ + "@" + placement_.tcp;
}

bool RedisServer::Start() {
  std::vector<std::string> argv = placement_.exec_prefix;
  std::string port = "0";
  if (!placement_.tcp.empty()) {
    const size_t colon = placement_.tcp.rfind(':');
    port = placement_.tcp.substr(colon + 1);
    argv.insert(argv.end(),
                {"redis-server", "--bind", placement_.tcp.substr(0, colon),
                 "--protected-mode", "no"});
  } else {
    argv.push_back("redis-server");
  }
  argv.insert(argv.end(), {"--port", port, "--unixsocket", socket_, "--save",
                           "", "--dir", dir_});
  for (const char* a : persistent_
                           ? std::vector<const char*>{"--appendonly", "yes",
                                                      "--appendfsync", "always"}
                           : std::vector<const char*>{"--appendonly", "no"}) {
    argv.push_back(a);
  }
  if (!password_.empty()) {
    argv.push_back("--requirepass");
    argv.push_back(password_);
  }
  pid_ = Spawn(argv, dir_ + "/redis.log");
  ok_ = false;
  for (int i = 0; i < 200 && !ok_; ++i) {
    redisContext* c = Connect();
    redisReply* r = c == nullptr
                        ? nullptr
                        : static_cast<redisReply*>(redisCommand(c, "PING"));
    // (While it loads its file, Redis answers -LOADING.)
    ok_ = r != nullptr && r->type == REDIS_REPLY_STATUS;
    if (r != nullptr) freeReplyObject(r);
    if (c != nullptr) redisFree(c);
    if (!ok_) SleepMs(25);
  }
  return ok_;
}

void RedisServer::Kill() {
  StopProcess(pid_, SIGKILL, 10);
  pid_ = -1;
  ok_ = false;
}

bool RedisServer::Restart() {
  if (pid_ > 0) Kill();
  return Start();
}

RedisServer::~RedisServer() { StopProcess(pid_, SIGTERM, 10); }

redisContext* RedisServer::Connect() const {
  redisContext* c = redisConnectUnix(socket_.c_str());
  if (c == nullptr || c->err) {
    if (c) redisFree(c);
    return nullptr;
  }
  if (!password_.empty()) {
    auto* r =
        static_cast<redisReply*>(redisCommand(c, "AUTH %s", password_.c_str()));
    const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
    if (r != nullptr) freeReplyObject(r);
    if (!ok) {
      redisFree(c);
      return nullptr;
    }
  }
  return c;
}

Daemon::Daemon(const std::string& data_dir,
               const std::vector<std::string>& args, bool wait,
               const std::vector<std::string>& exec_prefix)
    : dir_(data_dir), log_(data_dir + ".log") {
  const char* bin = std::getenv("LATENTD_BIN");
  std::vector<std::string> argv = exec_prefix;
  argv.insert(argv.end(), {bin ? bin : "latentd", "--data-dir", dir_});
  // --http and --listen on free ports, unless `args` gives them.
  for (const char* flag : {"--http", "--listen"}) {
    if (std::find(args.begin(), args.end(), flag) == args.end()) {
      argv.push_back(flag);
      argv.push_back("127.0.0.1:0");
    }
  }
  argv.insert(argv.end(), args.begin(), args.end());
  ::unlink((dir_ + "/ports").c_str());
  pid_ = Spawn(argv, log_);
  if (wait) WaitForPorts();
}

bool Daemon::WaitForPorts() {
  for (int i = 0; i < 1200; ++i) {
    int status;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return false;  // exited during start-up
    }
    const std::string ports = ReadFile(dir_ + "/ports");
    if (!ports.empty()) {
      std::istringstream in(ports);
      std::string line;
      while (std::getline(in, line)) {
        if (line.rfind("http=", 0) == 0) http_ = line.substr(5);
        if (line.rfind("tcp=", 0) == 0) tcp_ = line.substr(4);
      }
      ok_ = !http_.empty() && !tcp_.empty();
      return ok_;
    }
    SleepMs(50);
  }
  return false;
}

Daemon::~Daemon() {
  if (pid_ > 0) StopProcess(pid_, SIGKILL, 10);
}

std::string Daemon::Log() const { return ReadFile(log_); }

bool Daemon::Exited(int* status) {
  if (pid_ <= 0 || ::waitpid(pid_, status, WNOHANG) != pid_) return false;
  pid_ = -1;
  return true;
}

int Daemon::Stop(int sig, double timeout_s) {
  const int status = StopProcess(pid_, sig, timeout_s);
  pid_ = -1;
  return status;
}

std::unique_ptr<service::ApiClient> Daemon::Client(service::Protocol p) const {
  auto c = service::ApiClient::Create(
      p == service::Protocol::kTcp ? tcp_ : http_, p, absl::Seconds(30));
  return c.ok() ? std::move(*c) : nullptr;
}

void XAdd(redisContext* c, const std::string& stream, const std::string& id,
          const std::string& user, const std::string& text) {
  redisReply* r = static_cast<redisReply*>(
      redisCommand(c, "XADD %s * id %s user %s text %s", stream.c_str(),
                   id.c_str(), user.c_str(), text.c_str()));
  ASSERT_NE(r, nullptr);
  ASSERT_NE(r->type, REDIS_REPLY_ERROR) << r->str;
  freeReplyObject(r);
}

long long RedisPending(redisContext* c, const std::string& stream) {
  redisReply* r = static_cast<redisReply*>(
      redisCommand(c, "XPENDING %s latentd", stream.c_str()));
  long long n = -1;
  if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0) {
    n = r->element[0]->integer;
  }
  if (r) freeReplyObject(r);
  return n;
}

std::vector<std::string> ClusterKeyArgs(const std::string& dir) {
  const std::string path = dir + "/cluster.key";
  FILE* f = std::fopen(path.c_str(), "w");
  EXPECT_NE(f, nullptr) << path;
  if (f != nullptr) {
    std::fputs("test-cluster-key-5f0c2a9e41d37b68\n", f);
    std::fclose(f);
  }
  ::chmod(path.c_str(), 0600);
  return {"--cluster-key", path};
}

}  // namespace latentd::testing
