package sdm_test

// The Go bindings through the fake CUDA driver (tests/fake_cuda): runtime, devices, archives,
// kernels, plans and launches. run_tests.sh sets $SDM_CUDA_DRIVER to the fake; TestMain sets its
// devices before any runtime reads them.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	sdm "github.com/sdm/sdm/bindings/go"
	"github.com/sdm/sdm/bindings/go/internal/rawabi"
)

const devices = "NVIDIA H200,9.0,232448,132,62914560;" +
	"NVIDIA A100-SXM4-80GB,8.0,166912,108,41943040;" +
	"NVIDIA GeForce RTX 4090,8.9,101376,128,75497472;" +
	"Tesla V100-SXM2-16GB,7.0,98304,80,6291456"

var repo, golden, corrupt, driver string

func TestMain(m *testing.M) {
	driver = os.Getenv("SDM_CUDA_DRIVER")
	if driver == "" {
		fmt.Fprintln(os.Stderr, "set SDM_CUDA_DRIVER to build/tests/fake_cuda/libcuda_fake.so (run_tests.sh does)")
		os.Exit(1)
	}
	// os.Setenv also sets the C environment, where the fake driver reads it at cuInit.
	os.Setenv("SDM_FAKE_CUDA_DEVICES", devices)
	os.Setenv("SDM_FAKE_CUDA_VERSION", "13000")
	os.Setenv("SDM_FAKE_CUDA_FAIL", "")
	os.Setenv("SDM_FAKE_CUDA_MISSING", "")
	wd, _ := os.Getwd()
	repo = filepath.Clean(filepath.Join(wd, "../.."))
	golden = filepath.Join(repo, "tests/golden/kernels.sdma")
	corrupt = filepath.Join(repo, "tests/golden/corrupt")
	os.Exit(m.Run())
}

