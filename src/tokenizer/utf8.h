// The tokenizer's UTF-8 helpers, under its own name: they live in support/utf8.h, since text from
// outside (advisor replies, paths) is checked with them before it enters JSON.
#pragma once

#include "support/utf8.h"

namespace agentcompile::tokenizer {
namespace utf8 = support::utf8;
}  // namespace agentcompile::tokenizer
