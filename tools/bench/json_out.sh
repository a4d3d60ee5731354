# shellcheck shell=bash
# Sourced by tools/bench/*.sh, before they cd: takes `--json-out FILE` (or
# `--json-out=FILE`; the environment's JSON_OUT=FILE alike) out of the
# script's arguments, and writes the figures the script prints as one JSON
# object into FILE, which tools/report/report.py --bench draws:
#   {"bench": NAME, "config": {KEY: VALUE, ...},
#    "runs": [{"label": LABEL, KEY: VALUE, ...}, ...], "summary": {...}}
# Values that read as numbers are written as numbers. The text output stays
# as it is; without --json-out nothing is written.
# Usage in a script:
#   source "$(dirname "$0")/json_out.sh" "$@"; set -- "${bench_args[@]+"${bench_args[@]}"}"
#   bench_json config "" scale=20 ...; bench_json run LABEL edges_per_second=...
#   bench_json summary "" ratio=...;   bench_json_write NAME   (at the end)

bench_json_out=${JSON_OUT:-}
bench_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --json-out) [ $# -ge 2 ] || { echo "--json-out needs a FILE" >&2; exit 2; }
                bench_json_out=$2; shift 2 ;;
    --json-out=*) bench_json_out=${1#--json-out=}; shift ;;
    *) bench_args+=("$1"); shift ;;
  esac
done
# Relative to where the script was started, not to where it cds.
case "$bench_json_out" in ""|/*) ;; *) bench_json_out=$PWD/$bench_json_out ;; esac
bench_json_rows=()
# bc must not wrap long results over lines (they are read back as numbers).
export BC_LINE_LENGTH=0

# bench_json SECTION LABEL KEY=VALUE...: SECTION is config, run or summary;
# LABEL names the run (empty for config and summary).
bench_json() {
  local section=$1 label=$2 kv; shift 2
  for kv in "$@"; do
    bench_json_rows+=("$section"$'\t'"$label"$'\t'"${kv%%=*}"$'\t'"${kv#*=}")
  done
}

# bench_json_write NAME: writes the collected figures to the --json-out file.
bench_json_write() {
  [ -n "$bench_json_out" ] || return 0
  local py=/usr/bin/python3
  [ -x "$py" ] || py=python3
  printf '%s\n' "${bench_json_rows[@]}" | "$py" -c '
import json, sys
def value(v):
    for cast in (int, float):
        try:
            return cast(v)
        except ValueError:
            pass
    return v
out = {"bench": sys.argv[1], "config": {}, "runs": [], "summary": {}}
runs = {}
for line in sys.stdin:
    section, label, key, v = line.rstrip("\n").split("\t", 3)
    if section == "run":
        if label not in runs:
            runs[label] = {"label": label}
            out["runs"].append(runs[label])
        runs[label][key] = value(v)
    else:
        out[section][key] = value(v)
with open(sys.argv[2], "w") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
' "$1" "$bench_json_out"
}
