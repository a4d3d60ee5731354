#!/usr/bin/env bash
# Proves tools/gpu-check.sh cannot pass falsely, without a GPU: a fake bundle
# whose `ember train --devices cuda:0` crashes (or prints no edges/s) must fail
# the e2e step and the check; the same bundle with a working ember must pass
# it (so the test is not vacuous); with no GPU the check exits 3 and says so.
# Usage, from the repo root: tests/tools/gpu_check_test.sh   (exit 0: all held)
set -uo pipefail
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0
expect() {  # expect DESCRIPTION WANT_RC_NONZERO(0|1) RC LOG PATTERN
  local ok=1
  if [ "$2" = 1 ] && [ "$3" -eq 0 ]; then ok=0; fi
  if [ "$2" = 0 ] && [ "$3" -ne 0 ]; then ok=0; fi
  grep -qE "$5" "$4" || ok=0
  if [ $ok = 1 ]; then echo "ok: $1 (rc $3)"; else echo "NOT OK: $1 (rc $3)"; tail -15 "$4"; fails=$((fails + 1)); fi
}
# plant MODE: a fake build-device/ whose ember train on cuda:0 does MODE
# (crash: exits 134 printing nothing; silent: exits 0 printing nothing; good).
plant() {
  local b="$tmp/bundle-$1"; mkdir -p "$b"
  echo "cuda: yes" >"$b/bundle.txt"
  cat >"$b/run" <<RUN
#!/usr/bin/env bash
mode=$1
[ "\$1" = --library-dirs ] && exit 0
[ "\$1" = ember ] || exit 1
shift
case "\$1" in
  gen) touch "\${@: -2:1}" 2>/dev/null; for a; do [ "\$p" = --out ] && touch "\$a"; p=\$a; done ;;
  import) for a; do [ "\$p" = --out ] && mkdir -p "\$a"; p=\$a; done ;;
  train)
    if [[ " \$* " == *" cuda:0 "* ]]; then
      case \$mode in
        crash) echo "Segmentation fault" >&2; exit 134 ;;
        silent) exit 0 ;;
      esac
    fi
    echo '{"edges_per_second": 1.5e+07}' ;;
esac
RUN
  chmod +x "$b/run"; echo "$b"
}
for mode in crash silent good; do
  b=$(plant $mode)
  GPU_CHECK_NO_GPU_OK=1 GPU_CHECK_STEPS=e2e GPU_CHECK_BUNDLE=$b OUT=$tmp/out-$mode \
    tools/gpu-check.sh >"$tmp/$mode.log" 2>&1
  rc=$?
  case $mode in
    crash) expect "a crashing cuda:0 train fails the check" 1 $rc "$tmp/$mode.log" '^e2e +FAIL .*cuda:0: ember train failed' ;;
    silent) expect "a cuda:0 train with no edges/s fails the check" 1 $rc "$tmp/$mode.log" '^e2e +FAIL .*no edges_per_second' ;;
    good) expect "a working train passes the e2e step" 1 $rc "$tmp/$mode.log" '^e2e +PASS .*cuda:0: 1.5e\+07 edges/s' ;;
  esac
done
# No bundle: the check runs the fallback probe instead, and the summary says
# so; a probe that fails (here: no CUDA device) fails the check, one that
# passes passes the probe row.
for mode in nodevice passes; do
  probe="$tmp/probe-$mode"
  if [ $mode = nodevice ]; then
    printf '#!/usr/bin/env bash\necho "gpu_fallback_probe: no CUDA device (fake)"; exit 3\n' >"$probe"
  else
    printf '#!/usr/bin/env bash\necho "  one step at a time: 2.5e+07 edges/s"; echo PASSED\n' >"$probe"
  fi
  chmod +x "$probe"
  GPU_CHECK_NO_GPU_OK=1 GPU_CHECK_BUNDLE=$tmp/no-bundle GPU_CHECK_PROBE=$probe OUT=$tmp/out-$mode \
    tools/gpu-check.sh >"$tmp/$mode.log" 2>&1
  rc=$?
  expect "no bundle: the summary says the probe runs instead" 1 $rc "$tmp/$mode.log" \
    '^bundle +FAIL .*the fallback probe runs instead'
  case $mode in
    nodevice) expect "a failing probe fails its row" 1 $rc "$tmp/$mode.log" '^probe +FAIL .*rc 3; no CUDA device' ;;
    passes) expect "a passing probe passes its row" 1 $rc "$tmp/$mode.log" '^probe +PASS .*2.5e\+07 edges/s' ;;
  esac
done
# (good still exits non-zero overall: the gpu row fails here, as it must.)
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  OUT=$tmp/out-nogpu GPU_CHECK_BUNDLE=$(plant good) tools/gpu-check.sh >"$tmp/nogpu.log" 2>&1
  rc=$?
  [ $rc -eq 3 ] || { echo "NOT OK: no GPU exits $rc, not 3"; fails=$((fails + 1)); }
  expect "no GPU: non-zero, says so" 1 $rc "$tmp/nogpu.log" 'no GPU on this machine'
fi
[ $fails -eq 0 ] && echo "gpu_check_test: PASSED" || { echo "gpu_check_test: $fails FAILED"; exit 1; }
