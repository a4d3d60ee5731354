#include "train/blas/blas_startup.h"

#include <cblas.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace ember {
namespace {

constexpr char kGuard[] = "EMBER_BLAS_REEXEC";

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string FeatureList(const CpuFeatures& cpu) {
  std::string s;
  auto add = [&s](bool on, const char* name) {
    if (on) s += s.empty() ? name : std::string("+") + name;
  };
  add(cpu.avx2, "AVX2");
  add(cpu.fma, "FMA");
  add(cpu.avx512f, "AVX-512");
  add(cpu.avx512_bf16, "AVX512-BF16");
  return s;
}

const char* NonEmptyEnv(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && v[0] != '\0' ? v : nullptr;
}

std::string& Warning() {
  static std::string w;
  return w;
}

}  // namespace

CpuFeatures ReadCpuFeatures() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = (c >> 12) & 1;
  const bool osxsave = (c >> 27) & 1;
  if (!osxsave) return f;
  unsigned xcr0_lo, xcr0_hi;
  __asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
  const bool os_avx = (xcr0_lo & 0x6) == 0x6;          // XMM, YMM state
  const bool os_avx512 = (xcr0_lo & 0xe6) == 0xe6;     // + opmask, ZMM state
  if (!os_avx || __get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.fma = fma;
  f.avx2 = (b >> 5) & 1;
  f.avx512f = os_avx512 && ((b >> 16) & 1);
  if (f.avx512f) {
    __cpuid_count(7, 1, a, b, c, d);
    f.avx512_bf16 = (a >> 5) & 1;
  }
#endif
  return f;
}

std::string DeservedCore(const CpuFeatures& cpu) {
  if (cpu.avx512f && cpu.avx512_bf16) return "Cooperlake";
  if (cpu.avx512f) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return "Haswell";
  return "";
}

namespace {

// How wide an OpenBLAS core's kernels are: 0 pre-AVX2 (a fallback on any
// AVX2+FMA CPU), 1 AVX2+FMA, 2 AVX-512, 3 AVX-512 with BF16.
int CoreWidth(std::string_view core) {
  const std::string c = Lower(core);
  if (c == "cooperlake" || c == "sapphirerapids") return 3;
  if (c == "skylakex") return 2;
  if (c == "haswell" || c == "zen") return 1;
  return 0;
}

// What the narrower kernel costs, in words, for the warning.
std::string Cost(std::string_view core) {
  if (CoreWidth(core) == 0) return "GEMMs run several times slower";
  return "training runs about 1.5x slower (measured 1.26 M against 1.85 M edges/s)";
}

}  // namespace

bool IsAvx2ClassCore(std::string_view core) { return CoreWidth(core) >= 1; }

BlasDecision DecideBlasCore(std::string_view reported_core, const CpuFeatures& cpu,
                            bool user_set, bool reexeced) {
  BlasDecision d;
  const std::string deserved = DeservedCore(cpu);
  if (deserved.empty() || CoreWidth(reported_core) >= CoreWidth(deserved)) return d;
  const std::string core(reported_core);
  if (user_set) {
    d.action = BlasAction::kWarn;
    d.warning = "warning: OpenBLAS runs its " + core + " kernel on a CPU with " + FeatureList(cpu) +
                " because OPENBLAS_CORETYPE=" + core + " is set: " + Cost(core) +
                "; unset it, or set OPENBLAS_CORETYPE=" + deserved;
    return d;
  }
  if (reexeced) {
    d.action = BlasAction::kWarn;
    d.warning = "warning: OpenBLAS runs its " + core + " kernel on a CPU with " + FeatureList(cpu) +
                " and ignored OPENBLAS_CORETYPE=" + deserved +
                " (built without DYNAMIC_ARCH?): " + Cost(core) +
                "; install an OpenBLAS that knows this CPU (0.3.25 or later)";
    return d;
  }
  d.action = BlasAction::kReexec;
  d.core = deserved;
  return d;
}

void BlasStartup(int argc, char** argv, bool print_warning) {
  static bool done = false;
  if (done) return;
  done = true;
  const char* coretype = NonEmptyEnv("OPENBLAS_CORETYPE");
  const char* guard = NonEmptyEnv(kGuard);
  // Ours when the guard names the core we set; anything else is the user's.
  const bool reexeced = coretype != nullptr && guard != nullptr && std::strcmp(coretype, guard) == 0;
  const bool user_set = coretype != nullptr && !reexeced;
  const BlasDecision d = DecideBlasCore(BlasKernel(), ReadCpuFeatures(), user_set, reexeced);
  if (d.action == BlasAction::kReexec) {
    setenv("OPENBLAS_CORETYPE", d.core.c_str(), 1);
    setenv(kGuard, d.core.c_str(), 1);
    std::fflush(nullptr);
    execv("/proc/self/exe", argv);
    Warning() = "warning: OpenBLAS runs its " + BlasKernel() + " kernel; re-exec with "
                "OPENBLAS_CORETYPE=" + d.core + " failed (" + std::strerror(errno) +
                "); set OPENBLAS_CORETYPE=" + d.core + " yourself";
    // The variable stays set for child processes; this process keeps its kernel.
  } else if (d.action == BlasAction::kWarn) {
    Warning() = d.warning;
  }
  if (print_warning) PrintBlasWarning();
  if (NonEmptyEnv("OPENBLAS_NUM_THREADS") == nullptr && NonEmptyEnv("OMP_NUM_THREADS") == nullptr) {
    openblas_set_num_threads(1);
  }
}

std::string BlasBackend() {
  const char* c = openblas_get_config();
  return c != nullptr ? std::string(c) : "OpenBLAS";
}

std::string BlasKernel() {
  const char* c = openblas_get_corename();
  return c != nullptr ? std::string(c) : "unknown";
}

std::string BlasLine() {
  const int threads = openblas_get_num_threads();
  std::string line = "GEMM: " + BlasBackend() + ", kernel " + BlasKernel() + ", " +
                     std::to_string(threads) + (threads == 1 ? " thread" : " threads");
  return line;
}

const std::string& BlasWarning() { return Warning(); }

void PrintBlasWarning() {
  if (!Warning().empty()) std::fprintf(stderr, "%s\n", Warning().c_str());
}

}  // namespace ember
