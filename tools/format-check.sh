#!/usr/bin/env bash
# Fails when a C++ or CUDA line changed since BASE is not laid out as
# clang-format writes it (.clang-format: Google's style, 100 columns), and
# prints the diff that would fix it. Lines nobody has touched since are
# left as they are: the check holds every change to the style without a
# tree-wide reformat.
# Usage: tools/format-check.sh [BASE]
#   BASE: a commit; default: the commit that added .clang-format.
# Fix a change with `git clang-format BASE` (or on staged lines, before a
# commit: `git clang-format`).
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-$(git log --diff-filter=A --format=%H -- .clang-format | tail -n 1)}
if [ -z "$base" ]; then
  echo "format-check: no commit added .clang-format (is this a git clone?)" >&2
  exit 1
fi
command -v git-clang-format >/dev/null || { echo "format-check: git-clang-format not found (tools/install-deps.sh installs clang-format)" >&2; exit 1; }
diff=$(git clang-format --quiet --diff --extensions cc,h,cu,cuh "$base" -- \
  storage partition train tools tests || true)
case "$diff" in
  ""|"no modified files to format"|"clang-format did not modify any files")
    echo "format-check: every line changed since ${base:0:12} is formatted"
    exit 0 ;;
esac
printf '%s\n' "$diff"
echo "format-check: the lines above, changed since ${base:0:12}, are not as clang-format writes them; run: git clang-format ${base:0:12}" >&2
exit 1
