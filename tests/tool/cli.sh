#!/usr/bin/env bash
# The sdm command line end to end: pack the test kernels, list, verify, extract, repack, diff,
# and refuse bad input with a message naming it. Usage: cli.sh SDM DATA_DIR FAKE_LIBCUDA
set -euo pipefail
sdm=$1 data=$2 fake=$3
source "$(dirname "$0")/lib.sh"
images=(kernels:sm_80="$data/kernels.sm_80.cubin" kernels:sm_86="$data/kernels.sm_86.cubin"
        kernels:sm_90a="$data/kernels.sm_90a.cubin" kernels:sm_100f="$data/kernels.sm_100f.cubin"
        kernels:compute_80="$data/kernels.compute_80.ptx" kernels:lto_90="$data/kernels.lto_90.ltoir"
        kernels:fatbin="$data/kernels.fatbin")

"$sdm" pack -q -m "$data/manifest.toml" -o "$work/a.sdma" "${images[@]}"
"$sdm" verify "$work/a.sdma" | grep "ok, 8 entries" >/dev/null
"$sdm" ls "$work/a.sdma" | grep "kernel ABI 1.2" >/dev/null
"$sdm" ls --json "$work/a.sdma" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert len(j["entries"])==8 and j["kernel_abi"]=="1.2", j'

# Extract everything and repack from the extracted files: the same archive, byte for byte.
"$sdm" extract "$work/a.sdma" -C "$work/x" >/dev/null
cmp "$work/x/kernels.sm_90a.cubin" "$data/kernels.sm_90a.cubin"
cmp "$work/x/kernels.compute_80.ptx" "$data/kernels.compute_80.ptx"
"$sdm" pack -q -m "$work/x/manifest.toml" -o "$work/b.sdma" kernels:sm_80="$work/x/kernels.sm_80.cubin" \
  kernels:sm_86="$work/x/kernels.sm_86.cubin" kernels:sm_90a="$work/x/kernels.sm_90a.cubin" \
  kernels:sm_100f="$work/x/kernels.sm_100f.cubin" kernels:compute_80="$work/x/kernels.compute_80.ptx" \
  kernels:lto_90="$work/x/kernels.lto_90.ltoir" kernels:fatbin="$work/x/kernels.fatbin"
cmp "$work/a.sdma" "$work/b.sdma"
"$sdm" diff "$work/a.sdma" "$work/b.sdma" | grep "same entries" >/dev/null
"$sdm" extract "$work/a.sdma" -C "$work/y" kernels:sm_90a manifest | grep manifest.toml >/dev/null
[ "$(ls "$work/y" | wc -l)" = 2 ] || fail "extract of a selection wrote $(ls "$work/y")"

# diff: an added arch, a changed image, a manifest change; exit 1 when they differ.
sed 's/content_version = "tests.1"/content_version = "tests.2"/' "$data/manifest.toml" >"$work/m2.toml"
"$sdm" pack -q -m "$work/m2.toml" -o "$work/c.sdma" "${images[@]}" kernels:sm_120="$data/kernels.sm_120.cubin"
set +e; "$sdm" diff "$work/a.sdma" "$work/c.sdma" >"$work/diff"; rc=$?; set -e
[ $rc = 1 ] || fail "diff exit $rc"
grep -q "^+ kernels:sm_120" "$work/diff" && grep -q "content version tests.1 -> tests.2" "$work/diff" || { cat "$work/diff"; fail "diff output"; }

