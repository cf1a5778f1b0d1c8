#!/usr/bin/env bash
# sdm import end to end: each input kind (cubin, PTX, LTO-IR, .fatbin of every -compress-mode, shared
# library, static archive, executable), the modules it names, the signatures it derives, --arch and
# --ptx, a declared signature checked against the images, and `sdm pack` deriving the same
# signatures. Usage: import.sh SDM DATA_DIR
set -euo pipefail
sdm=$1 data=$2
source "$(dirname "$0")/lib.sh"
# ls_json ARCHIVE PYTHON-ASSERTION: j is `sdm ls --json`, k the kernels by name.
ls_json() {
  "$sdm" ls --json "$1" | python3 -c "import json,sys; j=json.load(sys.stdin); k={x['name']: x for x in j.get('kernels', [])}; e=[(x['name'], x['target']) for x in j['entries']]; assert $2, (e, k)"
}
f=$data/fatbin

# Plain images: the module is the file's stem; signatures from PTX where the module has it.
"$sdm" import -q -o "$work/plain.sdma" "$data/params.sm_90.cubin" "$data/params.sm_80.cubin" "$data/params.compute_90.ptx"
"$sdm" verify -q "$work/plain.sdma"
ls_json "$work/plain.sdma" "sorted(k) == ['by_struct', 'gap', 'halves', 'mixed', 'no_params'] and all(x['module'] == 'params' for x in k.values())"
ls_json "$work/plain.sdma" "k['by_struct']['signature'] == 'opaque:8:4,b64' and k['mixed']['signature'] == 'b8,b64,b32,b64,opaque:3:1,opaque:16:8,b64'"
ls_json "$work/plain.sdma" "k['halves']['signature'] == 'b16,b16,b64' and k['gap']['signature'] == 'b32,opaque:16:16,b64' and k['no_params']['signature'] == ''"
# A cubin alone: b64 for the struct (a cubin records no alignment).
"$sdm" import -q -o "$work/cubin.sdma" "$data/params.sm_90.cubin"
ls_json "$work/cubin.sdma" "k['by_struct']['signature'] == 'b64,b64' and e == [('manifest', '-'), ('params', 'sm_90')] or ('params', 'sm_90') in e"
"$sdm" ls "$work/cubin.sdma" | grep "^mixed .*params .*b8,b64,b32,b64,opaque:3:1,opaque:16:8,b64" >/dev/null || fail "sdm ls lists the kernels"
"$sdm" import -q -o "$work/lto.sdma" "$data/kernels.lto_90.ltoir" "$data/kernels.sm_90.cubin"
ls_json "$work/lto.sdma" "('kernels', 'lto_90') in e and k['scale']['signature'] == 'b64,b32,b32'"

# Fatbins, one per nvcc -compress-mode: a module per container, every image decompressed.
for m in default size speed balance none speed-all; do
  "$sdm" import -q -o "$work/$m.sdma" "$f/kernels.$m.fatbin"
  ls_json "$work/$m.sdma" "sorted(x for x in e if x[0] != 'manifest') == [('kernels.0', 'compute_90'), ('kernels.0', 'sm_80'), ('kernels.0', 'sm_90')] and k['axpy']['module'] == 'kernels.0'"
done
# The images of a fatbin and the same images extracted from it: the same bytes.
"$sdm" extract "$work/none.sdma" -C "$work/x" >/dev/null
"$sdm" extract "$work/size.sdma" -C "$work/y" >/dev/null
cmp "$work/x/kernels.0.sm_90.cubin" "$work/y/kernels.0.sm_90.cubin" || fail "a zstd entry decompressed differs from the uncompressed one"

# Host binaries: a shared library, a static archive, an executable (whose first container is
# nvcc's, without kernels); --arch and --ptx.
for input in libparams.so libparams.a params_exe; do
  "$sdm" import -q -o "$work/$input.sdma" "$f/$input"
  "$sdm" verify -q "$work/$input.sdma"
  ls_json "$work/$input.sdma" "k['halves']['signature'] == 'b16,b16,b64' and k['halves']['module'].startswith('${input%%.*}.') and ('sm_90' in [t for _, t in e])"
