#!/usr/bin/env bash
# Signed archives from the command line (docs/SIGNING.md): keygen, sign, verify --trust, the
# signers in ls and info, --sign on pack, and the embedded archive of the libsdm that was built,
# signed by the build's key and mounted under SDM_REQUIRE_SIGNED=1. Hostile key and archive files
# are refused with the reason, never read through a FIFO.
# Usage: signing.sh SDM DATA_DIR LIBSDM
set -euo pipefail
sdm=$1 data=$2 libsdm=$3
source "$(dirname "$0")/lib.sh"
# has PATTERN command...: the command succeeds and its output holds PATTERN (read from a file: a
# `| grep -q` would close the pipe early and fail the writer with SIGPIPE under pipefail).
has() { local want=$1; shift; "$@" >"$work/has" 2>&1 || fail "failed: $*"; grep -q -- "$want" "$work/has" || { cat "$work/has"; fail "'$*' lacks '$want'"; }; }
images=(kernels:sm_80="$data/kernels.sm_80.cubin" kernels:sm_90a="$data/kernels.sm_90a.cubin"
        kernels:compute_80="$data/kernels.compute_80.ptx")

# keygen: a secret key only its owner reads, its public half beside it; never replaced silently.
has "public key, id [0-9a-f]\{16\}" "$sdm" keygen -o "$work/k1"
"$sdm" keygen -q -o "$work/k2"
[ "$(stat -c %a "$work/k1.key")" = 600 ] || fail "k1.key mode $(stat -c %a "$work/k1.key")"
[ "$(stat -c %a "$work/k1.pub")" = 644 ] || fail "k1.pub mode"
grep -q "^sdm-ed25519-public [0-9a-f]\{64\}$" "$work/k1.pub" || fail "k1.pub: $(cat "$work/k1.pub")"
expect_fail "k1.key exists" "$sdm" keygen -o "$work/k1"
"$sdm" keygen -q --public "$work/k1.key" -o "$work/k1-again.pub"
cmp "$work/k1.pub" "$work/k1-again.pub"

