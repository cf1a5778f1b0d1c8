#!/usr/bin/env bash
# sdm info over the fake driver: a device of the SDM hardware matrix with its class, and T4, V100
# and Orin as unclassified (outside the matrix, which only archives declaring it follow), each with
# what serves the golden archive's kernels there; the same in --json. What a host's libsdm mounts
# (its embedded archive, read out of the libsdm given, and a damaged or foreign file refused
# with the reason); which JIT backend would build a PTX module, and why the ones before it may
# not (every nvJitLink file tried).
# Usage: info.sh SDM FAKE_LIBCUDA GOLDEN_DIR LIBSDM DATA_DIR
set -euo pipefail
sdm=$1 fake=$2 golden=$3 libsdm=$4 data=$5
source "$(dirname "$0")/lib.sh"
export SDM_CUDA_DRIVER=$fake
export SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560;Tesla T4,7.5,65536,40,4194304;Tesla V100-SXM2-16GB,7.0,98304,80,6291456;NVIDIA Jetson AGX Orin,8.7,166912,16,4194304"
unset SDM_FAKE_CUDA_FAIL SDM_FAKE_CUDA_MISSING SDM_FAKE_CUDA_VERSION
"$sdm" info -a "$golden/kernels.sdma" >"$work/info" 2>&1 || { cat "$work/info"; fail "sdm info"; }
expect() { grep -F -- "$1" "$work/info" >/dev/null || { cat "$work/info" >&2; fail "sdm info lacks '$1'"; }; }
expect "device 0: NVIDIA H200, compute capability 9.0, class modern"
expect "device 1: Tesla T4, compute capability 7.5, class unclassified"
expect "device 2: Tesla V100-SXM2-16GB, compute capability 7.0, class unclassified"
expect "device 3: NVIDIA Jetson AGX Orin, compute capability 8.7, class unclassified"
expect "unclassified: outside the SDM kernels' hardware matrix, which archives declaring it follow (sparse_delta_memory supports"
expect "any other archive is served here by compute capability"
expect "kernel scale: archive $golden/kernels.sdma, module kernels, sm_90a"
expect "load path: module (one context per device"  # the driver's path a host's runtime takes (issue 27)
# The summary comes first: each archive's kernels, each device's class and what it is served.
head -1 "$work/info" | grep -q "^summary: [0-9]* archives\? mounted, 4 devices, [0-9]* kernels$" || { cat "$work/info"; fail "sdm info's summary line"; }
expect "  archive $golden/kernels.sdma: 2 kernels"
expect "  device 0: NVIDIA H200 (9.0, class modern): "
expect "  device 1: Tesla T4 (7.5, class unclassified): "
expect "archive: $golden/kernels.sdma, 11 entries, 2 kernels, kernel ABI 1.2, content tests.1, unsigned"
# --summary: the summary alone; --kernel: only the kernels matching, in the summary and per device.
"$sdm" info --summary -a "$golden/kernels.sdma" >"$work/info" 2>&1
expect "  device 0: NVIDIA H200 (9.0, class modern): "
! grep -q "kernel scale:" "$work/info" || { cat "$work/info"; fail "sdm info --summary printed the details"; }
"$sdm" info --kernel 'sc*' -a "$golden/kernels.sdma" >"$work/info" 2>&1
expect " mounted, 4 devices, 1 kernel matching 'sc*'"
expect "  device 0: NVIDIA H200 (9.0, class modern): 1 kernel served, 0 not served"
expect "kernel scale: archive $golden/kernels.sdma"
! grep -q "kernel axpy:" "$work/info" || { cat "$work/info"; fail "sdm info --kernel kept axpy"; }
"$sdm" info --json --kernel 'sc*' -a "$golden/kernels.sdma" | python3 -c "
import json, sys
d = json.load(sys.stdin)
assert [k['name'] for k in d['devices'][0]['kernels']] == ['scale'], d['devices'][0]['kernels']
s = d['summary']
assert s['kernels'] == 1 and s['kernel_filter'] == 'sc*' and s['archives'][-1]['kernels'] == 2, s
assert s['devices'][0] == {'ordinal': 0, 'name': 'NVIDIA H200', 'capability': '9.0', 'class': 'modern', 'served': 1, 'not_served': 0}, s['devices'][0]
" || fail "sdm info --json's summary"
# --kernel matches C++ names as sdm ls --kernel does (tools/kernel_filter.hpp): the demangled
# declaration or the mangled symbol.
"$sdm" import -q -o "$work/templates.sdma" "$data/templates.sm_90.cubin"
"$sdm" info --kernel '*fill<double*' -a "$work/templates.sdma" >"$work/info" 2>&1 || { cat "$work/info"; fail "sdm info --kernel over a C++ name"; }
expect " mounted, 4 devices, 1 kernel matching '*fill<double*'"
expect "kernel _ZN8sdm_test4fillIdLi1024EEEvPT_S1_: archive $work/templates.sdma"
! grep -q "_ZN8sdm_test4fillIf" "$work/info" || { cat "$work/info"; fail "sdm info --kernel '*fill<double*' kept fill<float>"; }
"$sdm" info --kernel '_ZN8sdm_test4fillIf*' -a "$work/templates.sdma" >"$work/info" 2>&1
expect "1 kernel matching '_ZN8sdm_test4fillIf*'"
SDM_LOAD_PATH=library "$sdm" info -a "$golden/kernels.sdma" 2>&1 | grep -F "load path: library (SDM_LOAD_PATH=library" >/dev/null ||
  fail "sdm info does not follow SDM_LOAD_PATH"
