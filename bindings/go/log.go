package sdm

// The Go side of the log callback. It lives alone in this file because a file with an //export
// may only declare C functions in its preamble; sdm.go defines the C trampoline that calls it.

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

//export sdmGoLog
func sdmGoLog(user unsafe.Pointer, level C.int32_t, message *C.char, length C.size_t) {
	log, ok := cgo.Handle(uintptr(user)).Value().(func(LogLevel, string))
	if !ok || message == nil {
		return
	}
	defer func() { _ = recover() }() // a panic must not unwind into libsdm
	log(LogLevel(level), C.GoStringN(message, C.int(length)))
}
