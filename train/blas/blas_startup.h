// The GEMM backend's start-up: OpenBLAS on the kernel the CPU deserves, and
// its thread count, decided once per process before any thread exists.
//
// Why: a distribution's OpenBLAS may not know a CPU newer than itself and fall
// back to a pre-AVX2 kernel without a word (Debian 12's 0.3.21 picks SSE3
// "Prescott" on Intel family 6 model 207, AVX-512 with BF16; 2.4-2.8x slower
// training, issue 22). OpenBLAS chooses its kernel in its library constructor,
// from OPENBLAS_CORETYPE or its own detection, so setting the variable inside
// main() is too late for this process.
//
// Re-exec, not late dlopen: ember links libopenblas directly and calls cblas_*
// everywhere (train/model, train/eval, train/device, tools/bench). Loading it
// late with dlopen would mean no link-time dependency and every call through
// dlsym'd pointers, in every module and test; and a second copy opened next to
// the linked one would not replace it. Re-exec of /proc/self/exe with the same
// argv (and OPENBLAS_CORETYPE set) costs one exec at start-up, only on the
// CPUs that need it, and changes no call site. At most one re-exec: after it
// OPENBLAS_CORETYPE is set, and the guard variable EMBER_BLAS_REEXEC (the core
// we chose) tells our setting from a user's, so a correction that did not take
// (e.g. an OpenBLAS built without DYNAMIC_ARCH) gets its own warning and we go
// on. Child processes inherit both variables, and so the corrected kernel.
// A user's OPENBLAS_CORETYPE always wins: we never override it, only warn,
// once per process and whatever --quiet says, when it names a kernel
// narrower than the CPU allows (Haswell on an AVX-512 CPU costs training
// about 1.5x; clusters set it so for old OpenBLAS builds), saying what it
// costs and how to lift it.
//
// Threads: ember parallelises over its own trainer threads (TBB) and its
// GEMMs are small chunk products; OpenBLAS' own threads would only
// oversubscribe the cores. So the start-up sets OpenBLAS to one thread once,
// unless the user set OPENBLAS_NUM_THREADS or OMP_NUM_THREADS (then OpenBLAS
// already took theirs). Nothing else in ember sets it process-wide
// (train/eval's scoped guard restores the previous value).
#ifndef EMBER_TRAIN_BLAS_BLAS_STARTUP_H_
#define EMBER_TRAIN_BLAS_BLAS_STARTUP_H_

#include <string>
#include <string_view>

namespace ember {

// What CPUID (and the OS, through XGETBV) allow.
struct CpuFeatures {
  bool avx2 = false;
  bool fma = false;
  bool avx512f = false;
  bool avx512_bf16 = false;
};

// Reads CPUID leaves 1 and 7 (x86-64; all false elsewhere).
CpuFeatures ReadCpuFeatures();

// The OpenBLAS core chosen from features, not from a table of models:
// AVX512-BF16 -> "Cooperlake", AVX-512F -> "SkylakeX", AVX2+FMA -> "Haswell",
// else "" (nothing better than OpenBLAS' own choice).
std::string DeservedCore(const CpuFeatures& cpu);

// True for an OpenBLAS core name (as openblas_get_corename() reports it, any
// case) whose kernels use AVX2+FMA or wider: Haswell, Zen, SkylakeX,
// Cooperlake, SapphireRapids. Everything else (Prescott, Nehalem,
// Sandybridge, generic, ...) counts as a fallback on an AVX2+FMA CPU.
bool IsAvx2ClassCore(std::string_view core);

enum class BlasAction { kKeep, kReexec, kWarn };

struct BlasDecision {
  BlasAction action = BlasAction::kKeep;
  std::string core;     // kReexec: the OPENBLAS_CORETYPE to set
  std::string warning;  // kWarn: what to print, with how to fix it
};

// The pure decision: keep a kernel as wide as DeservedCore (AVX2+FMA,
// AVX-512, AVX-512 with BF16); else re-exec with the deserved core, or warn
// when the user pinned the narrower one or our re-exec did not take.
// reported_core: openblas_get_corename(); user_set: the user (not our
// re-exec) set OPENBLAS_CORETYPE; reexeced: this process is our own re-exec
// (the guard variable is set).
BlasDecision DecideBlasCore(std::string_view reported_core, const CpuFeatures& cpu,
                            bool user_set, bool reexeced);

// The start-up path: call first in main(), before any thread. May not return
// (re-execs /proc/self/exe with argv). With `print_warning`, prints the
// warning (BlasWarning) on stderr when the kernel is narrower than the CPU
// allows and could not be corrected; without, the caller prints it where
// GEMMs matter (PrintBlasWarning: `ember train`, `eval`, `neighbors`,
// `tune`). Sets the thread count (see above). Idempotent.
void BlasStartup(int argc, char** argv, bool print_warning = true);

// "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." (openblas_get_config()).
std::string BlasBackend();
// The kernel in use, e.g. "Cooperlake" (openblas_get_corename()).
std::string BlasKernel();
// One line for a command's start under --verbose: "GEMM: OpenBLAS 0.3.21
// ..., kernel Cooperlake, 1 thread".
std::string BlasLine();
// The start-up's warning ("" when none).
const std::string& BlasWarning();
// BlasWarning() and a newline on stderr, when there is one: always, --quiet
// or not, since it says what the environment costs the run.
void PrintBlasWarning();

}  // namespace ember

#endif  // EMBER_TRAIN_BLAS_BLAS_STARTUP_H_
