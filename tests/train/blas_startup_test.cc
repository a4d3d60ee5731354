// The GEMM start-up (train/blas/blas_startup.h): the pure kernel decision on
// table cases, the real start-up path end to end (this test binary re-run with
// a chosen environment: tests/test_main.cc runs BlasStartup first), and the
// thread count left alone by constructing a CPU trainer.
#include "train/blas/blas_startup.h"

#include <cblas.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "train/model/checkpoint.h"
#include "train/model/model_options.h"
#include "train/options/train_options.h"
#include "train/trainers/cpu_trainer.h"

extern char** environ;

namespace ember {
namespace {

constexpr CpuFeatures kSse3{};
constexpr CpuFeatures kAvx2Fma{.avx2 = true, .fma = true};
constexpr CpuFeatures kAvx512{.avx2 = true, .fma = true, .avx512f = true};
constexpr CpuFeatures kAvx512Bf16{.avx2 = true, .fma = true, .avx512f = true, .avx512_bf16 = true};

TEST(BlasDecisionTest, CoreFromFeatures) {
  EXPECT_EQ(DeservedCore(kSse3), "");
  EXPECT_EQ(DeservedCore(CpuFeatures{.avx2 = true}), "");  // AVX2 without FMA
  EXPECT_EQ(DeservedCore(kAvx2Fma), "Haswell");
  EXPECT_EQ(DeservedCore(kAvx512), "SkylakeX");
  EXPECT_EQ(DeservedCore(kAvx512Bf16), "Cooperlake");
}

TEST(BlasDecisionTest, PrescottOnAvx512Bf16ReexecsWithCooperlake) {
  // Issue 22: Debian 12's OpenBLAS 0.3.21 on Intel family 6 model 207.
  const BlasDecision d = DecideBlasCore("Prescott", kAvx512Bf16, false, false);
  EXPECT_EQ(d.action, BlasAction::kReexec);
  EXPECT_EQ(d.core, "Cooperlake");
}

TEST(BlasDecisionTest, Table) {
  struct Case {
    const char* reported;
    CpuFeatures cpu;
    bool user_set, reexeced;
    BlasAction action;
    const char* core;
  };
  const Case cases[] = {
      {"Cooperlake", kAvx512Bf16, false, false, BlasAction::kKeep, ""},
      {"Haswell", kAvx512Bf16, true, false, BlasAction::kWarn, ""},  // the user's: narrower
      {"Haswell", kAvx512Bf16, false, false, BlasAction::kReexec, "Cooperlake"},
      {"Zen", kAvx512, false, false, BlasAction::kReexec, "SkylakeX"},
      {"SkylakeX", kAvx512Bf16, true, false, BlasAction::kWarn, ""},
      {"Cooperlake", kAvx512, true, false, BlasAction::kKeep, ""},  // wider than needed
      {"Zen", kAvx2Fma, false, false, BlasAction::kKeep, ""},
      {"SKYLAKEX", kAvx512, false, false, BlasAction::kKeep, ""},
      {"Prescott", kSse3, false, false, BlasAction::kKeep, ""},  // nothing better
      {"Sandybridge", kAvx2Fma, false, false, BlasAction::kReexec, "Haswell"},
      {"Nehalem", kAvx512, false, false, BlasAction::kReexec, "SkylakeX"},
      {"Prescott", kAvx512Bf16, true, false, BlasAction::kWarn, ""},  // the user's wins
      {"Prescott", kAvx512Bf16, false, true, BlasAction::kWarn, ""},  // did not take: no loop
  };
  for (const Case& c : cases) {
    const BlasDecision d = DecideBlasCore(c.reported, c.cpu, c.user_set, c.reexeced);
    EXPECT_EQ(d.action, c.action) << c.reported;
    EXPECT_EQ(d.core, c.core) << c.reported;
    EXPECT_EQ(d.action == BlasAction::kWarn, !d.warning.empty()) << c.reported;
  }
  const BlasDecision user = DecideBlasCore("Prescott", kAvx512Bf16, true, false);
  EXPECT_NE(user.warning.find("OPENBLAS_CORETYPE=Cooperlake"), std::string::npos) << user.warning;
  // A cluster's OPENBLAS_CORETYPE=Haswell on an AVX-512 CPU: one line that
  // says what it costs and how to lift it.
  const BlasDecision pinned = DecideBlasCore("Haswell", kAvx512Bf16, true, false);
  EXPECT_NE(pinned.warning.find("OPENBLAS_CORETYPE=Haswell is set"), std::string::npos)
      << pinned.warning;
  EXPECT_NE(pinned.warning.find("1.5x"), std::string::npos) << pinned.warning;
  EXPECT_NE(pinned.warning.find("unset it"), std::string::npos) << pinned.warning;
}

// Item 2: from CPUID and OpenBLAS' own report, not from a timing.
TEST(BlasStartupTest, KernelIsNotGenericOnAvx2FmaCpu) {
  const CpuFeatures cpu = ReadCpuFeatures();
  if (!(cpu.avx2 && cpu.fma)) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  EXPECT_TRUE(IsAvx2ClassCore(BlasKernel())) << BlasKernel();
}

// Child mode: prints what the start-up left, for the tests below (disabled:
// only the child runs it, with --gtest_also_run_disabled_tests).
TEST(BlasStartupChild, DISABLED_Print) {
  if (std::getenv("EMBER_BLAS_TEST_CHILD") == nullptr) GTEST_SKIP() << "child mode only";
  std::printf("kernel=%s\n", BlasKernel().c_str());
}

struct ChildRun {
  std::string out;  // stdout and stderr together
  int status = -1;
};

// Runs this test binary's child mode with `set` added to and `unset` removed
// from the environment.
ChildRun RunChild(const std::vector<std::string>& set, const std::vector<std::string>& unset) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    bool drop = false;
    for (const std::string& u : unset) drop |= kv.rfind(u + "=", 0) == 0;
    for (const std::string& s : set) drop |= kv.rfind(s.substr(0, s.find('=') + 1), 0) == 0;
    if (!drop) env.push_back(kv);
  }
  env.insert(env.end(), set.begin(), set.end());
  env.push_back("EMBER_BLAS_TEST_CHILD=1");
  std::vector<char*> envp;
  for (std::string& s : env) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string exe = "/proc/self/exe", filter = "--gtest_filter=BlasStartupChild.DISABLED_Print",
              disabled = "--gtest_also_run_disabled_tests";
  std::array<char*, 4> argv{exe.data(), filter.data(), disabled.data(), nullptr};
  int pipefd[2];
  EXPECT_EQ(pipe(pipefd), 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 1);
  posix_spawn_file_actions_adddup2(&actions, pipefd[1], 2);
  posix_spawn_file_actions_addclose(&actions, pipefd[0]);
  pid_t pid;
  ChildRun run;
  const int rc = posix_spawn(&pid, exe.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  close(pipefd[1]);
  if (rc != 0) {
    close(pipefd[0]);
    ADD_FAILURE() << "posix_spawn failed";
    return run;
  }
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) run.out.append(buf, n);
  close(pipefd[0]);
  waitpid(pid, &run.status, 0);
  return run;
}

