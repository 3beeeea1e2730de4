// The command backend: any local program answers, prompt on stdin and JSON on stdout.
//
// The program runs in its own process group so a timeout kills it together with anything it
// started (a shell script's `sleep`, a model server client). stdin, stdout and stderr are pumped
// with poll() so a program that answers before reading all of its input cannot deadlock us, and
// SIGPIPE is blocked in this thread while we write (a program may exit without reading).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include "advisor/backend.h"

namespace agentcompile::advisor {

namespace {

constexpr size_t kStderrTail = 400;

// Blocks SIGPIPE in this thread for the lifetime of the guard and swallows one raised meanwhile.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    timespec zero{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }

 private:
  sigset_t pipe_, old_;
};

void close_fd(int& fd) {
  if (fd >= 0) close(fd);
  fd = -1;
}

class CommandBackend final : public Backend {
 public:
  CommandBackend(const AdvisorOptions& options, std::string program) : options_(options), program_(std::move(program)) {}
  std::string kind() const override { return "command"; }
  std::string identity() const override { return "command:" + program_; }

  Reply ask(const Request& request, std::chrono::steady_clock::time_point deadline) override {
    Reply reply;
    reply.attempts = 1;
    const double left = std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0) {
      reply.error = "advice time budget spent";
      return reply;
    }
    CommandResult run = run_command(program_, prompt_text(request), std::min(options_.request_timeout_s, left));
    reply.ok = run.ok;
    reply.unreachable = run.not_found;
    reply.text = std::move(run.out);
    reply.error = std::move(run.error);
    return reply;
  }

 private:
  AdvisorOptions options_;
  std::string program_;
};

}  // namespace

CommandResult run_command(const std::string& program, const std::string& input, double timeout_s) {
  CommandResult result;
  auto failed = [](const char* why) {
    CommandResult r;
    r.error = why;
    return r;
  };
  int in[2], out[2], err[2];
  if (pipe2(in, O_CLOEXEC) != 0) return failed("pipe() failed");
  if (pipe2(out, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]);
    return failed("pipe() failed");
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    return failed("pipe() failed");
  }
  const pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    return failed("fork() failed");
  }
  if (pid == 0) {  // only async-signal-safe calls until exec
    setpgid(0, 0);
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execl("/bin/sh", "sh", "-c", program.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // also here, so the group exists before we might kill it
  close(in[0]), close(out[1]), close(err[1]);
  int to_child = in[1], from_child = out[0], errors = err[0];
  fcntl(to_child, F_SETFL, O_NONBLOCK);

  SigpipeGuard guard;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  size_t written = 0;
  std::string stderr_text;
  bool timed_out = false;
  bool too_long = false;
  if (input.empty()) close_fd(to_child);
  while (from_child >= 0 || errors >= 0) {
    pollfd fds[3];
    int n = 0;
    int out_slot = -1, err_slot = -1, in_slot = -1;
    if (from_child >= 0) fds[out_slot = n++] = {from_child, POLLIN, 0};
    if (errors >= 0) fds[err_slot = n++] = {errors, POLLIN, 0};
    if (to_child >= 0) fds[in_slot = n++] = {to_child, POLLOUT, 0};
    const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (wait <= 0) {
      timed_out = true;
      break;
    }
    if (poll(fds, static_cast<nfds_t>(n), static_cast<int>(wait)) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    char buffer[65536];
    if (out_slot >= 0 && fds[out_slot].revents) {
      const ssize_t got = read(from_child, buffer, sizeof(buffer));
      if (got > 0) result.out.append(buffer, static_cast<size_t>(got));
      if (result.out.size() > kMaxCommandOutput) {  // no advice is this long: stop it rather than read on
        too_long = true;
        break;
      }
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) close_fd(from_child);
    }
    if (err_slot >= 0 && fds[err_slot].revents) {
      const ssize_t got = read(errors, buffer, sizeof(buffer));
      if (got > 0) {
        stderr_text.append(buffer, static_cast<size_t>(got));
        if (stderr_text.size() > 4 * kStderrTail) stderr_text.erase(0, stderr_text.size() - kStderrTail);
      }
      if (got == 0 || (got < 0 && errno != EINTR && errno != EAGAIN)) close_fd(errors);
    }
    if (in_slot >= 0 && fds[in_slot].revents) {
      const ssize_t put = write(to_child, input.data() + written, input.size() - written);
      if (put > 0) written += static_cast<size_t>(put);
      if (written == input.size() || (put < 0 && errno != EAGAIN && errno != EINTR)) close_fd(to_child);
    }
  }
  close_fd(to_child);
  close_fd(from_child);
  close_fd(errors);
  int status = 0;
  if (too_long) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    result.out.clear();
    result.error = "the output exceeds the limit of " + std::to_string(kMaxCommandOutput >> 20) + " MiB: killed";
    return result;
  }
  if (timed_out) {
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
  } else {
    // The program closed stdout; give it until the deadline to exit, then kill it.
    while (waitpid(pid, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() >= deadline) {
        timed_out = true;
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        break;
      }
      usleep(2000);
    }
    if (!timed_out) {
      kill(-pid, SIGKILL);  // anything it left running in its group
      if (stderr_text.size() > kStderrTail) stderr_text.erase(0, stderr_text.size() - kStderrTail);
      if (WIFSIGNALED(status)) {
        result.error = "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
      } else if (WIFEXITED(status) && WEXITSTATUS(status) > 128 && WEXITSTATUS(status) < 128 + NSIG) {
        // The shell reports a program it ran that died of signal N as status 128 + N.
        const int signal = WEXITSTATUS(status) - 128;
        result.error = "exited with status " + std::to_string(WEXITSTATUS(status)) + " (killed by signal " + std::to_string(signal) +
                       " (" + strsignal(signal) + "))";
      } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        result.error = "exited with status " + std::to_string(WEXITSTATUS(status));
        result.not_found = WEXITSTATUS(status) == 127;  // the shell's "command not found"
      } else {
        result.ok = true;
      }
      if (!result.ok && !stderr_text.empty()) result.error += ": " + stderr_text;
      return result;
    }
  }
  waitpid(pid, &status, 0);
  char seconds[32];
  std::snprintf(seconds, sizeof(seconds), "%.3g", timeout_s);
  result.error = std::string("no answer within ") + seconds + " s: killed";
  return result;
}

std::unique_ptr<Backend> make_command_backend(const AdvisorOptions& options, const std::string& program) {
  return std::make_unique<CommandBackend>(options, program);
}

}  // namespace agentcompile::advisor
