// Deliveries/s through WebhookAdapter (BuildRequest, sign) + CurlTransport (keep-alive) +
// WebhookAdapter::Interpret, on one io_context thread, to the simulator on 127.0.0.1.
// The bench starts build/relay-egress-sim itself (next to build/bench/) and stops it at exit.
//
// Run: build/bench/transport_bench [--benchmark_filter=...]
//   EGRESS_SIM_THREADS (default 1): the simulator's loop threads.
// Counters: items_per_second (deliveries/s, wall clock), bench_cpu_us (this process's user+sys
// CPU per delivery), sim_cpu_us (the simulator's CPU per delivery, from /proc/PID/stat).
// Every run is bounded: a fixed number of deliveries per iteration, Google Benchmark's min time.

#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>

#include <benchmark/benchmark.h>
#include <boost/asio/io_context.hpp>
#include <sys/resource.h>
#include <sys/wait.h>

#include "adapters/curl_transport.h"
#include "adapters/webhook_adapter.h"

extern char** environ;

namespace {

namespace adapters = egress::adapters;

constexpr char kSecret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
constexpr int kPerIteration = 4096;  // deliveries per benchmark iteration

// The simulator child: started once, SIGTERMed at exit.
struct Sim {
  pid_t pid = -1;
  int port = 0;
};
Sim g_sim;

std::string ExeDir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) {
    return ".";
  }
  std::string path(buf, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/'));
}

void StopSim() {
  if (g_sim.pid > 0) {
    kill(g_sim.pid, SIGTERM);
    int status = 0;
    waitpid(g_sim.pid, &status, 0);
    g_sim.pid = -1;
  }
}

// Starts relay-egress-sim --port 0 and reads "listening 127.0.0.1:PORT"; aborts on failure.
void StartSim() {
  const std::string path = ExeDir() + "/../relay-egress-sim";
  const char* threads_env = std::getenv("EGRESS_SIM_THREADS");
  std::string threads = threads_env != nullptr ? threads_env : "1";
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("pipe");
    std::abort();
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::string a0 = path, a1 = "--port", a2 = "0", a3 = "--threads";
  char* argv[] = {a0.data(), a1.data(), a2.data(), a3.data(), threads.data(), nullptr};
  if (posix_spawn(&g_sim.pid, path.c_str(), &actions, nullptr, argv, environ) != 0) {
    std::fprintf(stderr, "cannot start %s\n", path.c_str());
    std::abort();
  }
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  std::string line;
  char c;
  while (line.size() < 200 && read(fds[0], &c, 1) == 1 && c != '\n') {
    line.push_back(c);
  }
  close(fds[0]);  // the simulator writes nothing else that matters
  const size_t colon = line.rfind(':');
  if (line.rfind("listening ", 0) != 0 || colon == std::string::npos) {
    std::fprintf(stderr, "simulator did not report its port: '%s'\n", line.c_str());
    StopSim();
    std::abort();
  }
  g_sim.port = std::atoi(line.c_str() + colon + 1);
  std::atexit(StopSim);
}

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double SimCpuSeconds() {
  std::ifstream in("/proc/" + std::to_string(g_sim.pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) {
    return 0;
  }
  // Fields after ")": state(3) ... utime(14) stime(15), counted from 1 at pid.
  std::istringstream rest(stat.substr(close_paren + 2));
  std::string field;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14)
      utime = std::stod(field);
    if (i == 15)
      stime = std::stod(field);
  }
  return (utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// One io_context thread driving a window of `in_flight` deliveries.
class Driver {
 public:
  Driver(long connections)
      : transport_(adapters::NewCurlTransport(
            io_, clock_,
            adapters::TransportOptions{.max_host_connections = connections,
                                       .max_total_connections = connections})),
        adapter_(adapters::PlatformEndpoints{
            .webhook_ssrf = adapters::SsrfPolicy{.allow_private_networks = true}}) {
    credential_.name = "bench";
    credential_.platform = "webhook";
    credential_.secrets = {kSecret};
  }

  // A plain POST (simulator control), run to completion on the loop.
  int Control(const std::string& target, const std::string& body) {
    int status = 0;
    transport_->Send(
        {.url = Url(target), .headers = {{"Content-Type", "application/json"}}, .body = body},
        [&](egress::Result<adapters::HttpResponse> r) {
          status = r ? r->status : -1;
          io_.stop();
        });
    io_.restart();
    io_.run();
    return status;
  }

  // Delivers `count` deliveries to `hook` keeping `in_flight` outstanding; returns failures.
  int Run(const std::string& hook, int count, int in_flight) {
    hook_url_ = Url("/hooks/" + hook);
    remaining_ = count;
    pending_ = 0;
    failures_ = 0;
    for (int i = 0; i < in_flight && remaining_ > 0; ++i) {
      StartOne();
    }
    io_.restart();
    io_.run();
    return failures_;
  }

 private:
  std::string Url(const std::string& target) const {
    return "http://127.0.0.1:" + std::to_string(g_sim.port) + target;
  }

  void StartOne() {
    --remaining_;
    ++pending_;
    auto delivery = std::make_shared<egress::storage::Delivery>();
    delivery->id = "d" + std::to_string(next_id_++);
    delivery->tenant = "bench";
    delivery->platform = "webhook";
    delivery->destination = hook_url_;
    delivery->credential = "bench";
    delivery->payload = R"({"type":"message.created","msg_id":")" + delivery->id +
                        R"(","data":{"text":"hello from the transport bench"}})";
    auto request = adapter_.BuildRequest(*delivery, credential_, clock_.WallNow());
    if (!request) {
      std::fprintf(stderr, "BuildRequest: %s\n", request.error().ToString().c_str());
      std::abort();
    }
    transport_->Send(std::move(*request),
                     [this, delivery](egress::Result<adapters::HttpResponse> response) {
                       const adapters::AttemptReport report =
                           adapter_.Interpret(*delivery, response, clock_.WallNow());
                       const auto& o = report.outcome;
                       if (o.transport != egress::pacing::TransportResult::kResponse ||
                           o.http_status < 200 || o.http_status > 299) {
                         ++failures_;
                       }
                       --pending_;
                       if (remaining_ > 0) {
                         StartOne();
                       } else if (pending_ == 0) {
                         io_.stop();
                       }
                     });
  }

  boost::asio::io_context io_;
  egress::SystemClock clock_;
  std::unique_ptr<adapters::HttpTransport> transport_;
  adapters::WebhookAdapter adapter_;
  adapters::Credential credential_;
  std::string hook_url_;
  int remaining_ = 0;
  int pending_ = 0;
  int failures_ = 0;
  int64_t next_id_ = 0;
};

