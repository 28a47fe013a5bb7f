// `attnscope serve` as a child process for the server suites: started on a free loopback port
// (--port 0: the server prints the one it got), its stderr kept, stopped with a signal and its
// exit status read. Every wait is bounded.
#pragma once

#include <doctest/doctest.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace attnscope::testing {

class ServerProcess {
 public:
  // Runs `binary serve ARGS --host 127.0.0.1 --port 0` and waits (up to 60 s) for the line
  // "listening on http://127.0.0.1:PORT". REQUIREs that it comes.
  ServerProcess(const std::string& binary, const std::vector<std::string>& args) {
    int err[2];
    REQUIRE(pipe(err) == 0);
    std::vector<std::string> argv_text = {binary, "serve"};
    argv_text.insert(argv_text.end(), args.begin(), args.end());
    for (const char* extra : {"--host", "127.0.0.1", "--port", "0"}) argv_text.push_back(extra);
    std::vector<char*> argv;
    for (std::string& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    pid_ = fork();
    REQUIRE(pid_ >= 0);
    if (pid_ == 0) {
      dup2(err[1], STDERR_FILENO);
      close(err[0]);
      close(err[1]);
      execv(binary.c_str(), argv.data());
      _exit(127);
    }
    close(err[1]);
    err_ = err[0];
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    const std::string marker = "listening on http://127.0.0.1:";
    while (port_ == 0 && std::chrono::steady_clock::now() < deadline) {
      if (!read_some(200)) break;
      const std::string text = log();
      const std::size_t at = text.find(marker);
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        port_ = std::stoi(text.substr(at + marker.size()));
      }
    }
    INFO("server stderr: " << log());
    REQUIRE(port_ > 0);
    reader_ = std::thread([this] {
      while (read_some(100)) {
      }
    });
  }

  ~ServerProcess() {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    stopping_ = true;
    if (reader_.joinable()) reader_.join();
    close(err_);
  }

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const {
    const std::lock_guard<std::mutex> lock(mutex_);
    return log_;
  }

  // Sends `signal` and waits up to `seconds` for the process to end; returns its exit code
  // (-1: it did not end in time, or ended by a signal).
  int stop(int signal, int seconds) {
    kill(pid_, signal);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return -1;
  }

  // The server's resident memory (VmRSS, KiB).
  long resident_kib() const { return status_number("VmRSS:"); }
  // The server's threads now (/proc's Threads), -1 when unreadable.
  long threads() const { return status_number("Threads:"); }

 private:
  // The number on /proc/PID/status's line that starts with `field`, -1 when absent.
  long status_number(const std::string& field) const {
    std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
    std::string line;
    while (std::getline(status, line)) {
      if (line.starts_with(field)) return std::stol(line.substr(field.size()));
    }
    return -1;
  }

  // Reads what stderr has within `timeout_ms`; false at its end (or when stopping).
  bool read_some(int timeout_ms) {
    if (stopping_) return false;
    pollfd fd{err_, POLLIN, 0};
    if (poll(&fd, 1, timeout_ms) <= 0) return !stopping_;
    char buffer[4096];
    const ssize_t n = read(err_, buffer, sizeof buffer);
    if (n <= 0) return false;
    const std::lock_guard<std::mutex> lock(mutex_);
    log_.append(buffer, static_cast<std::size_t>(n));
    return true;
  }

  pid_t pid_ = -1;
  int err_ = -1;
  int port_ = 0;
  bool exited_ = false;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::string log_;
  std::thread reader_;
};

}  // namespace attnscope::testing