"$sdm" info --json -a "$golden/kernels.sdma" | python3 -c "
import json, sys
d = json.load(sys.stdin)
classes = [x['class'] for x in d['devices']]
assert classes == ['modern', 'unclassified', 'unclassified', 'unclassified'], classes
assert 'sparse_delta_memory supports' in d['devices'][1]['matrix']
assert d['load_path']['path'] == 'module', d['load_path']
" || fail "sdm info --json"

# The libsdm a host loads: its embedded archive mounts first, as libsdm mounts it.
if readelf -S "$libsdm" 2>/dev/null | grep -q '\.sdm_archive'; then
  "$sdm" info --libsdm "$libsdm" >"$work/info" 2>&1 || { cat "$work/info"; fail "sdm info --libsdm"; }
  expect "libsdm: $libsdm embeds"
  expect "archive: embedded kernels.sdma (embedded)"
  expect "kernel sdm_scatter_delta_atomic_bf16_i64: archive embedded kernels.sdma"
  # From a build tree, with no libsdm on the loader's path: the one beside the tool.
  env -u LD_LIBRARY_PATH "$sdm" info --json >"$work/info" 2>"$work/info.err" || { cat "$work/info" "$work/info.err"; fail "sdm info from the build tree"; }
  python3 -c "import json,sys,os; d=json.load(open('$work/info'))['libsdm']; assert os.path.samefile(d['path'], '$libsdm'), d" ||
    fail "sdm info does not read the libsdm beside the tool"
else
  echo "note: $libsdm embeds no archive (built without nvcc): its mount is not checked"
fi
# Hostile libsdm files: not an ELF, a truncated one, a section table past the end. Each is named
# with why, and sdm info still reports the rest.
printf 'not an elf at all' >"$work/junk.so"
head -c 40 "$libsdm" >"$work/short.so"
python3 - "$libsdm" "$work/far.so" <<'PY'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read(4096))
b[40:48] = struct.pack('<Q', 1 << 40)  # e_shoff far past the end
open(sys.argv[2], 'wb').write(b)
PY
for bad in junk short far; do
  "$sdm" info --libsdm "$work/$bad.so" >"$work/info" 2>&1 || { cat "$work/info"; fail "sdm info --libsdm $bad.so failed"; }
  expect "device 0: NVIDIA H200"
done
"$sdm" info --libsdm "$work/junk.so" >"$work/info" 2>&1; expect "$work/junk.so: not an ELF file"
"$sdm" info --libsdm "$work/short.so" >"$work/info" 2>&1; expect "shorter than an ELF64 header"
"$sdm" info --libsdm "$work/far.so" >"$work/info" 2>&1; expect "the section header table at 1099511627776 lies outside the file"
"$sdm" info --libsdm "$work/missing.so" >"$work/info" 2>&1; expect "$work/missing.so"

# A PTX module: which backend would build it, and why not the ones before.
printf '[archive]\nkernel_abi = "1.0"\n[[kernel]]\nname = "scale"\nmodule = "k"\nsignature = "ptr,f32,i32"\n' >"$work/m.toml"
"$sdm" pack -q -m "$work/m.toml" -o "$work/ptx.sdma" "k:compute_90=$data/kernels.compute_90.ptx"
# An archive that declares no kernel ABI and no content version says so, with no empty value.
"$sdm" import -q -o "$work/plain.sdma" "$data/templates.sm_90.cubin"
"$sdm" info -a "$work/plain.sdma" >"$work/info" 2>&1
expect "archive: $work/plain.sdma, 2 entries, 2 kernels, no kernel ABI, unsigned"
if "$sdm" info -a "$work/ptx.sdma" | grep -q '^nvJitLink: /'; then
  "$sdm" info -a "$work/ptx.sdma" >"$work/info" 2>&1
  expect "JIT: nvJitLink would build it"
fi
# Without nvJitLink: the driver's JIT compiles inside the host, which the default isolation keeps
# unsigned PTX out of; with SDM_JIT_ISOLATION=never it would build it.
SDM_NVJITLINK=$work/no-nvjitlink.so "$sdm" info -a "$work/ptx.sdma" >"$work/info" 2>&1
expect "JIT: no backend may build it now"
expect "passed over: the driver's JIT compiles inside this process, and the JIT isolation policy (auto) keeps PTX from an archive no trusted key signed out of it"
SDM_JIT_ISOLATION=never SDM_NVJITLINK=$work/no-nvjitlink.so "$sdm" info -a "$work/ptx.sdma" >"$work/info" 2>&1
expect "JIT: the driver's JIT would build it"
expect "passed over: nvJitLink was not found"
expect "$work/no-nvjitlink.so: cannot open"
SDM_JIT_ISOLATION=never SDM_NVJITLINK=$work/no-nvjitlink.so "$sdm" info --json -a "$work/ptx.sdma" | python3 -c "
import json, sys
d = json.load(sys.stdin)
k = [k for k in d['devices'][0]['kernels'] if k['name'] == 'scale'][0]
assert k['jit']['backend'] == \"the driver's JIT\", k
assert any('nvJitLink was not found' in p for p in k['jit']['passed_over']), k
" || fail "sdm info --json: the JIT backend"
echo "ok"
