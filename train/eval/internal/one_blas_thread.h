// OneBlasThread: OpenBLAS limited to one thread while alive, for code that
// runs many small GEMMs in parallel itself (evaluation, recommendation);
// the previous count comes back after. Private to train/eval.
#ifndef EMBER_TRAIN_EVAL_INTERNAL_ONE_BLAS_THREAD_H_
#define EMBER_TRAIN_EVAL_INTERNAL_ONE_BLAS_THREAD_H_

#include <cblas.h>

namespace ember::internal {

class OneBlasThread {
 public:
  OneBlasThread() : previous_(openblas_get_num_threads()) { openblas_set_num_threads(1); }
  ~OneBlasThread() { openblas_set_num_threads(previous_); }
  OneBlasThread(const OneBlasThread&) = delete;
  OneBlasThread& operator=(const OneBlasThread&) = delete;

 private:
  int previous_;
};

}  // namespace ember::internal

#endif  // EMBER_TRAIN_EVAL_INTERNAL_ONE_BLAS_THREAD_H_
