package sdm_test

// ABI 1.3 through the Go bindings and the fake CUDA driver, on a user's kernels as `sdm import`
// archives them (tests/data/launch.sm_90.cubin, from launch.cu): 3-D and cooperative launches,
// priorities and launch attributes, plans for kernels without rules, module globals, C++ kernel
// names, derived signatures and the kernel listing. run_tests.sh sets $SDM_TOOL to the build's sdm
// tool. The tests run one at a time (none is parallel), so the fake's last launch is theirs.

import (
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
	"unsafe"

	sdm "github.com/sdm/sdm/bindings/go"
	"github.com/sdm/sdm/bindings/go/internal/fakecuda"
)

const (
	fillFloat = "_ZN8sdm_test4fillIfLi256EEEvPT_S1_"
	fillInt   = "_ZN8sdm_test4fillIiLi256EEEvPT_S1_"
	reduceInt = "_ZN8sdm_test6reduceIiEEvPKT_PS1_i"

	attributeCooperative   = 2  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE
	attributePriority      = 8  // CU_LAUNCH_ATTRIBUTE_PRIORITY
	attributeMemSyncDomain = 10 // CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN
)

// launchArchive is tests/data/launch.sm_90.cubin as `sdm import` archives it, in the test's
// temporary directory.
func launchArchive(t *testing.T) string {
	t.Helper()
	return importedArchive(t, "launch.sm_90.cubin", "")
}

