// Token-id lists on the command line.
#include "token_list.h"

#include <climits>
#include <sstream>
#include <stdexcept>

#include "commands.h"

namespace agentcompile::tools {

std::vector<int32_t> parse_token_list(const std::string& text, const std::string& flag, size_t vocab_size) {
  std::vector<int32_t> tokens;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    const size_t first = item.find_first_not_of(' '), last = item.find_last_not_of(' ');
    item = first == std::string::npos ? "" : item.substr(first, last - first + 1);
    try {
      size_t used = 0;
      const long value = std::stol(item, &used);
      if (used != item.size() || value < 0 || value > INT32_MAX) throw std::invalid_argument(item);
      tokens.push_back(static_cast<int32_t>(value));
    } catch (const std::exception&) {
      fail(flag + ": '" + item + "' is not a token id (expected comma-separated non-negative integers)");
    }
    if (vocab_size > 0 && static_cast<size_t>(tokens.back()) >= vocab_size)
      fail(flag + ": " + item + " is not a token id of this vocabulary (ids 0.." + std::to_string(vocab_size - 1) + ")");
  }
  if (tokens.empty()) fail(flag + ": no token ids given");
  return tokens;
}

}  // namespace agentcompile::tools
