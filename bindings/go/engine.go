package sdm

/*
#include <stdlib.h>
#include <sdm/sdm.h>
*/
import "C"

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// An engine's loader (ABI 1.5, docs/LOADING.md): unmounting an archive, the footprint report and
// background warm-up.

// Unmount takes the archive whose label is label (its path, or the label given to MountMemory) out
// of the layer order, with the overlays bound to it, and returns how many archives left. Kernels
// fetched from it keep working until released; the next fetch of their names finds the archives
// beneath. A label naming no archive, or several, unmounts nothing (ErrNotFound, ErrAmbiguous).
func (r *Runtime) Unmount(label string) (int, error) {
	if err := noNUL("the archive label", label); err != nil {
		return 0, err
	}
	var n C.uint32_t
	err := r.use(func(h *C.sdm_runtime) error {
		clabel := C.CString(label)
		defer C.free(unsafe.Pointer(clabel))
		var cerr *C.sdm_error
		return check(C.sdm_archive_unmount(h, clabel, &n, &cerr), cerr)
	})
	return int(n), err
}

// Footprint is what a runtime holds, summed over its devices (sdm_footprint).
type Footprint struct {
	ModuleCount          uint32 // loaded modules, those still held or draining included
	DeviceBytes          uint64 // as the loaded modules' images declare it
	HostBytes            uint64 // image bytes kept for the driver's library path
	ReadaheadBytes       uint64 // images decoded ahead of their first fetch
	ReferenceBytes       uint64 // decoded references of compressed images
	ArchiveMemoryBytes   uint64 // sdm's copies of archives mounted from memory, decoded manifests
	ArchiveMappedBytes   uint64 // archive files mapped read-only
	CacheBytes           uint64 // the kernel cache's entries on disk (0 when not opened)
	UnknownDeviceModules uint32 // modules whose device bytes are unknown (the driver's JIT loaded them)
}

// Footprint reports what the runtime holds now: a walk of every loaded module and mounted archive,
// a report, not a call for every frame.
func (r *Runtime) Footprint() (Footprint, error) {
	var f C.sdm_footprint
	err := r.use(func(h *C.sdm_runtime) error {
		f.struct_size = C.uint32_t(C.sizeof_sdm_footprint)
		var cerr *C.sdm_error
		return check(C.sdm_footprint_get(h, &f, &cerr), cerr)
	})
	if err != nil {
		return Footprint{}, err
	}
	return Footprint{
		ModuleCount: uint32(f.module_count), DeviceBytes: uint64(f.device_bytes), HostBytes: uint64(f.host_bytes),
		ReadaheadBytes: uint64(f.readahead_bytes), ReferenceBytes: uint64(f.reference_bytes),
		ArchiveMemoryBytes: uint64(f.archive_memory_bytes), ArchiveMappedBytes: uint64(f.archive_mapped_bytes),
		CacheBytes: uint64(f.cache_bytes), UnknownDeviceModules: uint32(f.unknown_device_modules),
	}, nil
}

// Warmup is a background warm-up (sdm_preload_async): sdm loads the modules on its own threads
// while the caller goes on. Close it when done with it (it cancels what has not started).
// Its methods may be called from several goroutines at once (Cancel while another waits); Close
// waits for the calls in flight.
type Warmup struct {
	mu     sync.RWMutex
	handle *C.sdm_warmup
}

// PreloadAsync starts loading what Preload would (the modules of names, or of every kernel of
// every mounted archive when names is empty) on device ordinal in the background and returns at
// once; across warm-ups, one of higher priority starts its modules first. A fetch of a kernel
// being warmed up waits for that load instead of loading it again. What fails in the background
// is the warm-up's outcome (Wait), not this call's.
func (r *Runtime) PreloadAsync(ordinal int, priority int32, names ...string) (*Warmup, error) {
	var handle *C.sdm_warmup
	err := r.use(func(h *C.sdm_runtime) error {
		array, free, err := cStrings(names)
		if err != nil {
			return err
		}
		defer free()
		var cerr *C.sdm_error
		return check(C.sdm_preload_async(h, C.int32_t(ordinal), array, C.uint32_t(len(names)), C.int32_t(priority), nil, nil, &handle, &cerr), cerr)
	})
	if err != nil {
		return nil, err
	}
	w := &Warmup{handle: handle}
	runtime.SetFinalizer(w, (*Warmup).Close)
	return w, nil
}

func (w *Warmup) use(f func(*C.sdm_warmup) error) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.handle == nil {
		return &Error{Code: ErrInvalidArgument, Message: "the sdm Warmup is closed"}
	}
	return f(w.handle)
}

// Progress says how far it got: modules finished (loaded or failed) and modules to load (0 until
// it has listed them).
func (w *Warmup) Progress() (done, total uint32, err error) {
	var d, t C.uint32_t
	err = w.use(func(h *C.sdm_warmup) error {
		var cerr *C.sdm_error
		return check(C.sdm_warmup_progress(h, &d, &t, &cerr), cerr)
	})
	return uint32(d), uint32(t), err
}

// Wait waits at most timeout (0: only looks) for the warm-up to finish and returns its outcome:
// nil, its first failure (naming every kernel that did not load), or ErrCancelled; ErrTimeout when
// it has not finished by then (it goes on).
func (w *Warmup) Wait(timeout time.Duration) error {
	ms := timeout.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	if ms > int64(^uint32(0)) {
		ms = int64(^uint32(0))
	}
	return w.use(func(h *C.sdm_warmup) error {
		var cerr *C.sdm_error
		return check(C.sdm_warmup_wait(h, C.uint32_t(ms), &cerr), cerr)
	})
}

// Cancel skips the modules it has not started and returns at once; those loading finish.
func (w *Warmup) Cancel() error {
	return w.use(func(h *C.sdm_warmup) error {
		var cerr *C.sdm_error
		return check(C.sdm_warmup_cancel(h, &cerr), cerr)
	})
}

// Close cancels the warm-up if it still runs, waits for the loads it started and frees it. Safe to
// call more than once.
func (w *Warmup) Close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.handle != nil {
		C.sdm_warmup_destroy(w.handle)
		w.handle = nil
	}
	runtime.SetFinalizer(w, nil)
}

// cStrings copies names into C memory (a Go array handed to C must not hold pointers of its own):
// the array (nil for none) and the function that frees it.
func cStrings(names []string) (**C.char, func(), error) {
	if len(names) == 0 {
		return nil, func() {}, nil
	}
	for _, name := range names {
		if err := noNUL("the kernel name", name); err != nil {
			return nil, nil, err
		}
	}
	array := (**C.char)(C.calloc(C.size_t(len(names)), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
	if array == nil {
		return nil, nil, &Error{Code: ErrOutOfMemory, Message: "no memory for the list of names"}
	}
	slots := unsafe.Slice(array, len(names))
	for i, name := range names {
		slots[i] = C.CString(name)
	}
	return array, func() {
		for _, s := range slots {
			C.free(unsafe.Pointer(s))
		}
		C.free(unsafe.Pointer(array))
	}, nil
}

// noNUL refuses a string C would read shorter than Go holds it (C.CString stops at a NUL byte):
// "a\x00b" must not unmount or preload "a".
func noNUL(what, text string) error {
	if strings.IndexByte(text, 0) >= 0 {
		return &Error{Code: ErrInvalidArgument, Message: what + " " + strconv.Quote(text) + " contains a NUL byte"}
	}
	return nil
}