// importedArchive is tests/data/cubin as `sdm import` archives it, with manifest (TOML text) when
// it is not "", in the test's temporary directory.
func importedArchive(t *testing.T, cubin, manifest string) string {
	t.Helper()
	tool := os.Getenv("SDM_TOOL")
	if tool == "" {
		t.Fatal("set SDM_TOOL to build/tools/sdm (run_tests.sh does)")
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "imported.sdma")
	args := []string{"import", filepath.Join(repo, "tests/data", cubin), "-o", archive, "-q"}
	if manifest != "" {
		path := filepath.Join(dir, "manifest.toml")
		if err := os.WriteFile(path, []byte(manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-m", path)
	}
	out, err := exec.Command(tool, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("sdm import: %v: %s", err, out)
	}
	return archive
}

// withLaunch is a runtime on the fake driver with the launch archive mounted.
func withLaunch(t *testing.T) *sdm.Runtime {
	t.Helper()
	rt := newRuntime(t, nil)
	if err := rt.MountFile(launchArchive(t)); err != nil {
		t.Fatal(err)
	}
	return rt
}

func kernel(t *testing.T, rt *sdm.Runtime, ordinal int, name string) *sdm.Kernel {
	t.Helper()
	k, err := rt.Kernel(ordinal, name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return k
}

func lastLaunch(t *testing.T) fakecuda.Launch {
	t.Helper()
	l, err := fakecuda.LastLaunch(driver)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func launches(t *testing.T) int64 {
	t.Helper()
	n, err := fakecuda.Calls(driver, "cuLaunchKernelEx")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestPlansInThreeDimensions(t *testing.T) {
	p := sdm.NewPlan([3]uint32{7, 7, 1}, [3]uint32{16, 16, 1})
	want := sdm.Plan{Grid: 7, GridY: 7, GridZ: 1, Block: 16, BlockY: 16, BlockZ: 1, Cluster: [3]uint32{1, 1, 1}, Rule: -1}
	if p != want {
		t.Errorf("got  %+v\nwant %+v", p, want)
	}
	// A plan of the older fields alone: y and z of 0 read as 1.
	flat := sdm.Plan{Grid: 3, Block: 64}
	if flat.GridDims() != [3]uint32{3, 1, 1} || flat.BlockDims() != [3]uint32{64, 1, 1} {
		t.Errorf("dims %v %v", flat.GridDims(), flat.BlockDims())
	}
	c := p.WithCooperative(true)
	if !c.Cooperative() || c.Flags != sdm.PlanCooperative || c.PDL() || p.Cooperative() || c.WithCooperative(false).Flags != 0 {
		t.Errorf("cooperative flags: %+v", c)
	}
}

func TestAThreeDimensionalLaunchReachesTheDriver(t *testing.T) {
	rt := withLaunch(t)
	matmul, err := rt.KernelChecked(0, "matmul_tiled", "ptr,ptr,ptr,i32")
	if err != nil {
		t.Fatal(err)
	}
	a := sdm.DevicePtr(0x7f0000000000) // the fake driver runs nothing
	if err := matmul.Launch(sdm.NewPlan([3]uint32{7, 7, 1}, [3]uint32{16, 16, 1}), nil, a, a, a, int32(100)); err != nil {
		t.Fatal(err)
	}
	if l := lastLaunch(t); l.Grid != [3]uint32{7, 7, 1} || l.Block != [3]uint32{16, 16, 1} || len(l.AttributeIDs) != 0 {
		t.Errorf("launched %+v", l)
	}
	// Three dimensions everywhere, a cluster in y, a priority.
	p := sdm.NewPlan([3]uint32{4, 6, 3}, [3]uint32{8, 4, 2})
	p.Cluster = [3]uint32{1, 2, 1}
	p.Priority = -3
	if err := matmul.Launch(p, nil, a, a, a, int32(100)); err != nil {
		t.Fatal(err)
	}
	l := lastLaunch(t)
	if l.Grid != [3]uint32{4, 6, 3} || l.Block != [3]uint32{8, 4, 2} || l.Cluster != [3]uint32{1, 2, 1} || l.Priority != -3 || l.Cooperative != 0 {
		t.Errorf("launched %+v", l)
	}
	// Out of range: refused before the driver, naming the dimension and its limit.
	before := launches(t)
	for why, plan := range map[string]sdm.Plan{
		"grid y of 65536 (1..65535)":                   sdm.NewPlan([3]uint32{1, 65536, 1}, [3]uint32{16, 1, 1}),
		"block z of 65 (1..64)":                        sdm.NewPlan([3]uint32{1, 1, 1}, [3]uint32{1, 1, 65}),
		"block 32x32x2 of 2048 threads (at most 1024)": sdm.NewPlan([3]uint32{1, 1, 1}, [3]uint32{32, 32, 2}),
	} {
		sdmError(t, matmul.Launch(plan, nil, a, a, a, int32(1)), sdm.ErrInvalidArgument, "kernel matmul_tiled cannot launch with", why)
	}
	p = sdm.NewPlan([3]uint32{1, 1, 1}, [3]uint32{16, 1, 1})
	p.Priority = 3 // the fake's range is -5 (greatest) to 0
	sdmError(t, matmul.Launch(p, nil, a, a, a, int32(1)), sdm.ErrInvalidArgument, "launch priority 3 is outside the context's range -5 (greatest) to 0")
	if after := launches(t); after != before {
		t.Errorf("%d refused launches reached the driver", after-before)
	}
}

func TestACooperativeLaunchFitsOrIsRefusedWithTheFigures(t *testing.T) {
	rt := withLaunch(t)
	gridSum := kernel(t, rt, 0, "grid_sum")
	partial, total := sdm.DevicePtr(0x7f0000000000), sdm.DevicePtr(0x7f0000010000)
	// The fake's model: 8 blocks of 256 threads per SM, 132 SMs.
	fits := sdm.NewPlan([3]uint32{132 * 8, 1, 1}, [3]uint32{256, 1, 1}).WithCooperative(true)
	if err := gridSum.Launch(fits, nil, partial, total); err != nil {
		t.Fatal(err)
	}
	if l := lastLaunch(t); l.Cooperative != 1 || l.Grid[0] != 1056 || !reflect.DeepEqual(l.AttributeIDs, []int32{attributeCooperative}) {
		t.Errorf("launched %+v", l)
	}
	before := launches(t)
	tooLarge := fits
	tooLarge.Grid++
	sdmError(t, gridSum.Launch(tooLarge, nil, partial, total), sdm.ErrInvalidArgument,
		"kernel grid_sum cannot launch cooperatively with grid 1057, block 256",
		"its 1057 blocks cannot all be resident on device 0 (NVIDIA H200)",
		"8 block(s) of 256 threads and 0 B of dynamic shared memory per SM x 132 SMs = 1056",
		"launch at most 1056 blocks")
	// In two dimensions the product counts.
	square := sdm.NewPlan([3]uint32{33, 33, 1}, [3]uint32{256, 1, 1}).WithCooperative(true)
	sdmError(t, gridSum.Launch(square, nil, partial, total), sdm.ErrInvalidArgument, "its 1089 blocks cannot all be resident")
	if after := launches(t); after != before {
		t.Errorf("%d refused launches reached the driver", after-before)
	}
	// The same grid without the flag is the host's business: it launches.
	if err := gridSum.Launch(tooLarge.WithCooperative(false), nil, partial, total); err != nil {
		t.Fatal(err)
	}
}

func TestLaunchAttributesFollowSdmsOwn(t *testing.T) {
	rt := withLaunch(t)
	k := kernel(t, rt, 0, "scale_by_table")
	a := sdm.DevicePtr(0x7f0000000000)
	p := sdm.NewPlan([3]uint32{2, 1, 1}, [3]uint32{32, 1, 1})
	p.Priority = -1
	if size, align := unsafe.Sizeof(sdm.LaunchAttribute{}), unsafe.Alignof(sdm.LaunchAttribute{}); size != 72 || align != 8 {
		t.Errorf("LaunchAttribute: %d bytes aligned to %d, not CUlaunchAttribute's 72 and 8", size, align)
	}
	domain := sdm.IntLaunchAttribute(attributeMemSyncDomain, 1) // CU_LAUNCH_MEM_SYNC_DOMAIN_REMOTE
	if err := k.LaunchWithAttributes(p, nil, []sdm.LaunchAttribute{domain}, a, a, int32(1)); err != nil {
		t.Fatal(err)
	}
	if l := lastLaunch(t); !reflect.DeepEqual(l.AttributeIDs, []int32{attributePriority, attributeMemSyncDomain}) {
		t.Errorf("attributes %v", l.AttributeIDs)
	}
	if err := k.LaunchWithAttributes(p, nil, nil, a, a, int32(1)); err != nil {
		t.Fatal(err)
	}
	if l := lastLaunch(t); len(l.AttributeIDs) != 1 {
		t.Errorf("attributes %v", l.AttributeIDs)
	}
	cooperative := sdm.IntLaunchAttribute(attributeCooperative, 1)
	sdmError(t, k.LaunchWithAttributes(p, nil, []sdm.LaunchAttribute{domain, cooperative}, a, a, int32(1)), sdm.ErrInvalidArgument,
		"launch attribute 2 in sdm_launch_attributes is one sdm_plan sets")
	many := make([]sdm.LaunchAttribute, 17)
	for i := range many {
		many[i] = domain
	}
	sdmError(t, k.LaunchWithAttributes(p, nil, many, a, a, int32(1)), sdm.ErrInvalidArgument, "at most 16")
}

func TestAPlanForElements(t *testing.T) {
	rt := withLaunch(t)
	k := kernel(t, rt, 0, "scale_by_table")
	p, err := k.PlanForElements(1000000, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The fake's suggestion: the largest block of the most resident threads; ceil(1000000 / 1024) blocks.
	if p.Block != 1024 || p.Grid != 977 || p.GridDims() != [3]uint32{977, 1, 1} || p.BlockDims() != [3]uint32{1024, 1, 1} ||
		p.GridY != 1 || p.BlockZ != 1 || p.Rule != -1 || p.Occupancy != 2 {
		t.Errorf("plan %+v", p)
	}
	a := sdm.DevicePtr(0x7f0000000000)
	if err := k.Launch(p, nil, a, a, int32(1000000)); err != nil {
		t.Fatal(err)
	}
	if l := lastLaunch(t); l.Grid != [3]uint32{977, 1, 1} || l.Block != [3]uint32{1024, 1, 1} {
		t.Errorf("launched %+v", l)
	}
	_, err = k.PlanForElements(0, 0)
	sdmError(t, err, sdm.ErrInvalidArgument, "a plan for 0 elements")
	_, err = k.PlanForElements(1<<62, 0)
	sdmError(t, err, sdm.ErrInvalidArgument, "blocks, over the grid's 2147483647 in x")
	_, err = k.PlanForElements(10, 300000)
	sdmError(t, err, sdm.ErrInvalidArgument, "300000 B of dynamic shared memory per block, over the 232448 B")
}

func TestAttributesAreTheDrivers(t *testing.T) {
	rt := withLaunch(t)
	k := kernel(t, rt, 0, "scale_by_table")
	a, err := k.Attributes()
	if err != nil {
		t.Fatal(err)
	}
	// The fake's fixed answers (tests/fake_cuda/fake_cuda.cpp), each distinct.
	want := sdm.KernelAttributes{MaxThreadsPerBlock: 1024, ConstSizeBytes: 136, LocalSizeBytes: 24, NumRegs: 32, PTXVersion: 90,
		BinaryVersion: 90, CacheModeCA: 1, MaxDynamicSharedSizeBytes: 49152, PreferredSharedMemoryCarveout: -1, HasCluster: true,
		RequiredClusterWidth: 2, RequiredClusterHeight: 3, RequiredClusterDepth: 4, NonPortableClusterSizeAllowed: 5,
		ClusterSchedulingPolicyPreference: 6}
	if a != want {
		t.Errorf("attributes %+v, want %+v", a, want)
	}
}

func TestSettingsAreRefusedPastTheLimitAndSurviveAReload(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "launch.sdma")
	importArchive := func(to string, extra ...string) {
		args := append([]string{"import", filepath.Join(repo, "tests/data/launch.sm_90.cubin"), "-o", to, "-q"}, extra...)
		if out, err := exec.Command(os.Getenv("SDM_TOOL"), args...).CombinedOutput(); err != nil {
			t.Fatalf("sdm import: %v: %s", err, out)
		}
	}
	importArchive(path)
	rt := newRuntime(t, nil)
	if err := rt.MountFile(path); err != nil {
		t.Fatal(err)
	}
	old := kernel(t, rt, 0, "scale_by_table")
	sets := func() int64 {
		n, err := fakecuda.Calls(driver, "cuFuncSetAttribute")
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := sets()
	if err := old.Set(sdm.SettingMaxDynamicSharedBytes, 65536); err != nil {
		t.Fatal(err)
	}
	if err := old.Set(sdm.SettingPreferredCarveout, 25); err != nil {
		t.Fatal(err)
	}
	sdmError(t, old.Set(sdm.SettingMaxDynamicSharedBytes, 232449), sdm.ErrInvalidArgument, "232449 B is outside 0 .. 232448 B")
	sdmError(t, old.Set(sdm.SettingPreferredCarveout, 101), sdm.ErrInvalidArgument, "carveout of 101")
	if n := sets(); n != before+2 {
		t.Errorf("%d cuFuncSetAttribute calls, want 2", n-before)
	}
	importArchive(filepath.Join(dir, "incoming.sdma"), "--archive-version", "2")
	if err := os.Rename(filepath.Join(dir, "incoming.sdma"), path); err != nil {
		t.Fatal(err)
	}
	if n, err := rt.Reload(); err != nil || n != 1 {
		t.Fatalf("reloaded %d, %v", n, err)
	}
	before = sets()
	fresh := kernel(t, rt, 0, "scale_by_table")
	if n := sets(); n != before+2 {
		t.Errorf("%d cuFuncSetAttribute calls at the fetch after the reload, want 2", n-before)
	}
	a, err := fresh.Attributes()
	if err != nil || a.MaxDynamicSharedSizeBytes != 65536 || a.PreferredSharedMemoryCarveout != 25 {
		t.Errorf("after the reload: %+v, %v", a, err)
	}
}

func TestOccupancyIsTheDrivers(t *testing.T) {
	rt := withLaunch(t)
	k := kernel(t, rt, 0, "scale_by_table")
	if n, err := k.MaxActiveBlocks(256, 0); err != nil || n != 8 {
		t.Errorf("256 threads: %d blocks, %v", n, err)
	}
	if n, err := k.MaxActiveBlocks(1024, 100000); err != nil || n != 2 {
		t.Errorf("1024 threads, 100000 B: %d blocks, %v", n, err)
	}
	if block, grid, err := k.MaxPotentialBlockSize(0, 0); err != nil || block != 1024 || grid != 264 {
		t.Errorf("suggested %d threads, %d blocks, %v", block, grid, err)
	}
	_, err := k.MaxActiveBlocks(0, 0)
	sdmError(t, err, sdm.ErrInvalidArgument, "a block of 0 threads")
}

func float32Bytes(values []float32) []byte {
	out := make([]byte, 4*len(values))
	for i, v := range values {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

func TestModuleGlobalsRoundTrip(t *testing.T) {
	rt := withLaunch(t)
	k := kernel(t, rt, 0, "scale_by_table")
	address, size, err := k.Global("coefficients")
	if err != nil || address == 0 || size != 64 { // __constant__ float coefficients[16]
		t.Fatalf("coefficients: %#x, %d bytes, %v", address, size, err)
	}
	if _, size, err := k.Global("launches"); err != nil || size != 4 { // __device__ unsigned launches
		t.Errorf("launches: %d bytes, %v", size, err)
	}
	table := make([]float32, 16)
	for i := range table {
		table[i] = float32(i) * 0.5
	}
	if err := k.GlobalWrite("coefficients", 0, float32Bytes(table)); err != nil {
		t.Fatal(err)
	}
	back := make([]byte, 64)
	if err := k.GlobalRead("coefficients", 0, back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, float32Bytes(table)) {
		t.Errorf("read back %v", back)
	}
	last := make([]byte, 4)
	if err := k.GlobalReadOnStream("coefficients", 60, last, nil); err != nil || math.Float32frombits(binary.LittleEndian.Uint32(last)) != 7.5 {
		t.Errorf("the last element: %v, %v", last, err)
	}
	if err := k.GlobalWriteOnStream("launches", 0, []byte{41, 0, 0, 0}, nil); err != nil {
		t.Fatal(err)
	}
	count := make([]byte, 4)
	if err := k.GlobalRead("launches", 0, count); err != nil || binary.LittleEndian.Uint32(count) != 41 {
		t.Errorf("launches: %v, %v", count, err)
	}
	// The module's globals through another of its kernels.
	if other, _, err := kernel(t, rt, 0, "grid_sum").Global("coefficients"); err != nil || other != address {
		t.Errorf("through grid_sum: %#x, %v", other, err)
	}
	_, _, err = k.Global("coefficient")
	sdmError(t, err, sdm.ErrNotFound, "(as loaded for kernel scale_by_table) defines no global variable coefficient")
	_, _, err = k.Global("grid_sum")
	sdmError(t, err, sdm.ErrInvalidArgument, "grid_sum is a kernel of module launch, not a global variable")
	sdmError(t, k.GlobalWrite("coefficients", 60, make([]byte, 8)), sdm.ErrInvalidArgument,
		"global coefficients of module launch is 64 bytes: a copy of 8 bytes at offset 60 runs past it")
	sdmError(t, k.GlobalRead("coefficients", math.MaxUint64, last), sdm.ErrInvalidArgument)
	if err := k.Release(); err != nil {
		t.Fatal(err)
	}
	_, _, err = k.Global("coefficients")
	sdmError(t, err, sdm.ErrInvalidArgument, "the sdm Kernel is released")
}

func TestCxxNamesFetchKernels(t *testing.T) {
	rt := withLaunch(t)
	for asked, want := range map[string]string{
		"void sdm_test::fill<float, 256>(float*, float)": fillFloat, // c++filt's line
		"sdm_test::fill<float, 256>":                     fillFloat, // a CuPy name expression
		"  fill < float , 256 > ":                        fillFloat,
		"fill<int, 256>":                                 fillInt,
		"sdm_test::reduce<int>(int const*, int*, int)":   reduceInt,
		"reduce":       reduceInt, // one instantiation has that name
		fillFloat:      fillFloat,
		"matmul_tiled": "matmul_tiled",
	} {
		info, err := kernel(t, rt, 0, asked).Info()
		if err != nil || info.Name != want {
			t.Errorf("%q: %q, %v; want %q", asked, info.Name, err, want)
		}
	}
}

func TestAnAmbiguousNameListsTheCandidates(t *testing.T) {
	rt := withLaunch(t)
	if sdm.ErrAmbiguous != 20 || sdm.ErrAmbiguous.String() != "SDM_ERROR_AMBIGUOUS" {
		t.Errorf("ErrAmbiguous is %d, %q", int32(sdm.ErrAmbiguous), sdm.ErrAmbiguous)
	}
	_, err := rt.Kernel(0, "fill")
	sdmError(t, err, sdm.ErrAmbiguous, "kernel name 'fill' matches 2 kernels",
		"void sdm_test::fill<float, 256>(float*, float) (_ZN8sdm_test4fillIfLi256EEEvPT_S1_)",
		"void sdm_test::fill<int, 256>(int*, int) (_ZN8sdm_test4fillIiLi256EEEvPT_S1_)")
	_, err = rt.Kernel(0, "sdm_test::fill<float")
	sdmError(t, err, sdm.ErrInvalidArgument, "an unclosed '<'")
	_, err = rt.Kernel(0, "matmul_tild")
	sdmError(t, err, sdm.ErrNotFound, "the closest: matmul_tiled")
}

func TestDerivedSignaturesAgreeWithTypedOnesOfTheirLayout(t *testing.T) {
	rt := withLaunch(t)
	// scale_by_table(const float*, float*, int), imported as b64,b64,b32.
	for _, signature := range []string{"ptr,ptr,i32", "u64, ptr, f32"} {
		if _, err := rt.KernelChecked(0, "scale_by_table", signature); err != nil {
			t.Errorf("%s: %v", signature, err)
		}
	}
	if _, err := rt.KernelChecked(0, "sdm_test::fill<float, 256>", "ptr,f32"); err != nil {
		t.Error(err)
	}
	_, err := rt.KernelChecked(0, "scale_by_table", "ptr,ptr,i64")
	sdmError(t, err, sdm.ErrMismatch, "parameter 2 is b32 (4 bytes at offset 16)", "but the host passes i64 (8 bytes at offset 16)")
}

func TestTheKernelListing(t *testing.T) {
	rt := withLaunch(t)
	if err := rt.MountFile(golden); err != nil { // archive 1: axpy, scale
		t.Fatal(err)
	}
	own, err := rt.Kernels(0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range own {
		names = append(names, e.Name)
	}
	if want := []string{fillFloat, fillInt, reduceInt, "grid_sum", "matmul_tiled", "scale_by_table"}; !reflect.DeepEqual(names, want) {
		t.Errorf("archive 0 lists %q, want %q", names, want)
	}
	want := sdm.KernelEntry{ArchiveIndex: 0, Name: fillFloat, Demangled: "void sdm_test::fill<float, 256>(float*, float)",
		Module: "launch", Signature: "b64,b32", Targets: "sm_90"}
	if own[0] != want {
		t.Errorf("got  %+v\nwant %+v", own[0], want)
	}
	if own[3].Demangled != "" {
		t.Errorf("extern \"C\" grid_sum demangles to %q", own[3].Demangled)
	}
	served, err := rt.Kernels(sdm.ListServed)
	if err != nil || len(served) != 8 {
		t.Fatalf("%d served, %v", len(served), err)
	}
	if !sort.SliceIsSorted(served, func(i, j int) bool { return served[i].Name < served[j].Name }) {
		t.Error("not sorted by name")
	}
	if served[3].Name != "axpy" || served[3].ArchiveIndex != 1 || served[3].Signature != "ptr,ptr,f32,i32" {
		t.Errorf("served[3] %+v", served[3])
	}
	// A newer copy of the golden archive shadows the older one's names.
	if err := rt.MountFile(golden); err != nil {
		t.Fatal(err)
	}
	older, err := rt.Kernels(1)
	if err != nil || len(older) != 2 || !older[0].Shadowed || !older[1].Shadowed {
		t.Errorf("archive 1: %+v, %v", older, err)
	}
	_, err = rt.Kernels(3)
	sdmError(t, err, sdm.ErrNotFound, "there is no mounted archive 3 (3 mounted")
	_, err = rt.Kernels(-2)
	sdmError(t, err, sdm.ErrNotFound, "there is no mounted archive -2")
}
