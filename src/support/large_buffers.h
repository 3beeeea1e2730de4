// Host buffers of gigabytes (a 2^30-element region's case data, its reference's intermediates) cost
// more to obtain than to fill: each 4-KiB page a fresh vector first touches traps into the kernel,
// which zeroes it. Profiled on a BatchNorm over 2^30 elements, page faults and zeroing were 54-58% of
// the host's admission time. zeroed_vector() asks for transparent huge pages before the vector's
// zero fill touches them (one fault per 2 MiB where the kernel offers them): that region's case data
// and reference went from 26.9 s to 18.3 s on this project's 2-core machine. Below kLargeBufferBytes
// it is a plain vector(n). (Populating the pages from several threads first, MADV_POPULATE_WRITE,
// was slower there: 26.1 s.)
#pragma once

#include <cstddef>
#include <vector>

namespace agentcompile::support {

constexpr size_t kLargeBufferBytes = size_t{64} << 20;

// Asks for transparent huge pages over the whole pages of [data, data + bytes). Advice only: where
// the kernel refuses (THP off), pages fault in 4 KiB at a time as before.
void advise_huge_pages(void* data, size_t bytes);

// A vector of n value-initialized (zero) elements; see above.
template <typename T>
std::vector<T> zeroed_vector(size_t n) {
  std::vector<T> v;
  if (n * sizeof(T) >= kLargeBufferBytes) {
    v.reserve(n);
    advise_huge_pages(v.data(), n * sizeof(T));
  }
  v.resize(n);
  return v;
}

}  // namespace agentcompile::support