// newRuntime is a runtime on the fake driver, without the embedded archive, its cache in a
// temporary directory, quiet; closed when the test ends.
func newRuntime(t *testing.T, opts *sdm.Options) *sdm.Runtime {
	t.Helper()
	if opts == nil {
		opts = &sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogOff}
	}
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	rt, err := sdm.NewRuntime(opts)
	if err != nil {
		t.Fatalf("a runtime on the fake driver: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

func mounted(t *testing.T) *sdm.Runtime {
	t.Helper()
	rt := newRuntime(t, nil)
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	return rt
}

// sdmError asserts that err is an *sdm.Error of status want whose message contains every piece.
func sdmError(t *testing.T, err error, want sdm.Status, pieces ...string) *sdm.Error {
	t.Helper()
	var e *sdm.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *sdm.Error with %v, got %v", want, err)
	}
	if e.Code != want || !errors.Is(err, want) {
		t.Fatalf("want %v, got %v", want, err)
	}
	for _, piece := range pieces {
		if !strings.Contains(e.Message, piece) {
			t.Errorf("%q lacks %q", e.Message, piece)
		}
	}
	return e
}

func TestVersionsAndNames(t *testing.T) {
	if err := sdm.CheckABI(); err != nil {
		t.Fatal(err)
	}
	if major, minor := sdm.ABIVersion(); major != 1 || minor < 1 {
		t.Errorf("ABI %d.%d", major, minor)
	}
	if sdm.Version() == "" {
		t.Error("no version string")
	}
	for status, name := range map[sdm.Status]string{
		sdm.OK: "SDM_OK", sdm.ErrNoDriver: "SDM_ERROR_NO_DRIVER", sdm.ErrInternal: "SDM_ERROR_INTERNAL", 4242: "SDM_ERROR_UNKNOWN",
	} {
		if status.String() != name {
			t.Errorf("%d is %q, want %q", int32(status), status.String(), name)
		}
	}
	if sdm.ClassA100.String() != "a100" || sdm.DeviceClass(77).String() != "unsupported" {
		t.Error("class names")
	}
	// errors.Is matches the status, not the message.
	err := error(&sdm.Error{Code: sdm.ErrIO, Message: "x"})
	if !errors.Is(err, sdm.ErrIO) || errors.Is(err, sdm.ErrNotFound) {
		t.Error("errors.Is on the status")
	}
	if err.Error() != "SDM_ERROR_IO: x" {
		t.Errorf("Error() is %q", err.Error())
	}
}

func TestLayoutsMatchTheHeader(t *testing.T) {
	// The numbers of tests/abi/layout.c (LP64), which capi/gen_abi.py also writes into rawabi.
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("layout.c pins LP64 x86_64 and aarch64 only")
	}
	want := rawabi.Pinned()
	got := rawabi.Layouts()
	for name, layout := range want {
		if got[name] != layout {
			t.Errorf("%s: cgo sees %+v, layout.c pins %+v", name, got[name], layout)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d structs checked, %d known", len(want), len(got))
	}
}

func TestStructSizeBelowTheMinimumIsRefused(t *testing.T) {
	status, message, untouched := rawabi.RuntimeParamsWithSize(8)
	if sdm.Status(status) != sdm.ErrInvalidArgument || !untouched {
		t.Errorf("sdm_runtime_params of 8 bytes: %v, out-parameter untouched: %v", sdm.Status(status), untouched)
	}
	if !strings.Contains(message, "sdm_runtime_params.struct_size is 8") || !strings.Contains(message, "sizeof(sdm_runtime_params)") {
		t.Errorf("message %q", message)
	}

	rt := newRuntime(t, nil)
	status, message, ordinal := rawabi.DeviceInfoWithSize(rt.Handle(), 0, 4)
	if sdm.Status(status) != sdm.ErrInvalidArgument || ordinal != 77 {
		t.Errorf("sdm_device_info of 4 bytes: %v, ordinal %d", sdm.Status(status), ordinal)
	}
	if !strings.Contains(message, "sdm_device_info.struct_size is 4") {
		t.Errorf("message %q", message)
	}
	sdmError(t, rt.LastError(), sdm.ErrInvalidArgument, "sdm_device_info.struct_size is 4")
	// The full size works.
	if status, message, ordinal := rawabi.DeviceInfoWithSize(rt.Handle(), 0, 312); status != 0 || ordinal != 0 {
		t.Errorf("full size: %v %q, ordinal %d", sdm.Status(status), message, ordinal)
	}
}

func TestDevicesOfTheFakeDriver(t *testing.T) {
	rt := newRuntime(t, nil)
	if version, err := rt.DriverVersion(); err != nil || version != 13000 {
		t.Fatalf("driver version %d, %v", version, err)
	}
	list, err := rt.Devices()
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 {
		t.Fatalf("%d devices", len(list))
	}
	h200 := list[0]
	want := sdm.DeviceInfo{
		Name: "NVIDIA H200", Ordinal: 0, CapabilityMajor: 9, CapabilityMinor: 0, Class: sdm.ClassModern, SMCount: 132,
		L2Bytes: 62914560, SmemOptinBytes: 232448, SmemCapBytes: h200.SmemCapBytes, SmemPerSMBytes: h200.SmemCapBytes + 1024,
		PDLAllowed: true, ClustersAllowed: true,
	}
	if h200 != want || h200.SmemCapBytes == 0 {
		t.Errorf("H200: %+v", h200)
	}
	if a100 := list[1]; a100.Name != "NVIDIA A100-SXM4-80GB" || a100.Class != sdm.ClassA100 || a100.PDLAllowed || a100.ClustersAllowed {
		t.Errorf("A100: %+v", a100)
	}
	if rtx := list[2]; rtx.Class != sdm.ClassRTX || !rtx.Untested {
		t.Errorf("RTX 4090: %+v", rtx)
	}
	if v100 := list[3]; v100.Class != sdm.ClassUnsupported || v100.SmemCapBytes != 0 {
		t.Errorf("V100: %+v", v100)
	}
	if class, err := rt.DeviceClass(1); err != nil || class != sdm.ClassA100 {
		t.Errorf("class of 1: %v, %v", class, err)
	}
	_, err = rt.DeviceClass(3)
	sdmError(t, err, sdm.ErrUnsupportedDevice, "Tesla V100-SXM2-16GB")
	_, err = rt.DeviceInfo(4)
	sdmError(t, err, sdm.ErrNoDevice)
	sdmError(t, rt.LastError(), sdm.ErrNoDevice)
}

func TestWithoutADriverArchivesStillWork(t *testing.T) {
	rt := newRuntime(t, &sdm.Options{CUDADriver: "/nonexistent/libcuda.so.1", NoEmbeddedArchive: true, LogLevel: sdm.LogOff})
	_, err := rt.DeviceCount()
	sdmError(t, err, sdm.ErrNoDriver, "/nonexistent/libcuda.so.1")
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
}

func TestMountTheGoldenArchive(t *testing.T) {
	rt := newRuntime(t, nil)
	if archives, err := rt.Archives(); err != nil || len(archives) != 0 {
		t.Fatalf("before mounting: %v, %v", archives, err)
	}
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	archives, err := rt.Archives()
	if err != nil || len(archives) != 1 {
		t.Fatalf("%v, %v", archives, err)
	}
	stat, _ := os.Stat(golden)
	want := sdm.ArchiveInfo{
		Label: golden, ContentVersion: "tests.1", SizeBytes: uint64(stat.Size()), EntryCount: 11, KernelCount: 2,
		KernelABIMajor: 1, KernelABIMinor: 2, FormatMajor: 1, FormatMinor: 0,
	}
	if archives[0] != want {
		t.Errorf("got  %+v\nwant %+v", archives[0], want)
	}
	_, err = rt.Archive(1)
	sdmError(t, err, sdm.ErrNotFound)

	bytes, _ := os.ReadFile(golden)
	if err := rt.MountMemory(bytes, "in-memory copy"); err != nil {
		t.Fatal(err)
	}
	if second, err := rt.Archive(1); err != nil || second.Label != "in-memory copy" {
		t.Errorf("%+v, %v", second, err)
	}
}

func TestTheKernelsOfTheGoldenArchive(t *testing.T) {
	rt := mounted(t)
	scale, err := rt.Kernel(0, "scale")
	if err != nil {
		t.Fatal(err)
	}
	info, err := scale.Info()
	if err != nil {
		t.Fatal(err)
	}
	// The H200 (9.0) gets a 9.0 cubin straight from the archive.
	want := sdm.KernelInfo{Name: "scale", Module: "kernels", Archive: golden, Signature: "ptr,f32,i32", Ordinal: 0,
		ImageKind: 1, ImageSM: 90, LoadedSM: 90, Source: 1}
	if info != want {
		t.Errorf("got  %+v\nwant %+v", info, want)
	}
	if function, err := scale.Function(); err != nil || function == nil {
		t.Errorf("function %v, %v", function, err)
	}
	axpy, err := rt.Kernel(0, "axpy")
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := axpy.Info(); info.Signature != "ptr,ptr,f32,i32" {
		t.Errorf("axpy: %+v", info)
	}
	onA100, err := rt.Kernel(1, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if info, _ := onA100.Info(); info.ImageSM != 80 {
		t.Errorf("A100: %+v", info)
	}
	_, err = rt.Kernel(0, "no_such_kernel")
	sdmError(t, err, sdm.ErrNotFound, "no_such_kernel")

	if err := rt.Preload(0); err != nil {
		t.Error(err)
	}
	if err := rt.Preload(1, "scale", "axpy"); err != nil {
		t.Error(err)
	}
	sdmError(t, rt.Preload(0, "no_such_kernel"), sdm.ErrNotFound)

	// Release drops the reference; a second release, and any later call, is refused.
	if err := axpy.Release(); err != nil {
		t.Error(err)
	}
	_, err = axpy.Info()
	sdmError(t, err, sdm.ErrInvalidArgument, "released")
	if err := onA100.Release(); err != nil {
		t.Error(err)
	}
	sdmError(t, onA100.Release(), sdm.ErrInvalidArgument)
}

func TestTheCacheMakesAWarmStart(t *testing.T) {
	// The golden cubins are too small to be cached decoded: with CUDA_FORCE_PTX_JIT=1 (read at mount) every kernel is
	// linked from PTX, and the second runtime reads the links back. Go runs tests one at a time.
	t.Setenv("CUDA_FORCE_PTX_JIT", "1")
	dir := t.TempDir()
	open := func() *sdm.Runtime {
		rt := newRuntime(t, &sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogOff, CacheDir: dir})
		if err := rt.MountFile(golden); err != nil {
			t.Fatal(err)
		}
		if err := rt.Preload(0); err != nil {
			t.Fatal(err)
		}
		return rt
	}
	cold, _ := open().CacheStats()
	if cold.Builds == 0 || cold.BytesWritten == 0 || cold.Hits != 0 {
		t.Errorf("cold: %+v", cold)
	}
	warm, _ := open().CacheStats()
	if warm.Hits == 0 || warm.Builds != 0 || warm.BytesWritten != 0 {
		t.Errorf("warm: %+v", warm)
	}
}

func TestTheSignatureCheck(t *testing.T) {
	rt := mounted(t)
	if _, err := rt.KernelChecked(0, "scale", "ptr, f32, i32"); err != nil {
		t.Error(err)
	}
	_, err := rt.KernelChecked(0, "scale", "ptr,i32")
	sdmError(t, err, sdm.ErrMismatch, "ptr,f32,i32", "ptr,i32")
}

func TestACorruptArchiveFileIsAnErrorNamingTheFile(t *testing.T) {
	rt := newRuntime(t, nil)
	// Damage to the header, index or framing is found at mount; damage inside one payload only
	// when that image loads (each file's .expect holds the words its error must contain).
	for name, status := range map[string]sdm.Status{
		"header-flip": sdm.ErrArchiveCorrupt, "index-flip": sdm.ErrArchiveCorrupt, "truncated": sdm.ErrArchiveCorrupt,
		"trailing-bytes": sdm.ErrArchiveCorrupt, "text-mode": sdm.ErrArchiveCorrupt, "duplicate": sdm.ErrArchiveCorrupt,
		"newer-major": sdm.ErrArchiveUnsupported, "unknown-feature": sdm.ErrArchiveUnsupported,
	} {
		path := filepath.Join(corrupt, name+".sdma")
		expect, err := os.ReadFile(filepath.Join(corrupt, name+".expect"))
		if err != nil {
			t.Fatal(err)
		}
		e := sdmError(t, rt.MountFile(path), status, path, strings.TrimSpace(string(expect)))
		if e.Native != 0 {
			t.Errorf("%s: native %d", name, e.Native)
		}
	}
	if archives, _ := rt.Archives(); len(archives) != 0 {
		t.Errorf("damaged archives were mounted: %+v", archives)
	}
	sdmError(t, rt.MountFile(filepath.Join(repo, "tests/golden/no-such-archive.sdma")), sdm.ErrIO, "no-such-archive.sdma")
	bytes, _ := os.ReadFile(filepath.Join(corrupt, "header-flip.sdma"))
	sdmError(t, rt.MountMemory(bytes, "my-label"), sdm.ErrArchiveCorrupt, "my-label")
}

func TestAKernelABIMajorTheArchiveDoesNotDeclareIsRefused(t *testing.T) {
	rt := newRuntime(t, &sdm.Options{NoEmbeddedArchive: true, LogLevel: sdm.LogOff, KernelABIMajor: 2})
	sdmError(t, rt.MountFile(golden), sdm.ErrMismatch)
}

// checking is a quiet runtime on the fake driver of signature policy policy trusting keys; nil
// (and the test skipped) where libsdm was built without libsodium, which refuses warn and require.
func checking(t *testing.T, policy sdm.SignaturePolicy, keys [][32]byte, log func(sdm.LogLevel, string)) *sdm.Runtime {
	t.Helper()
	rt, err := sdm.NewRuntime(&sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogWarn, Log: log,
		CacheDir: t.TempDir(), SignaturePolicy: policy, TrustedKeys: keys})
	var e *sdm.Error
	if errors.As(err, &e) && e.Code == sdm.ErrUnsupported && strings.Contains(e.Message, "libsodium") {
		t.Skip(e.Message)
	}
	if err != nil {
		t.Fatalf("a runtime of signature policy %d: %v", policy, err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return rt
}

func TestTheSignaturePolicyRefusesAnUnsignedArchive(t *testing.T) {
	quiet := func(sdm.LogLevel, string) {}
	rt := checking(t, sdm.SignaturesRequire, [][32]byte{}, quiet)
	// The golden archive is not signed.
	sdmError(t, rt.MountFile(golden), sdm.ErrUntrusted, golden, "is not signed", "it trusts no key")
	if sdm.ErrUntrusted.String() != "SDM_ERROR_UNTRUSTED" {
		t.Errorf("ErrUntrusted is %q", sdm.ErrUntrusted.String())
	}
	bytes, _ := os.ReadFile(golden)
	sdmError(t, rt.MountMemory(bytes, "golden copy"), sdm.ErrUntrusted, "archive golden copy is not signed")
	if archives, _ := rt.Archives(); len(archives) != 0 {
		t.Errorf("an unsigned archive was mounted: %+v", archives)
	}

	// The keys given are the ones trusted: the refusal names each by its id (the first 8 bytes of
	// BLAKE2b-256 of "sdm key id 1" and the key, docs/SIGNING.md).
	var key [32]byte
	for i := range key {
		key[i] = 1
	}
	sdmError(t, checking(t, sdm.SignaturesRequire, [][32]byte{key}, quiet).MountFile(golden), sdm.ErrUntrusted,
		"it trusts 3bf080b61db0f86b")

	// Warn mounts it and says why in the log.
	var mu sync.Mutex
	var lines []string
	rt = checking(t, sdm.SignaturesWarn, [][32]byte{}, func(_ sdm.LogLevel, message string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, message)
	})
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(lines, "\n"), "is not signed") {
		t.Errorf("the log does not say why: %q", lines)
	}
}

