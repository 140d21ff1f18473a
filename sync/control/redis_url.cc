#include "sync/control/redis_url.h"

#include <hiredis/hiredis.h>

#include <optional>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace latentd::sync {
namespace {

// The parts of a url as written: the credentials (without the '@') and
// where they stand, so that RedactRedisUrl can cut the password out.
struct Split {
  std::string_view scheme;    // "redis://", "unix://", "unix:" or ""
  std::string_view userinfo;  // between the scheme and the first '@'
  bool has_userinfo = false;
  std::string_view rest;  // host[:port][/] or /path
};

Split SplitUrl(std::string_view url) {
  Split s;
  for (std::string_view scheme : {"redis://", "unix://", "unix:"}) {
    if (url.substr(0, scheme.size()) == scheme) {
      s.scheme = scheme;
      url.remove_prefix(scheme.size());
      break;
    }
  }
  // Credentials are percent-encoded: a raw '@' ends them. "unix:/PATH" has
  // none (its path may hold an '@').
  const size_t at =
      s.scheme == "unix:" ? std::string_view::npos : url.find('@');
  if (at != std::string_view::npos) {
    s.has_userinfo = true;
    s.userinfo = url.substr(0, at);
    url.remove_prefix(at + 1);
  }
  s.rest = url;
  return s;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

std::optional<std::string> PercentDecode(std::string_view in) {
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out.push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size()) return std::nullopt;
    const int hi = HexValue(in[i + 1]), lo = HexValue(in[i + 2]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out.push_back(static_cast<char>(hi * 16 + lo));
    i += 2;
  }
  return out;
}

timeval ToTv(absl::Duration d) {
  return absl::ToTimeval(d < absl::ZeroDuration() ? absl::ZeroDuration() : d);
}

}  // namespace

std::string RedisUrl::Where() const {
  return unix_path.empty() ? absl::StrCat(host, ":", port) : unix_path;
}

std::string RedactRedisUrl(std::string_view url) {
  const Split s = SplitUrl(url);
  if (!s.has_userinfo) return std::string(url);
  const size_t colon = s.userinfo.find(':');
  if (colon == std::string_view::npos) {
    return absl::StrCat(std::string(s.scheme), "***@", std::string(s.rest));
  }
  return absl::StrCat(std::string(s.scheme),
                      std::string(s.userinfo.substr(0, colon)), ":***@",
                      std::string(s.rest));
}

absl::StatusOr<RedisUrl> ParseRedisUrl(std::string_view url) {
  auto bad = [url](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "redis url '", RedactRedisUrl(url), "': ", std::string(why)));
  };
  const Split s = SplitUrl(url);
  RedisUrl out;
  if (s.has_userinfo) {
    const size_t colon = s.userinfo.find(':');
    if (colon == std::string_view::npos) {
      return bad(
          "credentials go as :PASSWORD@ (or USER:PASSWORD@ with a Redis "
          "ACL user)");
    }
    std::optional<std::string> user =
        PercentDecode(s.userinfo.substr(0, colon));
    std::optional<std::string> password =
        PercentDecode(s.userinfo.substr(colon + 1));
    if (!user || !password) return bad("bad %-escape in the credentials");
    if (password->empty()) return bad("empty password");
    out.user = *std::move(user);
    out.password = *std::move(password);
  }
  std::string_view rest = s.rest;
  if (s.scheme == "unix:" || s.scheme == "unix://") {
    if (rest.empty() || rest.front() != '/') {
      return bad("a Unix socket needs an absolute path");
    }
    out.unix_path = std::string(rest);
    return out;
  }
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  out.host = std::string(rest);
  const size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos) {
    out.host = std::string(rest.substr(0, colon));
    const std::string_view p = rest.substr(colon + 1);
    if (!absl::SimpleAtoi(absl::string_view(p.data(), p.size()), &out.port) ||
        out.port <= 0 || out.port > 65535) {
      return bad("bad port");
    }
  }
  if (out.host.empty()) return bad("no host");
  return out;
}

absl::StatusOr<redisContext*> OpenRedis(std::string_view url,
                                        absl::Duration timeout) {
  absl::StatusOr<RedisUrl> parsed = ParseRedisUrl(url);
  if (!parsed.ok()) return parsed.status();
  const timeval tv = ToTv(timeout);
  redisContext* c =
      parsed->unix_path.empty()
          ? redisConnectWithTimeout(parsed->host.c_str(), parsed->port, tv)
          : redisConnectUnixWithTimeout(parsed->unix_path.c_str(), tv);
  if (c == nullptr || c->err) {
    std::string why = c != nullptr ? c->errstr : "out of memory";
    if (c != nullptr) redisFree(c);
    return absl::UnavailableError(
        absl::StrCat("redis ", parsed->Where(), ": ", why));
  }
  redisSetTimeout(c, tv);
  if (parsed->password.empty()) return c;
  std::vector<const char*> argv = {"AUTH"};
  std::vector<size_t> lens = {4};
  if (!parsed->user.empty()) {
    argv.push_back(parsed->user.data());
    lens.push_back(parsed->user.size());
  }
  argv.push_back(parsed->password.data());
  lens.push_back(parsed->password.size());
  auto* r = static_cast<redisReply*>(redisCommandArgv(
      c, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (r == nullptr) {
    std::string why = c->errstr;
    redisFree(c);
    return absl::UnavailableError(
        absl::StrCat("redis ", parsed->Where(), ": AUTH: ", why));
  }
  const bool refused = r->type == REDIS_REPLY_ERROR;
  const std::string reply =
      r->str != nullptr ? std::string(r->str, r->len) : "";
  freeReplyObject(r);
  if (refused) {
    redisFree(c);
    return absl::PermissionDeniedError(absl::StrCat(
        "redis ", parsed->Where(), " refused the credentials: ", reply));
  }
  return c;
}

}  // namespace latentd::sync
