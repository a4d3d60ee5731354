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
tools/build.sh release
EMBER=build/ember exec tools/examples/communities.sh "$@"
