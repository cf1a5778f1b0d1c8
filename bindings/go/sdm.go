// Package sdm binds libsdm, the CUDA kernel-archive loader, through its C ABI (include/sdm/sdm.h).
//
//	rt, err := sdm.NewRuntime(nil)
//	if err != nil { ... }
//	defer rt.Close()
//	if err := rt.MountFile("kernels.sdma"); err != nil { ... }
//	k, err := rt.Kernel(0, "scale")
//	plan, err := k.Plan(1 << 20)
//	err = k.Launch(plan, nil, sdm.DevicePtr(y), float32(2), int32(1<<20))
//
// Every failure is an *Error (status, message, native code, JIT log); errors.Is(err, sdm.ErrNotFound)
// tests its status. A Runtime and its Kernels may be used from any goroutine; Close waits for the
// calls in flight. Close (and Kernel.Release) are the way to free them: a finalizer does it for a
// Runtime or Kernel that became unreachable without, but only whenever the garbage collector runs.
//
// Building: cgo asks pkg-config for sdm, so sdm.pc (installed with libsdm) must be on
// PKG_CONFIG_PATH; the package builds the same vendored or fetched as a module.
package sdm

/*
#cgo pkg-config: sdm
#include <stdlib.h>
#include <string.h>
#include <sdm/sdm.h>

// log.go's exported Go function.
extern void sdmGoLog(void* user, int32_t level, char* message, size_t length);

static void sdm_go_log(void* user, sdm_log_level level, const char* message, size_t length) {
    sdmGoLog(user, level, (char*)message, length);
}

// The handle is a cgo.Handle: an integer, carried in the pointer-sized user_data.
static void sdm_go_set_log(sdm_runtime_params* params, uintptr_t handle) {
    params->log_fn = sdm_go_log;
    params->log_user_data = (void*)handle;
}

// What Kernel.Launch hands sdm_launch, in C memory: cgo moves every Go variable whose address goes
// to C onto the heap, which would allocate on each launch. data is capacity bytes, for the
// argument values and their pointer table, in the same malloc block.
typedef struct sdm_go_launch {
    sdm_plan plan;
    sdm_error* error;
    unsigned char* data;
    size_t capacity;
} sdm_go_launch;

static sdm_go_launch* sdm_go_launch_new(size_t capacity) {
    // The data 16-byte aligned, as malloc's block is, for the 16-byte argument slots.
    size_t header = (sizeof(sdm_go_launch) + 15) / 16 * 16;
    sdm_go_launch* launch = malloc(header + capacity);
    if (launch != NULL) {
        launch->data = (unsigned char*)launch + header;
        launch->capacity = capacity;
    }
    return launch;
}

// sdm_launch from launch's plan into its error slot. The kernel comes as a void*: cgo's pointer
// check would box a pointer to the incomplete sdm_kernel, an allocation.
static sdm_status sdm_go_launch_run(const void* kernel, sdm_go_launch* launch, void* stream, void** args, uint32_t count) {
    launch->error = NULL;
    return sdm_launch((const sdm_kernel*)kernel, &launch->plan, stream, args, count, &launch->error);
}

// sdm_go_launch_run with `attribute_count` CUlaunchAttribute values at `attributes` on the plan's
// chain (an sdm_launch_attributes on this stack frame, unhooked before it returns).
static sdm_status sdm_go_launch_attributes_run(const void* kernel, sdm_go_launch* launch, void* stream, void** args, uint32_t count,
                                               const void* attributes, uint32_t attribute_count) {
    sdm_launch_attributes chain;
    memset(&chain, 0, sizeof chain);
    chain.struct_size = sizeof chain;
    chain.type = SDM_CHAIN_LAUNCH_ATTRIBUTES;
    chain.attributes = attributes;
    chain.count = attribute_count;
    launch->plan.next = (const sdm_chain*)&chain;
    launch->error = NULL;
    sdm_status status = sdm_launch((const sdm_kernel*)kernel, &launch->plan, stream, args, count, &launch->error);
    launch->plan.next = NULL;
    return status;
}
*/
import "C"

import (
	"fmt"
	"math"
	"reflect"
	"runtime"
	"runtime/cgo"
	"sync"
	"sync/atomic"
	"unsafe"
)

// ---- versions -----------------------------------------------------------------------------------

// ABIVersion is the ABI the loaded libsdm implements.
func ABIVersion() (major, minor uint32) {
	v := uint32(C.sdm_abi_version())
	return v >> 16, v & 0xffff
}

// Version is the loaded libsdm's release, "MAJOR.MINOR.PATCH" (sdm's project version).
func Version() string { return C.GoString(C.sdm_version_string()) }

// CheckABI reports ErrMismatch unless the loaded libsdm has the ABI major of the header this
// package was built with, and at least its minor.
func CheckABI() error {
	major, minor := ABIVersion()
	if major == C.SDM_ABI_VERSION_MAJOR && minor >= C.SDM_ABI_VERSION_MINOR {
		return nil
	}
	return &Error{Code: ErrMismatch, Message: fmt.Sprintf(
		"libsdm %s implements C ABI %d.%d, but this package was built against %d.%d: load a libsdm of ABI %d.%d or later %d.x",
		Version(), major, minor, C.SDM_ABI_VERSION_MAJOR, C.SDM_ABI_VERSION_MINOR,
		C.SDM_ABI_VERSION_MAJOR, C.SDM_ABI_VERSION_MINOR, C.SDM_ABI_VERSION_MAJOR)}
}

// ---- runtime ------------------------------------------------------------------------------------

// LogLevel is an sdm_log_level.
type LogLevel int32

const (
	LogOff     LogLevel = C.SDM_LOG_OFF     // nothing, whatever $SDM_LOG says
	LogDefault LogLevel = C.SDM_LOG_DEFAULT // $SDM_LOG (error, warn, info, debug, off), else LogWarn
	LogError   LogLevel = C.SDM_LOG_ERROR
	LogWarn    LogLevel = C.SDM_LOG_WARN
	LogInfo    LogLevel = C.SDM_LOG_INFO
	LogDebug   LogLevel = C.SDM_LOG_DEBUG
)

// Flags of Options.CacheFlags and Options.JITFlags.
const (
	CacheDisabled    = uint32(C.SDM_CACHE_DISABLED)   // read and write nothing
	CacheReadOnly    = uint32(C.SDM_CACHE_READ_ONLY)  // read, never write
	JITNoNvJitLink   = uint32(C.SDM_JIT_NO_NVJITLINK) // never link with nvJitLink
	JITNoDriver      = uint32(C.SDM_JIT_NO_DRIVER)    // never hand PTX to the driver's JIT
	JITNoPTXCompiler = uint32(C.SDM_JIT_NO_PTX_COMPILER)
)

// SignaturePolicy is which archives a runtime mounts (Options.SignaturePolicy; ABI 1.2,
// docs/SIGNING.md). A policy other than SignaturesDefault is the host's: $SDM_REQUIRE_SIGNED
// cannot weaken it. Without libsodium in libsdm, warn and require are ErrUnsupported.
type SignaturePolicy uint32

