// Forked GPU workers (see gpu_worker.h).
#include "gpu/gpu_worker.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace agentcompile::gpu {

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

Expected<std::string> run_forked(const std::function<Expected<std::string>()>& body, double timeout_s) {
  int fds[2];
  if (pipe(fds) != 0) return error(ErrorCode::kIo, "pipe() failed");
  const pid_t pid = fork();
  if (pid < 0) return error(ErrorCode::kIo, "fork() failed");
  if (pid == 0) {
    close(fds[0]);
    auto out = body();
    write_all(fds[1], out ? "OK " + *out : "ERROR " + out.status().to_string());
    _exit(out ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    pollfd pfd{fds[0], POLLIN, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count();
    if (left <= 0 || poll(&pfd, 1, static_cast<int>(left)) == 0) {
      kill(pid, SIGKILL);
      break;
    }
    char chunk[4096];
    const ssize_t n = read(fds[0], chunk, sizeof(chunk));
    if (n <= 0) break;
    text.append(chunk, static_cast<size_t>(n));
  }
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  if (text.rfind("OK ", 0) == 0) return text.substr(3);
  if (text.rfind("ERROR ", 0) == 0) return error(ErrorCode::kUnsupported, text.substr(6));
  return error(ErrorCode::kInternal, "GPU worker died without an answer");
}


}  // namespace agentcompile::gpu