func TestAnUnknownSignaturePolicyAndTooManyKeysAreRefused(t *testing.T) {
	_, err := sdm.NewRuntime(&sdm.Options{NoEmbeddedArchive: true, LogLevel: sdm.LogOff, SignaturePolicy: 7})
	sdmError(t, err, sdm.ErrInvalidArgument, "signature_policy 7")
	// Checked whatever the policy, so also in a libsdm built without libsodium.
	_, err = sdm.NewRuntime(&sdm.Options{NoEmbeddedArchive: true, LogLevel: sdm.LogOff, SignaturePolicy: sdm.SignaturesOff,
		TrustedKeys: make([][32]byte, 257)})
	sdmError(t, err, sdm.ErrInvalidArgument, "trusted_key_count is 257")
	// Off mounts an unsigned archive, as before ABI 1.2.
	if err := checking(t, sdm.SignaturesOff, nil, nil).MountFile(golden); err != nil {
		t.Error(err)
	}
}

func TestPlanSelect(t *testing.T) {
	rt := mounted(t)
	scale, err := rt.Kernel(0, "scale")
	if err != nil {
		t.Fatal(err)
	}
	plan, err := scale.Plan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	// A selected plan names every dimension (ABI 1.3: y and z of 1).
	want := sdm.Plan{Flags: sdm.PlanPDL, Grid: 1056, Block: 256, Cluster: [3]uint32{1, 1, 1}, BlocksPerSM: 8, Occupancy: 8, Rule: 0,
		GridY: 1, GridZ: 1, BlockY: 1, BlockZ: 1}
	if plan != want || !plan.PDL() {
		t.Errorf("got  %+v\nwant %+v", plan, want)
	}
	// Past a quarter of L2: clusters of two.
	if big, err := scale.Plan(1 << 25); err != nil || big.Rule != 1 || big.Cluster != [3]uint32{2, 1, 1} || big.Block != 1024 || big.Grid != 32768 {
		t.Errorf("big: %+v, %v", big, err)
	}
	onA100, _ := rt.Kernel(1, "scale")
	if p, err := onA100.Plan(1 << 20); err != nil || p.Grid != 8192 || p.Flags != 0 || p.Occupancy != 16 {
		t.Errorf("A100: %+v, %v", p, err)
	}
	axpy, _ := rt.Kernel(0, "axpy")
	_, err = axpy.Plan(1)
	sdmError(t, err, sdm.ErrNotFound, "kernel axpy has no launch plans")
}

