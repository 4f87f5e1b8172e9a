// top: a live view of the running service, one frame a second (docs/cli.md).

#include <poll.h>
#include <signal.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <sys/ioctl.h>

#include "dispatcher/base/clock.h"
#include "dispatcher/cli/cli.h"
#include "dispatcher/cli/top_frame.h"

namespace egress::cli {
namespace {

constexpr int kRefreshMs = 1000;

// Set by SIGINT/SIGTERM to the signal number; read by the frame loop.
volatile std::sig_atomic_t g_stop_signal = 0;

void OnStop(int signo) { g_stop_signal = signo; }
// Only interrupts the wait, so the next frame is drawn at the new size at once.
void OnResize(int) {}

int64_t SteadyMs() {
  return std::chrono::duration_cast<Millis>(SystemClock().Now().time_since_epoch()).count();
}

// The terminal's size, 80x24 when it cannot be read.
void ReadSize(TopView& view) {
  winsize ws{};
  view.width = 80;
  view.height = 24;
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
    view.width = ws.ws_col;
    view.height = ws.ws_row;
  }
}

Result<TopSample> Take(Backend& b) {
  TopSample s;
  s.at_ms = SteadyMs();
  auto stats = b.Stats();
  if (!stats) {
    return stats.error();
  }
  s.stats = std::move(*stats);
  // One page of the most (1,000): what a screen can show, at a bounded cost to the service.
  auto dests = b.Destinations({.limit = 1000});
  if (!dests) {
    return dests.error();
  }
  s.destinations = (*dests)["destinations"];
  // The delivered counter and deferrals by reason: from the stats (fresh, and a few hundred bytes
  // where /metrics is 9.5 MB at 10,000 tenants); from /metrics when the service is older. They
  // only add detail: the frame shows without them.
  // A tenant's view (a tenant key) has neither, and /metrics is the admin's: skipped.
  if (!ReadStatsCounters(s.stats, s) && !s.stats.contains("tenant")) {
    if (auto metrics = b.Metrics()) {
      ReadMetrics(*metrics, s);
    }
  }
  return s;
}

void WriteAll(const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(STDOUT_FILENO, text.data() + done, text.size() - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) {
        continue;
      }
      return;
    }
    done += static_cast<size_t>(n);
  }
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    out += (i == 0 ? "" : "\n") + lines[i];
  }
  return out;
}

// Puts the terminal in the live view's mode (keys without Enter, no echo, alternate screen,
// hidden cursor) and catches SIGINT/SIGTERM/SIGWINCH; the destructor restores everything.
class LiveTerminal {
 public:
  LiveTerminal() {
    raw_input_ = ::isatty(STDIN_FILENO) && ::tcgetattr(STDIN_FILENO, &saved_) == 0;
    if (raw_input_) {
      termios t = saved_;
      t.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO);
      t.c_cc[VMIN] = 0;
      t.c_cc[VTIME] = 0;
      ::tcsetattr(STDIN_FILENO, TCSANOW, &t);
    }
    struct sigaction sa {};
    sa.sa_handler = OnStop;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
    sa.sa_handler = OnResize;
    ::sigaction(SIGWINCH, &sa, &old_winch_);
    WriteAll("\x1b[?1049h\x1b[?25l");
  }
  ~LiveTerminal() {
    WriteAll("\x1b[?25h\x1b[?1049l");
    if (raw_input_) {
      ::tcsetattr(STDIN_FILENO, TCSANOW, &saved_);
    }
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
    ::sigaction(SIGWINCH, &old_winch_, nullptr);
  }
  LiveTerminal(const LiveTerminal&) = delete;
  LiveTerminal& operator=(const LiveTerminal&) = delete;

  // Waits up to `ms` for a key; true when it was q (or Q).
  bool WaitForQuit(int ms) const {
    pollfd fd{.fd = STDIN_FILENO, .events = POLLIN, .revents = 0};
    if (::poll(&fd, raw_input_ ? 1 : 0, ms) <= 0 || (fd.revents & POLLIN) == 0) {
      return false;
    }
    char keys[64];
    const ssize_t n = ::read(STDIN_FILENO, keys, sizeof keys);
    for (ssize_t i = 0; i < n; ++i) {
      if (keys[i] == 'q' || keys[i] == 'Q') {
        return true;
      }
    }
    return false;
  }

 private:
  bool raw_input_ = false;
  termios saved_{};
  struct sigaction old_int_ {};
  struct sigaction old_term_ {};
  struct sigaction old_winch_ {};
};

// One frame, rates over one refresh interval, for scripts. /metrics answers one text for up to
// 10 s (docs/api.md, "Metrics"): while the second sample got the first's text, it samples again
// each second, for up to 11 s, so the rates read from /metrics are between two texts.
int PrintOnce(Backend& b, TopView view) {
  auto first = Take(b);
  if (!first) {
    return Fail(first.error());
  }
  TopSample previous = std::move(*first);
  std::optional<TopSample> now;
  for (int taken = 1; taken < 12; ++taken) {
    ::poll(nullptr, 0, kRefreshMs);
    auto next = Take(b);
    if (!next) {
      return Fail(next.error());
    }
    if (now) {
      previous = std::move(*now);
    }
    FollowMetrics(previous, *next);
    now = std::move(*next);
    if (now->metrics_before || !now->metrics.made_s || !previous.metrics.made_s) {
      break;  // between two texts, or a service without made times: as before
    }
  }
  view.wall_now_ms = NowMs();
  WriteAll(Join(RenderTopFrame(*now, &previous, view)) + "\n");
  return kExitOk;
}

}  // namespace

int Top(Backend& b, const CommandFlags& f) {
  TopView view{.source = b.Describe()};
  ReadSize(view);
  if (f.once || !::isatty(STDOUT_FILENO)) {
    return PrintOnce(b, view);
  }
  g_stop_signal = 0;
  Status failed;
  {
    LiveTerminal terminal;
    int64_t next_sample_ms = 0;
    std::optional<TopSample> previous;
    std::optional<TopSample> current;
    bool quit = false;
    while (!quit && g_stop_signal == 0) {
      if (SteadyMs() >= next_sample_ms) {
        auto sample = Take(b);
        if (!sample) {
          failed = sample.error();
          break;
        }
        if (current) {
          FollowMetrics(*current, *sample);
        }
        previous = std::move(current);
        current = std::move(*sample);
        next_sample_ms = current->at_ms + kRefreshMs;
      }
      ReadSize(view);
      view.wall_now_ms = NowMs();
      WriteAll("\x1b[H\x1b[2J" +
               Join(RenderTopFrame(*current, previous ? &*previous : nullptr, view)));
      const int64_t wait = next_sample_ms - SteadyMs();
      quit = terminal.WaitForQuit(static_cast<int>(std::max<int64_t>(0, wait)));
    }
  }
  // A signal during a sample's HTTP call interrupts it (no SA_RESTART, so Ctrl-C is prompt):
  // that is the signal's exit, not a failure.
  if (!failed.ok() && g_stop_signal == 0) {
    return Fail(failed);
  }
  return g_stop_signal == 0 ? kExitOk : 128 + g_stop_signal;
}

}  // namespace egress::cli
