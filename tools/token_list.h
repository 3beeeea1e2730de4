// Parsing "--tokens 1,2,3" for the subcommands that take token ids.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace agentcompile::tools {

// Comma-separated non-negative ids; fails (with the offending item named) otherwise.
std::vector<int32_t> parse_token_list(const std::string& text);

}  // namespace agentcompile::tools
