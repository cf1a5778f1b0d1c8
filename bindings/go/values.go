package sdm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unsafe"
)

// param is one parameter of a kernel signature (docs/FORMAT.md, "Derived signatures"): its type as
// the signature writes it ("f32", "b64", "opaque:16:8"), its kind ("opaque" for a struct by value)
// and its size in bytes.
type param struct {
	name string
	kind string
	size int
}

// paramSizes are the bytes of each fixed-size parameter type.
var paramSizes = map[string]int{
	"ptr": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8, "f16": 2, "bf16": 2,
	"b8": 1, "b16": 2, "b32": 4, "b64": 8,
}

// parseSignature is the parameters of signature ("ptr, f32,i32": spaces ignored, as libsdm reads
// it). A type these bindings do not know has size 0: its argument is passed as it is.
func parseSignature(signature string) []param {
	signature = strings.Join(strings.Fields(signature), "")
	var params []param
	for _, name := range strings.Split(signature, ",") {
		if name == "" {
			continue
		}
		p := param{name: name, kind: name, size: paramSizes[name]}
		if fields := strings.Split(name, ":"); len(fields) == 3 && fields[0] == "opaque" {
			p.kind = "opaque"
			p.size, _ = strconv.Atoi(fields[1])
		}
		params = append(params, p)
	}
	return params
}

// signature is the kernel's parameters, by which Launch packs its arguments: the signature given to
// KernelChecked (which libsdm checked against the kernel's), else the kernel's own; read once.
func (k *Kernel) signature() ([]param, error) {
	if params := k.params.Load(); params != nil {
		return *params, nil
	}
	text := k.checked
	if text == "" {
		info, err := k.Info()
		if err != nil {
			return nil, err
		}
		text = info.Signature
	}
	params := parseSignature(text)
	k.params.Store(&params)
	return params, nil
}

// paramAt is parameter i of params, or nil past them.
func paramAt(params []param, i int) *param {
	if i < len(params) {
		return &params[i]
	}
	return nil
}

// packArg writes kernel argument index's bytes to dst (nil: only measures) as parameter p lays
// them out, and returns how many; p nil (an argument past the signature, which sdm refuses by
// count) writes the value as it is. A conversion that would lose anything is refused: an
// *Error naming the argument's index and both types. It allocates only to refuse.
func packArg(dst unsafe.Pointer, arg interface{}, p *param, index int) (int, *Error) {
	if p == nil || p.size == 0 {
		n := storeArg(dst, arg)
		if n < 0 {
			return 0, unknownArg(arg, index)
		}
		return n, nil
	}
	switch v := arg.(type) {
	case DevicePtr:
		return packPointer(dst, uint64(v), p, index, "sdm.DevicePtr")
	case unsafe.Pointer:
		return packPointer(dst, uint64(uintptr(v)), p, index, "unsafe.Pointer")
	case uintptr:
		return packPointer(dst, uint64(v), p, index, "uintptr")
	case bool:
		if p.size != 1 || (p.kind != "b8" && p.kind != "opaque") {
			return 0, refuse(index, p, "a bool is 1 byte; pass an integer of the parameter's type")
		}
		return store(dst, v), nil
	case int8:
		return packInt(dst, int64(v), p, index, "int8")
	case int16:
		return packInt(dst, int64(v), p, index, "int16")
	case int32:
		return packInt(dst, int64(v), p, index, "int32")
	case int64:
		return packInt(dst, v, p, index, "int64")
	case uint8:
		return packInt(dst, int64(v), p, index, "uint8")
	case uint16:
		return packInt(dst, int64(v), p, index, "uint16")
	case uint32:
		return packInt(dst, int64(v), p, index, "uint32")
	case uint64:
		if v > math.MaxInt64 && (p.kind == "u64" || p.kind == "b64" || p.kind == "ptr") {
			return store(dst, v), nil
		}
		if v > math.MaxInt64 {
			return 0, refuse(index, p, fmt.Sprintf("the uint64 %d does not fit a %s", v, p.name))
		}
		return packInt(dst, int64(v), p, index, "uint64")
	case float32:
		return packFloat(dst, float64(v), p, index, "float32")
	case float64:
		return packFloat(dst, v, p, index, "float64")
	case complex64:
		return packComplex(dst, v, complex128(v), 8, p, index, "complex64")
	case complex128:
		return packComplex(dst, v, v, 16, p, index, "complex128")
	case RawArg:
		if len(v) != p.size {
			return 0, refuse(index, p, fmt.Sprintf("an sdm.RawArg of %d byte(s) for a parameter of %d", len(v), p.size))
		}
		if dst != nil {
			copy(unsafe.Slice((*byte)(dst), len(v)), v)
		}
		return len(v), nil
	}
	return 0, unknownArg(arg, index)
}

func unknownArg(arg interface{}, index int) *Error {
	return &Error{Code: ErrInvalidArgument, Message: fmt.Sprintf("kernel argument %d: %v is not a kernel argument type "+
		"(DevicePtr, a fixed-size integer, float or complex, bool, uintptr, unsafe.Pointer or RawArg; int is not fixed-size)",
		index, typeOf(arg))}
}