# Refusals, each naming the input and the fix.
expect_fail "declared sm_90 but its bytes are for sm_80" "$sdm" pack -q -o "$work/bad.sdma" kernels:sm_90="$data/kernels.sm_80.cubin"
expect_fail "must be MODULE:TARGET=PATH" "$sdm" pack -q -o "$work/bad.sdma" "$data/kernels.sm_80.cubin"
expect_fail "target 'sm_9x'" "$sdm" pack -q -o "$work/bad.sdma" kernels:sm_9x="$data/kernels.sm_80.cubin"
expect_fail "no image of it was given" "$sdm" pack -q -m "$data/manifest.toml" -o "$work/bad.sdma" other:sm_80="$data/kernels.sm_80.cubin"
printf '[archive]\nkernel_abi = "1.0"\n[[kernel]]\nname = "nope"\nmodule = "kernels"\nsignature = "ptr"\n' >"$work/m3.toml"
expect_fail "does not define kernel nope" "$sdm" pack -q -m "$work/m3.toml" -o "$work/bad.sdma" kernels:sm_80="$data/kernels.sm_80.cubin"
expect_fail "cannot open" "$sdm" verify "$work/missing.sdma"
[ ! -e "$work/bad.sdma" ] || fail "a refused pack left an output file"
# sdm jit: PTX linked for several SMs into an overlay of cubins (and the manifest, its content
# version naming the nvJitLink) that verifies; --full keeps the original's entries too.
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/ptx.sdma" kernels:compute_80="$data/kernels.compute_80.ptx" kernels:compute_90="$data/kernels.compute_90.ptx"
"$sdm" jit -q "$work/ptx.sdma" -o "$work/cubins.sdma" --arch 80,90a,100,120
"$sdm" verify -q "$work/cubins.sdma"
"$sdm" ls --json "$work/cubins.sdma" | python3 -c "
import json,sys
j = json.load(sys.stdin)
targets = sorted(e['target'] for e in j['entries'] if e['kind'] != 'manifest')
assert targets == ['sm_100', 'sm_120', 'sm_80', 'sm_90a'], targets
assert 'jit by nvJitLink' in j['content_version'], j['content_version']
" || fail "sdm jit overlay contents"
"$sdm" jit -q --full "$work/ptx.sdma" -o "$work/full.sdma" --arch 90a
"$sdm" jit -q "$work/ptx.sdma" -o "$work/only90.sdma" --arch 90a
for t in sm_90a compute_80 compute_90; do
  "$sdm" ls --json "$work/full.sdma" | python3 -c "import json,sys; j=json.load(sys.stdin); assert any(e['target']=='$t' for e in j['entries']), '$t'"
done
# Mounted over the original, the overlay's cubin serves (the runtime's layering, on the fake H200);
# a device it has no cubin for (an sm_86 beside an overlay of sm_90a only) still gets the original's PTX.
SDM_CUDA_DRIVER=$fake SDM_FAKE_CUDA_DEVICES="NVIDIA H200,9.0,232448,132,62914560;NVIDIA RTX A6000,8.6,101376,84,6291456" \
  "$sdm" info -a "$work/ptx.sdma" -a "$work/only90.sdma" >"$work/info"
grep -F "kernel scale: archive $work/only90.sdma, module kernels, sm_90a" "$work/info" >/dev/null || { cat "$work/info"; fail "the overlay's cubin does not serve"; }
grep -F "kernel scale: archive $work/ptx.sdma, module kernels, compute_80" "$work/info" >/dev/null || { cat "$work/info"; fail "the original no longer serves the rest"; }
expect_fail "--arch 9x is not one SM" "$sdm" jit -q "$work/ptx.sdma" -o "$work/bad.sdma" --arch 9x
# --arch as people write it: 90a, sm_90a, compute_90 name one SM alike.
for a in sm_90a compute_90; do "$sdm" jit -q "$work/ptx.sdma" -o "$work/spelled.sdma" --arch "$a"; done
"$sdm" import -q -o "$work/imported90.sdma" "$data/kernels.sm_90.cubin" "$data/kernels.sm_80.cubin" --arch 90
# --arch and --ptx take one value each time (comma-separated, or repeated): the inputs after them
# stay inputs.
"$sdm" import -q --arch sm_90 --ptx none "$data/kernels.sm_90.cubin" --arch sm_80 "$data/kernels.sm_80.cubin" -o "$work/imported-order.sdma"
listing=$("$sdm" ls "$work/imported-order.sdma")  # captured first: grep -q on a pipe would cut ls off (SIGPIPE, pipefail)
for target in sm_90 sm_80; do
  grep -q "$target" <<<"$listing" || { echo "FAIL: --arch sm_90 FILE --arch sm_80 FILE lost $target: $listing" >&2; exit 1; }
