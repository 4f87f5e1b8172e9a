// `relay-egress top` against a running service: one frame for scripts, and the live view driven
// in a pseudo-terminal by tmux.

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>

#include "tests/cli/cli_fixture.h"

namespace egress {
namespace {

constexpr auto kDeadline = std::chrono::seconds(20);

// The tmux binary on $PATH, or "" when there is none.
std::string FindTmux() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = dir + "/tmux";
    if (::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

std::vector<std::string> SplitLines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string line; std::getline(in, line);) {
    out.push_back(line);
  }
  return out;
}

// A tmux server of its own (its own socket, no config file), killed at the end.
class Tmux {
 public:
  Tmux(std::string binary, std::string socket)
      : binary_(std::move(binary)), socket_(std::move(socket)) {}
  ~Tmux() { Run({"kill-server"}); }

  CommandOutput Run(std::vector<std::string> args) {
    args.insert(args.begin(), {"-S", socket_, "-f", "/dev/null"});
    return RunCommand(binary_, args);
  }

  // The screen of the session's pane, polled until `done` holds or the deadline passes.
  std::string WaitForScreen(const std::function<bool(const std::string&)>& done) {
    std::string screen;
    for (auto waited = std::chrono::milliseconds(0); waited < kDeadline;
         waited += std::chrono::milliseconds(100)) {
      screen = Run({"capture-pane", "-p", "-t", "top"}).out;
      if (done(screen)) {
        return screen;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    ADD_FAILURE() << "timed out; last screen:\n" << screen;
    return screen;
  }

 private:
  std::string binary_;
  std::string socket_;
};

class CliTopTest : public CliServiceTest {
 protected:
  // Starts `top` in a detached 80x24 tmux session named "top"; its exit code goes to rc_file_.
  void StartTop(Tmux& tmux) {
    std::filesystem::remove(rc_file_);
    const std::string command = "'" + BuildDir() + "/relay-egress' top --server " + ServerUrl() +
                                " --token " + kCliAdminToken + "; echo $? > '" + rc_file_ + "'";
    auto started = tmux.Run({"new-session", "-d", "-s", "top", "-x", "80", "-y", "24", command});
    ASSERT_EQ(started.exit_code, 0) << started.err;
  }

  // The exit code top wrote, polled until the deadline ("" when it never exited).
  std::string WaitForExit() {
    std::string rc;
    for (auto waited = std::chrono::milliseconds(0); rc.empty() && waited < kDeadline;
         waited += std::chrono::milliseconds(100)) {
      std::ifstream(rc_file_) >> rc;
      if (rc.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    }
    return rc;
  }

  const std::string rc_file_ = dir_.Sub("top.rc");
};

// Verifies `top --once`: one frame of at most 24 lines of at most 80 columns, with the counts.
TEST_F(CliTopTest, OnceForScripts) {
  Start(2, 3);
  auto top = Cli({"top", "--once"});
  EXPECT_EQ(top.exit_code, 0) << top.err;
  const auto lines = top.Lines();
  ASSERT_FALSE(lines.empty());
  EXPECT_LE(lines.size(), 24u);
  for (const std::string& line : lines) {
    EXPECT_LE(line.size(), 80u) << line;
  }
  EXPECT_EQ(lines[0].rfind("relay-egress top  " + ServerUrl(), 0), 0u) << top.out;
  EXPECT_NE(top.out.find("deferred 3  delivered 0  dead 2"), std::string::npos) << top.out;
  EXPECT_NE(top.out.find("BUSIEST DESTINATIONS"), std::string::npos) << top.out;
  EXPECT_EQ(top.out.find("\x1b"), std::string::npos) << "no terminal codes when not a tty";
}

// Verifies the live view in an 80x24 pseudo-terminal: headings and counts on screen, never more
// than the terminal holds, and q quits with exit 0.
TEST_F(CliTopTest, LiveViewInTmux) {
  const std::string tmux_binary = FindTmux();
  if (tmux_binary.empty()) {
    GTEST_SKIP() << "tmux is not installed (./dev install adds it)";
  }
  Start(2, 3);
  Tmux tmux(tmux_binary, dir_.Sub("tmux.sock"));
  StartTop(tmux);
  const std::string screen = tmux.WaitForScreen([](const std::string& s) {
    return s.find("MOST DEFERRED") != std::string::npos && s.find("dead 2") != std::string::npos &&
           s.find("127.0.0.1:1/b") != std::string::npos &&
           s.find("delivered -/s") == std::string::npos;
  });
  const auto lines = SplitLines(screen);
  EXPECT_LE(lines.size(), 24u) << screen;
  for (const std::string& line : lines) {
    EXPECT_LE(line.size(), 80u) << line;
  }
  ASSERT_FALSE(lines.empty());
  EXPECT_EQ(lines[0].rfind("relay-egress top", 0), 0u) << "the title scrolled away:\n" << screen;
  for (const char* expected :
       {"delivered 0.0/s", "deferred 3", "DEFERRALS BY REASON", "BUSIEST DESTINATIONS"}) {
    EXPECT_NE(screen.find(expected), std::string::npos) << expected << " in\n" << screen;
  }
  ASSERT_EQ(tmux.Run({"send-keys", "-t", "top", "q"}).exit_code, 0);
  EXPECT_EQ(WaitForExit(), "0") << "top did not exit 0 after q";

  // Ctrl-C also ends it (after restoring the terminal), with the usual 128 + SIGINT. On a tmux
  // server of its own: the first one exits with its last session, and a new-session that reaches
  // it while it does fails with "server exited unexpectedly" (a clean-clone CI run saw it).
  Tmux second(tmux_binary, dir_.Sub("tmux2.sock"));
  StartTop(second);
  second.WaitForScreen(
      [](const std::string& s) { return s.find("MOST DEFERRED") != std::string::npos; });
  ASSERT_EQ(second.Run({"send-keys", "-t", "top", "C-c"}).exit_code, 0);
  EXPECT_EQ(WaitForExit(), "130");
}

}  // namespace
}  // namespace egress
