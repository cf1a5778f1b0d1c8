#!/usr/bin/env bash
# sdm import over the CUDA toolkit's libraries: for each library present, the fatbin containers and
# images it holds, the images kept, the kernels the manifest ends with, wall seconds, peak RSS
# (/usr/bin/time -v), and the archive's bytes against the bytes the library's containers store for
# the same images. Prints a Markdown table (bench/RESULTS.md, "sdm import over the CUDA libraries").
# Exits 1 when an import fails (meson test --suite corpora runs it as import_corpora).
# Usage: bench/import_corpora.sh SDM [IMPORT-OPTION...]   e.g.  build/tools/sdm --arch sm_90 --ptx compute_90
# Libraries: $SDM_CORPORA (space-separated paths), else cuFFT, cuBLASLt, cuSPARSE, cuRAND under
# $CUDA_HOME/lib64 (default /usr/local/cuda).
set -uo pipefail
sdm=$1; shift
lib64=${CUDA_HOME:-/usr/local/cuda}/lib64
libs=${SDM_CORPORA:-"$lib64/libcufft.so.12 $lib64/libcublasLt.so.13 $lib64/libcusparse.so.12 $lib64/libcurand.so.10"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "| library | file bytes | containers | container bytes | images | kept | kept bytes (stored in the library) | kernels | seconds | peak MiB | archive bytes | of which manifest | archive / kept bytes |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
failed=0
for lib in $libs; do
  [ -e "$lib" ] || { echo "| $(basename "$lib") | absent | | | | | | | | | | | |"; continue; }
  name=$(basename "$lib")
  if ! /usr/bin/time -v -o "$work/time" "$sdm" import -o "$work/$name.sdma" "$@" "$lib" >"$work/out" 2>"$work/err"; then
    echo "| $name | failed: $(tail -1 "$work/err") | | | | | | | | | | | |"
    failed=1
    continue
  fi
  # "OUT: 12 fatbin containers (B bytes), 40 images: 20 imported (K bytes as ...), 20 left out ...; 0 skipped"
  summary=$(grep "fatbin containers" "$work/out")
  containers=$(sed -E 's/.*: ([0-9]+) fatbin containers.*/\1/' <<<"$summary")
  container_bytes=$(sed -E 's/.*containers \(([0-9]+) bytes\).*/\1/' <<<"$summary")
  images=$(sed -E 's/.*, ([0-9]+) images:.*/\1/' <<<"$summary")
  kept=$(sed -E 's/.*images: ([0-9]+) imported.*/\1/' <<<"$summary")
  kept_bytes=$(sed -E 's/.*imported \(([0-9]+) bytes.*/\1/' <<<"$summary")
  kernels=$(grep -E "entries, [0-9]+ kernels" "$work/out" | sed -E 's/.* entries, ([0-9]+) kernels.*/\1/')
  seconds=$(grep "Elapsed (wall clock)" "$work/time" | sed -E 's/.*: //' | awk -F: '{ s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; printf "%.1f", s }')
  peak=$(grep "Maximum resident set size" "$work/time" | awk '{ printf "%.0f", $NF / 1024 }')
  archive=$(stat -c %s "$work/$name.sdma")
  manifest=$("$sdm" ls --json "$work/$name.sdma" | python3 -c "import json,sys; print(sum(e['stored_size'] for e in json.load(sys.stdin)['entries'] if e['kind'] == 'manifest'))")
  ratio=$(awk -v a="$archive" -v k="$kept_bytes" 'BEGIN { printf "%.3f", k ? a / k : 0 }')
  echo "| $name | $(stat -L -c %s "$lib") | $containers | $container_bytes | $images | $kept | $kept_bytes | $kernels | $seconds | $peak | $archive | $manifest | $ratio |"
  # The warnings (sdm prints at most three of each kind, then how many more), as comments under the row.
  grep -h "warning" "$work/err" | sed "s/^/<!-- $name: /; s/$/ -->/"
  rm -f "$work/$name.sdma"
done
exit $failed
