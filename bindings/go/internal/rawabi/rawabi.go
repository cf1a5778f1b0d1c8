// Package rawabi makes the raw sdm.h calls that the tests of package sdm need and that its safe
// API cannot express, as it always fills struct_size correctly. (cgo is not available in _test.go
// files, so this lives in a package of its own, internal to the module.)
package rawabi

/*
#cgo CFLAGS: -I${SRCDIR}/../../../../include
#cgo LDFLAGS: -lsdm
#include <sdm/sdm.h>

// An address no runtime has, to see whether a failed call wrote its out-parameter.
static sdm_runtime* sentinel_runtime(void) { return (sdm_runtime*)1; }
*/
import "C"

import "unsafe"

// Layout is a struct's size and alignment as cgo sees them.
type Layout struct{ Size, Align uintptr }

// Layouts of every public struct of sdm.h, by C name.
func Layouts() map[string]Layout {
	return map[string]Layout{
		"sdm_runtime_params": {unsafe.Sizeof(C.sdm_runtime_params{}), unsafe.Alignof(C.sdm_runtime_params{})},
		"sdm_chain":          {unsafe.Sizeof(C.sdm_chain{}), unsafe.Alignof(C.sdm_chain{})},
		"sdm_archive_info":   {unsafe.Sizeof(C.sdm_archive_info{}), unsafe.Alignof(C.sdm_archive_info{})},
		"sdm_device_info":    {unsafe.Sizeof(C.sdm_device_info{}), unsafe.Alignof(C.sdm_device_info{})},
		"sdm_kernel_info":    {unsafe.Sizeof(C.sdm_kernel_info{}), unsafe.Alignof(C.sdm_kernel_info{})},
		"sdm_cache_stats":    {unsafe.Sizeof(C.sdm_cache_stats{}), unsafe.Alignof(C.sdm_cache_stats{})},
		"sdm_plan":           {unsafe.Sizeof(C.sdm_plan{}), unsafe.Alignof(C.sdm_plan{})},
		"sdm_api":            {unsafe.Sizeof(C.sdm_api{}), unsafe.Alignof(C.sdm_api{})},
	}
}

// DeviceInfoWithSize calls sdm_device_info_get with struct_size set to structSize and ordinal 77
// preset in the struct: it returns the status, the error's message, and the ordinal the struct
// holds afterwards.
func DeviceInfoWithSize(runtime unsafe.Pointer, ordinal int32, structSize uint32) (status int32, message string, ordinalAfter int32) {
	var info C.sdm_device_info
	info.struct_size = C.uint32_t(structSize)
	info.ordinal = 77
	var cerr *C.sdm_error
	status = int32(C.sdm_device_info_get((*C.sdm_runtime)(runtime), C.int32_t(ordinal), &info, &cerr))
	message = C.GoString(C.sdm_error_message(cerr))
	C.sdm_error_destroy(cerr)
	return status, message, int32(info.ordinal)
}

// RuntimeParamsWithSize calls sdm_runtime_create with a zeroed sdm_runtime_params of structSize
// bytes: it returns the status, the message, and whether the runtime out-parameter was left as it
// was (a runtime made anyway is destroyed).
func RuntimeParamsWithSize(structSize uint32) (status int32, message string, untouched bool) {
	var params C.sdm_runtime_params
	params.struct_size = C.uint32_t(structSize)
	params.flags = C.SDM_RUNTIME_NO_EMBEDDED_ARCHIVE
	sentinel := C.sentinel_runtime()
	runtime := sentinel
	var cerr *C.sdm_error
	status = int32(C.sdm_runtime_create(&params, &runtime, &cerr))
	message = C.GoString(C.sdm_error_message(cerr))
	C.sdm_error_destroy(cerr)
	if runtime != sentinel {
		C.sdm_runtime_destroy(runtime)
	}
	return status, message, runtime == sentinel
}
