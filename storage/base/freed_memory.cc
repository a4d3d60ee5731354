#include "storage/base/freed_memory.h"

#include <algorithm>
#include <climits>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ember {

void RetainFreedMemory(uint64_t bytes) {
#if defined(__GLIBC__)
  // Setting either threshold turns off glibc's dynamic adjustment of both,
  // so both are set.
  mallopt(M_MMAP_THRESHOLD, static_cast<int>(kHeapAllocationBytes));
  mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::min<uint64_t>(bytes, INT_MAX)));
#else
  (void)bytes;
#endif
}

}  // namespace ember
