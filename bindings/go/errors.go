package sdm

/*
#include <sdm/sdm.h>
*/
import "C"

// Status is an sdm_status. The non-OK values are also errors, so that they serve as sentinels:
//
//	if errors.Is(err, sdm.ErrNotFound) { ... }
//
// A newer libsdm may return values this package has no constant for; they keep their number.
type Status int32

const (
	OK                    Status = C.SDM_OK
	ErrInvalidArgument    Status = C.SDM_ERROR_INVALID_ARGUMENT // a NULL handle, a struct_size too small, a bad value
	ErrOutOfMemory        Status = C.SDM_ERROR_OUT_OF_MEMORY
	ErrNoDriver           Status = C.SDM_ERROR_NO_DRIVER      // libcuda (or $SDM_CUDA_DRIVER) could not be loaded
	ErrDriverTooOld       Status = C.SDM_ERROR_DRIVER_TOO_OLD // the driver lacks a CUDA version or entry point sdm needs
	ErrDriver             Status = C.SDM_ERROR_DRIVER         // a driver call failed: Error.Native is its CUresult
	ErrNoDevice           Status = C.SDM_ERROR_NO_DEVICE      // no such device ordinal, or no CUDA device at all
	ErrUnsupportedDevice  Status = C.SDM_ERROR_UNSUPPORTED_DEVICE
	ErrArchiveCorrupt     Status = C.SDM_ERROR_ARCHIVE_CORRUPT     // an archive failed a check
	ErrArchiveUnsupported Status = C.SDM_ERROR_ARCHIVE_UNSUPPORTED // an archive needs a newer sdm
	ErrIO                 Status = C.SDM_ERROR_IO                  // the operating system refused (open, read, mmap)
	ErrNotFound           Status = C.SDM_ERROR_NOT_FOUND           // no such kernel or mounted archive
	ErrUnsupported        Status = C.SDM_ERROR_UNSUPPORTED         // this build or platform lacks the feature
	ErrNoImage            Status = C.SDM_ERROR_NO_IMAGE            // no image of a module fits the device
	ErrImageRefused       Status = C.SDM_ERROR_IMAGE_REFUSED       // a loaded image failed validation
	ErrJIT                Status = C.SDM_ERROR_JIT                 // a JIT backend failed: Error.Log has its log
	ErrMismatch           Status = C.SDM_ERROR_MISMATCH            // declared metadata disagrees (arch, ABI version, signature)
	ErrGraphCapture       Status = C.SDM_ERROR_GRAPH_CAPTURE       // the work would JIT while a stream captures a graph
	ErrInternal           Status = C.SDM_ERROR_INTERNAL            // a broken invariant inside sdm: please report it
	ErrUntrusted          Status = C.SDM_ERROR_UNTRUSTED           // the signature policy refused an archive (unsigned, unknown key, bad signature)
	ErrAmbiguous          Status = C.SDM_ERROR_AMBIGUOUS           // a kernel name (a C++ spelling, a name expression) matches several kernels; the message lists them
)

// String is the C name ("SDM_ERROR_NO_DRIVER"); "SDM_ERROR_UNKNOWN" for a value libsdm does not know.
func (s Status) String() string { return C.GoString(C.sdm_status_string(C.sdm_status(s))) }

// Error makes a Status usable as a sentinel error.
func (s Status) Error() string { return s.String() }

// Error is a failed sdm call: its status, sdm's message (naming the archive, device or kernel and
// the fix), the native CUresult or nvJitLink code, and a backend's log. The C error object is
// copied and released at once.
type Error struct {
	Code    Status
	Message string
	Native  int32  // the CUresult behind ErrDriver, the nvJitLink result behind ErrJIT; else 0
	Log     string // the JIT's error log, or ""
}

func (e *Error) Error() string { return e.Code.String() + ": " + e.Message }

// Is reports whether target is this error's Status, so that errors.Is(err, sdm.ErrIO) works.
func (e *Error) Is(target error) bool {
	status, ok := target.(Status)
	return ok && status == e.Code
}

// adopt copies and destroys an sdm_error that a call failed with.
func adopt(status C.sdm_status, cerr *C.sdm_error) error {
	if cerr == nil { // sdm had no memory for an error object
		return &Error{Code: Status(status), Message: Status(status).String()}
	}
	defer C.sdm_error_destroy(cerr)
	return &Error{
		Code:    Status(status),
		Message: C.GoString(C.sdm_error_message(cerr)),
		Native:  int32(C.sdm_error_native(cerr)),
		Log:     C.GoString(C.sdm_error_log(cerr)),
	}
}

// check turns a call's status and error into a Go error (nil on success).
func check(status C.sdm_status, cerr *C.sdm_error) error {
	if status == C.SDM_OK {
		C.sdm_error_destroy(cerr) // NULL on success, per the ABI
		return nil
	}
	return adopt(status, cerr)
}
