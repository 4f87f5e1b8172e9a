// Load generator for bench/e2e.sh: several keep-alive clients POST /v1/deliveries/batch to a
// running relay-egress on 127.0.0.1 until --total deliveries are accepted, then GET /v1/stats
// is polled until `delivered` has grown by that many (or --timeout_s passes).
//
//   e2e_load --port P --hook_base http://127.0.0.1:SIM/hooks/ [--clients 4] [--batch 500]
//            [--total 20000] [--destinations 64] [--tenants 4] [--timeout_s 120] [--wait 1]
//            [--token T] [--drain_token T --service_pid PID]
//
// --token: sent as "Authorization: Bearer T" on every request (the admin token: the load posts
// for several tenants).
//
// With --drain_token the service is expected to hold everything back (its tenant_egress budget
// nearly zero): after intake, PUT /api/admin/tenants/bench-N/rate_limits (X-Admin-Token T)
// raises tenant_egress out of the way for every tenant, and the drain alone is timed
// (drain_seconds, drained_per_s) with the service's CPU over it (/proc/PID/stat).
//
// Loopback only; bounded by --total and --timeout_s. Prints one "key value" per line.

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int port = 0;
  std::string hook_base;
  int clients = 4;
  int batch = 500;
  long total = 20'000;
  int destinations = 64;
  int tenants = 4;
  int timeout_s = 120;
  int wait = 1;             // 0: do not wait for delivery
  std::string drain_token;  // non-empty: intake first, then release and time the drain
  int service_pid = 0;
};

// User plus system CPU seconds of process `pid` so far; 0 when unreadable.
double CpuSeconds(int pid) {
  if (pid <= 0) {
    return 0;
  }
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", pid);
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) {
    return 0;
  }
  char buf[1024] = {};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  buf[n] = '\0';
  const char* p = std::strrchr(buf, ')');  // the command name may hold spaces
  unsigned long utime = 0, stime = 0;
  if (p == nullptr || std::sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
                                  &utime, &stime) != 2) {
    return 0;
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

struct Response {
  int status = 0;
  std::string body;
};

// One keep-alive HTTP/1.1 connection to 127.0.0.1:port.
class Connection {
 public:
  explicit Connection(int port) : port_(port) {}
  // Sent with every request; "Name: value\r\n" lines.
  static inline std::string common_headers;
  ~Connection() { Close(); }

  // False on any socket or framing error (the connection is closed; the next call reconnects).
  bool Call(const std::string& method, const std::string& target, const std::string& body,
            Response& out, const std::string& extra_headers = "") {
    if (fd_ < 0 && !Open()) {
      return false;
    }
    std::string req = method + " " + target +
                      " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
                      common_headers + extra_headers +
                      "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
    for (size_t sent = 0; sent < req.size();) {
      const ssize_t n = send(fd_, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) {
        Close();
        return false;
      }
      sent += static_cast<size_t>(n);
    }
    size_t header_end;
    while ((header_end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill())
        return false;
    }
    const std::string head = buf_.substr(0, header_end);
    out.status = std::atoi(head.c_str() + 9);
    size_t length = 0;
    for (size_t p = 0; (p = head.find("\r\n", p)) != std::string::npos;) {
      p += 2;
      if (strncasecmp(head.c_str() + p, "content-length:", 15) == 0) {
        length = std::strtoul(head.c_str() + p + 15, nullptr, 10);
      }
    }
    while (buf_.size() < header_end + 4 + length) {
      if (!Fill())
        return false;
    }
    out.body = buf_.substr(header_end + 4, length);
    buf_.erase(0, header_end + 4 + length);
    return true;
  }

 private:
  bool Open() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(port_));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd_ < 0 || connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      Close();
      return false;
    }
    int one = 1;
    setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return true;
  }
  bool Fill() {
    char chunk[65536];
    const ssize_t n = recv(fd_, chunk, sizeof(chunk), 0);
    if (n <= 0) {
      Close();
      return false;
    }
    buf_.append(chunk, static_cast<size_t>(n));
    return true;
  }
  void Close() {
    if (fd_ >= 0)
      close(fd_);
    fd_ = -1;
    buf_.clear();
  }

  int port_;
  int fd_ = -1;
  std::string buf_;
};

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = 0; (p = text.find(what, p)) != std::string::npos; p += what.size())
    ++n;
  return n;
}

long JsonInt(const std::string& text, const std::string& key) {
  const size_t p = text.find("\"" + key + "\":");
  return p == std::string::npos ? -1 : std::atol(text.c_str() + p + key.size() + 3);
}

std::string BatchBody(const Options& o, int client) {
  std::string body = R"({"deliveries":[)";
  for (int i = 0; i < o.batch; ++i) {
    const int dest = (client * o.batch + i) % o.destinations;
    body += (i ? "," : "");
    body += R"({"tenant":"bench-)" + std::to_string(dest % o.tenants) +
            R"(","platform":"webhook","credential":"hooks","destination":")" + o.hook_base + "d" +
            std::to_string(dest) +
            R"(","payload":{"type":"message.created","data":{"text":"e2e bench payload","n":)" +
            std::to_string(i) + "}}}";
  }
  return body + "]}";
}