const (
	SignaturesDefault SignaturePolicy = C.SDM_SIGNATURES_DEFAULT // $SDM_REQUIRE_SIGNED (1: require, warn: warn), else off
	SignaturesOff     SignaturePolicy = C.SDM_SIGNATURES_OFF     // signatures are not looked at
	SignaturesWarn    SignaturePolicy = C.SDM_SIGNATURES_WARN    // an archive without a valid trusted signature mounts; the log says why
	SignaturesRequire SignaturePolicy = C.SDM_SIGNATURES_REQUIRE // such an archive is refused at mount: ErrUntrusted
)

// JITIsolation is where PTX and LTO-IR links run (Options.JITIsolation; ABI 1.2, docs/LOADING.md,
// "A compiler that crashes"): in sdm-jit-helper, a process of their own whose crash or hang is
// ErrJIT, or in this one.
type JITIsolation uint32

const (
	IsolationDefault JITIsolation = C.SDM_ISOLATION_DEFAULT // $SDM_JIT_ISOLATION (auto, always, never), else auto
	IsolationAuto    JITIsolation = C.SDM_ISOLATION_AUTO    // LTO-IR, and PTX of archives no trusted key signed, in the helper
	IsolationAlways  JITIsolation = C.SDM_ISOLATION_ALWAYS  // every link in the helper
	IsolationNever   JITIsolation = C.SDM_ISOLATION_NEVER   // every link in this process (a watchdog bounds the wait only)
)

// Options are sdm_runtime_params; the zero value takes sdm's defaults (environment included).
type Options struct {
	NoEmbeddedArchive bool     // mount only the archives mounted later, not the one in libsdm
	LogLevel          LogLevel // LogDefault, LogOff, or a level
	// Log receives the log lines instead of stderr, on the goroutine or thread that logs (possibly
	// several at once): it must be safe for concurrent use. A panic in it is recovered and dropped.
	Log            func(level LogLevel, message string)
	CUDADriver     string         // libcuda to load; "": $SDM_CUDA_DRIVER, else libcuda.so.1
	CUDAContext    unsafe.Pointer // a CUcontext the host owns, used for its device; nil: primary contexts
	CacheDir       string         // "": $SDM_CACHE_DIR, else $XDG_CACHE_HOME/sdm, else ~/.cache/sdm
	CacheMaxBytes  uint64         // 0: $SDM_CACHE_MAX_BYTES, else 1 GiB
	CacheFlags     uint32         // CacheDisabled, CacheReadOnly
	JITFlags       uint32         // JITNo*: the JIT backends the host forbids
	KernelABIMajor uint32         // an archive declaring another kernel ABI major is refused at mount; 0: any
	// SignaturePolicy is which archives may mount.
	SignaturePolicy SignaturePolicy
	// TrustedKeys are the Ed25519 public keys whose signatures are trusted, each the 32 bytes of a
	// .pub file from sdm keygen; at most 256. nil: those of $SDM_TRUSTED_KEYS; non-nil, even
	// empty, replaces them.
	TrustedKeys [][32]byte
	// JITIsolation is where links run; JITTimeLimitMs every link's limit (0: $SDM_JIT_TIME_LIMIT,
	// else 120 s); JITMemoryLimitBytes an isolated link's address space (0: $SDM_JIT_MEMORY_LIMIT,
	// else 8 GiB; at least 64 MiB).
	JITIsolation        JITIsolation
	JITTimeLimitMs      uint32
	JITMemoryLimitBytes uint64
	// DeviceMemoryBudget bounds the device memory this runtime's loaded modules take on each
	// device (ABI 1.5): past it the least recently used idle modules are evicted and reload at
	// their next use. 0: $SDM_DEVICE_MEMORY_BUDGET, else none.
	DeviceMemoryBudget uint64
}

// Runtime owns an sdm_runtime: mounted archives, devices, loaded modules, the kernel cache.
// Its methods are safe for concurrent use; Close destroys it after the calls in flight. A Runtime
// that becomes unreachable unclosed is closed by its finalizer (its Kernels keep it reachable, but
// an Options.Log that refers to it keeps it so for good): call Close, as the finalizer runs only
// when the garbage collector gets round to it, if ever.
type Runtime struct {
	mu     sync.RWMutex // read-held by every call; Close holds it to destroy
	handle *C.sdm_runtime
	log    cgo.Handle // 0 without a log function
}

// NewRuntime creates a runtime; opts may be nil. Cheap: the driver loads on first need, and a
// machine without one still mounts and lists archives.
func NewRuntime(opts *Options) (*Runtime, error) {
	if opts == nil {
		opts = &Options{}
	}
	var params C.sdm_runtime_params
	params.struct_size = C.uint32_t(C.sizeof_sdm_runtime_params)
	if opts.NoEmbeddedArchive {
		params.flags |= C.SDM_RUNTIME_NO_EMBEDDED_ARCHIVE
	}
	params.log_level = C.sdm_log_level(opts.LogLevel)
	if opts.CUDADriver != "" {
		params.cuda_driver = C.CString(opts.CUDADriver)
		defer C.free(unsafe.Pointer(params.cuda_driver))
	}
	params.cuda_context = opts.CUDAContext
	if opts.CacheDir != "" {
		params.cache_dir = C.CString(opts.CacheDir)
		defer C.free(unsafe.Pointer(params.cache_dir))
	}
	params.cache_max_bytes = C.uint64_t(opts.CacheMaxBytes)
	params.cache_flags = C.uint32_t(opts.CacheFlags)
	params.jit_flags = C.uint32_t(opts.JITFlags)
	params.kernel_abi_major = C.uint32_t(opts.KernelABIMajor)
	params.signature_policy = C.uint32_t(opts.SignaturePolicy)
	params.jit_isolation = C.uint32_t(opts.JITIsolation)
	params.jit_time_limit_ms = C.uint32_t(opts.JITTimeLimitMs)
	params.jit_memory_limit_bytes = C.uint64_t(opts.JITMemoryLimitBytes)
	params.device_memory_budget = C.uint64_t(opts.DeviceMemoryBudget)
	if opts.TrustedKeys != nil {
		// C memory, as cgo forbids a Go pointer inside a struct passed to C; one byte more, so
		// that no keys is not NULL, which would mean $SDM_TRUSTED_KEYS.
		size := len(opts.TrustedKeys) * 32
		keys := C.malloc(C.size_t(size + 1))
		if keys == nil {
			return nil, &Error{Code: ErrOutOfMemory, Message: "no memory for the trusted keys"}
		}
		defer C.free(keys)
		memory := unsafe.Slice((*byte)(keys), size)
		for i := range opts.TrustedKeys {
			copy(memory[i*32:], opts.TrustedKeys[i][:])
		}
		params.trusted_keys = (*C.uint8_t)(keys)
		params.trusted_key_count = C.uint32_t(len(opts.TrustedKeys))
	}
	rt := &Runtime{}
	if opts.Log != nil {
		rt.log = cgo.NewHandle(opts.Log)
		C.sdm_go_set_log(&params, C.uintptr_t(rt.log))
	}
	var cerr *C.sdm_error
	if err := check(C.sdm_runtime_create(&params, &rt.handle, &cerr), cerr); err != nil {
		if rt.log != 0 {
			rt.log.Delete()
		}
		return nil, err
	}
	runtime.SetFinalizer(rt, (*Runtime).Close)
	return rt, nil
}

