#!/usr/bin/env bash
# Installs ember's build and test dependencies from Debian's packages.
# Idempotent: installs only what is missing. Needs root (or sudo).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang-format librocksdb-dev libtbb-dev libabsl-dev libgtest-dev libgmock-dev
  libbenchmark-dev libopenblas-dev libopenmpi-dev libfaiss-dev libhdf5-dev
  libxxhash-dev nlohmann-json3-dev zlib1g-dev
  python3 python3-numpy python3-matplotlib python3-h5py python3-faiss time bc
  clang libclang-rt-14-dev curl ccache
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
