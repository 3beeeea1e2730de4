// The renderers, one file per template family.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "plan/candidate.h"

namespace agentcompile::codegen {

using Renderer = std::function<std::string(const plan::Candidate&)>;

std::string render_gemv(const plan::Candidate& candidate);

inline const std::vector<std::pair<std::string, Renderer>>& renderers() {
  static const std::vector<std::pair<std::string, Renderer>> table = {
      {"gemv", render_gemv},
  };
  return table;
}

}  // namespace agentcompile::codegen
