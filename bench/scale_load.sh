#!/usr/bin/env bash
# Loading at scale (issue 27), on the GPU machine: the toolkit's biggest libraries imported with
# `sdm import --arch sm_90 --ptx compute_90` (compressed, level 3, and --store-cubins), then, one
# process each and interleaved, RUNS times:
#   the driver's module path and library path on exactly the bytes sdm serves (decoded before the
#   clock), CUDA_MODULE_LOADING=EAGER and LAZY, every kernel resolved;
#   sdm, compressed and stored archives, EAGER and LAZY, every kernel through sdm_kernel_get, and the
#   compressed one again without decoding ahead (SDM_READAHEAD=0) and decoding 8 ahead;
#   sdm_preload of everything (EAGER);
#   50 kernels spread over the library (LAZY): sdm (compressed and stored), the driver loading just
#   their modules;
# and sdm's first run of a cubin-only import (--ptx none) on an empty cache, with the bytes it wrote,
# against its warm run.
# The compressed peer (issue 41): exactly the images sdm serves (scale_load_bench write-images),
# each made a fatbin by `fatbinary --compress-all --compress-mode=balance` (nvcc's default in CUDA 13)
# and `size`, and the raw images as files: the driver reads each file inside the clock and loads it,
# EAGER every kernel and LAZY 50 kernels; sdm's archive at the default level (19, dictionaries and
# prefixes where they pay) beside the level-3 one. Device memory (cuMemGetInfo) after the 50-kernel
# fetch: sdm against the driver loading every module LAZY and resolving the same 50. A level-3
# archive with its large images in 1 MiB frames (--frame-size 1048576) is measured beside the
# default one frame per image. With OLD_BUILD (a build of the tree before the change, its
# capi/libsdm.so.1), the compressed and stored rows are measured again with that libsdm.
# Medians, as ratios, in one Markdown table per library.
# Usage: bench/scale_load.sh BUILD_DIR [RUNS [LIBRARY...]]   (BUILD_DIR: tools/sdm, bench/scale_load_bench;
#        LIBRARY: the libraries to take, by default the four above)
set -uo pipefail
build=$1 runs=${2:-3}
shift $(( $# < 2 ? $# : 2 ))
out=${OUT:-scale-load-out}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LD_LIBRARY_PATH="$PWD/$build/gpu-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
sdm=$build/tools/sdm
bench=$build/bench/scale_load_bench
lib64=${CUDA_HOME:-/usr/local/cuda}/lib64
# The largest cuDNN engine library: the toolkit's, else a pip-installed cuDNN's (PyTorch brings one).
cudnn=$(ls "$lib64"/libcudnn_engines_precompiled.so.* 2>/dev/null | head -1)
[ -n "$cudnn" ] || cudnn=$(python3 -c 'import glob,site; print(next(iter(sorted(f for p in site.getsitepackages() for f in glob.glob(p + "/nvidia/cudnn/lib/libcudnn_engines_precompiled.so*"))), ""))' 2>/dev/null)
libs=("$lib64"/libcublasLt.so.13 "$lib64"/libcufft.so.12 "$lib64"/libcusparse.so.12 ${cudnn:+"$cudnn"})
[ $# -gt 0 ] && libs=("$@")
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR ? a[int((NR+1)/2)] : "nan")}'; }
us_of() { sed -n 's/.*us=\([0-9]*\).*/\1/p' <<<"$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || b == 0) print "n/a"; else printf "%.2fx", a / b }'; }
ms() { awk -v a="$1" 'BEGIN { if (a == "") print "n/a"; else printf "%.1f", a / 1000 }'; }
for lib in "${libs[@]}"; do
  [ -f "$lib" ] || { echo "(no $lib here)"; continue; }
  name=$(basename "$lib"); name=${name%%.so*}
  t0=$(date +%s.%N)
  "$sdm" import -q --arch sm_90 --ptx compute_90 --level 3 -o "$work/$name.sdma" "$lib" >"$out/$name.import.log" 2>&1 || { cat "$out/$name.import.log"; continue; }
  t1=$(date +%s.%N)
  "$sdm" import -q --arch sm_90 --ptx compute_90 --level 3 --store-cubins -o "$work/$name.stored.sdma" "$lib" >>"$out/$name.import.log" 2>&1 || continue
  # A first run is judged on a cubin-only archive (--ptx none): PTX-only modules would be linked and
  # cached, which is the cache's job, not a copy of what the archive holds.
  "$sdm" import -q --arch sm_90 --ptx none --level 3 -o "$work/$name.cubins.sdma" "$lib" >>"$out/$name.import.log" 2>&1 || continue
  # The same with its large images in frames (an sdm before frames reads only the others).
  "$sdm" import -q --arch sm_90 --ptx compute_90 --level 3 --frame-size 1048576 -o "$work/$name.framed.sdma" "$lib" >>"$out/$name.import.log" 2>&1 || continue
  t2=$(date +%s.%N)
  "$sdm" import -q --arch sm_90 --ptx compute_90 -o "$work/$name.default.sdma" "$lib" >>"$out/$name.import.log" 2>&1 || continue
  t3=$(date +%s.%N)
  # The driver's peers as files: the images sdm serves, raw and as fatbins (balance, size).
  mkdir -p "$work/$name.raw" "$work/$name.balance" "$work/$name.size"
  "$bench" write-images "$work/$name.stored.sdma" "$work/$name.raw" || continue
  for cmode in balance size; do
    FATBINARY=${CUDA_HOME:-/usr/local/cuda}/bin/fatbinary CMODE=$cmode DIR=$work/$name xargs -P "$(nproc)" -n 2 sh -c 'kind=elf; [ "$1" = ptx ] && kind=ptx
      "$FATBINARY" -64 --create="$DIR.$CMODE/$0" --compress-all --compress-mode="$CMODE" --image3=kind=$kind,sm=90,file="$DIR.raw/$0"' \
      <"$work/$name.raw/index" >>"$out/$name.import.log" 2>&1
  done
  bytes_of() { find "$1" -type f ! -name index -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
  b_raw=$(bytes_of "$work/$name.raw") b_bal=$(bytes_of "$work/$name.balance") b_size=$(bytes_of "$work/$name.size")
  b_c3=$(stat -c %s "$work/$name.sdma") b_def=$(stat -c %s "$work/$name.default.sdma") b_st=$(stat -c %s "$work/$name.stored.sdma")
  # 50 kernels spread over the manifest (every n-th by name: modules in no order).
  "$sdm" ls --json "$work/$name.sdma" | python3 -c '
import json, sys
k = [x["name"] for x in json.load(sys.stdin)["kernels"]]
step = max(1, len(k) // 50)
print("\n".join(k[::step][:50]))' >"$work/$name.50"
  declare -A v=()
  export SDM_CACHE_DIR=$work/cache-$name
  # One untimed run of each: the driver's ComputeCache and sdm's cache warm for PTX-only modules.
  CUDA_MODULE_LOADING=EAGER "$bench" driver-module "$work/$name.sdma" >/dev/null 2>&1
  CUDA_MODULE_LOADING=EAGER "$bench" sdm "$work/$name.sdma" >/dev/null 2>&1
  CUDA_MODULE_LOADING=EAGER "$bench" driver-files "$work/$name.sdma" "$work/$name.balance" >/dev/null 2>&1
  CUDA_MODULE_LOADING=EAGER "$bench" sdm "$work/$name.default.sdma" >/dev/null 2>&1
  [ -n "${OLD_BUILD:-}" ] && LD_LIBRARY_PATH="$OLD_BUILD/capi:$LD_LIBRARY_PATH" CUDA_MODULE_LOADING=EAGER "$bench" sdm "$work/$name.sdma" >/dev/null 2>&1
  for ((i = 0; i < runs; ++i)); do
    for mode in EAGER LAZY; do
      v[dm_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" driver-module "$work/$name.sdma")")"
      v[dl_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" driver-library "$work/$name.sdma")")"
      v[sc_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.sdma")")"
      v[ss_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.stored.sdma")")"
      v[sr_$mode]+=" $(us_of "$(SDM_READAHEAD=0 CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.sdma")")"
      v[s8_$mode]+=" $(us_of "$(SDM_READAHEAD=8 CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.sdma")")"
      v[s1_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.framed.sdma")")"
      v[sd_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.default.sdma")")"
      v[fr_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" driver-files "$work/$name.sdma" "$work/$name.raw")")"
      v[fb_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" driver-files "$work/$name.sdma" "$work/$name.balance")")"
      v[fs_$mode]+=" $(us_of "$(CUDA_MODULE_LOADING=$mode "$bench" driver-files "$work/$name.sdma" "$work/$name.size")")"
      if [ -n "${OLD_BUILD:-}" ]; then
        v[oc_$mode]+=" $(us_of "$(LD_LIBRARY_PATH="$OLD_BUILD/capi:$LD_LIBRARY_PATH" CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.sdma")")"
        v[os_$mode]+=" $(us_of "$(LD_LIBRARY_PATH="$OLD_BUILD/capi:$LD_LIBRARY_PATH" CUDA_MODULE_LOADING=$mode "$bench" sdm "$work/$name.stored.sdma")")"
      fi
    done
    v[pre]+=" $(us_of "$(CUDA_MODULE_LOADING=EAGER "$bench" sdm-preload "$work/$name.sdma")")"
    v[d50]+=" $(us_of "$(CUDA_MODULE_LOADING=LAZY "$bench" driver-module "$work/$name.sdma" "$work/$name.50")")"
    v[s50]+=" $(us_of "$(CUDA_MODULE_LOADING=LAZY "$bench" sdm "$work/$name.sdma" "$work/$name.50")")"
    v[s50s]+=" $(us_of "$(CUDA_MODULE_LOADING=LAZY "$bench" sdm "$work/$name.stored.sdma" "$work/$name.50")")"
    v[s150]+=" $(us_of "$(CUDA_MODULE_LOADING=LAZY "$bench" sdm "$work/$name.framed.sdma" "$work/$name.50")")"
    [ -n "${OLD_BUILD:-}" ] && v[o50]+=" $(us_of "$(LD_LIBRARY_PATH="$OLD_BUILD/capi:$LD_LIBRARY_PATH" CUDA_MODULE_LOADING=LAZY "$bench" sdm "$work/$name.sdma" "$work/$name.50")")"
    v[b50]+=" $(us_of "$(CUDA_MODULE_LOADING=LAZY "$bench" driver-files "$work/$name.sdma" "$work/$name.balance" "$work/$name.50")")"
    v[r50]+=" $(us_of "$(CUDA_MODULE_LOADING=LAZY "$bench" driver-files "$work/$name.sdma" "$work/$name.raw" "$work/$name.50")")"
    line=$(CUDA_MODULE_LOADING=LAZY "$bench" sdm "$work/$name.default.sdma" "$work/$name.50")
    v[sd50]+=" $(us_of "$line")"
    mem_sdm=$(sed -n 's/.*dev_bytes=\(-*[0-9]*\).*/\1/p' <<<"$line")
    mem_drv=$(CUDA_MODULE_LOADING=LAZY "$bench" driver-files --all-modules "$work/$name.sdma" "$work/$name.balance" "$work/$name.50" | sed -n 's/.*dev_bytes=\(-*[0-9]*\).*/\1/p')
    # A first run of the compressed archive: an empty cache, and what it wrote there.
    rm -rf "$work/first"
    v[first]+=" $(us_of "$(SDM_CACHE_DIR=$work/first CUDA_MODULE_LOADING=EAGER "$bench" sdm "$work/$name.cubins.sdma")")"
    written=$(find "$work/first" -type f -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')
    v[cubins]+=" $(us_of "$(CUDA_MODULE_LOADING=EAGER "$bench" sdm "$work/$name.cubins.sdma")")"
  done
  for key in "${!v[@]}"; do eval "m_$key=\$(median ${v[$key]})"; done
  line=$("$bench" sdm "$work/$name.sdma")
  {
  echo "#### $name: $(sed 's/ us=.*//' <<<"$line" | sed 's/^sdm //'), archive $b_c3 B (stored cubins: $b_st B), import $(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.1f", b - a}') s at level 3, $(awk -v a="$t2" -v b="$t3" 'BEGIN {printf "%.1f", b - a}') s at the default level"
  echo
  echo "| bytes: the images sdm serves on sm_90 | B | / balance fatbins | target |"
  echo "|---|--:|--:|---|"
  echo "| raw images (cubins, PTX) | $b_raw | $(ratio "$b_raw" "$b_bal") | |"
  echo "| fatbins, --compress-mode=balance | $b_bal | 1.00x | |"
  echo "| fatbins, --compress-mode=size | $b_size | $(ratio "$b_size" "$b_bal") | |"
  echo "| sdm archive, level 3, 1 MiB frames | $(stat -c %s "$work/$name.framed.sdma") | $(ratio "$(stat -c %s "$work/$name.framed.sdma")" "$b_bal") | |"
  echo "| sdm archive, level 3 | $b_c3 | $(ratio "$b_c3" "$b_bal") | |"
  echo "| sdm archive, default level | $b_def | $(ratio "$b_def" "$b_bal") | <= 0.7x |"
  echo "| sdm archive, stored cubins | $b_st | $(ratio "$b_st" "$b_bal") | |"
  echo
  echo "| against the files (ms, median of $runs) | EAGER | LAZY, 50 kernels | / balance EAGER | / balance LAZY 50 | target |"
  echo "|---|--:|--:|--:|--:|---|"
  echo "| driver: balance fatbins read from files | $(ms "$m_fb_EAGER") | $(ms "$m_b50") | 1.00x | 1.00x | |"
  echo "| driver: size fatbins read from files (LAZY: every kernel) | $(ms "$m_fs_EAGER") | $(ms "$m_fs_LAZY") | $(ratio "$m_fs_EAGER" "$m_fb_EAGER") | | |"
  echo "| driver: raw images read from files | $(ms "$m_fr_EAGER") | $(ms "$m_r50") | $(ratio "$m_fr_EAGER" "$m_fb_EAGER") | $(ratio "$m_r50" "$m_b50") | |"
  echo "| sdm, default level | $(ms "$m_sd_EAGER") | $(ms "$m_sd50") | $(ratio "$m_sd_EAGER" "$m_fb_EAGER") | $(ratio "$m_sd50" "$m_b50") | <= 0.8x, <= 0.8x |"
  echo "| sdm, level 3 | $(ms "$m_sc_EAGER") | $(ms "$m_s50") | $(ratio "$m_sc_EAGER" "$m_fb_EAGER") | $(ratio "$m_s50" "$m_b50") | <= 0.8x, <= 0.8x |"
  echo "| sdm, level 3, 1 MiB frames (--frame-size 1048576) | $(ms "$m_s1_EAGER") | $(ms "$m_s150") | $(ratio "$m_s1_EAGER" "$m_fb_EAGER") | $(ratio "$m_s150" "$m_b50") | |"
  [ -n "${OLD_BUILD:-}" ] && echo "| sdm before the change (the old libsdm), level 3 | $(ms "$m_oc_EAGER") | $(ms "$m_o50") | $(ratio "$m_oc_EAGER" "$m_fb_EAGER") | $(ratio "$m_o50" "$m_b50") | |"
  echo "| sdm, stored cubins, / raw images from files | $(ms "$m_ss_EAGER") | $(ms "$m_s50s") | $(ratio "$m_ss_EAGER" "$m_fr_EAGER") | $(ratio "$m_s50s" "$m_r50") | <= 1.05x |"
  echo
  echo "Device memory after the 50-kernel fetch (cuMemGetInfo, last run): sdm (default level) $mem_sdm B; the driver, every module LAZY (balance fatbins) and the same 50 resolved, $mem_drv B ($(ratio "$mem_sdm" "$mem_drv"), target <= 1.00x)."
  echo
  echo "| measure (ms, median of $runs) | EAGER | LAZY | / driver module path EAGER | / driver module path LAZY | target |"
  echo "|---|--:|--:|--:|--:|---|"
  echo "| driver: cuModuleLoadData + cuModuleGetFunction | $(ms "$m_dm_EAGER") | $(ms "$m_dm_LAZY") | 1.00x | 1.00x | |"
  echo "| driver: cuLibraryLoadData + cuLibraryGetKernel + cuKernelGetFunction | $(ms "$m_dl_EAGER") | $(ms "$m_dl_LAZY") | $(ratio "$m_dl_EAGER" "$m_dm_EAGER") | $(ratio "$m_dl_LAZY" "$m_dm_LAZY") | |"
  echo "| sdm, compressed archive | $(ms "$m_sc_EAGER") | $(ms "$m_sc_LAZY") | $(ratio "$m_sc_EAGER" "$m_dm_EAGER") | $(ratio "$m_sc_LAZY" "$m_dm_LAZY") | <= 1.05x |"
  echo "| sdm, compressed archive, no decoding ahead (SDM_READAHEAD=0) | $(ms "$m_sr_EAGER") | $(ms "$m_sr_LAZY") | $(ratio "$m_sr_EAGER" "$m_dm_EAGER") | $(ratio "$m_sr_LAZY" "$m_dm_LAZY") | |"
  echo "| sdm, compressed archive, decoding 8 ahead (SDM_READAHEAD=8) | $(ms "$m_s8_EAGER") | $(ms "$m_s8_LAZY") | $(ratio "$m_s8_EAGER" "$m_dm_EAGER") | $(ratio "$m_s8_LAZY" "$m_dm_LAZY") | |"
  echo "| sdm, stored cubins | $(ms "$m_ss_EAGER") | $(ms "$m_ss_LAZY") | $(ratio "$m_ss_EAGER" "$m_dm_EAGER") | $(ratio "$m_ss_LAZY" "$m_dm_LAZY") | <= 1.05x |"
  [ -n "${OLD_BUILD:-}" ] && echo "| sdm before the change (same bench, the old libsdm), compressed | $(ms "$m_oc_EAGER") | $(ms "$m_oc_LAZY") | $(ratio "$m_oc_EAGER" "$m_dm_EAGER") | $(ratio "$m_oc_LAZY" "$m_dm_LAZY") | |"
  [ -n "${OLD_BUILD:-}" ] && echo "| sdm before the change, stored cubins | $(ms "$m_os_EAGER") | $(ms "$m_os_LAZY") | $(ratio "$m_os_EAGER" "$m_dm_EAGER") | $(ratio "$m_os_LAZY" "$m_dm_LAZY") | |"
  echo "| sdm, cubin-only archive (--ptx none), warm | $(ms "$m_cubins") | | | | |"
  echo "| sdm first run of the cubin-only archive, empty cache (wrote ${written:-0} B) | $(ms "$m_first") | | $(ratio "$m_first" "$m_cubins") of its warm run | | <= 1.1x warm, 0 B |"
  echo "| sdm_preload of everything | $(ms "$m_pre") | | $(ratio "$m_pre" "$m_dm_EAGER") | | <= 0.8x |"
  echo "| 50 kernels: the driver loading just their modules | | $(ms "$m_d50") | | $(ratio "$m_d50" "$m_dm_LAZY") of every module | |"
  echo "| 50 kernels: sdm | | $(ms "$m_s50") | | $(ratio "$m_s50" "$m_d50") of the driver's 50, $(ratio "$m_s50" "$m_dm_LAZY") of every module | <= 1.2x, <= 0.1x |"
  echo "| 50 kernels: sdm, stored cubins | | $(ms "$m_s50s") | | $(ratio "$m_s50s" "$m_d50") of the driver's 50, $(ratio "$m_s50s" "$m_dm_LAZY") of every module | <= 1.2x, <= 0.1x |"
  echo
  } | tee -a "$out/scale_load.md"
  unset v
done