func TestLaunchWithRawDevicePointers(t *testing.T) {
	rt := mounted(t)
	scale, _ := rt.Kernel(0, "scale")
	plan, err := scale.Plan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	y := sdm.DevicePtr(0x7f0000000000) // the fake driver runs nothing
	if err := scale.Launch(plan, nil, y, float32(2), int32(1<<20)); err != nil {
		t.Fatal(err)
	}
	sdmError(t, scale.Launch(plan, nil, y, float32(2)), sdm.ErrInvalidArgument, "kernel scale takes 3 argument(s) (ptr,f32,i32), not 2")
	sdmError(t, scale.Launch(plan, nil, y, float32(2), 7), sdm.ErrInvalidArgument, "argument 2: int is not", "int is not fixed-size")
	// A block past the device's limit: sdm refuses it before the driver (ABI 1.3), naming the dimension.
	bad := plan
	bad.Block = 2048
	sdmError(t, scale.Launch(bad, nil, y, float32(2), int32(1<<20)), sdm.ErrInvalidArgument, "block x of 2048 (1..1024)")
	// A plan the driver refuses (more dynamic shared memory than the H200's opt-in 232,448 B): the
	// CUresult comes along.
	bad = plan
	bad.SmemBytes = 300000
	e := sdmError(t, scale.Launch(bad, nil, y, float32(2), int32(1<<20)), sdm.ErrDriver, "CUDA_ERROR_INVALID_VALUE")
	if e.Native != 1 {
		t.Errorf("native %d, want CUDA_ERROR_INVALID_VALUE (1)", e.Native)
	}
}

