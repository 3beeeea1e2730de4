// The chat page served at / (src/serve/chat_page.html, embedded at build time by
// cmake/embed_chat_page.cmake).
#pragma once

#include <string_view>

namespace agentcompile::serve {

std::string_view chat_page_html();

}  // namespace agentcompile::serve
