// Host memory and disk limits (see host_limits.h).
#include "support/host_limits.h"

#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string_view>

namespace agentcompile::support {

namespace {

// cgroup v2 memory.max (a number or "max") of this process's cgroup, else v1's memory.limit_in_bytes.
uint64_t cgroup_limit() {
  std::ifstream cgroups("/proc/self/cgroup");
  std::string line, v2_path;
  while (std::getline(cgroups, line))
    if (line.rfind("0::", 0) == 0) v2_path = line.substr(3);
  for (const std::string& file : {"/sys/fs/cgroup" + v2_path + "/memory.max", std::string("/sys/fs/cgroup/memory.max"),
                                  std::string("/sys/fs/cgroup/memory/memory.limit_in_bytes")}) {
    std::ifstream in(file);
    std::string value;
    if (!(in >> value) || value == "max") continue;
    char* end = nullptr;
    const unsigned long long limit = std::strtoull(value.c_str(), &end, 10);
    if (end && *end == '\0' && limit > 0) return limit;
  }
  return UINT64_MAX;
}

uint64_t rlimit_bytes(int resource) {
  rlimit limit{};
  if (getrlimit(resource, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<uint64_t>(limit.rlim_cur);
}

HostMemory probe() {
  HostMemory memory{UINT64_MAX, "nothing"};
  auto take = [&](uint64_t bytes, const char* why) {
    if (bytes < memory.bytes) memory = {bytes, why};
  };
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) take(static_cast<uint64_t>(pages) * static_cast<uint64_t>(page_size), "physical memory");
  take(cgroup_limit(), "the cgroup's memory limit");
  take(rlimit_bytes(RLIMIT_AS), "the address-space limit (ulimit -v)");
  take(rlimit_bytes(RLIMIT_DATA), "the data-segment limit (ulimit -d)");
  return memory;
}

}  // namespace

const HostMemory& host_memory() {
  static const HostMemory memory = probe();
  return memory;
}

std::string byte_size_text(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024) return std::to_string(bytes) + " bytes";
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) value /= 1024, ++unit;
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g %s", value, kUnits[unit]);
  return text;
}

bool checked_bytes(uint64_t elements, uint64_t element_bytes, uint64_t& bytes) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(elements, element_bytes, &product)) return false;
  bytes = product;
  return true;
}

bool checked_bytes(const std::vector<int64_t>& shape, uint64_t element_bytes, uint64_t& bytes) {
  uint64_t total = element_bytes;
  for (int64_t dim : shape)
    if (dim < 0 || __builtin_mul_overflow(total, static_cast<uint64_t>(dim), &total)) return false;
  bytes = total;
  return true;
}

Status check_host_allocation(uint64_t bytes, const std::string& what, uint64_t held) {
  const HostMemory& memory = host_memory();
  if (bytes <= memory.bytes && held <= memory.bytes - bytes) return Status::ok();
  return error(ErrorCode::kResourceExhausted,
               what + ": " + byte_size_text(bytes) + (held ? " beside the " + byte_size_text(held) + " already held" : "") +
                   " is more than this host can hold (" + byte_size_text(memory.bytes) + ": " + memory.limited_by + ")");
}

Status check_disk_space(const std::filesystem::path& directory, uint64_t bytes, const std::string& what) {
  std::error_code ec;
  std::filesystem::path existing = std::filesystem::absolute(directory, ec);
  while (!existing.empty() && !std::filesystem::exists(existing, ec) && existing != existing.parent_path()) existing = existing.parent_path();
  struct statvfs fs {};
  if (statvfs(existing.c_str(), &fs) != 0) return Status::ok();  // unknown: let the write itself report
  const uint64_t free_bytes = static_cast<uint64_t>(fs.f_bavail) * static_cast<uint64_t>(fs.f_frsize);
  if (bytes <= free_bytes) return Status::ok();
  return error(ErrorCode::kResourceExhausted, what + ": " + byte_size_text(bytes) + " is more than the " + byte_size_text(free_bytes) +
                                                  " free on the file system of " + existing.string());
}

}  // namespace agentcompile::support
