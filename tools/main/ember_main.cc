#include "tools/cli/cli.h"
#include "train/blas/blas_startup.h"

int main(int argc, char** argv) {
  ember::BlasStartup(argc, argv);  // first: may re-exec (train/blas/blas_startup.h)
  return ember::tools::RunCli(argc, argv);
}
