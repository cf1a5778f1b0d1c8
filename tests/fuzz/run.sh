#!/usr/bin/env bash
# Fuzzes sdm's parsers with libFuzzer under ASan + UBSan (docs/RELIABILITY.md): configures build-fuzz with
# clang (every library instrumented for coverage, archive checksums skipped so the fuzzer reaches
# the structure behind them), builds the targets, and runs each for SECONDS (default 600) on its
# corpus, two at a time. New inputs that add coverage are merged into tests/fuzz/corpus/TARGET
# (commit them: CI replays the corpus); a crash is written to tests/fuzz/crashes/TARGET/ and fails
# the run. Prints one line of figures per target and writes them to build-fuzz/fuzz-figures.md.
# Usage: tests/fuzz/run.sh [SECONDS [TARGET...]]
#   targets: archive manifest manifest_toml image fatbin kernel_params cache_entry plugin_table isolated_jit cxx_names
#   (isolated_jit starts the JIT helper of build-fuzz and the real nvJitLink for what passes the checks)
set -euo pipefail
cd "$(dirname "$0")/../.."
seconds=${1:-600}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(archive manifest manifest_toml image fatbin kernel_params cache_entry plugin_table isolated_jit cxx_names)
command -v clang++-14 >/dev/null || { echo "fuzz: needs clang-14 and libFuzzer (apt-get install clang-14)" >&2; exit 1; }
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang-14 CXX=clang++-14 meson setup build-fuzz -Dfuzz=enabled -Dtests=enabled -Dkernels=disabled -Dwerror=false \
    -Db_sanitize=address,undefined -Db_lundef=false \
    -Dcpp_args="-fsanitize=fuzzer-no-link -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION" >/dev/null
fi
ninja -C build-fuzz "${targets[@]/#/tests/fuzz_}" capi/sdm-jit-helper
# The JIT helper of a plain build when there is one: it runs in its own process, so it needs no
# instrumentation, and a sanitized helper has no address-space limit (its shadow memory needs
# terabytes), which lets an input that drives nvJitLink out of memory take the machine's.
if [ -x build/capi/sdm-jit-helper ]; then export SDM_JIT_HELPER=$PWD/build/capi/sdm-jit-helper
else export SDM_JIT_HELPER=$PWD/build-fuzz/capi/sdm-jit-helper; fi
figures=build-fuzz/fuzz-figures.md
echo "| target | seconds | executions | exec/s | corpus before | corpus after | crashes |" >"$figures"
echo "|---|--:|--:|--:|--:|--:|--:|" >>"$figures"
run_one() {
  local t=$1 work=build-fuzz/fuzz-work/$1
  rm -rf "$work" && mkdir -p "$work/new" "tests/fuzz/corpus/$t" "tests/fuzz/crashes/$t"
  local before
  before=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
  local extra=()
  [ "$t" = archive ] && extra=(tests/golden)
  # -fork: a crash is recorded and the fuzzing goes on; the crash files name the inputs.
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    "build-fuzz/tests/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="tests/fuzz/crashes/$t/" "$work/new" "tests/fuzz/corpus/$t" "${extra[@]}" >"$work/log" 2>&1 || true
  # Keep only inputs that add coverage over the committed corpus.
  "build-fuzz/tests/fuzz_$t" -merge=1 "tests/fuzz/corpus/$t" "$work/new" >"$work/merge.log" 2>&1 || true
  local execs rate after crashes
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$' | tail -1)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$work/log" | grep -o '[0-9]*$' | tail -1)
  after=$(find "tests/fuzz/corpus/$t" -type f | wc -l)
  crashes=$(find "tests/fuzz/crashes/$t" -type f | wc -l)
  echo "| $t | $seconds | ${execs:-?} | ${rate:-?} | $before | $after | $crashes |" | tee -a "$figures"
}
pids=()
for t in "${targets[@]}"; do
  run_one "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait
cat "$figures"
! find tests/fuzz/crashes -type f | grep . >/dev/null
