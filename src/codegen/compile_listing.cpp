// NVRTC's results for a region's candidates as text (see compile_listing.h).
#include "codegen/compile_listing.h"

#include <algorithm>

#include "codegen/render.h"

namespace agentcompile::codegen {

namespace {

constexpr size_t kLogHeadChars = 160;

// The first line of the log that says something, cut short.
std::string log_head(const std::string& log) {
  size_t start = 0;
  while (start < log.size()) {
    const size_t end = std::min(log.find('\n', start), log.size());
    const std::string line = log.substr(start, end - start);
    if (line.find_first_not_of(" \t\r") != std::string::npos) return line.size() > kLogHeadChars ? line.substr(0, kLogHeadChars) + "..." : line;
    start = end + 1;
  }
  return "(no log)";
}

}  // namespace

std::string describe_compiles(const plan::RegionPlan& plan, const std::vector<CompileResult>& compiled) {
  size_t sources = 0, ok = 0;
  std::string lines;
  for (size_t i = 0; i < plan.candidates.size(); ++i) {
    const plan::Candidate& c = plan.candidates[i];
    lines += "  " + c.id + " " + c.name() + ": ";
    if (!has_generated_launch(c)) {
      lines += "library call, nothing to compile\n";
      continue;
    }
    ++sources;
    const bool compiled_ok = i < compiled.size() && compiled[i].ok;
    ok += compiled_ok;
    lines += compiled_ok ? "compiled\n" : "failed: " + log_head(i < compiled.size() ? compiled[i].log : "") + "\n";
  }
  return "r" + std::to_string(plan.unique_id) + ": " + std::to_string(ok) + " of " + std::to_string(sources) + " sources compiled\n" + lines;
}

}  // namespace agentcompile::codegen