// Close destroys the runtime, unloading its modules; its Kernels become unusable. Later calls
// (and a second Close) return ErrInvalidArgument.
func (r *Runtime) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handle == nil {
		return errClosed()
	}
	C.sdm_runtime_destroy(r.handle)
	r.handle = nil
	if r.log != 0 {
		r.log.Delete() // after destroy, which may still log
		r.log = 0
	}
	runtime.SetFinalizer(r, nil) // nothing left for it to destroy
	return nil
}

func errClosed() error {
	return &Error{Code: ErrInvalidArgument, Message: "the sdm Runtime is closed"}
}

// use runs f with the live handle, read-locked against Close.
func (r *Runtime) use(f func(*C.sdm_runtime) error) error {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if r.handle == nil {
		return errClosed()
	}
	err := f(r.handle)
	// f handed the handle to C: r's finalizer must not destroy it before C returns.
	runtime.KeepAlive(r)
	return err
}

// Handle is the C sdm_runtime*, for sdm.h calls this package does not wrap. Owned by the Runtime:
// valid until Close; do not destroy it. Keep the Runtime reachable while C uses the handle
// (runtime.KeepAlive), or its finalizer may destroy it.
func (r *Runtime) Handle() unsafe.Pointer {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return unsafe.Pointer(r.handle)
}

// LastError is a copy of the last error any call on this runtime reported, from any goroutine;
// nil before the first failure. Every call returns its own error already: this is for diagnostics.
func (r *Runtime) LastError() error {
	var last error
	_ = r.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		if C.sdm_runtime_last_error(h, &cerr) == C.SDM_OK && cerr != nil {
			last = adopt(C.sdm_error_code(cerr), cerr)
		}
		return nil
	})
	return last
}

// ---- archives -----------------------------------------------------------------------------------

// ArchiveInfo is one mounted archive (sdm_archive_info).
type ArchiveInfo struct {
	Label          string // the path, or the label given to MountMemory
	ContentVersion string // from the manifest; "" without one
	SizeBytes      uint64
	EntryCount     uint32
	KernelCount    uint32
	KernelABIMajor uint16
	KernelABIMinor uint16
	FormatMajor    uint16
	FormatMinor    uint16
	Embedded       bool // the archive embedded in libsdm
}

// MountFile mounts an archive file, mapped read-only; later mounts take precedence. A missing file
// is ErrIO, a damaged one ErrArchiveCorrupt, one needing a newer sdm ErrArchiveUnsupported; each
// message names the file.
func (r *Runtime) MountFile(path string) error {
	return r.use(func(h *C.sdm_runtime) error {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var cerr *C.sdm_error
		return check(C.sdm_archive_mount_file(h, cpath, &cerr), cerr)
	})
}

// MountMemory mounts an archive from memory (the bytes are copied); label names it in messages
// ("": sdm's default).
func (r *Runtime) MountMemory(data []byte, label string) error {
	return r.use(func(h *C.sdm_runtime) error {
		var clabel *C.char
		if label != "" {
			clabel = C.CString(label)
			defer C.free(unsafe.Pointer(clabel))
		}
		var ptr unsafe.Pointer
		if len(data) > 0 {
			ptr = unsafe.Pointer(&data[0])
		}
		var cerr *C.sdm_error
		return check(C.sdm_archive_mount_memory(h, ptr, C.size_t(len(data)), clabel, &cerr), cerr)
	})
}

// Archives lists the mounted archives in mount order.
func (r *Runtime) Archives() ([]ArchiveInfo, error) {
	var count C.uint32_t
	err := r.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		return check(C.sdm_archive_count(h, &count, &cerr), cerr)
	})
	if err != nil {
		return nil, err
	}
	archives := make([]ArchiveInfo, 0, int(count))
	for i := 0; i < int(count); i++ {
		info, err := r.Archive(i)
		if err != nil {
			return nil, err
		}
		archives = append(archives, info)
	}
	return archives, nil
}

// Archive is the mounted archive index (mount order); ErrNotFound past the last.
func (r *Runtime) Archive(index int) (ArchiveInfo, error) {
	var out ArchiveInfo
	err := r.use(func(h *C.sdm_runtime) error {
		var info C.sdm_archive_info
		info.struct_size = C.uint32_t(C.sizeof_sdm_archive_info)
		var cerr *C.sdm_error
		if err := check(C.sdm_archive_info_get(h, C.uint32_t(index), &info, &cerr), cerr); err != nil {
			return err
		}
		out = ArchiveInfo{
			Label:          C.GoString(info.label),
			ContentVersion: C.GoString(info.content_version),
			SizeBytes:      uint64(info.size_bytes),
			EntryCount:     uint32(info.entry_count),
			KernelCount:    uint32(info.kernel_count),
			KernelABIMajor: uint16(info.kernel_abi_major),
			KernelABIMinor: uint16(info.kernel_abi_minor),
			FormatMajor:    uint16(info.format_major),
			FormatMinor:    uint16(info.format_minor),
			Embedded:       info.embedded != 0,
		}
		return nil
	})
	return out, err
}

// Reload remounts every mounted archive file from disk and returns how many were replaced.
// Kernels fetched before keep working until released. A file that fails leaves its old version
// serving; the first failure is returned after every file was tried.
func (r *Runtime) Reload() (int, error) {
	var reloaded C.uint32_t
	err := r.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		return check(C.sdm_runtime_reload(h, &reloaded, &cerr), cerr)
	})
	return int(reloaded), err
}

// PollArchives remounts only the archive files that changed on disk (one stat each: cheap enough
// for every frame) and returns how many were replaced.
func (r *Runtime) PollArchives() (int, error) {
	var reloaded C.uint32_t
	err := r.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		return check(C.sdm_runtime_poll_archives(h, &reloaded, &cerr), cerr)
	})
	return int(reloaded), err
}

// ---- driver and devices -------------------------------------------------------------------------

// DeviceClass is an sdm_device_class; its constants (ClassModern, ...) are generated from sdm.h into
// abi_generated.go.
type DeviceClass int32

// String is "modern", "a100", "rtx" or "unsupported".
func (c DeviceClass) String() string {
	return C.GoString(C.sdm_device_class_name(C.sdm_device_class(c)))
}

// DeviceInfo is one CUDA device as sdm sees it (sdm_device_info).
type DeviceInfo struct {
	Name            string
	Ordinal         int
	CapabilityMajor int
	CapabilityMinor int
	Class           DeviceClass // ClassUnsupported outside the hardware matrix
	SMCount         int
	L2Bytes         uint64
	SmemOptinBytes  int  // the device's own opt-in shared memory per block
	SmemCapBytes    int  // what the class's plans assume (0 when unsupported)
	SmemPerSMBytes  int  // SmemCapBytes + 1,024 reserved per block (0 when unsupported)
	PDLAllowed      bool // programmatic dependent launch
	ClustersAllowed bool // thread-block clusters
	Untested        bool // a class this release has not tested (rtx)
}

// DriverVersion is the CUDA driver's version (12080 for 12.8); it loads the driver if needed.
func (r *Runtime) DriverVersion() (int, error) {
	var version C.int32_t
	err := r.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		return check(C.sdm_driver_version(h, &version, &cerr), cerr)
	})
	return int(version), err
}

