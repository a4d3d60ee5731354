// A thread that cannot start (pthread_create fails, std::thread throws
// std::system_error) is an error status of the part that launched it, never
// an exception out of a pipeline stage. The I/O executor (io_executor.h)
// starts its threads when work is submitted to it: by a reader, or by a
// prefetch.
//
// pthread_create is interposed here: while a test thread sets
// g_fail_launches, its own launches fail with EAGAIN (as when the process
// is out of threads or memory); every other call goes to the real one.
// Sanitizer builds intercept pthread_create themselves: there the
// interposer is left out and the tests skip.
#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <vector>

#include "gtest/gtest.h"
#include "tests/train/train_test_util.h"
#include "train/schedule/io_executor.h"
#include "train/schedule/partition_buffer.h"
#include "train/stream/edge_window.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define EMBER_INTERPOSE_PTHREAD 0
#else
#define EMBER_INTERPOSE_PTHREAD 1
#endif

namespace {
thread_local bool g_fail_launches = false;
using PthreadCreate = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
}  // namespace

#if EMBER_INTERPOSE_PTHREAD
extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr,
                              void* (*start)(void*), void* arg) {
  if (g_fail_launches) return EAGAIN;
  static const auto real = reinterpret_cast<PthreadCreate>(dlsym(RTLD_NEXT, "pthread_create"));
  return real(thread, attr, start, arg);
}
#endif

namespace ember {
namespace {

using train_test::TempDir;

class FailedLaunch {
 public:
  FailedLaunch() { g_fail_launches = true; }
  ~FailedLaunch() { g_fail_launches = false; }
};

class ThreadLaunchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!EMBER_INTERPOSE_PTHREAD) GTEST_SKIP() << "pthread_create is the sanitizer's here";
    const std::string edges = tmp_.Sub("sbm.tsv");
    train_test::WriteSbmEdges(train_test::StandardSbm(), edges);
    dir_ = tmp_.Sub("g4");
    ASSERT_TRUE(train_test::ImportEdges(dir_, {edges}, 4).ok());
  }
  TempDir tmp_;
  std::string dir_;
};

TEST_F(ThreadLaunchTest, InterposerFailsOnlyWhileSet) {
  std::thread ok([] {});
  ok.join();
  FailedLaunch fail;
  EXPECT_THROW(std::thread([] {}), std::system_error);
}

TEST_F(ThreadLaunchTest, ReaderThatCannotStartReturnsAnError) {
  auto g = Graph::Open(dir_);
  ASSERT_TRUE(g.ok()) << g.status();
  IoExecutor io(2);
  std::unique_ptr<BucketWindowReader> reader;
  {
    FailedLaunch fail;
    reader = std::make_unique<BucketWindowReader>(g->get(), &io, BucketReadSpec{}, 100);
  }
  auto w = reader->Next();
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), absl::StatusCode::kResourceExhausted) << w.status();
  EXPECT_NE(w.status().message().find("edge reader thread"), std::string_view::npos)
      << w.status();
}

TEST_F(ThreadLaunchTest, PrefetchThatCannotStartFailsTheNextWait) {
  GraphOpenOptions rw;
  rw.read_only = false;
  auto g = Graph::Open(dir_, rw);
  ASSERT_TRUE(g.ok()) << g.status();
  PartitionBufferOptions bo;
  bo.capacity = 2;
  bo.dim = 4;
  IoExecutor io(2);
  auto made = PartitionBuffer::Make(g->get(), bo, std::vector<uint64_t>(4, 0), 1, &io);
  ASSERT_TRUE(made.ok()) << made.status();
  PartitionBuffer& buffer = **made;
  {
    FailedLaunch fail;
    buffer.Prefetch({0, 1}, {});
  }
  const absl::Status s = buffer.Quiesce();
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_NE(s.message().find("prefetch thread"), std::string_view::npos) << s;
  // The buffer stays usable.
  const std::vector<uint32_t> needed = {0};
  EXPECT_TRUE(buffer.Acquire(needed, {}).ok());
}

}  // namespace
}  // namespace ember
