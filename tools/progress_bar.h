// The compile's progress on a terminal: progress lines as they come, and while admission runs, one
// line redrawn in place with a bar, the candidates done, the time spent and the time left. Off a
// terminal (a log, a pipe) only the plain lines are written.
#pragma once

#include <chrono>
#include <string>

#include "agentcompile/compiler.h"

namespace agentcompile::tools {

class ProgressPrinter {
 public:
  // `tty`: stderr is a terminal (the bar is drawn).
  explicit ProgressPrinter(bool tty) : tty_(tty) {}

  // A progress line: clears the bar first, so the line stands on its own.
  void line(const std::string& text);
  // Redraws the bar (at most every 100 ms, and always for the last candidate).
  void admission(const AdmissionProgress& progress);

 private:
  void clear_bar();
  bool tty_;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

// "1:05", "12:00:03": a duration for a person.
std::string clock_text(double seconds);

}  // namespace agentcompile::tools