// DeviceCount is the number of visible CUDA devices (0 is a success); ErrNoDriver without one.
func (r *Runtime) DeviceCount() (int, error) {
	var count C.int32_t
	err := r.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		return check(C.sdm_device_count(h, &count, &cerr), cerr)
	})
	return int(count), err
}

// DeviceInfo describes device ordinal, supported or not.
func (r *Runtime) DeviceInfo(ordinal int) (DeviceInfo, error) {
	var out DeviceInfo
	err := r.use(func(h *C.sdm_runtime) error {
		var info C.sdm_device_info
		info.struct_size = C.uint32_t(C.sizeof_sdm_device_info)
		var cerr *C.sdm_error
		if err := check(C.sdm_device_info_get(h, C.int32_t(ordinal), &info, &cerr), cerr); err != nil {
			return err
		}
		// NUL-terminated within the array; strnlen bounds the read if it is not.
		name := C.GoStringN(&info.name[0], C.int(C.strnlen(&info.name[0], C.size_t(len(info.name)))))
		out = DeviceInfo{
			Name:            name,
			Ordinal:         int(info.ordinal),
			CapabilityMajor: int(info.capability_major),
			CapabilityMinor: int(info.capability_minor),
			Class:           DeviceClass(info.device_class),
			SMCount:         int(info.sm_count),
			L2Bytes:         uint64(info.l2_bytes),
			SmemOptinBytes:  int(info.smem_optin_bytes),
			SmemCapBytes:    int(info.smem_cap_bytes),
			SmemPerSMBytes:  int(info.smem_per_sm_bytes),
			PDLAllowed:      info.pdl_allowed != 0,
			ClustersAllowed: info.clusters_allowed != 0,
			Untested:        info.untested != 0,
		}
		return nil
	})
	return out, err
}

// Devices describes every visible device.
func (r *Runtime) Devices() ([]DeviceInfo, error) {
	count, err := r.DeviceCount()
	if err != nil {
		return nil, err
	}
	devices := make([]DeviceInfo, 0, count)
	for ordinal := 0; ordinal < count; ordinal++ {
		info, err := r.DeviceInfo(ordinal)
		if err != nil {
			return nil, err
		}
		devices = append(devices, info)
	}
	return devices, nil
}

// DeviceClass is the device's class, or ErrUnsupportedDevice with a message naming the supported
// GPUs and the device.
func (r *Runtime) DeviceClass(ordinal int) (DeviceClass, error) {
	var class C.sdm_device_class
	err := r.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		return check(C.sdm_device_class_get(h, C.int32_t(ordinal), &class, &cerr), cerr)
	})
	return DeviceClass(class), err
}

// ---- kernels ------------------------------------------------------------------------------------

// Stream is a CUstream (nil: the device context's default stream).
type Stream unsafe.Pointer

// Kernel is a kernel fetched from a Runtime. It holds a reference on its module until Release,
// which matters only after a reload replaced its archive (the old module unloads when its last
// kernel is released); a Kernel that becomes unreachable unreleased is released by its finalizer.
// Safe for concurrent use.
type Kernel struct {
	rt       *Runtime
	handle   *C.sdm_kernel
	released atomic.Bool
	// launch is the C memory Launch fills, kept for the next call; nil before the first and while
	// a Launch holds it (a concurrent one mallocs its own). The finalizer frees it.
	launch  atomic.Pointer[C.sdm_go_launch]
	checked string                  // the signature KernelChecked was given, or ""
	params  atomic.Pointer[[]param] // the signature Launch packs by, once read (values.go)
}

// KernelInfo says what a fetched kernel is (sdm_kernel_info).
type KernelInfo struct {
	Name      string
	Module    string
	Archive   string // the serving archive's label
	Signature string // "ptr,f32,i32"
	Ordinal   int
	ImageKind uint32 // ImageKindCubin, ImageKindPTX, ImageKindLTOIR, ImageKindFatbin
	ImageSM   uint32 // the chosen image's arch (90 for sm_90 / compute_90)
	LoadedSM  uint32 // what was loaded: the cubin's or the JIT target's SM
	Source    uint32 // ImageSourceArchiveCubin, ImageSourceCache, ..., ImageSourcePTXCompiler
}

// Kernel fetches kernel name on device ordinal, loading its module on first use.
//
// name is what an archive lists (a C++ kernel's mangled symbol) or, since ABI 1.3, a C++ spelling
// of it: the declaration as c++filt prints it ("ns::reduce<int>(int const*, int*, int)"), or a
// name expression as CuPy takes it ("ns::reduce<int>", "fill<float, 256>", or "reduce" when one
// instantiation has that name). A name matching several kernels is ErrAmbiguous, its message
// listing them; Runtime.Kernels lists the names.
//
// Since ABI 1.4, name may be module-qualified, "MODULE!NAME" (QualifiedName): two modules defining
// one name (as two CuPy RawModules do) make the plain name ErrAmbiguous, naming the modules, never
// one module's kernel for the other's.
func (r *Runtime) Kernel(ordinal int, name string) (*Kernel, error) {
	return r.KernelOnStream(ordinal, name, "", nil)
}

// KernelChecked is Kernel that also checks the kernel's parameter signature against the one the
// caller was written for ("ptr,f32,i32"; spaces ignored): another is ErrMismatch, naming both. A
// signature derived from an image (what `sdm import` writes: b32, b64, ...) agrees with every
// typed one of its layout (ABI 1.3): b32 with i32, u32 or f32, b64 with ptr, i64, u64 or f64.
func (r *Runtime) KernelChecked(ordinal int, name, signature string) (*Kernel, error) {
	return r.KernelOnStream(ordinal, name, signature, nil)
}

// KernelOnStream is the general fetch: signature "" skips the check; stream is the CUstream about
// to capture a CUDA graph, if any: a load that would JIT while it captures is ErrGraphCapture.
func (r *Runtime) KernelOnStream(ordinal int, name, signature string, stream Stream) (*Kernel, error) {
	var handle *C.sdm_kernel
	err := r.use(func(h *C.sdm_runtime) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		var cerr *C.sdm_error
		if signature == "" {
			return check(C.sdm_kernel_get(h, C.int32_t(ordinal), cname, unsafe.Pointer(stream), &handle, &cerr), cerr)
		}
		csig := C.CString(signature)
		defer C.free(unsafe.Pointer(csig))
		return check(C.sdm_kernel_get_checked(h, C.int32_t(ordinal), cname, csig, unsafe.Pointer(stream), &handle, &cerr), cerr)
	})
	if err != nil {
		return nil, err
	}
	k := &Kernel{rt: r, handle: handle, checked: signature}
	runtime.SetFinalizer(k, (*Kernel).finalize)
	return k, nil
}

// Preload loads the modules of names on device ordinal eagerly (JIT links in parallel), or of
// every kernel of every mounted archive when names is empty. The first failure is returned; the
// other modules still load.
func (r *Runtime) Preload(ordinal int, names ...string) error {
	return r.use(func(h *C.sdm_runtime) error {
		array, free, err := cStrings(names)
		if err != nil {
			return err
		}
		defer free()
		var cerr *C.sdm_error
		return check(C.sdm_preload(h, C.int32_t(ordinal), array, C.uint32_t(len(names)), &cerr), cerr)
	})
}

