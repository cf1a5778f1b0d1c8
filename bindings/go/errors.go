package sdm

/*
#include <sdm/sdm.h>
*/
import "C"

// Status is an sdm_status. The non-OK values are also errors, so that they serve as sentinels:
//
//	if errors.Is(err, sdm.ErrNotFound) { ... }
//
// A newer libsdm may return values this package has no constant for; they keep their number. The
// constants (OK, ErrInvalidArgument, ...) are generated from sdm.h into abi_generated.go.
type Status int32

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

// ImageRefusedError is the error of an image refusal (ErrImageRefused): sdm loaded an image that
// must not run on the device (compiled for an older arch, on a Hopper / Blackwell GPU), and the
// message names the image, the device and the fix. It is its own type, not an *Error, so that it
// escapes a generic handler: the seed makes its refusal a BaseException that no `except Exception`
// fallback catches, and likewise code that falls back on any *sdm.Error (errors.As(err, &e) with
// e an *sdm.Error) does not match it. Test for it by name: errors.Is(err, sdm.ErrImageRefused),
// or errors.As with an *sdm.ImageRefusedError. Its fields are Error's.
type ImageRefusedError Error

func (e *ImageRefusedError) Error() string { return (*Error)(e).Error() }

// Is reports whether target is ErrImageRefused.
func (e *ImageRefusedError) Is(target error) bool { return (*Error)(e).Is(target) }

// adopt copies and destroys an sdm_error that a call failed with: an *Error, or an
// *ImageRefusedError for ErrImageRefused.
func adopt(status C.sdm_status, cerr *C.sdm_error) error {
	e := Error{Code: Status(status), Message: Status(status).String()}
	if cerr != nil { // else sdm had no memory for an error object
		defer C.sdm_error_destroy(cerr)
		e.Message = C.GoString(C.sdm_error_message(cerr))
		e.Native = int32(C.sdm_error_native(cerr))
		e.Log = C.GoString(C.sdm_error_log(cerr))
	}
	if e.Code == ErrImageRefused {
		return (*ImageRefusedError)(&e)
	}
	return &e
}

// check turns a call's status and error into a Go error (nil on success).
func check(status C.sdm_status, cerr *C.sdm_error) error {
	if status == C.SDM_OK {
		C.sdm_error_destroy(cerr) // NULL on success, per the ABI
		return nil
	}
	return adopt(status, cerr)
}