func refuse(index int, p *param, why string) *Error {
	return &Error{Code: ErrInvalidArgument, Message: fmt.Sprintf("kernel argument %d (%s): %s", index, p.name, why)}
}

// packPointer: a device address, for a ptr, b64, u64 or i64 parameter.
func packPointer(dst unsafe.Pointer, address uint64, p *param, index int, typeName string) (int, *Error) {
	switch p.kind {
	case "ptr", "b64", "u64", "i64":
		return store(dst, address), nil
	}
	return 0, refuse(index, p, fmt.Sprintf("a %s (a device address) does not convert to a %s", typeName, p.name))
}

// packInt: an integer for an integer parameter of a range that holds it (b8..b64 take a value of
// their width, signed or unsigned; ptr and u64 take no negative one).
func packInt(dst unsafe.Pointer, value int64, p *param, index int, typeName string) (int, *Error) {
	low, high := int64(0), int64(math.MaxInt64)
	switch p.kind {
	case "i32":
		low, high = math.MinInt32, math.MaxInt32
	case "u32":
		high = math.MaxUint32
	case "i64":
		low = math.MinInt64
	case "u64", "ptr":
	case "b8", "b16", "b32":
		bits := uint(p.size * 8)
		low, high = -1<<(bits-1), 1<<bits-1
	case "b64":
		low = math.MinInt64
	default:
		return 0, refuse(index, p, fmt.Sprintf("an %s does not convert to a %s parameter; pass a value of its type (%s)", typeName, p.name, goTypes(p)))
	}
	if value < low || value > high {
		return 0, refuse(index, p, fmt.Sprintf("the %s %d does not fit a %s (%d .. %d)", typeName, value, p.name, low, high))
	}
	switch p.size {
	case 1:
		return store(dst, uint8(value)), nil
	case 2:
		return store(dst, uint16(value)), nil
	case 4:
		return store(dst, uint32(value)), nil
	}
	return store(dst, value), nil
}

// packFloat: a float for a float parameter: f64 and b64 exactly, f32 and b32 rounded as a C cast
// rounds (a finite float64 past the f32 range, which would arrive as an infinity, is refused).
// Never for an integer parameter: a float is not truncated.
func packFloat(dst unsafe.Pointer, value float64, p *param, index int, typeName string) (int, *Error) {
	switch p.kind {
	case "f64", "b64":
		return store(dst, value), nil
	case "f32", "b32":
		if !math.IsInf(value, 0) && !math.IsNaN(value) && math.Abs(value) > math.MaxFloat32 {
			return 0, refuse(index, p, fmt.Sprintf("the %s %g does not fit an f32 (largest finite %g)", typeName, value, math.MaxFloat32))
		}
		return store(dst, float32(value)), nil
	case "f16", "bf16", "b16":
		return 0, refuse(index, p, fmt.Sprintf("a %s does not convert to a %s here: pass its bits as a uint16", typeName, p.name))
	}
	return 0, refuse(index, p, fmt.Sprintf("a %s %g does not convert to a %s without loss; pass a value of its type (%s)", typeName, value, p.name, goTypes(p)))
}

// packComplex: a complex64 (complex<float>: two f32, real then imaginary, 8 bytes) for a b64 or
// opaque:8 parameter, a complex128 (complex<double>, 16 bytes) for an opaque:16 one, byte-exact.
// A real parameter would lose the imaginary part; another width, precision or bytes.
func packComplex[T complex64 | complex128](dst unsafe.Pointer, value T, wide complex128, width int, p *param, index int, typeName string) (int, *Error) {
	if p.kind != "b64" && p.kind != "opaque" {
		return 0, refuse(index, p, fmt.Sprintf("a %s %v does not convert to a %s without losing its imaginary part; a complex goes to "+
			"a complex parameter (b64 or opaque:8 for complex<float>, opaque:16 for complex<double>)", typeName, wide, p.name))
	}
	if p.size != width {
		want := map[int]string{8: "complex64", 16: "complex128"}[p.size]
		if want == "" {
			want = "RawArg of its bytes"
		}
		return 0, refuse(index, p, fmt.Sprintf("a %s is %d bytes and the %s parameter %d; pass a %s", typeName, width, p.name, p.size, want))
	}
	return store(dst, value), nil
}

// goTypes names the Go types a parameter takes, for a refusal's message.
func goTypes(p *param) string {
	switch p.kind {
	case "ptr":
		return "sdm.DevicePtr, uintptr, unsafe.Pointer or uint64"
	case "i32", "u32", "i64", "u64", "b8", "b16":
		return "an integer"
	case "b32":
		return "an integer or float32"
	case "b64":
		return "an integer, float64, complex64 or sdm.DevicePtr"
	case "f32":
		return "float32"
	case "f64":
		return "float64"
	}
	return "sdm.RawArg"
}