// CacheStats are this runtime's kernel-cache counters since its creation.
type CacheStats struct {
	Hits, Misses      uint64
	Builds            uint64 // images built: JIT links, and raw bytes of compressed cubins
	Evictions         uint64
	BadEntries        uint64 // damaged entries found and removed
	BytesWritten      uint64
	BuildMilliseconds float64
}

// CacheStats reads this runtime's kernel-cache counters.
func (r *Runtime) CacheStats() (CacheStats, error) {
	var out CacheStats
	err := r.use(func(h *C.sdm_runtime) error {
		var stats C.sdm_cache_stats
		stats.struct_size = C.uint32_t(C.sizeof_sdm_cache_stats)
		var cerr *C.sdm_error
		if err := check(C.sdm_cache_stats_get(h, &stats, &cerr), cerr); err != nil {
			return err
		}
		out = CacheStats{
			Hits: uint64(stats.hits), Misses: uint64(stats.misses), Builds: uint64(stats.builds),
			Evictions: uint64(stats.evictions), BadEntries: uint64(stats.bad_entries),
			BytesWritten: uint64(stats.bytes_written), BuildMilliseconds: float64(stats.build_milliseconds),
		}
		return nil
	})
	return out, err
}

// ListServed is the archive index of Runtime.Kernels that lists every kernel the runtime serves
// (SDM_LIST_SERVED), instead of one mounted archive's.
const ListServed = -1

// KernelEntry is one kernel a mounted archive lists (sdm_kernel_entry; ABI 1.3).
type KernelEntry struct {
	ArchiveIndex int    // the archive listing it (mount order: Runtime.Archive)
	Name         string // what the archive lists: a C++ kernel's mangled symbol, which Kernel takes
	Demangled    string // as c++filt prints it; "" for a name that is not a C++ symbol (extern "C")
	Module       string
	Signature    string // "ptr,f32,i32", or derived from the image: "b64,b32,b32" (docs/FORMAT.md)
	Targets      string // the module's images: "sm_90,sm_80,compute_90"
	// Shadowed: listing one archive, a newer mounted archive lists the same name and serves it
	// instead; listing ListServed, false.
	Shadowed bool
}

