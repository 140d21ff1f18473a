// NotifySystemd against a datagram socket standing in for systemd's: the
// message arrives as sent (path and abstract sockets), nothing is sent
// without $NOTIFY_SOCKET, and a bad socket is an error, not a crash.
#include "service/systemd_notify.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <optional>
#include <string>

#include "gtest/gtest.h"

namespace latentd::service {
namespace {

// A bound AF_UNIX datagram socket playing the service manager; `name` is a
// path, or '@name' for an abstract one (as $NOTIFY_SOCKET spells it).
class FakeManager {
 public:
  explicit FakeManager(const std::string& name) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    EXPECT_GE(fd_, 0) << std::strerror(errno);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    EXPECT_LT(name.size(), sizeof(addr.sun_path));
    std::memcpy(addr.sun_path, name.data(), name.size());
    if (name[0] == '@') addr.sun_path[0] = '\0';
    const socklen_t len = offsetof(sockaddr_un, sun_path) + name.size() +
                          (name[0] == '@' ? 0 : 1);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0)
        << name << ": " << std::strerror(errno);
  }
  ~FakeManager() { ::close(fd_); }

  // The next datagram, or nullopt if none arrives within `timeout_ms`.
  std::optional<std::string> Receive(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return std::nullopt;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n < 0) return std::nullopt;
    return std::string(buf, n);
  }

 private:
  int fd_ = -1;
};

class SystemdNotifyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/latentd-notify-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr) << std::strerror(errno);
    dir_ = tmpl;
  }
  void TearDown() override {
    ::unsetenv("NOTIFY_SOCKET");
    std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

TEST_F(SystemdNotifyTest, SendsStateToPathSocket) {
  const std::string path = dir_ + "/notify";
  FakeManager manager(path);
  ASSERT_EQ(::setenv("NOTIFY_SOCKET", path.c_str(), 1), 0);

  ASSERT_TRUE(NotifySystemd("READY=1").ok());
  EXPECT_EQ(manager.Receive(5000), "READY=1");
  ASSERT_TRUE(NotifySystemd("STOPPING=1\nSTATUS=checkpointing").ok());
  EXPECT_EQ(manager.Receive(5000), "STOPPING=1\nSTATUS=checkpointing");
  // The environment is kept, so every later call still reaches systemd.
  EXPECT_STREQ(::getenv("NOTIFY_SOCKET"), path.c_str());
}

TEST_F(SystemdNotifyTest, SendsStateToAbstractSocket) {
  const std::string name = "@latentd-notify-test-" + std::to_string(::getpid());
  FakeManager manager(name);
  ASSERT_EQ(::setenv("NOTIFY_SOCKET", name.c_str(), 1), 0);

  ASSERT_TRUE(NotifySystemd("READY=1").ok());
  EXPECT_EQ(manager.Receive(5000), "READY=1");
}

TEST_F(SystemdNotifyTest, ReloadingCarriesMonotonicTime) {
  const std::string path = dir_ + "/notify";
  FakeManager manager(path);
  ASSERT_EQ(::setenv("NOTIFY_SOCKET", path.c_str(), 1), 0);

  ASSERT_TRUE(NotifySystemdReloading().ok());
  const std::optional<std::string> got = manager.Receive(5000);
  ASSERT_TRUE(got.has_value());
  const std::string prefix = "RELOADING=1\nMONOTONIC_USEC=";
  ASSERT_EQ(got->rfind(prefix, 0), 0u) << *got;
  const std::string usec = got->substr(prefix.size());
  EXPECT_FALSE(usec.empty());
  EXPECT_EQ(usec.find_first_not_of("0123456789"), std::string::npos) << usec;
}

TEST_F(SystemdNotifyTest, NoOpWithoutNotifySocket) {
  const std::string path = dir_ + "/notify";
  FakeManager manager(path);
  ASSERT_EQ(::unsetenv("NOTIFY_SOCKET"), 0);
  EXPECT_TRUE(NotifySystemd("READY=1").ok());
  ASSERT_EQ(::setenv("NOTIFY_SOCKET", "", 1), 0);
  EXPECT_TRUE(NotifySystemd("READY=1").ok());
  EXPECT_EQ(manager.Receive(200), std::nullopt);
}

TEST_F(SystemdNotifyTest, BadSocketIsAnErrorNotACrash) {
  ASSERT_EQ(::setenv("NOTIFY_SOCKET", (dir_ + "/missing").c_str(), 1), 0);
  absl::Status s = NotifySystemd("READY=1");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NOTIFY_SOCKET="), std::string_view::npos) << s;

  ASSERT_EQ(::setenv("NOTIFY_SOCKET", "relative/path", 1), 0);
  EXPECT_FALSE(NotifySystemd("READY=1").ok());
}

}  // namespace
}  // namespace latentd::service
