// A private redis-server for the sync tests, on a Unix socket in a
// temporary directory (no TCP port at all); optionally with a password
// (--requirepass). Not thread-safe; one per test suite or test. Also the
// fixture of suites that share one (UnixRedisTest).
#ifndef LATENTD_TESTS_SYNC_UNIX_REDIS_H_
#define LATENTD_TESTS_SYNC_UNIX_REDIS_H_

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "sync/control/membership.h"

namespace latentd::sync {

// redis-server listening only on a Unix socket; stopped (SIGTERM, reaped)
// on destruction, or when the test process dies.
class UnixRedis {
 public:
  static std::unique_ptr<UnixRedis> Start(const std::string& password = "") {
    auto r = std::make_unique<UnixRedis>();
    char dir[] = "/tmp/latentd-redis-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return nullptr;
    r->dir_ = dir;
    r->socket_ = r->dir_ + "/redis.sock";
    r->password_ = password;
    r->pid_ = ::fork();
    if (r->pid_ < 0) return nullptr;
    if (r->pid_ == 0) {
      // Dies with the test even if the test is killed before its teardown.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      const int devnull = ::open("/dev/null", O_WRONLY);
      if (devnull >= 0) {
        ::dup2(devnull, STDOUT_FILENO);
        ::dup2(devnull, STDERR_FILENO);
      }
      std::vector<const char*> argv = {"redis-server",
                                       "--port",
                                       "0",
                                       "--unixsocket",
                                       r->socket_.c_str(),
                                       "--unixsocketperm",
                                       "700",
                                       "--save",
                                       "",
                                       "--appendonly",
                                       "no",
                                       "--dir",
                                       r->dir_.c_str()};
      if (!password.empty()) {
        argv.push_back("--requirepass");
        argv.push_back(password.c_str());
      }
      argv.push_back(nullptr);
      ::execvp("redis-server", const_cast<char* const*>(argv.data()));
      ::_exit(127);
    }
    for (int i = 0; i < 250; ++i) {
      if (r->Connect() != nullptr) return r;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return nullptr;
  }
  ~UnixRedis() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    if (!socket_.empty()) ::unlink(socket_.c_str());
    if (!dir_.empty()) ::rmdir(dir_.c_str());
  }
  // With a password: the unix:// form that carries it
  // (sync/control/redis_url.h).
  std::string url() const {
    return password_.empty() ? "unix:" + socket_
                             : "unix://:" + password_ + "@" + socket_;
  }
  std::string socket() const { return socket_; }
  std::unique_ptr<RedisClient> Connect() const {
    auto c = RedisClient::Connect(url(), absl::Seconds(2));
    if (!c.ok() || !(*c)->Command({"PING"}).ok()) return nullptr;
    return *std::move(c);
  }

 private:
  pid_t pid_ = -1;
  std::string dir_, socket_, password_;
};

// A fixture over one UnixRedis for the whole suite: each test gets a
// connection (redis_) and a cluster name of its own (cluster_,
// "cluster-PID-N").
class UnixRedisTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { redis_server_ = UnixRedis::Start().release(); }
  static void TearDownTestSuite() {
    delete redis_server_;
    redis_server_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(redis_server_, nullptr) << "redis-server did not start";
    redis_ = redis_server_->Connect();
    ASSERT_NE(redis_, nullptr);
    static int n = 0;
    cluster_ = absl::StrCat("cluster-", ::getpid(), "-", ++n);
  }

  static inline UnixRedis* redis_server_ = nullptr;
  std::unique_ptr<RedisClient> redis_;
  std::string cluster_;
};

}  // namespace latentd::sync

#endif  // LATENTD_TESTS_SYNC_UNIX_REDIS_H_