// Kernels lists the kernels of mounted archive archive (mount order), or, for ListServed, every
// kernel the runtime serves, each name once from the newest archive listing it: a snapshot sorted
// by name (ABI 1.3). An index past the mounted archives is ErrNotFound.
func (r *Runtime) Kernels(archive int) ([]KernelEntry, error) {
	index := C.uint32_t(C.SDM_LIST_SERVED)
	if archive != ListServed {
		if archive < 0 || uint64(archive) >= uint64(C.SDM_LIST_SERVED) {
			return nil, &Error{Code: ErrNotFound, Message: fmt.Sprintf("there is no mounted archive %d: pass an index in mount order, or sdm.ListServed", archive)}
		}
		index = C.uint32_t(archive)
	}
	var entries []KernelEntry
	err := r.use(func(h *C.sdm_runtime) error {
		var list *C.sdm_kernel_list
		var cerr *C.sdm_error
		if err := check(C.sdm_kernel_list_create(h, index, &list, &cerr), cerr); err != nil {
			return err
		}
		defer C.sdm_kernel_list_destroy(list)
		var count C.uint32_t
		if err := check(C.sdm_kernel_list_count(list, &count, &cerr), cerr); err != nil {
			return err
		}
		entries = make([]KernelEntry, 0, int(count))
		for i := C.uint32_t(0); i < count; i++ {
			var entry C.sdm_kernel_entry
			entry.struct_size = C.uint32_t(C.sizeof_sdm_kernel_entry)
			if err := check(C.sdm_kernel_list_get(list, i, &entry, &cerr), cerr); err != nil {
				return err
			}
			entries = append(entries, KernelEntry{
				ArchiveIndex: int(entry.archive_index), Name: C.GoString(entry.name), Demangled: C.GoString(entry.demangled),
				Module: C.GoString(entry.module), Signature: C.GoString(entry.signature), Targets: C.GoString(entry.targets),
				Shadowed: entry.shadowed != 0,
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// LoadPlugin loads a plan-provider plugin (sdm_plugin.h).
func (r *Runtime) LoadPlugin(path string) error {
	return r.use(func(h *C.sdm_runtime) error {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		var cerr *C.sdm_error
		return check(C.sdm_plugin_load(h, cpath, &cerr), cerr)
	})
}

// Release drops the reference the fetch took (sdm_kernel_release). Later calls on the Kernel,
// and a second Release, return ErrInvalidArgument. Hosts that never reload need not release.
func (k *Kernel) Release() error {
	// Go's own count, not libsdm's: another Kernel fetched by the same name shares the C handle,
	// and a second release here would drop its reference.
	if !k.released.CompareAndSwap(false, true) {
		return &Error{Code: ErrInvalidArgument, Message: "the sdm Kernel was released already"}
	}
	return k.rt.use(func(h *C.sdm_runtime) error {
		var cerr *C.sdm_error
		return check(C.sdm_kernel_release(h, k.handle, &cerr), cerr)
	})
}

// finalize releases an unreachable Kernel's reference unless Release or the runtime's Close did,
// and frees its launch memory (no Launch can hold it any more).
func (k *Kernel) finalize() {
	_ = k.Release()
	C.free(unsafe.Pointer(k.launch.Load()))
}

// use runs f with the kernel's handle, read-locked against the runtime's Close; refused after
// Release.
func (k *Kernel) use(f func(*C.sdm_kernel) error) error {
	err := k.rt.use(func(*C.sdm_runtime) error {
		if k.released.Load() {
			return &Error{Code: ErrInvalidArgument, Message: "the sdm Kernel is released"}
		}
		return f(k.handle)
	})
	// f handed the handle to C: k's finalizer must not release it before C returns.
	runtime.KeepAlive(k)
	return err
}

// Function is the kernel's CUfunction, for hosts that launch it themselves. Keep the Kernel
// reachable while launching it: after a reload, the finalizer's release may unload its module.
func (k *Kernel) Function() (unsafe.Pointer, error) {
	var function unsafe.Pointer
	err := k.use(func(h *C.sdm_kernel) error {
		var cerr *C.sdm_error
		return check(C.sdm_kernel_function(h, &function, &cerr), cerr)
	})
	return function, err
}

// Info says which image was chosen for the kernel and where it came from.
func (k *Kernel) Info() (KernelInfo, error) {
	var out KernelInfo
	err := k.use(func(h *C.sdm_kernel) error {
		var info C.sdm_kernel_info
		info.struct_size = C.uint32_t(C.sizeof_sdm_kernel_info)
		var cerr *C.sdm_error
		if err := check(C.sdm_kernel_info_get(h, &info, &cerr), cerr); err != nil {
			return err
		}
		out = KernelInfo{
			Name: C.GoString(info.name), Module: C.GoString(info.module), Archive: C.GoString(info.archive),
			Signature: C.GoString(info.signature), Ordinal: int(info.ordinal), ImageKind: uint32(info.image_kind),
			ImageSM: uint32(info.image_sm), LoadedSM: uint32(info.loaded_sm), Source: uint32(info.source),
		}
		return nil
	})
	return out, err
}

// ---- plans and launches -------------------------------------------------------------------------

// Plan.Flags bits.
const (
	PlanPDL = uint32(C.SDM_PLAN_PDL) // programmatic dependent launch (modern class only)
	// PlanCooperative is a cooperative launch (grid-wide sync; ABI 1.3): refused unless the device
	// supports it and the whole grid can be resident at once (the message gives the figures).
	PlanCooperative = uint32(C.SDM_PLAN_COOPERATIVE)
)

// A Plan (abi_generated.go: sdm_plan field for field) is a launch plan: what Kernel.Plan or
// Kernel.PlanForElements chose, or one the host fills in (NewPlan). Grid and Block are the x
// dimensions, as before ABI 1.3; GridY, GridZ, BlockY and BlockZ (ABI 1.3) the others, where 0
// means 1, so that a Plan of the older fields alone is one-dimensional.
//
// NewPlan is a plan of grid blocks of block threads, each {x, y, z}, without dynamic shared
// memory, flags, clusters or a priority (rule -1).
func NewPlan(grid, block [3]uint32) Plan {
	return Plan{
		Grid: grid[0], GridY: grid[1], GridZ: grid[2], Block: block[0], BlockY: block[1], BlockZ: block[2],
		Cluster: [3]uint32{1, 1, 1}, Rule: -1,
	}
}

// PDL reports whether the plan launches with programmatic dependent launch.
func (p Plan) PDL() bool { return p.Flags&PlanPDL != 0 }

// Cooperative reports whether the plan launches cooperatively (PlanCooperative).
func (p Plan) Cooperative() bool { return p.Flags&PlanCooperative != 0 }

// WithCooperative is the plan with PlanCooperative set or cleared.
func (p Plan) WithCooperative(on bool) Plan {
	if on {
		p.Flags |= PlanCooperative
	} else {
		p.Flags &^= PlanCooperative
	}
	return p
}

// GridDims is the grid's blocks in x, y, z (a y or z of 0 reads as 1).
func (p Plan) GridDims() [3]uint32 {
	return [3]uint32{p.Grid, atLeastOne(p.GridY), atLeastOne(p.GridZ)}
}

// BlockDims is a block's threads in x, y, z (a y or z of 0 reads as 1).
func (p Plan) BlockDims() [3]uint32 {
	return [3]uint32{p.Block, atLeastOne(p.BlockY), atLeastOne(p.BlockZ)}
}

func atLeastOne(n uint32) uint32 {
	if n == 0 {
		return 1
	}
	return n
}

// Plan chooses the launch plan on the kernel's device for problem (the kernel's problem
// parameters, in manifest order). No rule for the device: ErrNotFound; a plan that cannot run:
// ErrInvalidArgument.
func (k *Kernel) Plan(problem ...int64) (Plan, error) {
	var out Plan
	err := k.use(func(h *C.sdm_kernel) error {
		var plan C.sdm_plan
		plan.struct_size = C.uint32_t(C.sizeof_sdm_plan)
		var values *C.int64_t
		if len(problem) > 0 {
			values = (*C.int64_t)(unsafe.Pointer(&problem[0]))
		}
		var cerr *C.sdm_error
		if err := check(C.sdm_plan_select(h, values, C.uint32_t(len(problem)), &plan, &cerr), cerr); err != nil {
			return err
		}
		out = planFromC(&plan)
		return nil
	})
	return out, err
}

// PlanForElements is a plan for a kernel without plan rules (ABI 1.3): one thread per element of
// elements, in blocks of the size the driver's occupancy calculator suggests for the kernel with
// smemBytes of dynamic shared memory, and as many blocks as cover the elements (Rule -1, Occupancy
// the driver's blocks per SM). Change it before launching as any plan. 0 elements, more than
// 2^31-1 blocks, or more shared memory than the device has, is ErrInvalidArgument.
func (k *Kernel) PlanForElements(elements uint64, smemBytes uint32) (Plan, error) {
	var out Plan
	err := k.use(func(h *C.sdm_kernel) error {
		var plan C.sdm_plan
		plan.struct_size = C.uint32_t(C.sizeof_sdm_plan)
		var cerr *C.sdm_error
		if err := check(C.sdm_plan_for_elements(h, C.uint64_t(elements), C.uint32_t(smemBytes), &plan, &cerr), cerr); err != nil {
			return err
		}
		out = planFromC(&plan)
		return nil
	})
	return out, err
}

// ---- kernel attributes, settings and occupancy (ABI 1.4) -----------------------------------------

// KernelSetting is an sdm_kernel_setting, what Kernel.Set sets; its constants
// (SettingMaxDynamicSharedBytes, SettingPreferredCarveout) are generated from sdm.h into
// abi_generated.go.
type KernelSetting int32

// KernelAttributes is what the driver says of a fetched kernel's function (sdm_kernel_attributes:
// the cuFuncGetAttribute set). Sizes in bytes; versions major*10 + minor (90 for 9.0). The cluster
// fields are read on devices of capability 9.0 and later (HasCluster), else 0.
type KernelAttributes struct {
	MaxThreadsPerBlock                int32
	SharedSizeBytes                   int32 // static shared memory per block
	ConstSizeBytes                    int32
	LocalSizeBytes                    int32 // per thread
	NumRegs                           int32 // per thread
	PTXVersion                        int32
	BinaryVersion                     int32
	CacheModeCA                       int32
	MaxDynamicSharedSizeBytes         int32 // as set now (48 KiB unless raised)
	PreferredSharedMemoryCarveout     int32 // percent of L1 as shared memory; -1: no preference
	HasCluster                        bool
	ClusterSizeMustBeSet              int32
	RequiredClusterWidth              int32
	RequiredClusterHeight             int32
	RequiredClusterDepth              int32
	NonPortableClusterSizeAllowed     int32
	ClusterSchedulingPolicyPreference int32
}

// Attributes reads the driver's attributes of the kernel's function. Unlike Function, it does
// not hand the CUfunction out: a reload's retirement of the module still waits only for the
// streams sdm launched on.
func (k *Kernel) Attributes() (KernelAttributes, error) {
	var out KernelAttributes
	err := k.use(func(h *C.sdm_kernel) error {
		var a C.sdm_kernel_attributes
		a.struct_size = C.uint32_t(C.sizeof_sdm_kernel_attributes)
		var cerr *C.sdm_error
		if err := check(C.sdm_kernel_attributes_get(h, &a, &cerr), cerr); err != nil {
			return err
		}
		out = KernelAttributes{
			MaxThreadsPerBlock: int32(a.max_threads_per_block), SharedSizeBytes: int32(a.shared_size_bytes),
			ConstSizeBytes: int32(a.const_size_bytes), LocalSizeBytes: int32(a.local_size_bytes), NumRegs: int32(a.num_regs),
			PTXVersion: int32(a.ptx_version), BinaryVersion: int32(a.binary_version), CacheModeCA: int32(a.cache_mode_ca),
			MaxDynamicSharedSizeBytes:     int32(a.max_dynamic_shared_size_bytes),
			PreferredSharedMemoryCarveout: int32(a.preferred_shared_memory_carveout),
			HasCluster:                    a.flags&C.SDM_KERNEL_ATTRIBUTES_CLUSTER != 0,
			ClusterSizeMustBeSet:          int32(a.cluster_size_must_be_set),
			RequiredClusterWidth:          int32(a.required_cluster_width), RequiredClusterHeight: int32(a.required_cluster_height),
			RequiredClusterDepth:              int32(a.required_cluster_depth),
			NonPortableClusterSizeAllowed:     int32(a.non_portable_cluster_size_allowed),
			ClusterSchedulingPolicyPreference: int32(a.cluster_scheduling_policy_preference),
		}
		return nil
	})
	return out, err
}

// Set sets setting to value on the kernel's function and records it for the kernel's name on its
// device, so that the kernel fetched again after a reload gets it too: SettingMaxDynamicSharedBytes
// in bytes, SettingPreferredCarveout 0..100 percent or -1. A value past the device's limit is
// ErrInvalidArgument naming both, and nothing is recorded.
func (k *Kernel) Set(setting KernelSetting, value int32) error {
	return k.use(func(h *C.sdm_kernel) error {
		var cerr *C.sdm_error
		return check(C.sdm_kernel_set(h, C.sdm_kernel_setting(setting), C.int32_t(value), &cerr), cerr)
	})
}

// MaxActiveBlocks is how many blocks of blockThreads threads with smemBytes of dynamic shared
// memory fit on one multiprocessor at once (cuOccupancyMaxActiveBlocksPerMultiprocessor); 0 when
// none does.
func (k *Kernel) MaxActiveBlocks(blockThreads, smemBytes uint32) (int, error) {
	var blocks C.int32_t
	err := k.use(func(h *C.sdm_kernel) error {
		var cerr *C.sdm_error
		return check(C.sdm_kernel_max_active_blocks(h, C.uint32_t(blockThreads), C.uint32_t(smemBytes), &blocks, &cerr), cerr)
	})
	return int(blocks), err
}

// MaxPotentialBlockSize is the block size of the highest occupancy for smemBytes of dynamic shared
// memory per block, with at most blockThreadsLimit threads (0: the kernel's own limit), and the
// fewest blocks that reach it on the device (cuOccupancyMaxPotentialBlockSize).
func (k *Kernel) MaxPotentialBlockSize(smemBytes, blockThreadsLimit uint32) (blockThreads, minGridBlocks int, err error) {
	var block, grid C.int32_t
	err = k.use(func(h *C.sdm_kernel) error {
		var cerr *C.sdm_error
		return check(C.sdm_kernel_max_potential_block_size(h, C.uint32_t(smemBytes), C.uint32_t(blockThreadsLimit), &block, &grid, &cerr), cerr)
	})
	return int(block), int(grid), err
}

// LaunchAttribute is one CUlaunchAttribute of cuda.h (a 4-byte id, 4 bytes of padding, a 64-byte
// value union, 8-byte aligned), for Kernel.LaunchWithAttributes (ABI 1.3).
type LaunchAttribute struct {
	_     [0]uint64 // the alignment of the C union
	ID    uint32    // a CUlaunchAttributeID: CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN is 10
	_     [4]byte
	Value [64]byte // the CUlaunchAttributeValue union's bytes, in the host's byte order
}

// IntLaunchAttribute is attribute id whose value is an int or an enum (memSyncDomain,
// sharedMemCarveout, ...).
func IntLaunchAttribute(id uint32, value int32) LaunchAttribute {
	a := LaunchAttribute{ID: id}
	*(*int32)(unsafe.Pointer(&a.Value[0])) = value
	return a
}

// ---- module globals (ABI 1.3) -------------------------------------------------------------------

// Global is the __device__ or __constant__ variable name of the kernel's module, as loaded for the
// kernel's device and context: its device address and its size in bytes. name is its symbol
// (mangled for a C++ variable in a namespace). None such is ErrNotFound naming the module; a
// kernel's name is ErrInvalidArgument. After a reload replaced the archive, a kernel fetched again
// has the new image's globals, while this Kernel keeps the old ones until released.
func (k *Kernel) Global(name string) (DevicePtr, uint64, error) {
	var address, bytes C.uint64_t
	err := k.use(func(h *C.sdm_kernel) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		var cerr *C.sdm_error
		return check(C.sdm_global_get(h, cname, &address, &bytes, &cerr), cerr)
	})
	return DevicePtr(address), uint64(bytes), err
}

// GlobalWrite copies data to the global name at byte offset, on the device context's default
// stream. A range past the global's size is ErrInvalidArgument naming both.
func (k *Kernel) GlobalWrite(name string, offset uint64, data []byte) error {
	return k.GlobalWriteOnStream(name, offset, data, nil)
}

// GlobalRead copies len(data) bytes of the global name from byte offset into data, on the device
// context's default stream.
func (k *Kernel) GlobalRead(name string, offset uint64, data []byte) error {
	return k.GlobalReadOnStream(name, offset, data, nil)
}

// GlobalWriteOnStream is GlobalWrite on stream (a CUstream of the kernel's context; nil: the
// default stream), as cuMemcpyHtoDAsync does it. data is Go memory, which is pageable: the driver
// has taken the bytes when the call returns, though the copy to the device may still be queued on
// stream.
func (k *Kernel) GlobalWriteOnStream(name string, offset uint64, data []byte, stream Stream) error {
	return k.use(func(h *C.sdm_kernel) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		var ptr unsafe.Pointer
		if len(data) > 0 {
			ptr = unsafe.Pointer(&data[0])
		}
		var cerr *C.sdm_error
		return check(C.sdm_global_write(h, cname, C.uint64_t(offset), ptr, C.uint64_t(len(data)), unsafe.Pointer(stream), &cerr), cerr)
	})
}

// GlobalReadOnStream is GlobalRead on stream (nil: the default stream), as cuMemcpyDtoHAsync does
// it. data is Go memory, which is pageable: the driver has done the copy when the call returns.
func (k *Kernel) GlobalReadOnStream(name string, offset uint64, data []byte, stream Stream) error {
	return k.use(func(h *C.sdm_kernel) error {
		cname := C.CString(name)
		defer C.free(unsafe.Pointer(cname))
		var ptr unsafe.Pointer
		if len(data) > 0 {
			ptr = unsafe.Pointer(&data[0])
		}
		var cerr *C.sdm_error
		return check(C.sdm_global_read(h, cname, C.uint64_t(offset), ptr, C.uint64_t(len(data)), unsafe.Pointer(stream), &cerr), cerr)
	})
}

// DevicePtr is a CUdeviceptr, as a kernel argument.
type DevicePtr uint64

// RawArg is a kernel argument given as its bytes (a struct passed by value, say).
type RawArg []byte

// Launch launches the kernel with plan on stream (a CUstream of the kernel's device, or nil for
// the device's context current on this thread) through cuLaunchKernelEx. args are the argument
// values in the order of the kernel's signature (KernelChecked's, else the kernel's own), each
// packed by its parameter's layout: DevicePtr, uintptr or unsafe.Pointer (a device address) for
// "ptr" (or b64, u64, i64); any fixed-size integer for an integer parameter (i32 .. u64, and b8 ..
// b64, signed or unsigned, of the width) that holds its value; float32 or float64 for f32, f64,
// b32 (as f32) and b64 (as f64); complex64 for a b64 or opaque:8 parameter (complex<float>),
// complex128 for an opaque:16 one (complex<double>), byte-exact; bool for b8; RawArg of exactly
// the parameter's size for anything (a struct by value). A conversion that would lose anything (a
// float to an integer, a complex to a real, an integer out of range, a float64 past the f32
// range, a RawArg longer or shorter than its parameter) is ErrInvalidArgument naming the
// argument's index and both types, before anything reaches the driver. sdm checks the count; the
// caller answers for the device memory the kernel touches.
// A successful Launch allocates nothing on the Go heap: the C memory it fills is the Kernel's,
// kept between calls (a Launch concurrent with another on the same Kernel mallocs its own).
func (k *Kernel) Launch(plan Plan, stream Stream, args ...interface{}) error {
	return k.launchWith(plan, stream, nil, 0, args)
}

// LaunchWithAttributes is Launch with attributes handed to cuLaunchKernelEx after sdm's own (an
// sdm_launch_attributes on the plan's chain; ABI 1.3): those sdm has no Plan field for (a memory
// sync domain, a shared memory carveout, an access policy window, ...). At most 16; one that a
// Plan field sets (cluster, PDL, cooperative, priority) is ErrInvalidArgument.
func (k *Kernel) LaunchWithAttributes(plan Plan, stream Stream, attributes []LaunchAttribute, args ...interface{}) error {
	if len(attributes) == 0 {
		return k.launchWith(plan, stream, nil, 0, args)
	}
	if uint64(len(attributes)) > math.MaxUint32 {
		return &Error{Code: ErrInvalidArgument, Message: fmt.Sprintf("%d launch attributes, at most 16", len(attributes))}
	}
	// Go memory without Go pointers, read by sdm during the call only.
	return k.launchWith(plan, stream, unsafe.Pointer(&attributes[0]), len(attributes), args)
}

// launchWith is Launch and LaunchWithAttributes: attributeCount CUlaunchAttribute values at attributes.
func (k *Kernel) launchWith(plan Plan, stream Stream, attributes unsafe.Pointer, attributeCount int, args []interface{}) error {
	// Each value in its own 16-byte slot of the kernel's launch memory, the pointer table after
	// them: C memory, as cgo forbids handing C a Go array of Go pointers. Nothing here allocates on
	// the Go heap, nor lets args escape, so the caller's interface values can stay on its stack.
	const slot = 16
	params, err := k.signature()
	if err != nil {
		return err
	}
	size := 0
	for i, arg := range args {
		n, refused := packArg(nil, arg, paramAt(params, i), i)
		if refused != nil {
			return refused
		}
		size += (n + slot - 1) / slot * slot
	}
	launch := k.takeLaunch(size + len(args)*int(unsafe.Sizeof(unsafe.Pointer(nil))))
	if launch == nil {
		return &Error{Code: ErrOutOfMemory, Message: "no memory for the kernel arguments"}
	}
	defer k.putLaunch(launch)
	var table *unsafe.Pointer
	if len(args) > 0 {
		data := unsafe.Pointer(launch.data)
		table = (*unsafe.Pointer)(unsafe.Add(data, size))
		slots := unsafe.Slice(table, len(args))
		offset := 0
		for i, arg := range args {
			slots[i] = unsafe.Add(data, offset)
			n, _ := packArg(slots[i], arg, paramAt(params, i), i) // measured above: it fits
			offset += (n + slot - 1) / slot * slot
		}
	}
	launch.plan = plan.toC()
	return k.use(func(h *C.sdm_kernel) error {
		var status C.sdm_status
		if attributeCount == 0 {
			status = C.sdm_go_launch_run(unsafe.Pointer(h), launch, unsafe.Pointer(stream), table, C.uint32_t(len(args)))
		} else {
			status = C.sdm_go_launch_attributes_run(unsafe.Pointer(h), launch, unsafe.Pointer(stream), table, C.uint32_t(len(args)),
				attributes, C.uint32_t(attributeCount))
		}
		return check(status, launch.error)
	})
}

// typeOf is reflect.TypeOf(arg) without letting arg escape, as reflect.TypeOf does (escape
// analysis does not tell an interface's type word from its data word), which would move every
// Launch caller's argument values to the heap: it copies only the type word, a pointer to a static
// type descriptor, as an integer into an interface without data.
func typeOf(arg interface{}) reflect.Type {
	var probe interface{}
	(*[2]uintptr)(unsafe.Pointer(&probe))[0] = (*[2]uintptr)(unsafe.Pointer(&arg))[0]
	return reflect.TypeOf(probe)
}

// launchCapacity is the data bytes of a kernel's first launch memory: a dozen arguments and their
// pointers. A launch that needs more replaces it with a bigger block.
const launchCapacity = 512

// takeLaunch is launch memory of at least size data bytes: the kernel's kept block when no other
// Launch holds it and it is big enough, else a new one (C memory: still no Go allocation); nil
// without memory.
func (k *Kernel) takeLaunch(size int) *C.sdm_go_launch {
	launch := k.launch.Swap(nil)
	if launch != nil && int(launch.capacity) >= size {
		return launch
	}
	C.free(unsafe.Pointer(launch))
	if size < launchCapacity {
		size = launchCapacity
	}
	return C.sdm_go_launch_new(C.size_t(size))
}

// putLaunch keeps launch for the next call, or frees it when a concurrent Launch kept its own.
func (k *Kernel) putLaunch(launch *C.sdm_go_launch) {
	if !k.launch.CompareAndSwap(nil, launch) {
		C.free(unsafe.Pointer(launch))
	}
}

// storeArg writes a kernel argument's bytes to dst, in the host's byte order as the kernel reads
// them, and returns how many; dst nil only measures. -1: arg is of no kernel argument type.
func storeArg(dst unsafe.Pointer, arg interface{}) int {
	switch v := arg.(type) {
	case DevicePtr:
		return store(dst, v)
	case unsafe.Pointer:
		return store(dst, uintptr(v))
	case uintptr:
		return store(dst, v)
	case bool:
		return store(dst, v)
	case int8:
		return store(dst, v)
	case uint8:
		return store(dst, v)
	case int16:
		return store(dst, v)
	case uint16:
		return store(dst, v)
	case int32:
		return store(dst, v)
	case uint32:
		return store(dst, v)
	case int64:
		return store(dst, v)
	case uint64:
		return store(dst, v)
	case float32:
		return store(dst, v)
	case float64:
		return store(dst, v)
	case RawArg:
		if dst != nil {
			copy(unsafe.Slice((*byte)(dst), len(v)), v)
		}
		return len(v)
	}
	return -1
}

// store writes value to dst unless dst is nil (its 16-byte slot is aligned for any T) and returns
// its size.
func store[T any](dst unsafe.Pointer, value T) int {
	if dst != nil {
		*(*T)(dst) = value
	}
	return int(unsafe.Sizeof(value))
}

// QualifiedName is the module-qualified spelling of kernel name of module, "MODULE!NAME" (ABI 1.4),
// for Runtime.Kernel: the kernel of that module, where several modules define the name.
func QualifiedName(module, name string) string { return module + "!" + name }
