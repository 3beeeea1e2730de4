// The one allocation guard of the host side (the reference interpreter and the tools): a buffer whose
// size comes from outside input (a configuration, a flag, a checkpoint) is checked against what this
// host can hold before it is allocated. A request no host could satisfy is then an error that names
// what and how much, not std::bad_alloc, an abort, or the OOM killer after minutes of paging (Linux
// overcommits, so a huge zeroed allocation "succeeds" and dies when touched).
//
// What the host can hold is the least of its physical memory, the cgroup's memory limit and the
// process's address-space and data limits (ulimit -v, -d). A request within it may still fail when
// other allocations already hold memory; callers that keep large buffers alive pass what they hold.
// The same check exists for disk space, for tools that write what a configuration asks for.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "agentcompile/status.h"

namespace agentcompile::support {

struct HostMemory {
  uint64_t bytes = 0;
  std::string limited_by;  // "physical memory", "the cgroup's memory.max", "the address-space limit (ulimit -v)", ...
};

// Read once per process.
const HostMemory& host_memory();

// "59.6 TiB", "512 MiB", "100 bytes": three significant digits, binary units.
std::string byte_size_text(uint64_t bytes);

// Bytes of `elements` values of `element_bytes` each; false (and `bytes` untouched) when the product
// overflows.
bool checked_bytes(uint64_t elements, uint64_t element_bytes, uint64_t& bytes);
// Bytes of a tensor of `shape`; false when a dim is negative or the product overflows.
bool checked_bytes(const std::vector<int64_t>& shape, uint64_t element_bytes, uint64_t& bytes);

// kResourceExhausted unless `held` + `bytes` fit in host_memory():
// "<what>: 59.6 TiB is more than this host can hold (125 GiB: physical memory)".
Status check_host_allocation(uint64_t bytes, const std::string& what, uint64_t held = 0);

// kResourceExhausted unless the file system of `directory` (or of its nearest existing ancestor) has
// `bytes` free for an unprivileged writer.
Status check_disk_space(const std::filesystem::path& directory, uint64_t bytes, const std::string& what);

}  // namespace agentcompile::support