done
"$sdm" import -o "$work/filtered.sdma" --arch sm_90 --ptx compute_90 "$f/params.fatbin" >"$work/out"
grep -q "1 fatbin container ([0-9]* bytes), 3 images: 2 imported ([0-9]* bytes as the containers store them), 1 left out by --arch/--ptx" "$work/out" || { cat "$work/out"; fail "import summary"; }
ls_json "$work/filtered.sdma" "sorted(t for _, t in e) == ['compute_90', 'manifest', 'sm_90']"
"$sdm" import -q -o "$work/cubins.sdma" --arch sm_80 --ptx compute_80 "$f/params.fatbin"
ls_json "$work/cubins.sdma" "sorted(t for _, t in e) == ['manifest', 'sm_80']"
"$sdm" import -q -o "$work/nopt.sdma" --arch sm_90 --ptx none "$f/params.fatbin"  # a cubin-only archive
ls_json "$work/nopt.sdma" "sorted(t for _, t in e) == ['manifest', 'sm_90']"
expect_fail "or none" "$sdm" import -q -o "$work/bad.sdma" --ptx sm_90 "$f/params.fatbin"
# --min-saving: the small cubin compression saves a few KiB of is stored by default, compressed at 0.
"$sdm" import -q -o "$work/small.sdma" "$data/kernels.sm_90.cubin"
"$sdm" ls --json "$work/small.sdma" | python3 -c "import json,sys; e=[x for x in json.load(sys.stdin)['entries'] if x['target']=='sm_90']; assert e[0]['codec']=='stored', e" ||
  fail "a small cubin is not stored by default"
"$sdm" import -q --min-saving 0 -o "$work/small0.sdma" "$data/kernels.sm_90.cubin"
"$sdm" ls --json "$work/small0.sdma" | python3 -c "import json,sys; e=[x for x in json.load(sys.stdin)['entries'] if x['target']=='sm_90']; assert e[0]['codec']!='stored', e" ||
  fail "--min-saving 0 stores a cubin"
expect_fail "min-saving" "$sdm" import -q --min-saving lots -o "$work/bad.sdma" "$data/params.sm_90.cubin"
expect_fail "--arch 'compute_90' must be an SM, sm_XY" "$sdm" import -q -o "$work/bad.sdma" --arch compute_90 "$f/params.fatbin"
expect_fail "no image to import" "$sdm" import -q -o "$work/bad.sdma" --arch sm_70 --ptx compute_70 "$f/params.fatbin"
expect_fail "relocatable device code" "$sdm" import -q -o "$work/bad.sdma" "$f/kernels.rdc.o"
# A device link's input (link_input.cu, -rdc: a kernel calling operators defined elsewhere, as
# cuSPARSE's SpMMOp kernels do): named and refused as a file, skipped with its PTX in a container.
expect_fail "link_input.sm_90.cubin is a relocatable cubin that calls 2 function(s) it does not define (_Z6add_opii, _Z8epilogueii)" \
  "$sdm" import -q -o "$work/bad.sdma" "$data/link_input.sm_90.cubin"
"$sdm" import -q -o "$work/linked.sdma" "$f/link_input.fatbin" "$data/kernels.sm_90.cubin" 2>"$work/link_input.err"
grep -q "link_input.fatbin container 0 entry .* is a relocatable cubin that calls 2 function(s) .*: skipped with its other images" "$work/link_input.err" ||
  fail "the link input's container was not skipped by name: $(cat "$work/link_input.err")"
ls_json "$work/linked.sdma" "sorted(k) == ['axpy', 'scale'] and all(m != 'link_input.0' for m, _ in e)"
expect_fail "link_input.sm_90.cubin (sm_90) is a relocatable cubin that calls 2 function(s) it does not define" \
  "$sdm" pack -q -o "$work/bad.sdma" "linked:sm_90=$data/link_input.sm_90.cubin"
