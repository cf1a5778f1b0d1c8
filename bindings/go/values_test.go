package sdm_test

// Kernel arguments packed by their parameter's layout (values.go), read back from the parameter
// buffer the fake driver received; lossy conversions refused before the driver; an image refusal
// as its own error type. On tests/data/params.sm_90.cubin (params.cu) as `sdm import` archives it.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	sdm "github.com/sdm/sdm/bindings/go"
	"github.com/sdm/sdm/bindings/go/internal/fakecuda"
)

func withParams(t *testing.T) *sdm.Runtime {
	t.Helper()
	rt := newRuntime(t, nil)
	if err := rt.MountFile(importedArchive(t, "params.sm_90.cubin", "")); err != nil {
		t.Fatal(err)
	}
	return rt
}

func lastParams(t *testing.T) []byte {
	t.Helper()
	params, err := fakecuda.LastParams(driver)
	if err != nil {
		t.Fatal(err)
	}
	return params
}

func le(values ...interface{}) []byte {
	var b bytes.Buffer
	for _, v := range values {
		if err := binary.Write(&b, binary.LittleEndian, v); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

func TestComplexScalarsReachTheKernelByteExact(t *testing.T) {
	t.Setenv("SDM_FAKE_CUDA_RECORD_PARAMS", "1") // read by the fake at each launch
	rt := withParams(t)
	one := sdm.NewPlan([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1})
	// by_struct(Pair, float*): b64,b64, the slot of a complex<float>: real, then imaginary, two f32.
	byStruct := kernel(t, rt, 0, "by_struct")
	if err := byStruct.Launch(one, nil, complex64(2+3i), sdm.DevicePtr(0)); err != nil {
		t.Fatal(err)
	}
	if got, want := lastParams(t), le(float32(2), float32(3), uint64(0)); !bytes.Equal(got, want) {
		t.Errorf("complex64: % x, want % x", got, want)
	}
	// mixed(char, double, int, long long, Odd, Wide, void*): opaque:16:8 at offset 40 takes a complex<double>.
	mixed := kernel(t, rt, 0, "mixed")
	value := complex(0.1, 1e300)
	if err := mixed.Launch(one, nil, int8(-3), 2.5, int32(7), int64(1)<<40, sdm.RawArg("xyz"), value, sdm.DevicePtr(0x7f0000000000)); err != nil {
		t.Fatal(err)
	}
	want := append(le(int8(-3), [7]byte{}, 2.5, int32(7), [4]byte{}, int64(1)<<40), []byte("xyz\x00\x00\x00\x00\x00")...)
	want = append(want, le(value, uint64(0x7f0000000000))...)
	if got := lastParams(t); !bytes.Equal(got, want) {
		t.Errorf("mixed: % x\nwant   % x", got, want)
	}
	// Narrower integers widen to their parameter; a float32 to a b64 (f64) exactly, a float64 to a b32 (f32) rounded.
	if err := mixed.Launch(one, nil, uint8(255), float32(0.5), 1.25, uint16(9), sdm.RawArg("abc"), complex128(1i), uintptr(16)); err != nil {
		t.Fatal(err)
	}
	if got := lastParams(t); !bytes.Equal(got[:32], le(uint8(255), [7]byte{}, 0.5, float32(1.25), [4]byte{}, int64(9))) {
		t.Errorf("widened: % x", got[:32])
	}
}

func TestLossyValuesAreRefusedNamingTheArgumentAndBothTypes(t *testing.T) {
	rt := withParams(t)
	one := sdm.NewPlan([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1})
	mixed := kernel(t, rt, 0, "mixed") // b8,b64,b32,b64,opaque:3:1,opaque:16:8,b64
	typed, err := rt.KernelChecked(0, "mixed", "b8,f64,i32,i64,opaque:3:1,opaque:16:8,ptr")
	if err != nil {
		t.Fatal(err)
	}
	good := []interface{}{int8(1), 2.5, int32(3), int64(4), sdm.RawArg("xyz"), complex128(0), sdm.DevicePtr(0)}
	before := launches(t)
	for _, c := range []struct {
		k     *sdm.Kernel
		index int
		value interface{}
		want  string
	}{
		{typed, 1, complex64(2 + 3i), "kernel argument 1 (f64): a complex64 (2+3i) does not convert to a f64 without losing its imaginary part"},
		{typed, 1, complex128(2 + 3i), "kernel argument 1 (f64): a complex128 (2+3i) does not convert to a f64 without losing its imaginary part"},
		{mixed, 2, complex64(2 + 3i), "kernel argument 2 (b32): a complex64 (2+3i) does not convert to a b32"},
		{mixed, 1, complex128(2 + 3i), "kernel argument 1 (b64): a complex128 is 16 bytes and the b64 parameter 8; pass a complex64"},
		{mixed, 5, complex64(2 + 3i), "kernel argument 5 (opaque:16:8): a complex64 is 8 bytes and the opaque:16:8 parameter 16; pass a complex128"},
		{typed, 2, 2.5, "kernel argument 2 (i32): a float64 2.5 does not convert to a i32 without loss"},
		{typed, 2, float32(2), "kernel argument 2 (i32): a float32 2 does not convert to a i32 without loss"},
		{typed, 2, int64(math.MaxInt32) + 1, "kernel argument 2 (i32): the int64 2147483648 does not fit a i32 (-2147483648 .. 2147483647)"},
		{mixed, 2, uint64(1) << 32, "kernel argument 2 (b32): the uint64 4294967296 does not fit a b32"},
		{mixed, 0, int16(256), "kernel argument 0 (b8): the int16 256 does not fit a b8 (-128 .. 255)"},
		{mixed, 2, 1e39, "kernel argument 2 (b32): the float64 1e+39 does not fit an f32"},
		{typed, 1, int32(2), "kernel argument 1 (f64): an int32 does not convert to a f64 parameter"},
		{typed, 6, int64(-1), "kernel argument 6 (ptr): the int64 -1 does not fit a ptr"},
		{mixed, 4, sdm.RawArg("abcd"), "kernel argument 4 (opaque:3:1): an sdm.RawArg of 4 byte(s) for a parameter of 3"},
		{mixed, 2, sdm.DevicePtr(0), "kernel argument 2 (b32): a sdm.DevicePtr (a device address) does not convert to a b32"},
	} {
		args := append(append(append([]interface{}{}, good[:c.index]...), c.value), good[c.index+1:]...)
		sdmError(t, c.k.Launch(one, nil, args...), sdm.ErrInvalidArgument, c.want)
	}
	if after := launches(t); after != before {
		t.Errorf("%d refused launches reached the driver", after-before)
	}
}

func TestAnImageRefusalIsItsOwnErrorType(t *testing.T) {
	rt := newRuntime(t, nil)
	// An sm_90 cubin compiled from compute_80, on an H200, in an archive under the hardware matrix.
	archive := importedArchive(t, "kernels.sm_90-from-compute_80.cubin", "[archive]\nkernel_abi = \"1.0\"\nhardware_matrix = \"sdm\"\n")
	if err := rt.MountFile(archive); err != nil {
		t.Fatal(err)
	}
	_, err := rt.Kernel(0, "scale")
	// A helper that falls back on any *sdm.Error does not take it for one.
	var generic *sdm.Error
	if errors.As(err, &generic) {
		t.Fatalf("an image refusal matched *sdm.Error: %v", err)
	}
	var refused *sdm.ImageRefusedError
	if !errors.As(err, &refused) || !errors.Is(err, sdm.ErrImageRefused) || refused.Code != sdm.ErrImageRefused {
		t.Fatalf("want an *sdm.ImageRefusedError, got %T %v", err, err)
	}
	for _, piece := range []string{"was compiled for compute_80", "NVIDIA H200", "Rebuild the archive"} {
		if !bytes.Contains([]byte(refused.Message), []byte(piece)) {
			t.Errorf("%q lacks %q", refused.Message, piece)
		}
	}
}