done
"$sdm" ls --json "$work/imported90.sdma" | python3 -c "import json,sys; t=[e['target'] for e in json.load(sys.stdin)['entries'] if e['kind']=='cubin']; assert t==['sm_90'], t"
expect_fail "nothing to link in" "$sdm" jit -q "$work/ptx.sdma" -o "$work/bad.sdma" --arch 75
[ ! -e "$work/bad.sdma" ] || fail "sdm jit with nothing to link left an output file"
# sdm cache: stats, clear, refusal of a group-writable directory.
mkdir -p "$work/cache" && chmod 700 "$work/cache"
"$sdm" cache stats --dir "$work/cache" | grep "0 entries" >/dev/null
"$sdm" cache clear --dir "$work/cache" | grep "removed 0 entries" >/dev/null
chmod 775 "$work/cache"
expect_fail "group- or world-writable" "$sdm" cache stats --dir "$work/cache"
# sdm plan: every row of the matrix, from the golden archive's plan table (tests/data/manifest.toml).
"$sdm" plan "$data/../golden/kernels.sdma" scale N=1048576 >"$work/plan"
grep -q "| NVIDIA GB300 | 10.3 | modern | 152 | 135528448 | 2 | 608 | 512 | 27863 | 4 | 1x1x1 | yes |" "$work/plan" || { cat "$work/plan"; fail "plan table"; }
grep -q "| NVIDIA A100-SXM4-80GB | 8.0 | a100 | 108 | 41943040 | 3 | 8192 | 128 | 0 | 1 | 1x1x1 | no |" "$work/plan" || fail "plan a100 row"
"$sdm" plan --json "$data/../golden/kernels.sdma" scale N=100000000 | python3 -c "
import json,sys; j=json.load(sys.stdin); r={x['device']: x for x in j['rows']}
assert r['NVIDIA H200']['cluster'] == [2,1,1] and r['NVIDIA H200']['grid'] == 97658, r['NVIDIA H200']"
"$sdm" plan "$data/../golden/kernels.sdma" axpy N=5 | grep "no plan: kernel axpy has no launch plans (its manifest gives none)" >/dev/null || fail "plan without rules"
expect_fail "needs N=VALUE" "$sdm" plan "$data/../golden/kernels.sdma" scale
expect_fail "has no kernel nope (it has: axpy, scale)" "$sdm" plan "$data/../golden/kernels.sdma" nope N=1
# Names of 16 KiB (format 1.1): a module and a kernel nvcc compiled with such a name.
long_kernel="long_$(printf 'x%.0s' $(seq 16379))"
long_module="module_$(printf 'm%.0s' $(seq 16377))"
printf '[archive]\nkernel_abi = "1.0"\n[[kernel]]\nname = "%s"\nmodule = "%s"\nsignature = "ptr,i32"\n' \
  "$long_kernel" "$long_module" >"$work/long.toml"
