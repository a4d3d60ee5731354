#!/usr/bin/env bash
# Sets up everything and runs ember end to end on a small generated graph
# with planted communities (tools/examples/communities.sh): gen -> import
# -> inspect -> train -> eval -> neighbors, ending on how many of a node's
# nearest neighbours share its community, beside chance, and on where the
# test MRR stands between chance and the best a model can do on this graph.
# Usage: tools/demo.sh [WORKDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
tools/install-deps.sh
# Only the binary the demo runs, not the tests and benchmarks. A cold build of
# the ember target took 152 s on 2 cores (RelWithDebInfo, no ccache; about 300
# core-seconds); with ccache or an existing build/ it takes seconds.
if [ -x build/ember ]; then
  echo "demo: building ember (up to date or incremental: seconds)" >&2
else
  secs=$(( 300 / $(nproc) ))
  echo "demo: building the ember binary only: about $(( (secs + 59) / 60 )) min on $(nproc) cores from a clean tree (less with ccache)" >&2
fi
tools/build.sh release ember
EMBER=build/ember exec tools/examples/communities.sh "$@"
