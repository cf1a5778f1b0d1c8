// Package fakecuda reads what the tests' fake CUDA driver (tests/fake_cuda, libcuda_fake.so) saw:
// its last launch, the parameter bytes it received, and its call counters, through the test helpers sdm_fake_cuda.h declares. The
// library is dlopened by the path libsdm loaded it from ($SDM_CUDA_DRIVER), which gives the same
// library. cgo is not available in _test.go files, so this is a package of its own, internal to
// the module and used by its tests only.
package fakecuda

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// As tests/fake_cuda/sdm_fake_cuda.h declares it.
typedef struct sdm_fake_cuda_launch {
    uint32_t grid[3];
    uint32_t block[3];
    uint32_t smem_bytes;
    uint32_t cluster[3];
    int32_t cooperative;
    int32_t priority;
    int32_t pdl;
    uint32_t attribute_count;
    int32_t attribute_ids[32];
    void* stream;
} sdm_fake_cuda_launch;

static void* fake_symbol(const char* path, const char* name) {
    void* library = dlopen(path, RTLD_NOW);
    return library == NULL ? NULL : dlsym(library, name);
}

static int32_t fake_last_launch(void* fn, sdm_fake_cuda_launch* launch) {
    return ((int32_t (*)(sdm_fake_cuda_launch*))fn)(launch);
}

static int32_t fake_last_params(void* fn, void* buffer, size_t capacity, size_t* size) {
    return ((int32_t (*)(void*, size_t, size_t*))fn)(buffer, capacity, size);
}

static int64_t fake_calls(void* fn, const char* entry) {
    return ((int64_t (*)(const char*))fn)(entry);
}
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Launch is sdm_fake_cuda_launch: the configuration of a cuLaunchKernelEx as the fake received it.
type Launch struct {
	Grid, Block  [3]uint32
	SmemBytes    uint32
	Cluster      [3]uint32 // zeros without a cluster attribute
	Cooperative  int32
	Priority     int32
	PDL          int32
	AttributeIDs []int32 // every attribute's id, in order
}

func symbol(driver, name string) (unsafe.Pointer, error) {
	cpath, cname := C.CString(driver), C.CString(name)
	defer C.free(unsafe.Pointer(cpath))
	defer C.free(unsafe.Pointer(cname))
	fn := C.fake_symbol(cpath, cname)
	if fn == nil {
		return nil, fmt.Errorf("%s has no %s (%s)", driver, name, C.GoString(C.dlerror()))
	}
	return fn, nil
}

// LastLaunch is the last cuLaunchKernelEx that succeeded since cuInit, of the fake driver at path
// driver.
func LastLaunch(driver string) (Launch, error) {
	fn, err := symbol(driver, "sdm_fake_cuda_last_launch")
	if err != nil {
		return Launch{}, err
	}
	var l C.sdm_fake_cuda_launch
	if rc := C.fake_last_launch(fn, &l); rc != 0 {
		return Launch{}, fmt.Errorf("sdm_fake_cuda_last_launch: CUresult %d (no launch)", int32(rc))
	}
	out := Launch{
		SmemBytes: uint32(l.smem_bytes), Cooperative: int32(l.cooperative), Priority: int32(l.priority), PDL: int32(l.pdl),
	}
	for i := 0; i < 3; i++ {
		out.Grid[i], out.Block[i], out.Cluster[i] = uint32(l.grid[i]), uint32(l.block[i]), uint32(l.cluster[i])
	}
	for i := 0; i < int(l.attribute_count) && i < len(l.attribute_ids); i++ {
		out.AttributeIDs = append(out.AttributeIDs, int32(l.attribute_ids[i]))
	}
	return out, nil
}

// LastParams is the kernel parameter buffer of that launch, as the fake driver at path driver
// received it (sdm_fake_cuda_last_params): each parameter's bytes at its offset in the layout of
// the signature derived from the loaded image. The fake records it only with
// SDM_FAKE_CUDA_RECORD_PARAMS=1 set at the launch.
func LastParams(driver string) ([]byte, error) {
	fn, err := symbol(driver, "sdm_fake_cuda_last_params")
	if err != nil {
		return nil, err
	}
	var size C.size_t
	if rc := C.fake_last_params(fn, nil, 0, &size); rc != 0 {
		return nil, fmt.Errorf("sdm_fake_cuda_last_params: CUresult %d (no launch, or no parameters derived)", int32(rc))
	}
	buffer := C.malloc(size + 1)
	defer C.free(buffer)
	if rc := C.fake_last_params(fn, buffer, size, nil); rc != 0 {
		return nil, fmt.Errorf("sdm_fake_cuda_last_params: CUresult %d", int32(rc))
	}
	return C.GoBytes(buffer, C.int(size)), nil
}

// Calls is how many times entry (a base name: "cuLaunchKernelEx") was called since the last
// cuInit, of the fake driver at path driver; -1 for a name the fake does not implement.
func Calls(driver, entry string) (int64, error) {
	fn, err := symbol(driver, "sdm_fake_cuda_calls")
	if err != nil {
		return 0, err
	}
	centry := C.CString(entry)
	defer C.free(unsafe.Pointer(centry))
	return int64(C.fake_calls(fn, centry)), nil
}
