// A scripted HTTP/1.1 server for tests: POSIX sockets on 127.0.0.1, an ephemeral port, one thread
// accepting and one thread per connection. It records every request (method, path, headers with
// lower-case names, body, arrival time) and answers each with whatever the test's handler returns:
// a status with a body and headers, a Content-Length larger than the body followed by a close (a
// truncated transfer), or no answer at all until the client gives up (a hang).
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace agentcompile::testing {

struct HttpRequest {
  std::string method, path;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
  double arrival_s = 0;  // since the server started
};

struct HttpReply {
  int status = 200;
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
  long declared_length = -1;  // the Content-Length to claim; -1: the body's size
  bool hang = false;          // send nothing; close when the client does or the server stops
};

inline HttpReply reply(int status, std::string body, std::vector<std::pair<std::string, std::string>> headers = {}) {
  HttpReply r;
  r.status = status;
  r.body = std::move(body);
  r.headers = std::move(headers);
  return r;
}

// A 200 whose Content-Length claims more than the body, then a close.
inline HttpReply truncated_reply(std::string body, long declared_length) {
  HttpReply r = reply(200, std::move(body));
  r.declared_length = declared_length;
  return r;
}

// No reply at all.
inline HttpReply hang_reply() {
  HttpReply r;
  r.hang = true;
  return r;
}

// (request, 0-based index of the request since the server started) -> reply
using HttpHandler = std::function<HttpReply(const HttpRequest&, size_t)>;

// Replies in order; the last one repeats.
inline HttpHandler scripted(std::vector<HttpReply> replies) {
  return [replies = std::move(replies)](const HttpRequest&, size_t index) { return replies[std::min(index, replies.size() - 1)]; };
}

class ScriptedHttpServer {
 public:
  explicit ScriptedHttpServer(HttpHandler handler) : handler_(std::move(handler)), start_(std::chrono::steady_clock::now()) {
    listen_fd_ = socket(AF_INET, SOCK_STREAM, 0);
    int yes = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 || listen(listen_fd_, 64) != 0) return;
    socklen_t length = sizeof(address);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ScriptedHttpServer(const ScriptedHttpServer&) = delete;
  ScriptedHttpServer& operator=(const ScriptedHttpServer&) = delete;
  ~ScriptedHttpServer() { stop(); }

  void stop() {
    if (stopping_.exchange(true)) return;
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      workers.swap(workers_);
    }
    for (auto& w : workers) w.join();
    if (listen_fd_ >= 0) close(listen_fd_);
    listen_fd_ = -1;
  }

  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<HttpRequest> requests() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return requests_;
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      pollfd pfd{listen_fd_, POLLIN, 0};
      if (poll(&pfd, 1, 50) <= 0) continue;
      const int fd = accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      std::lock_guard<std::mutex> lock(mutex_);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // Reads until `want` bytes are buffered or the peer closes; false on close/stop.
  bool fill(int fd, std::string& buffer, size_t want) {
    char chunk[16384];
    while (buffer.size() < want && !stopping_) {
      pollfd pfd{fd, POLLIN, 0};
      if (poll(&pfd, 1, 50) <= 0) continue;
      const ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
      if (n <= 0) return false;
      buffer.append(chunk, static_cast<size_t>(n));
    }
    return buffer.size() >= want;
  }

  void serve(int fd) {
    std::string buffer;
    size_t header_end = std::string::npos;
    while ((header_end = buffer.find("\r\n\r\n")) == std::string::npos)
      if (!fill(fd, buffer, buffer.size() + 1)) return (void)close(fd);
    HttpRequest request;
    request.arrival_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    const std::string head = buffer.substr(0, header_end);
    size_t line_end = head.find("\r\n");
    const std::string request_line = head.substr(0, line_end);
    request.method = request_line.substr(0, request_line.find(' '));
    const size_t path_start = request_line.find(' ') + 1;
    request.path = request_line.substr(path_start, request_line.find(' ', path_start) - path_start);
    while (line_end != std::string::npos && line_end < head.size()) {
      const size_t next = head.find("\r\n", line_end + 2);
      const std::string line = head.substr(line_end + 2, (next == std::string::npos ? head.size() : next) - line_end - 2);
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::string name = line.substr(0, colon);
        std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
        std::string value = line.substr(colon + 1);
        value.erase(0, value.find_first_not_of(' '));
        request.headers[name] = value;
      }
      line_end = next;
    }
    const size_t length = request.headers.count("content-length") ? std::stoul(request.headers["content-length"]) : 0;
    if (!fill(fd, buffer, header_end + 4 + length)) return (void)close(fd);
    request.body = buffer.substr(header_end + 4, length);
    size_t index;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      index = requests_.size();
      requests_.push_back(request);
    }
    const HttpReply reply = handler_(request, index);
    if (reply.hang) {
      std::string ignored;
      fill(fd, ignored, SIZE_MAX);  // until the client leaves or the server stops
      return (void)close(fd);
    }
    std::string out = "HTTP/1.1 " + std::to_string(reply.status) + " Scripted\r\nContent-Type: application/json\r\n" +
                      "Content-Length: " + std::to_string(reply.declared_length >= 0 ? static_cast<size_t>(reply.declared_length) : reply.body.size()) +
                      "\r\nConnection: close\r\n";
    for (const auto& [name, value] : reply.headers) out += name + ": " + value + "\r\n";
    out += "\r\n" + reply.body;
    size_t sent = 0;
    while (sent < out.size()) {
      const ssize_t n = send(fd, out.data() + sent, out.size() - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    shutdown(fd, SHUT_WR);
    std::string drain;
    fill(fd, drain, SIZE_MAX);  // wait for the client to close, so it reads everything first
    close(fd);
  }

  HttpHandler handler_;
  std::chrono::steady_clock::time_point start_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread acceptor_;
  mutable std::mutex mutex_;
  std::vector<std::thread> workers_;
  std::vector<HttpRequest> requests_;
};

}  // namespace agentcompile::testing
