// Token-id lists on the command line.
#include "token_list.h"

#include <climits>
#include <sstream>
#include <stdexcept>

#include "commands.h"

namespace agentcompile::tools {

std::vector<int32_t> parse_token_list(const std::string& text) {
  std::vector<int32_t> tokens;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    try {
      size_t used = 0;
      const long value = std::stol(item, &used);
      if (used != item.size() || value < 0 || value > INT32_MAX) throw std::invalid_argument(item);
      tokens.push_back(static_cast<int32_t>(value));
    } catch (const std::exception&) {
      fail("--tokens: '" + item + "' is not a token id (expected comma-separated non-negative integers)");
    }
  }
  if (tokens.empty()) fail("--tokens: no token ids given");
  return tokens;
}

}  // namespace agentcompile::tools
