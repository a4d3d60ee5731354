#include "tools/cli/cli.h"

int main(int argc, char** argv) { return ember::tools::RunCli(argc, argv); }