bool ParseArgs(int argc, char** argv, Options& o) {
  std::map<std::string, std::string> kv;
  for (int i = 1; i + 1 < argc; i += 2)
    kv[argv[i]] = argv[i + 1];
  auto num = [&](const char* k, auto& field) {
    if (kv.count(k))
      field = std::atol(kv[k].c_str());
  };
  num("--port", o.port);
  num("--clients", o.clients);
  num("--batch", o.batch);
  num("--total", o.total);
  num("--destinations", o.destinations);
  num("--tenants", o.tenants);
  num("--timeout_s", o.timeout_s);
  num("--wait", o.wait);
  num("--service_pid", o.service_pid);
  if (kv.count("--drain_token"))
    o.drain_token = kv["--drain_token"];
  if (kv.count("--token"))
    Connection::common_headers = "Authorization: Bearer " + kv["--token"] + "\r\n";
  if (kv.count("--hook_base"))
    o.hook_base = kv["--hook_base"];
  const bool loopback = o.hook_base.rfind("http://127.0.0.1:", 0) == 0 ||
                        o.hook_base.rfind("https://127.0.0.1:", 0) == 0;
  return o.port > 0 && loopback && o.clients > 0 && o.batch > 0 && o.total > 0 &&
         o.destinations > 0 && o.tenants > 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!ParseArgs(argc, argv, o)) {
    std::fprintf(
        stderr,
        "usage: e2e_load --port P --hook_base http[s]://127.0.0.1:SINK/hooks/ [--clients N]"
        " [--batch N] [--total N] [--destinations N] [--tenants N] [--timeout_s S] [--wait 0|1]"
        " [--token T] [--drain_token T --service_pid PID]\n");
    return 2;
  }
  Connection control(o.port);
  Response r;
  if (!control.Call("GET", "/v1/stats", "", r) || r.status != 200) {
    std::fprintf(stderr, "GET /v1/stats failed (status %d)\n", r.status);
    return 1;
  }
  const long delivered0 = JsonInt(r.body, "delivered");

  std::atomic<long> accepted{0}, rejected{0}, requests{0}, errors{0};
  const auto deadline = Clock::now() + std::chrono::seconds(o.timeout_s);
  const auto t0 = Clock::now();
  std::vector<std::thread> clients;
  for (int c = 0; c < o.clients; ++c) {
    clients.emplace_back([&, c] {
      const std::string body = BatchBody(o, c);
      Connection conn(o.port);
      Response resp;
      while (accepted.load() < o.total && Clock::now() < deadline) {
        requests.fetch_add(1);
        if (!conn.Call("POST", "/v1/deliveries/batch", body, resp)) {
          errors.fetch_add(1);
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        const long ok = static_cast<long>(Count(resp.body, R"("state":"queued")"));
        accepted.fetch_add(ok);
        rejected.fetch_add(o.batch - ok);
        if (ok < o.batch) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));  // 429: back off
        }
      }
    });
  }
  for (auto& t : clients)
    t.join();
  const double intake_s = std::chrono::duration<double>(Clock::now() - t0).count();

  // Drain mode: everything accepted is held back; release it and time the drain alone.
  const auto drain0 = Clock::now();
  const double cpu0 = CpuSeconds(o.service_pid);
  if (!o.drain_token.empty()) {
    const std::string raise =
        R"({"rate_limits":{"tenant_egress":{"limit":1000000,"scale_ms":1000}}})";
    for (int t = 0; t < o.tenants; ++t) {
      if (!control.Call("PUT", "/api/admin/tenants/bench-" + std::to_string(t) + "/rate_limits",
                        raise, r, "X-Admin-Token: " + o.drain_token + "\r\n") ||
          r.status != 200) {
        std::fprintf(stderr, "raising tenant_egress of bench-%d failed (status %d): %s\n", t,
                     r.status, r.body.c_str());
        return 1;
      }
    }
  }

  long delivered = delivered0;
  while (o.wait != 0 && Clock::now() < deadline) {
    if (control.Call("GET", "/v1/stats", "", r) && r.status == 200) {
      delivered = JsonInt(r.body, "delivered");
      if (delivered - delivered0 >= accepted.load())
        break;
    }
    // The end is timed to the poll that sees the last delivery: every 100 ms made a 1 s drain
    // read up to 10% slow. A stats call reads in-memory counters: 100 a second cost the
    // service well under 1% of a core.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double total_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const double drain_s = std::chrono::duration<double>(Clock::now() - drain0).count();
  const double drain_cpu = CpuSeconds(o.service_pid) - cpu0;
  const long done = delivered - delivered0;
  std::printf("clients %d\nbatch %d\ndestinations %d\ntenants %d\n", o.clients, o.batch,
              o.destinations, o.tenants);
  std::printf("accepted %ld\nrejected_items %ld\nbatch_requests %ld\nerrors %ld\n", accepted.load(),
              rejected.load(), requests.load(), errors.load());
  std::printf("intake_seconds %.3f\naccepted_per_s %.0f\n", intake_s, accepted.load() / intake_s);
  std::printf("delivered %ld\nfirst_post_to_all_delivered_seconds %.3f\ndelivered_per_s %.0f\n",
              done, total_s, done / total_s);
  if (!o.drain_token.empty()) {
    std::printf("drain_seconds %.3f\ndrained_per_s %.0f\n", drain_s, done / drain_s);
    if (o.service_pid > 0 && done > 0) {
      std::printf("drain_service_cpu_us_per_delivery %.1f\n", drain_cpu * 1e6 / done);
    }
  }
  return o.wait == 0 || done >= accepted.load() ? 0 : 1;
}
