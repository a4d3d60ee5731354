// How much freed heap memory the process keeps mapped for reuse.
#ifndef EMBER_STORAGE_BASE_FREED_MEMORY_H_
#define EMBER_STORAGE_BASE_FREED_MEMORY_H_

#include <cstdint>

namespace ember {

// Keeps up to `bytes` of freed heap memory mapped, and serves allocations
// of up to kHeapAllocationBytes from the heap, so that memory freed and
// allocated again (a checkpoint's tables pass through RocksDB's memtables,
// which are freed at every flush) is not unmapped and faulted in, zeroed,
// page by page each time: on a virtual machine that was 40 % of a
// checkpoint's time (tools/bench/kg_default.sh). `bytes` should be memory
// the caller's budget already counts (the memtables' share). Process-wide
// (glibc's mallopt); a no-op elsewhere and under sanitizers' allocators.
void RetainFreedMemory(uint64_t bytes);

// Allocations above this size are mapped on their own (and unmapped when
// freed) once RetainFreedMemory has run: above a table chunk of a
// checkpoint (4 MiB, storage/graph.cc), below a partition's rows.
inline constexpr uint64_t kHeapAllocationBytes = uint64_t{16} << 20;

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_FREED_MEMORY_H_
