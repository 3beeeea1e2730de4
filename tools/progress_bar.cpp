// The compile's progress lines and admission bar (see progress_bar.h).
#include "progress_bar.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace agentcompile::tools {

std::string clock_text(double seconds) {
  const long total = std::lround(std::max(0.0, seconds));
  char text[32];
  if (total >= 3600)
    std::snprintf(text, sizeof text, "%ld:%02ld:%02ld", total / 3600, total / 60 % 60, total % 60);
  else
    std::snprintf(text, sizeof text, "%ld:%02ld", total / 60, total % 60);
  return text;
}

void ProgressPrinter::clear_bar() {
  if (!bar_shown_) return;
  std::fputs("\r\033[K", stderr);  // back to the line's start, erase it
  bar_shown_ = false;
}

void ProgressPrinter::line(const std::string& text) {
  clear_bar();
  std::fprintf(stderr, "%s\n", text.c_str());
}

void ProgressPrinter::admission(const AdmissionProgress& p) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (p.done < p.total && bar_shown_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  constexpr int kWidth = 24;
  const double fraction = p.total ? static_cast<double>(p.done) / static_cast<double>(p.total) : 1.0;
  const int filled = static_cast<int>(std::lround(fraction * kWidth));
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '-');
  std::string text = "[4/5] admit [" + bar + "] " + std::to_string(p.done) + "/" + std::to_string(p.total) + " candidates";
  if (p.reused) text += " (" + std::to_string(p.reused) + " from the tuning database)";
  text += ", " + clock_text(p.elapsed_s) + (p.eta_s >= 0 ? ", about " + clock_text(p.eta_s) + " left" : "") + "  " + p.region;
  std::fprintf(stderr, "\r\033[K%s", text.c_str());
  std::fflush(stderr);
  bar_shown_ = true;
}

}  // namespace agentcompile::tools