expect_fail "is a relocatable cubin that calls 2 function(s) it does not define" "$sdm" pack -q -o "$work/bad.sdma" "linked:fatbin=$f/link_input.fatbin"
expect_fail "both name module libparams.0" "$sdm" import -q -o "$work/bad.sdma" "$f/libparams.so" "$f/libparams.a"
expect_fail "not a cubin, LTO-IR, fatbin" "$sdm" import -q -o "$work/bad.sdma" "$data/manifest.toml"
# Hostile inputs: refused naming the file, never a crash.
head -c 20000 "$f/libparams.so" >"$work/truncated.so"
expect_fail "truncated.so" "$sdm" import -q -o "$work/bad.sdma" "$work/truncated.so"
head -c 9000 "$f/params.fatbin" >"$work/truncated.fatbin"
expect_fail "truncated.fatbin" "$sdm" import -q -o "$work/bad.sdma" "$work/truncated.fatbin"
head -c 3000 "$data/params.sm_90.cubin" >"$work/truncated.cubin"
expect_fail "not a valid cubin" "$sdm" import -q -o "$work/bad.sdma" "$work/truncated.cubin"
sed 's/\.param \.u64 by_struct_param_1/.param .u64/' "$data/params.compute_90.ptx" >"$work/broken.ptx"
expect_fail "PTX .entry by_struct parameter 1: a parameter without a type or a name" "$sdm" import -q -o "$work/bad.sdma" "$work/broken.ptx"

# A manifest: declared signatures are checked against every image of the module; kernels it does
# not mention are still added; its plans and versions are kept.
cat >"$work/m.toml" <<'TOML'
[archive]
kernel_abi = "2.1"
content_version = "params.1"
[[kernel]]
name = "by_struct"
module = "params.0"
signature = "opaque:8:4,ptr"
TOML
"$sdm" import -q -m "$work/m.toml" -o "$work/declared.sdma" "$f/params.fatbin"
ls_json "$work/declared.sdma" "j['kernel_abi'] == '2.1' and k['by_struct']['signature'] == 'opaque:8:4,ptr' and k['mixed']['module'] == 'params.0'"
sed 's/opaque:8:4,ptr/i32,ptr/' "$work/m.toml" >"$work/wrong.toml"
expect_fail "kernel by_struct parameter 0: the manifest declares i32 (4 bytes at offset 0), the image has 8 bytes at offset 0" \
  "$sdm" import -q -m "$work/wrong.toml" -o "$work/bad.sdma" "$f/params.fatbin"
sed 's/name = "by_struct"/name = "by_strukt"/' "$work/m.toml" >"$work/typo.toml"
expect_fail "does not define kernel by_strukt" "$sdm" import -q -m "$work/typo.toml" -o "$work/bad.sdma" "$f/params.fatbin"
sed 's/params.0/params.7/' "$work/m.toml" >"$work/nomodule.toml"
expect_fail "no image of it was given" "$sdm" import -q -m "$work/nomodule.toml" -o "$work/bad.sdma" "$f/params.fatbin"
[ ! -e "$work/bad.sdma" ] || fail "a refused import left an output file"

# sdm pack derives the same signatures, for a fatbin entry too, and checks a declared one in it.
"$sdm" pack -q -o "$work/pack.sdma" params:sm_90="$data/params.sm_90.cubin" params:compute_90="$data/params.compute_90.ptx"
ls_json "$work/pack.sdma" "k['by_struct']['signature'] == 'opaque:8:4,b64' and len(k) == 5"
sed 's/params.0/params/' "$work/wrong.toml" >"$work/wrong_pack.toml"
expect_fail "kernel by_struct parameter 0" "$sdm" pack -q -m "$work/wrong_pack.toml" -o "$work/bad.sdma" params:fatbin="$f/params.fatbin"
sed 's/params.0/params/' "$work/typo.toml" >"$work/typo_pack.toml"
expect_fail "does not define kernel by_strukt" "$sdm" pack -q -m "$work/typo_pack.toml" -o "$work/bad.sdma" params:fatbin="$f/params.fatbin"
# Images of one module that disagree on a kernel's parameters.
sed 's/\.param \.align 4 \.b8 by_struct_param_0\[8\]/.param .align 4 .b8 by_struct_param_0[12]/' "$data/params.compute_90.ptx" >"$work/params.compute_90.ptx"
grep -q "by_struct_param_0\[12\]" "$work/params.compute_90.ptx" || fail "the PTX edit did not apply"
expect_fail "rebuild the module's images from one source" \
  "$sdm" pack -q -o "$work/bad.sdma" params:sm_90="$data/params.sm_90.cubin" params:compute_90="$work/params.compute_90.ptx"
