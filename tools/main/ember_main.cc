#include "tools/cli/cli.h"
#include "train/blas/blas_startup.h"

int main(int argc, char** argv) {
  // First: may re-exec (train/blas/blas_startup.h). The commands that
  // multiply print its warning, if any (PrintBlasWarning).
  ember::BlasStartup(argc, argv, /*print_warning=*/false);
  return ember::tools::RunCli(argc, argv);
}
