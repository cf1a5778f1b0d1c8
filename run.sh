#!/usr/bin/env bash
# sdm's two set-up commands for a fresh machine (Debian/Ubuntu):
#   ./run.sh demo   install what is missing, build a stripped release (build-release), run the main job
#   ./run.sh test   install what is missing, build with warnings as errors, run every test; then
#                   the concurrent suites under TSan, the whole suite under ASan + UBSan, and the
#                   Windows build's tests under wine64; the last line is "N passed, N failed"
#                   (counted from Meson's test logs)
set -euo pipefail
cd "$(dirname "$0")"

packages=(meson ninja-build pkg-config g++ cmake make python3 python3-venv libzstd-dev liblz4-dev libxxhash-dev libmsgsl-dev libsodium-dev catch2
          libcli11-dev libtomlplusplus-dev libfmt-dev nlohmann-json3-dev golang-go help2man man-db universal-ctags
          libcurl4-openssl-dev libarchive-dev docker-registry skopeo umoci
          g++-mingw-w64-x86-64-posix wine64 autoconf automake libtool)  # (the last line: the Windows stage, docs/WINDOWS.md)

install_missing() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "ok installed" >/dev/null || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo=(sudo); else
      echo "run.sh: missing packages: ${missing[*]}" >&2
      echo "run.sh: install them as root: apt-get install ${missing[*]}" >&2
      exit 1
    fi
  fi
  if ! command -v apt-get >/dev/null; then
    echo "run.sh: missing packages (Debian names): ${missing[*]}; install their equivalents and rerun" >&2
    exit 1
  fi
  echo "run.sh: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

configure() {  # configure BUILD_DIR [meson options...]
  local dir=$1; shift
  if [ -f "$dir/build.ninja" ]; then
    meson configure "$dir" "$@" >/dev/null
  else
    meson setup "$dir" "$@"
  fi
}

count_results() {  # the closing line, from Meson's machine-readable test logs (one per build dir)
  python3 - "${@/%//meson-logs/testlog.json}" <<'PY'
import json, sys
passed = failed = skipped = 0
for log in sys.argv[1:]:
  for line in open(log):
    result = json.loads(line)["result"]
    if result in ("OK", "EXPECTEDFAIL"): passed += 1
    elif result == "SKIP": skipped += 1
    else: failed += 1
print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
PY
}

case "${1:-}" in
  test)
    install_missing
    # The tests keep their own build type (-O2, not stripped, debug information at -g1: the line
    # tables a sanitizer's report and a backtrace need, compiled in 2/3 of -g's time): the
    # project's default is a stripped release, what ./run.sh demo and `meson install` put in place.
    test_type=(-Ddebug=true -Dstrip=false)
    configure build "${test_type[@]}" -Doptimization=2 -Dc_args=-g1 -Dcpp_args=-g1 -Dwerror=true -Dtests=enabled
    ninja -C build
    status=0
    meson test -C build --print-errorlogs --num-processes 2 || status=$?
    # The concurrent tests again under ThreadSanitizer (a race fails them: TSan exits 66).
    # (-Dwerror=false: GCC 12 reports false stringop-overflow warnings under -fsanitize=thread;
    # the main build above enforces warnings.) This build is also the one without libsodium
    # (-Dsigning=disabled): test_signing checks there that every signing path is unsupported.
    # -O1 -g1: TSan's own guidance for speed, and 2/3 of -O2 -g's compile time.
    configure build-tsan "${test_type[@]}" -Doptimization=1 -Dwerror=false -Dc_args=-g1 -Dcpp_args='-g1 -Wno-stringop-overflow' -Dtests=enabled -Dkernels=disabled -Dsigning=disabled \
      -Db_sanitize=thread -Db_lundef=false
    tsan_exes=(modules module_slot unmount budget warmup image_policy layers reload graphs launch plugins cache signing host_process frames)  # tests/test_NAME
    tsan_tests=("${tsan_exes[@]}" reload_stress)  # reload_stress: test_reload's 16 threads for 60 s
    plugins=(current older newer nulls bad refuse raise rendezvous throw)  # tests/plugins/, for the plugins suite
    # (and what those tests start or load: the JIT helper that isolated links run in, the tool,
    # the fake nvJitLink, the host that loads libsdm by a relative path)
    ninja -C build-tsan tests/fake_cuda/libcuda_fake.so tests/fake_nvjitlink/libnvJitLink_fake.so tests/relative_host capi/sdm-jit-helper tools/sdm "${tsan_exes[@]/#/tests/test_}" $(printf 'tests/libsdm_test_plugin_%s.so ' "${plugins[@]}")
    meson test -C build-tsan --no-rebuild --print-errorlogs --num-processes 1 "${tsan_tests[@]}" || status=$?
    # The whole suite again under AddressSanitizer + UndefinedBehaviorSanitizer (LeakSanitizer
    # included; tests/lsan.supp names the one suppression, libnvJitLink's own allocations).
    # -Og -g1: GCC's UBSan at -O2 -g took 5x as long to compile (32 of the run's 57 minutes on 2
    # cores); -Og keeps every check and reports file:line.
    configure build-asan "${test_type[@]}" -Doptimization=g -Dwerror=false -Dc_args=-g1 -Dcpp_args='-g1 -Wno-stringop-overflow' -Dtests=enabled -Dkernels=disabled \
      -Db_sanitize=address,undefined -Db_lundef=false
    ninja -C build-asan
    meson test -C build-asan --no-rebuild --print-errorlogs --num-processes 2 || status=$?
    # Windows hosts: sdm cross-built with MinGW-w64 (its dependencies from Debian's source
    # packages) and its tests run under wine64 against the fake driver as nvcuda.dll; the engine
    # host runs the SDM kernels archive the first build packed.
    results=(build build-tsan build-asan)
    if windows/build.sh build-windows; then
      WINEPREFIX=$PWD/build-windows/wineprefix SDM_TEST_KERNELS_ARCHIVE=$PWD/build/kernels/kernels.sdma \
        meson test -C build-windows --no-rebuild --print-errorlogs || status=$?
      results+=(build-windows)
    else
      echo "run.sh: the Windows build failed (above); its tests did not run" >&2
      status=1
    fi
    count_results "${results[@]}"
    exit $status
    ;;
  demo)
    install_missing
    # A release build, stripped (the project's default), in a folder of its own: the tests' build
    # keeps its type. A build-release made otherwise (by hand, an older install recipe) is left
    # as it is: demo never reconfigures a folder it did not make (the README's install recipe
    # builds in build-install).
    demo_options=(-Dbuildtype=release -Dstrip=true -Dtests=disabled -Dbench=disabled -Dexamples=auto)  # (tools/demo.sh runs examples/sdm_demo)
    if [ -f build-release/build.ninja ]; then
      differ=$(meson introspect build-release --buildoptions | python3 -c '
import json, sys
want = dict(arg[2:].split("=", 1) for arg in sys.argv[1:])
have = {o["name"]: str(o["value"]).lower() for o in json.load(sys.stdin)}
print(" ".join(f"{k}={have.get(k)} (demo: {v})" for k, v in want.items() if have.get(k) != v))' "${demo_options[@]}")
      if [ -n "$differ" ]; then
        echo "run.sh: build-release was not configured by ./run.sh demo ($differ); demo leaves it alone: remove or rename it to run the demo" >&2
        exit 1
      fi
    else
      meson setup build-release "${demo_options[@]}"
    fi
    ninja -C build-release
    exec ./tools/demo.sh build-release
    ;;
  *)
    echo "usage: ./run.sh demo | test" >&2
    exit 2
    ;;
esac
