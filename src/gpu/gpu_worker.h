// GPU work in a forked child. CUDA must not be initialized in a process that later forks (admission
// workers), and a kernel that faults poisons its context: so the compiler runs GPU work in children
// that report back through a pipe and are killed when they hang.
#pragma once

#include <functional>
#include <string>

#include "agentcompile/status.h"

namespace agentcompile::gpu {

// Writes all of `text` to `fd` (a pipe to the parent); stops quietly if the parent is gone.
void write_all(int fd, const std::string& text);

// Runs `body` in a forked child and returns the string it produced, or its error; a child that dies
// or outlives `timeout_s` (then killed) is an error too.
Expected<std::string> run_forked(const std::function<Expected<std::string>()>& body, double timeout_s);

}  // namespace agentcompile::gpu