func TestTheLogFunctionReceivesMessages(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	var badLevels []sdm.LogLevel
	rt := newRuntime(t, &sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogDebug,
		Log: func(level sdm.LogLevel, message string) {
			mu.Lock()
			defer mu.Unlock()
			if level < sdm.LogError || level > sdm.LogDebug {
				badLevels = append(badLevels, level)
			}
			lines = append(lines, message)
		}})
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Kernel(0, "scale"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(strings.Join(lines, "\n"), "kernels.sdma") {
		t.Errorf("the log does not name the archive: %q", lines)
	}
	if len(badLevels) != 0 {
		t.Errorf("levels outside error..debug: %v", badLevels)
	}
}

func TestAPanickingLogFunctionDoesNotUnwindIntoLibsdm(t *testing.T) {
	rt := newRuntime(t, &sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogDebug,
		Log: func(sdm.LogLevel, string) { panic("a broken log function") }})
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Kernel(0, "scale"); err != nil {
		t.Fatal(err)
	}
}

func TestReloadKeepsTheOldVersionWhenTheNewOneIsDamaged(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kernels.sdma")
	copyFile := func(from string) {
		bytes, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(file, bytes, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	copyFile(golden)
	rt := newRuntime(t, nil)
	if err := rt.MountFile(file); err != nil {
		t.Fatal(err)
	}
	kernel, err := rt.Kernel(0, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rt.PollArchives(); err != nil || n != 0 {
		t.Errorf("poll without a change: %d, %v", n, err)
	}
	copyFile(filepath.Join(corrupt, "header-flip.sdma"))
	_, err = rt.Reload()
	sdmError(t, err, sdm.ErrArchiveCorrupt, file)
	if info, err := kernel.Info(); err != nil || info.Name != "scale" {
		t.Errorf("the old version serves: %+v, %v", info, err)
	}
	copyFile(golden)
	if _, err := rt.Reload(); err != nil {
		t.Fatal(err)
	}
	if err := kernel.Release(); err != nil {
		t.Error(err)
	}
	fresh, err := rt.Kernel(0, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Plan(1 << 20); err != nil {
		t.Error(err)
	}
}

func TestARuntimeIsSharedBetweenGoroutines(t *testing.T) {
	rt := mounted(t)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				ordinal := (g + i) % 2
				k, err := rt.Kernel(ordinal, []string{"scale", "axpy"}[i%2])
				if err == nil {
					var info sdm.KernelInfo
					if info, err = k.Info(); err == nil && info.Ordinal != ordinal {
						err = fmt.Errorf("ordinal %d, want %d", info.Ordinal, ordinal)
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCloseMakesLaterCallsFail(t *testing.T) {
	rt, err := sdm.NewRuntime(&sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogOff, CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	kernel, err := rt.Kernel(0, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	sdmError(t, rt.Close(), sdm.ErrInvalidArgument, "closed")
	_, err = rt.DeviceCount()
	sdmError(t, err, sdm.ErrInvalidArgument, "closed")
	_, err = kernel.Plan(1)
	sdmError(t, err, sdm.ErrInvalidArgument, "closed")
}

func TestLaunchDoesNotAllocate(t *testing.T) {
	rt := mounted(t)
	scale, _ := rt.Kernel(0, "scale")
	plan, err := scale.Plan(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	// Variables, not constants, which the compiler would box in static memory.
	y, factor, n := sdm.DevicePtr(0x7f0000000000), float32(2), int32(1<<20)
	allocs := testing.AllocsPerRun(1000, func() {
		if err = scale.Launch(plan, nil, y, factor, n); err != nil {
			panic(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v Go allocations per Launch, want 0", allocs)
	}
}

func TestConcurrentLaunchesOfOneKernel(t *testing.T) {
	rt := mounted(t)
	scale, _ := rt.Kernel(0, "scale")
	plan, _ := scale.Plan(1 << 20)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				// Now and then the f32 as its bytes, which take another path to the launch memory.
				var factor interface{} = float32(g)
				if i%10 == g {
					factor = sdm.RawArg(make([]byte, 4))
				}
				if err := scale.Launch(plan, nil, sdm.DevicePtr(0x7f0000000000), factor, int32(i)); err != nil {
					errs <- err
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// logSink records log lines. Its log method refers to the sink only, so that a runtime logging to
// it can become unreachable.
type logSink struct {
	mu    sync.Mutex
	lines []string
}

func (s *logSink) log(_ sdm.LogLevel, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, message)
}

func (s *logSink) has(piece string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Contains(strings.Join(s.lines, "\n"), piece)
}

// collectUntil runs the garbage collector until a line containing piece was logged, for up to
// five seconds: finalizers run on a goroutine of their own after a collection, an object pointed
// to by another's finalizer only in a later one.
func (s *logSink) collectUntil(piece string) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		runtime.GC()
		if s.has(piece) {
			return true
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func TestAnUnclosedRuntimeIsDestroyedByItsFinalizer(t *testing.T) {
	sink := &logSink{}
	func() {
		rt, err := sdm.NewRuntime(&sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogDebug,
			Log: sink.log, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.MountFile(golden); err != nil {
			t.Fatal(err)
		}
		// The Kernel keeps the Runtime reachable until its own finalizer ran.
		if _, err := rt.Kernel(0, "scale"); err != nil {
			t.Fatal(err)
		}
	}()
	if !sink.collectUntil("unloaded module") { // (its module, on the module path a runtime of primary contexts takes)
		t.Errorf("the runtime was not destroyed: %q", sink.lines)
	}
}

func TestAnUnreleasedKernelIsReleasedByItsFinalizer(t *testing.T) {
	file := filepath.Join(t.TempDir(), "kernels.sdma")
	// A new file in the old one's place: writing over the mapped one would change what is mounted.
	replaceFile := func(from string) {
		bytes, err := os.ReadFile(from)
		if err == nil {
			err = os.WriteFile(file+".new", bytes, 0o644)
		}
		if err == nil {
			err = os.Rename(file+".new", file)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	replaceFile(golden)
	sink := &logSink{}
	rt := newRuntime(t, &sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogInfo, Log: sink.log})
	if err := rt.MountFile(file); err != nil {
		t.Fatal(err)
	}
	kernel, err := rt.Kernel(0, "scale")
	if err != nil {
		t.Fatal(err)
	}
	// Other bytes, the same kernels: the reload replaces the archive, and its old module unloads
	// once no Kernel holds it.
	replaceFile(filepath.Join(repo, "tests/golden/kernels-stored.sdma"))
	if n, err := rt.Reload(); err != nil || n != 1 {
		t.Fatalf("reload: %d, %v", n, err)
	}
	const unloaded = "unloaded module kernels of a replaced archive"
	runtime.GC()
	if sink.has(unloaded) {
		t.Fatal("the old module unloaded while a Kernel held it")
	}
	runtime.KeepAlive(kernel)
	if !sink.collectUntil(unloaded) {
		t.Errorf("the old module stayed loaded: %q", sink.lines)
	}
}

func TestTheFinalizersLeaveClosedAndReleasedObjectsAlone(t *testing.T) {
	for i := 0; i < 20; i++ {
		rt, err := sdm.NewRuntime(&sdm.Options{CUDADriver: driver, NoEmbeddedArchive: true, LogLevel: sdm.LogOff, CacheDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := rt.MountFile(golden); err != nil {
			t.Fatal(err)
		}
		released, _ := rt.Kernel(0, "scale")
		launched, _ := rt.Kernel(0, "scale")
		plan, _ := launched.Plan(1 << 20)
		if err := launched.Launch(plan, nil, sdm.DevicePtr(0x7f0000000000), float32(2), int32(1<<20)); err != nil {
			t.Fatal(err)
		}
		if err := released.Release(); err != nil {
			t.Fatal(err)
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// A double free or a release after the runtime's destruction would crash here.
	for i := 0; i < 3; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}