"$sdm" pack -q -m "$work/long.toml" -o "$work/long.sdma" "$long_module:sm_90=$data/kernels_long.sm_90.cubin"
"$sdm" verify "$work/long.sdma" | grep "ok, 2 entries" >/dev/null || fail "verify of 16 KiB names"
"$sdm" ls "$work/long.sdma" >"$work/long.ls"
grep -qF "$long_kernel" "$work/long.ls" || fail "ls of a 16 KiB kernel name"
grep -qF "sdm archive format 1.1" "$work/long.ls" || fail "ls names the format"
# Mangled C++ names: sdm ls shows them as stored, --demangle as declarations; the JSON has both.
"$sdm" import -q -o "$work/templates.sdma" "$data/templates.sm_90.cubin"
"$sdm" ls "$work/templates.sdma" >"$work/templates.ls"
grep -q "^_ZN8sdm_test4fillIfLi256EEEvPT_S1_  *templates  *b64,b32 " "$work/templates.ls" || { cat "$work/templates.ls"; fail "ls of a mangled name"; }
"$sdm" ls --demangle "$work/templates.sdma" >"$work/templates.ls"
grep -qF "void sdm_test::fill<float, 256>(float*, float)" "$work/templates.ls" || { cat "$work/templates.ls"; fail "ls --demangle"; }
"$sdm" ls --json "$work/templates.sdma" | python3 -c "
import json,sys; k={x['name']: x for x in json.load(sys.stdin)['kernels']}
assert k['_ZN8sdm_test4fillIdLi1024EEEvPT_S1_']['demangled'] == 'void sdm_test::fill<double, 1024>(double*, double)', k"
# At a real library's size: on a terminal (or at --width N) a line fits, the name cut with "…" and
# the other columns whole; piped, every name is whole; --kernel (a glob over the stored and the
# demangled name) and --module filter the text and the JSON alike; nothing kept is exit 1.
"$sdm" ls --width 60 "$work/templates.sdma" >"$work/cut.ls"
python3 - "$work/cut.ls" <<'PY' || { cat "$work/cut.ls"; fail "ls --width 60"; }
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
table = lines[lines.index("") + 1:]
assert all(len(l) <= 60 for l in table), [l for l in table if len(l) > 60]
assert any(l.startswith("_ZN8sdm_test4fil\u2026  templates  b64,b32    sm_90") for l in table), table
PY
"$sdm" ls --width 50 --wide "$work/templates.sdma" >/dev/null 2>&1 && fail "--width with --wide"
# --width from 16 (the columns a cut name keeps) to 10000; anything else is refused, naming the
# option and the range, before anything is read.
for bad in 0 1 15 10001 99999999999999999999999 -5 abc 60x ''; do
  if out=$("$sdm" ls --width "$bad" "$work/templates.sdma" 2>&1); then fail "ls --width '$bad' was taken: $out"; fi
  grep -q -- "--width" <<<"$out" || fail "ls --width '$bad': the error does not name --width: $out"
done
out=$("$sdm" ls --width 0 "$work/templates.sdma" 2>&1) || true
grep -qF "not in range 16 to 10000" <<<"$out" || fail "ls --width 0: the error does not give the range: $out"
for good in 16 10000; do
  "$sdm" ls --width "$good" "$work/templates.sdma" >"$work/w.ls" || fail "ls --width $good"
  python3 -c "import sys; t=open(sys.argv[1], encoding='utf-8').read().splitlines(); assert max(map(len, t[t.index('') + 1:])) <= max($good, 80)" "$work/w.ls" ||
    { cat "$work/w.ls"; fail "ls --width $good: lines too wide"; }
done
wide=$("$sdm" ls --wide "$work/templates.sdma")  # captured first: grep -q on a pipe would cut ls off (pipefail)
grep -qF "_ZN8sdm_test4fillIdLi1024EEEvPT_S1_" <<<"$wide" || fail "ls --wide cut a name"
grep -qF "no kernel ABI, " "$work/templates.ls" || fail "ls of an archive declaring no kernel ABI"
"$sdm" ls -C --kernel '*<double*' "$work/templates.sdma" >"$work/f.ls"
grep -qF "1 kernel of 2 matches --kernel '*<double*'" "$work/f.ls" && grep -qF "void sdm_test::fill<double, 1024>" "$work/f.ls" &&
  ! grep -qF "fill<float" "$work/f.ls" && grep -q "^1  templates  cubin" "$work/f.ls" || { cat "$work/f.ls"; fail "ls --kernel over demangled names"; }
"$sdm" ls --kernel '_ZN8sdm_test4fillIf*' --module templates --json "$work/templates.sdma" | python3 -c "
import json,sys; j=json.load(sys.stdin)
assert [k['name'] for k in j['kernels']] == ['_ZN8sdm_test4fillIfLi256EEEvPT_S1_'], j['kernels']
assert [e['name'] for e in j['entries']] == ['templates'], j['entries']" || fail "ls --json with filters"
expect_fail "no kernel of $work/templates.sdma matches --module 'other' (of 2 kernels" "$sdm" ls --module other "$work/templates.sdma"
{ "$sdm" ls --json --kernel 'nope*' "$work/templates.sdma" 2>/dev/null || true; } | python3 -c "import json,sys; assert json.load(sys.stdin)['kernels'] == []" ||
  fail "ls --json of a filter keeping nothing"
