// Parsing "--tokens 1,2,3" for the subcommands that take token ids.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace agentcompile::tools {

// Comma-separated non-negative ids (spaces around them allowed), each below `vocab_size` when it is
// given (non-zero); fails naming `flag` and the offending item otherwise.
std::vector<int32_t> parse_token_list(const std::string& text, const std::string& flag = "--tokens", size_t vocab_size = 0);

}  // namespace agentcompile::tools
