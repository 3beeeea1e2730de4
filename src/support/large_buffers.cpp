// Huge-page advice for large host buffers (see large_buffers.h).
#include "support/large_buffers.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace agentcompile::support {

void advise_huge_pages(void* data, size_t bytes) {
  if (!data || bytes == 0) return;
  const auto page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<uintptr_t>(data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<uintptr_t>(data) + bytes) / page * page;
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

}  // namespace agentcompile::support
