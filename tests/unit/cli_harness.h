// Runs the autobatch binary the build made (AUTOBATCH_BINARY) as a child
// process, for the tests that check the command line end to end: stdout and
// stderr separately, optional standard input, a timeout that kills only that
// child. One implementation for every test file that runs the CLI.
#pragma once
#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ab_test {

namespace fs = std::filesystem;

// What one run of the binary did.
struct Proc {
  int code = -1;           // exit status, or 128 + signal number
  std::string out, err;    // stdout and stderr, separately
  bool timed_out = false;  // killed by the harness after the timeout
  double seconds = 0;      // wall time
  long max_rss_kb = 0;     // the child's peak resident memory
};

inline void close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

// Runs AUTOBATCH_BINARY with `args` in directory `cwd`. `input`, if given,
// is written to its stdin (otherwise stdin is empty). stdout and stderr are
// read concurrently with the stdin write (poll), so nothing deadlocks on a
// full pipe. After `timeout_s` seconds the child is killed.
inline Proc run_binary(const fs::path& cwd, const std::vector<std::string>& args,
                       const std::optional<std::string>& input, double timeout_s) {
  Proc r;
  // Everything the child needs is prepared before fork.
  std::vector<std::string> argv_s;
  argv_s.push_back(AUTOBATCH_BINARY);
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string dir = cwd.string();

  int in[2], out[2], err[2];
  REQUIRE(::pipe2(in, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
  REQUIRE(::pipe2(err, O_CLOEXEC) == 0);

  // A child that exits without reading its stdin must not kill us.
  struct sigaction ignore {
  }, saved{};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &saved);

  const auto start = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    // Child: only async-signal-safe calls. dup2 clears O_CLOEXEC on 0/1/2;
    // every other pipe end closes on exec.
    ::signal(SIGPIPE, SIG_DFL);
    if (::dup2(in[0], 0) < 0 || ::dup2(out[1], 1) < 0 || ::dup2(err[1], 2) < 0) ::_exit(126);
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  int w = in[1], o = out[0], e = err[0];
  const std::string data = input.value_or("");
  size_t written = 0;
  if (data.empty())
    close_fd(w);
  else
    ::fcntl(w, F_SETFL, O_NONBLOCK);

  const auto deadline = start + std::chrono::duration<double>(timeout_s);
  char buf[65536];
  while (o >= 0 || e >= 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      ::kill(pid, SIGKILL);
      r.timed_out = true;
      break;
    }
    pollfd fds[3];
    int n = 0, wi = -1, oi = -1, ei = -1;
    if (w >= 0) wi = n, fds[n++] = {w, POLLOUT, 0};
    if (o >= 0) oi = n, fds[n++] = {o, POLLIN, 0};
    if (e >= 0) ei = n, fds[n++] = {e, POLLIN, 0};
    int got = ::poll(fds, n, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (got < 0 && errno == EINTR) continue;
    REQUIRE(got >= 0);
    if (wi >= 0 && fds[wi].revents) {
      ssize_t k = ::write(w, data.data() + written, data.size() - written);
      if (k > 0) written += static_cast<size_t>(k);
      if ((k < 0 && errno != EAGAIN && errno != EINTR) || written == data.size()) close_fd(w);
    }
    auto drain = [&](int idx, int& fd, std::string& to) {
      if (idx < 0 || !fds[idx].revents) return;
      ssize_t k = ::read(fd, buf, sizeof buf);
      if (k > 0)
        to.append(buf, static_cast<size_t>(k));
      else if (k == 0 || (errno != EAGAIN && errno != EINTR))
        close_fd(fd);
    };
    drain(oi, o, r.out);
    drain(ei, e, r.err);
  }
  close_fd(w);
  close_fd(o);
  close_fd(e);
  int status = 0;
  struct rusage usage {};
  while (::wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  r.max_rss_kb = usage.ru_maxrss;
  ::sigaction(SIGPIPE, &saved, nullptr);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status))
    r.code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    r.code = 128 + WTERMSIG(status);
  return r;
}

}  // namespace ab_test