# A library (an ELF file) given to ls: the fix is sdm import, named with the file.
expect_fail "sdm import $data/kernels.sm_90.cubin -o $data/kernels.sm_90.cubin.sdma" "$sdm" ls "$data/kernels.sm_90.cubin"
# Counts agree with their nouns.
"$sdm" jit -j 1 "$work/ptx.sdma" -o "$work/one.sdma" --arch 90a >"$work/jit.out"
grep -qF "an overlay of 1 cubin (1 module x 1 SM) linked with" "$work/jit.out" && grep -qF " on 1 thread; " "$work/jit.out" ||
  { cat "$work/jit.out"; fail "sdm jit's summary"; }
# Habits: `sdm help X` is `sdm X --help`; `help` is among the commands `sdm --help` lists; a typo in a command or an option gets the nearest name;
# every parse error names its command.
"$sdm" help pack >"$work/help1"; "$sdm" pack --help >"$work/help2"; cmp "$work/help1" "$work/help2"
"$sdm" help cache prune >"$work/help1"; "$sdm" cache prune --help >"$work/help2"; cmp "$work/help1" "$work/help2"
expect_fail "did you mean 'pack'" "$sdm" help pakc
help=$("$sdm" --help)
grep -q "^  help  " <<<"$help" || fail "sdm --help does not list help"
help=$("$sdm" help --help)
grep -qF "sdm help COMMAND [SUBCOMMAND]" <<<"$help" || fail "sdm help --help"
expect_fail "did you mean 'ls'" "$sdm" lss
expect_fail "sdm ls: The following argument was not expected: --jsno (did you mean '--json'?)" "$sdm" ls --jsno "$work/a.sdma"
expect_fail "sdm pack: --output is required" "$sdm" pack
expect_fail "sdm cache: A subcommand is required" "$sdm" cache
# Progress names its phases and counts every unit (off a terminal: one line per phase); -q: none.
"$sdm" pack -m "$data/manifest.toml" -o "$work/p.sdma" "${images[@]}" 2>"$work/progress" >/dev/null
grep -q "^sdm pack: compress 8/8 in [0-9.]* s" "$work/progress" && grep -q "^sdm pack: prefix trials 8/8" "$work/progress" || { cat "$work/progress"; fail "pack's progress"; }
# Off a terminal, a line every SDM_PROGRESS_INTERVAL seconds while a phase advances (0: each unit),
# with no rate for a phase too short to time, and never "0/s".
SDM_PROGRESS_INTERVAL=0 "$sdm" pack -j 1 -m "$data/manifest.toml" -o "$work/p.sdma" "${images[@]}" 2>"$work/progress" >/dev/null
# A value that is not a duration (inf would overflow the clock) is refused with a warning naming it.
for bad in inf abc -1 1e300; do
  SDM_PROGRESS_INTERVAL=$bad "$sdm" pack -j 1 -m "$data/manifest.toml" -o "$work/p-bad.sdma" "${images[@]}" 2>"$work/progress-bad" >/dev/null
  grep -qF "SDM_PROGRESS_INTERVAL='$bad' is not a number of seconds" "$work/progress-bad" || { cat "$work/progress-bad" >&2; fail "SDM_PROGRESS_INTERVAL=$bad was not refused"; }
done
grep -q "^sdm pack: compress [1-7]/8" "$work/progress" && ! grep -q "[^.0-9]0/s" "$work/progress" || { cat "$work/progress"; fail "pack's periodic progress"; }
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/p.sdma" "${images[@]}" 2>"$work/progress"
[ ! -s "$work/progress" ] || { cat "$work/progress"; fail "pack -q printed progress"; }
# Every --json output is one JSON document on stdout, whatever else happened.
for cmd in "ls --json $work/a.sdma" "diff --json $work/a.sdma $work/c.sdma" "cache stats --json --dir $work/jc" "cache prune --json --dir $work/jc" \
           "cache clear --json --dir $work/jc" "plan --json $data/../golden/kernels.sdma scale N=4096" "info --json -a $work/a.sdma"; do
  $sdm $cmd >"$work/json" 2>/dev/null || true
  python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$work/json" || { cat "$work/json"; fail "sdm $cmd: stdout is not one JSON document"; }
done
echo "cli: all checks passed"