# Inputs that are not regular files are refused without being read (no endless /dev/zero, no
# FIFO that blocks).
expect_fail "/dev/zero is a character device, not a regular file" "$sdm" import -q -o "$work/bad.sdma" /dev/zero
mkfifo "$work/fifo"
expect_fail "is a FIFO (named pipe), not a regular file" timeout 10 "$sdm" import -q -o "$work/bad.sdma" "$work/fifo"
echo "import: all checks passed"

# Two modules defining the same kernels (as two CuPy RawModules do): both are kept, each listed in
# its module; the warning says how to fetch each.
cp "$data/kernels.sm_90.cubin" "$work/one.sm_90.cubin"
cp "$data/kernels.sm_90.cubin" "$work/two.sm_90.cubin"
"$sdm" import -o "$work/both.sdma" "$work/one.sm_90.cubin" "$work/two.sm_90.cubin" >"$work/out" 2>&1
grep -q "kernel scale is defined in modules one and two: each is kept, fetched by its module-qualified name (one!scale, two!scale)" "$work/out" ||
  { cat "$work/out"; fail "import names both modules and the qualified names"; }
"$sdm" verify -q "$work/both.sdma"
"$sdm" ls --json "$work/both.sdma" | python3 -c "
import json, sys
k = sorted((x['module'], x['name']) for x in json.load(sys.stdin)['kernels'])
assert k == [('one', 'axpy'), ('one', 'scale'), ('two', 'axpy'), ('two', 'scale')], k" || fail "both modules' kernels are listed"

# Name expressions lowered with the toolkit's NVRTC and recorded (manifest 1.2): typedefs, literal
# casts, enumerators and default arguments, as a CuPy user writes them.
if "$sdm" import -q -o "$work/expr.sdma" "$data/user_names.sm_90.cubin" --source "user_names=$data/user_names.cu" \
    --name-expression "user_names=ptr_param<size_t>" --name-expression "user_names=non_type_param<float, (int)3>" \
    --name-expression "user_names=enum_param<mylib::Tag::B>" --name-expression "user_names=shift<int>" 2>"$work/err"; then
  "$sdm" verify -q "$work/expr.sdma"
  "$sdm" ls --json "$work/expr.sdma" | python3 -c "
import json, sys
x = {e['expression']: e['symbol'] for e in json.load(sys.stdin)['name_expressions']}
assert x == {'ptr_param<size_t>': '_Z9ptr_paramImEvPT_', 'non_type_param<float,(int)3>': '_Z14non_type_paramIfLi3EEvPT_',
             'enum_param<mylib::Tag::B>': '_Z10enum_paramILN5mylib3TagE1EEvPi', 'shift<int>': '_Z5shiftIivEvPT_S0_'}, x" ||
    fail "the lowered expressions are recorded"
  # Refused by name: an expression without its module's source, one that names no kernel of the
  # images, a source that is not a regular file, an expression that does not compile.
  expect_fail "which no --source names" "$sdm" import -q -o "$work/bad.sdma" "$data/user_names.sm_90.cubin" --name-expression "user_names=shift<int>"
  expect_fail "which module user_names's images do not define" "$sdm" import -q -o "$work/bad.sdma" "$data/user_names.sm_90.cubin" \
    --source "user_names=$data/user_names.cu" --name-expression "user_names=ptr_param<unsigned char>"
  mkfifo "$work/fifo.cu"
  expect_fail "fifo.cu" timeout 20 "$sdm" import -q -o "$work/bad.sdma" "$data/user_names.sm_90.cubin" --source "user_names=$work/fifo.cu" \
    --name-expression "user_names=shift<int>"
  expect_fail "NVRTC" "$sdm" import -q -o "$work/bad.sdma" "$data/user_names.sm_90.cubin" --source "user_names=$data/user_names.cu" \
    --name-expression "user_names=no_such_kernel<int>"
  [ ! -e "$work/bad.sdma" ] || fail "a refused import wrote an archive"
else
  grep -q "NVRTC, which could not be loaded" "$work/err" || { cat "$work/err"; fail "import with name expressions"; }
  echo "import.sh: no NVRTC here: the name-expression part is skipped" >&2
fi