# pack --sign in one step; sign adds a second signature without moving a payload.
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/plain.sdma" "${images[@]}"
"$sdm" pack -q -m "$data/manifest.toml" -o "$work/a.sdma" --sign "$work/k1.key" "${images[@]}"
k1_id=$("$sdm" keygen -o "$work/k9" | sed -n 's/.*id \([0-9a-f]\{16\}\).*/\1/p')  # the id line's format
[ ${#k1_id} = 16 ] || fail "keygen printed no key id"
has "ok, .*, signed by trusted key [0-9a-f]\{16\}$" "$sdm" verify --trust "$work/k1.pub" "$work/a.sdma"
"$sdm" sign -q "$work/a.sdma" --key "$work/k2.key" -o "$work/ab.sdma"
size=$(python3 -c 'import struct,sys; b=open(sys.argv[1],"rb").read(); print(struct.unpack_from("<Q",b,56)[0])' "$work/plain.sdma")
plain_size=$(stat -c %s "$work/plain.sdma")
cmp -n "$((plain_size - size))" -i "$size:$size" "$work/plain.sdma" "$work/ab.sdma" || fail "the payloads moved"
has "^signed by [0-9a-f]\{16\}, [0-9a-f]\{16\} (not checked here" "$sdm" ls "$work/ab.sdma"
"$sdm" ls --json "$work/ab.sdma" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert len(j["signers"])==2, j["signers"]'
"$sdm" ls --json "$work/plain.sdma" | python3 -c 'import json,sys; j=json.load(sys.stdin); assert j["signers"]==[], j["signers"]'
"$sdm" verify --trust "$work/k2.pub" "$work/ab.sdma" >/dev/null
"$sdm" verify "$work/ab.sdma" >/dev/null  # without --trust: every checksum, the block is no padding

# verify --trust names what failed: unsigned, an unknown key, a bad signature.
"$sdm" keygen -q -o "$work/k3"
expect_fail "is not signed" "$sdm" verify --trust "$work/k1.pub" "$work/plain.sdma"
expect_fail "which this host does not trust" "$sdm" verify --trust "$work/k3.pub" "$work/ab.sdma"
cp "$work/a.sdma" "$work/bad.sdma"
python3 - "$work/bad.sdma" <<'PY'
import sys
p = sys.argv[1]; b = bytearray(open(p, "rb").read())
b[-16 - 1] ^= 1   # the last byte of the one signature, just before the 16-byte footer
open(p, "wb").write(b)
PY
expect_fail "does not verify" "$sdm" verify --trust "$work/k1.pub" "$work/bad.sdma"
"$sdm" verify "$work/bad.sdma" >/dev/null  # the checksums do not cover signatures: only --trust sees it

# Hostile keys: a secret key given as trusted, one others may read, a FIFO (never opened for
# reading: no hang), a directory, a link to /dev/zero.
expect_fail "is a secret key" "$sdm" verify --trust "$work/k1.key" "$work/a.sdma"
cp "$work/k1.key" "$work/open.key"; chmod 644 "$work/open.key"
expect_fail "may be read by others" "$sdm" sign "$work/plain.sdma" --key "$work/open.key" -o "$work/x.sdma"
mkfifo "$work/fifo.key"
expect_fail "FIFO" timeout 20 "$sdm" sign "$work/plain.sdma" --key "$work/fifo.key" -o "$work/x.sdma"
ln -s /dev/zero "$work/zero.pub"
expect_fail "character device" timeout 20 "$sdm" verify --trust "$work/zero.pub" "$work/a.sdma"
[ ! -e "$work/x.sdma" ] || fail "a refused signing wrote its output"

# The embedded archive of the built libsdm: signed by the build's key, and mounted under require
# with no key given (libsdm trusts its build's key for its own archive alone).
"$sdm" info --libsdm "$libsdm" >"$work/info" 2>&1 || true
if grep -q "(embedded)" "$work/info"; then
  SDM_REQUIRE_SIGNED=1 "$sdm" info --libsdm "$libsdm" >"$work/info" 2>&1 || true
  grep -q "signature policy: require" "$work/info" || { cat "$work/info"; fail "policy line"; }
  # (The embedded archive's key is read from the same file: consistent, not proof of its builder.)
  grep -q "(embedded), .*signed by [0-9a-f]\{16\} (consistent with the key embedded beside it in the same file" "$work/info" ||
    { cat "$work/info"; fail "embedded archive under require"; }
  grep -q "(verified)" "$work/info" && { cat "$work/info"; fail "the embedded archive called verified"; }
  SDM_REQUIRE_SIGNED=1 "$sdm" info --libsdm "$libsdm" -a "$work/plain.sdma" >"$work/info" 2>&1 && fail "an unsigned archive mounted under require"
  grep -q "plain.sdma is not signed" "$work/info" || { cat "$work/info"; fail "refusal of the unsigned archive"; }
  SDM_REQUIRE_SIGNED=1 SDM_TRUSTED_KEYS="$work/k3.pub:$work/k1.pub" "$sdm" info --libsdm "$libsdm" -a "$work/a.sdma" --json |
    python3 -c 'import json,sys; j=json.load(sys.stdin); a=[x for x in j["archives"] if x["label"].endswith("a.sdma")]; assert a and a[0]["signature_verified"], j["archives"]; assert a[0]["verified_against"] == "a trusted key"; e=[x for x in j["archives"] if x["embedded"]]; assert e[0]["verified_against"] == "the key embedded in the same libsdm", e; assert len(j["signature_policy"]["trusted_keys"])==2'
fi

# sdm jit signs only what verified: a signed input needs --trust, and its signature must hold under it.
"$sdm" pack -q -o "$work/ptx.sdma" --sign "$work/k1.key" kernels:compute_90="$data/kernels.compute_90.ptx"
expect_fail "pass --trust KEY.pub so its signature is checked" "$sdm" jit -q "$work/ptx.sdma" --arch 90 -o "$work/jit.sdma" --sign "$work/k2.key"
[ ! -e "$work/jit.sdma" ] || fail "a refused jit wrote its output"
# (An input edited after signing, its checksums recomputed: tests/runtime/archives/test_signing.cpp, "sdm jit --sign".)
expect_fail "which this host does not trust" "$sdm" jit -q "$work/ptx.sdma" --arch 90 -o "$work/jit.sdma" --sign "$work/k2.key" --trust "$work/k3.pub"
if "$sdm" jit -q "$work/ptx.sdma" --arch 90 -o "$work/jit.sdma" --sign "$work/k2.key" --trust "$work/k1.pub" 2>"$work/jit.err"; then
  "$sdm" verify -q --trust "$work/k2.pub" "$work/jit.sdma" || fail "the overlay of a verified input is not signed by k2"
elif ! grep -q "nvJitLink was not found" "$work/jit.err"; then
  cat "$work/jit.err"; fail "sdm jit of a verified input"
fi
# Archive versions (docs/SIGNING.md, "Rollback"): written into the signed header, shown by ls; an
# overlay takes its input's version and names its input (docs/FORMAT.md, section 20).
"$sdm" pack -q -o "$work/v3.sdma" --archive-version 3 --sign "$work/k1.key" kernels:compute_90="$data/kernels.compute_90.ptx"
has "archive version 3" "$sdm" ls "$work/v3.sdma"
has '"archive_version": 3' "$sdm" ls --json "$work/v3.sdma"
"$sdm" verify -q --trust "$work/k1.pub" "$work/v3.sdma" || fail "a versioned signed archive does not verify"
expect_fail "archive-version" "$sdm" pack -q -o "$work/v0.sdma" --archive-version 0 kernels:compute_90="$data/kernels.compute_90.ptx"
expect_fail "archive-version" "$sdm" pack -q -o "$work/v0.sdma" --archive-version -1 kernels:compute_90="$data/kernels.compute_90.ptx"
expect_fail "archive-version" "$sdm" pack -q -o "$work/v0.sdma" --archive-version 18446744073709551616 kernels:compute_90="$data/kernels.compute_90.ptx"
[ ! -e "$work/v0.sdma" ] || fail "a refused --archive-version wrote its output"
# A release line: in the signed header beside the version, shown by ls, kept by sdm jit.
"$sdm" pack -q -o "$work/line.sdma" --archive-version 3 --release-line example.com/fleet --sign "$work/k1.key" kernels:compute_90="$data/kernels.compute_90.ptx"
has "archive version 3 of release line example.com/fleet" "$sdm" ls "$work/line.sdma"
has '"release_line": "example.com/fleet"' "$sdm" ls --json "$work/line.sdma"
"$sdm" verify -q --trust "$work/k1.pub" "$work/line.sdma" || fail "an archive with a release line does not verify"
expect_fail "does not start with a lower-case letter" "$sdm" pack -q -o "$work/l0.sdma" --archive-version 3 --release-line Fleet kernels:compute_90="$data/kernels.compute_90.ptx"
expect_fail "more than 32" "$sdm" pack -q -o "$work/l0.sdma" --archive-version 3 --release-line "$(printf 'a%.0s' $(seq 33))" kernels:compute_90="$data/kernels.compute_90.ptx"
expect_fail "give --archive-version too" "$sdm" pack -q -o "$work/l0.sdma" --release-line fleet kernels:compute_90="$data/kernels.compute_90.ptx"
[ ! -e "$work/l0.sdma" ] || fail "a refused --release-line wrote its output"
if "$sdm" jit -q "$work/v3.sdma" --arch 90 -o "$work/v3-jit.sdma" --trust "$work/k1.pub" 2>"$work/jit.err"; then
  base_id=$("$sdm" ls --json "$work/v3.sdma" | python3 -c 'import json, sys; print(json.load(sys.stdin)["archive_identity"])')
  has "archive version 3; an overlay of the archive $base_id" "$sdm" ls "$work/v3-jit.sdma"
  "$sdm" jit -q "$work/line.sdma" --arch 90 -o "$work/line-jit.sdma" --trust "$work/k1.pub"
  has '"release_line": "example.com/fleet"' "$sdm" ls --json "$work/line-jit.sdma"
elif ! grep -q "nvJitLink was not found" "$work/jit.err"; then
  cat "$work/jit.err"; fail "sdm jit of a versioned input"
fi
echo "signing: ok"