// Args: in_flight, connections, verify (1: the simulator checks the signature).
void BM_WebhookDeliveries(benchmark::State& state) {
  if (g_sim.pid < 0) {
    StartSim();
  }
  const int in_flight = static_cast<int>(state.range(0));
  const long connections = state.range(1);
  const bool verify = state.range(2) != 0;
  Driver driver(connections);
  // Forget remembered webhook-ids (memory) and configure the receivers; rate 0 = unlimited.
  if (driver.Control("/_sim/reset", "{}") != 200 ||
      driver.Control("/_sim/config", std::string(R"({"hooks":{"signed":{"secrets":[")") + kSecret +
                                         R"("]}}})") != 200) {
    state.SkipWithError("simulator control failed");
    return;
  }
  const std::string hook = verify ? "signed" : "bench";
  driver.Run(hook, 256, in_flight);  // warm up: connections open, caches hot
  const double cpu0 = ProcessCpuSeconds();
  const double sim0 = SimCpuSeconds();
  int64_t failures = 0;
  for (auto _ : state) {
    failures += driver.Run(hook, kPerIteration, in_flight);
  }
  const double items = static_cast<double>(state.iterations()) * kPerIteration;
  state.SetItemsProcessed(static_cast<int64_t>(items));
  state.counters["bench_cpu_us"] = (ProcessCpuSeconds() - cpu0) * 1e6 / items;
  state.counters["sim_cpu_us"] = (SimCpuSeconds() - sim0) * 1e6 / items;
  state.counters["failures"] = static_cast<double>(failures);
  if (failures > 0) {
    state.SkipWithError("some deliveries were not answered 2xx");
  }
}
BENCHMARK(BM_WebhookDeliveries)
    ->ArgNames({"in_flight", "conns", "verify"})
    ->Args({64, 16, 0})
    ->Args({64, 64, 0})
    ->Args({64, 16, 1})
    ->Args({16, 16, 0})
    ->Args({256, 64, 0})
    ->UseRealTime()
    ->MinTime(2.0)
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
