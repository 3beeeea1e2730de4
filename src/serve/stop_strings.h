// Stop strings over streamed text. A stop string may span several tokens ("\n\nUser:" arriving as
// "\n", "\nUser", ":"), so text that could be the start of one is held back until the next pieces
// show whether it is: releasing it early would stream part of a stop string to the client. The stop
// string itself and everything after it are never released (OpenAI's behaviour).
//
// After each push the held text is the longest suffix of the unreleased text that is a proper prefix
// of some stop string; everything before it is released. Held text is at most the longest stop
// string's length less one byte. Text comes in whole UTF-8 characters and stop strings are valid
// UTF-8, so a held suffix, being a prefix of a stop string, starts on a character boundary.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace agentcompile::serve {

class StopStringFilter {
 public:
  explicit StopStringFilter(std::vector<std::string> stops);

  // Appends generated text; returns what may be sent now (nothing once a stop string was seen).
  std::string push(std::string_view text);
  // At the end of generation: what was held back (nothing after a stop).
  std::string flush();

  bool stopped() const { return stopped_; }
  size_t held() const { return pending_.size(); }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace agentcompile::serve