TEST(BlasStartupTest, UnsetCoretypeGivesAnAvx2ClassKernel) {
  const CpuFeatures cpu = ReadCpuFeatures();
  if (!(cpu.avx2 && cpu.fma)) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  const ChildRun run = RunChild({}, {"OPENBLAS_CORETYPE", "EMBER_BLAS_REEXEC"});
  ASSERT_EQ(run.status, 0) << run.out;
  const size_t at = run.out.find("kernel=");
  ASSERT_NE(at, std::string::npos) << run.out;
  const std::string kernel = run.out.substr(at + 7, run.out.find('\n', at) - at - 7);
  EXPECT_TRUE(IsAvx2ClassCore(kernel)) << run.out;
  EXPECT_EQ(run.out.find("warning:"), std::string::npos) << run.out;
}

TEST(BlasStartupTest, UsersPrescottWinsWithAWarning) {
  const CpuFeatures cpu = ReadCpuFeatures();
  if (!(cpu.avx2 && cpu.fma)) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  const ChildRun run = RunChild({"OPENBLAS_CORETYPE=Prescott"}, {"EMBER_BLAS_REEXEC"});
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("kernel=Prescott"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("warning: OpenBLAS runs its Prescott kernel"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("OPENBLAS_CORETYPE=" + DeservedCore(cpu)), std::string::npos) << run.out;
}

// The guard: when the core we re-exec'd with did not take (simulated: the
// guard names the core OpenBLAS still reports), warn and go on, no loop.
TEST(BlasStartupTest, ReexecThatDidNotTakeWarnsWithoutLooping) {
  const CpuFeatures cpu = ReadCpuFeatures();
  if (!(cpu.avx2 && cpu.fma)) GTEST_SKIP() << "no AVX2+FMA on this CPU";
  const ChildRun run = RunChild({"OPENBLAS_CORETYPE=Prescott", "EMBER_BLAS_REEXEC=Prescott"}, {});
  ASSERT_EQ(run.status, 0) << run.out;
  EXPECT_NE(run.out.find("kernel=Prescott"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("ignored OPENBLAS_CORETYPE="), std::string::npos) << run.out;
}

// Issue 23: OpenBLAS' thread count is process-wide; constructing a CPU
// trainer must not change it (the start-up decides it once).
TEST(BlasStartupTest, MakingACpuTrainerLeavesTheThreadCountAlone) {
  const int before = openblas_get_num_threads();
  openblas_set_num_threads(2);
  const int set = openblas_get_num_threads();
  TrainOptions options;
  RelationParams relations;
  relations.num_relations = 1;
  relations.param_size = RelationParamSize(options.model.op, options.model.dim);
  relations.params.resize(relations.param_size);
  auto trainer = MakeCpuTrainer(options, 1, relations, nullptr);
  const int after = openblas_get_num_threads();
  openblas_set_num_threads(before);
  ASSERT_TRUE(trainer.ok()) << trainer.status();
  EXPECT_EQ(after, set);
}

}  // namespace
}  // namespace ember
