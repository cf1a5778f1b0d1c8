//! Kernel arguments by value ([`Value`]), packed by the parameter's layout in the kernel's
//! signature (docs/FORMAT.md, "Derived signatures") for [`KernelHandle::launch_values`]: a
//! conversion that would lose anything is refused, naming the argument's index and both types.

use std::ffi::c_void;
use std::ops::Deref;

use crate::{DevicePtr, Error, KernelHandle, Plain, Plan, Result, Runtime, Status, Stream};

/// A `complex<float>` (`cuda::std::complex<float>`, `thrust::complex<float>`, `cuComplex`): the
/// real part, then the imaginary part, 8 bytes. std has no complex type; this is its layout.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Complex32 {
    pub re: f32,
    pub im: f32,
}

/// A `complex<double>` (`cuda::std::complex<double>`, `cuDoubleComplex`): 16 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Complex64 {
    pub re: f64,
    pub im: f64,
}

impl Complex32 {
    pub fn new(re: f32, im: f32) -> Complex32 {
        Complex32 { re, im }
    }
}

impl Complex64 {
    pub fn new(re: f64, im: f64) -> Complex64 {
        Complex64 { re, im }
    }
}

// SAFETY: two floats, no padding, every bit pattern a value.
unsafe impl Plain for Complex32 {}
// SAFETY: as above.
unsafe impl Plain for Complex64 {}

/// One kernel argument by value, for [`KernelHandle::launch_values`], which packs it by its
/// parameter's layout:
/// - `Ptr` (a device address) for `ptr`, `b64`, `u64` or `i64`;
/// - an integer for an integer parameter (`i32` .. `u64`, and `b8` .. `b64`, signed or unsigned, of
///   the width) whose range holds its value;
/// - `F32` / `F64` for `f32`, `f64`, `b32` (as an f32) and `b64` (as an f64): an f64 rounds to an
///   f32 as a C cast does, and one past the f32 range is refused;
/// - `Complex32` for a `b64` or `opaque:8:*` parameter (`complex<float>`), `Complex64` for an
///   `opaque:16:*` one (`complex<double>`), byte-exact;
/// - `Bytes` of exactly the parameter's size for any (a struct by value).
///
/// Refused, before the driver sees anything: a float for an integer, a complex for a real, an
/// integer for a float, a value out of range, bytes longer or shorter than the parameter.
/// `From` makes one of each integer and float, of `Complex32`/`Complex64` and `[f32; 2]`/`[f64; 2]`
/// (real, imaginary) and of `&[u8]`; a `DevicePtr` is a `u64`: `Value::Ptr(p)` says what it is.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Value<'a> {
    Ptr(DevicePtr),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
    Complex32(Complex32),
    Complex64(Complex64),
    Bytes(&'a [u8]),
}

macro_rules! value_from {
    ($($t:ty => $variant:ident),*) => {$(
        impl From<$t> for Value<'_> {
            fn from(value: $t) -> Self {
                Value::$variant(value)
            }
        }
    )*};
}
value_from!(i8 => I8, u8 => U8, i16 => I16, u16 => U16, i32 => I32, u32 => U32, i64 => I64, u64 => U64,
            f32 => F32, f64 => F64, Complex32 => Complex32, Complex64 => Complex64);

impl From<[f32; 2]> for Value<'_> {
    fn from([re, im]: [f32; 2]) -> Self {
        Value::Complex32(Complex32 { re, im })
    }
}

impl From<[f64; 2]> for Value<'_> {
    fn from([re, im]: [f64; 2]) -> Self {
        Value::Complex64(Complex64 { re, im })
    }
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(bytes: &'a [u8]) -> Self {
        Value::Bytes(bytes)
    }
}

impl Value<'_> {
    /// The Rust type, as a refusal names it.
    fn type_name(&self) -> &'static str {
        match self {
            Value::Ptr(_) => "Ptr (a device address)",
            Value::I8(_) => "i8",
            Value::U8(_) => "u8",
            Value::I16(_) => "i16",
            Value::U16(_) => "u16",
            Value::I32(_) => "i32",
            Value::U32(_) => "u32",
            Value::I64(_) => "i64",
            Value::U64(_) => "u64",
            Value::F32(_) => "f32",
            Value::F64(_) => "f64",
            Value::Complex32(_) => "Complex32",
            Value::Complex64(_) => "Complex64",
            Value::Bytes(_) => "Bytes",
        }
    }

    /// The integer it holds, if it is one (a device address is not).
    fn integer(&self) -> Option<i128> {
        Some(match *self {
            Value::I8(v) => v.into(),
            Value::U8(v) => v.into(),
            Value::I16(v) => v.into(),
            Value::U16(v) => v.into(),
            Value::I32(v) => v.into(),
            Value::U32(v) => v.into(),
            Value::I64(v) => v.into(),
            Value::U64(v) => v.into(),
            _ => return None,
        })
    }
}

/// A parameter of a signature: its type as written ("opaque:16:8"), its kind ("opaque" for a
/// struct by value) and its size.
#[derive(Clone, Debug)]
pub(crate) struct Param {
    name: String,
    kind: String,
    size: usize,
}

/// The parameters of `signature` ("ptr, f32,i32": spaces ignored, as libsdm reads it).
pub(crate) fn parse_signature(signature: &str) -> Vec<Param> {
    let text: String = signature.chars().filter(|c| !c.is_whitespace()).collect();
    text.split(',')
        .filter(|name| !name.is_empty())
        .map(|name| {
            let size = match name {
                "b8" => 1,
                "b16" | "f16" | "bf16" => 2,
                "b32" | "i32" | "u32" | "f32" => 4,
                _ => match name.strip_prefix("opaque:").and_then(|rest| rest.split(':').next()) {
                    Some(size) => size.parse().unwrap_or(0),
                    None => 8,
                },
            };
            let kind = if name.starts_with("opaque:") { "opaque" } else { name };
            Param { name: name.to_owned(), kind: kind.to_owned(), size }
        })
        .collect()
}

/// `value`'s bytes as parameter `param` (argument `index`) lays them out, or the refusal.
pub(crate) fn pack(value: &Value<'_>, param: &Param, index: usize) -> Result<Vec<u8>> {
    let refuse =
        |why: String| Error::new(Status::INVALID_ARGUMENT, format!("kernel argument {index} ({}): {why}", param.name));
    let what = value.type_name();
    let kind = param.kind.as_str();
    match *value {
        Value::Ptr(address) => match kind {
            "ptr" | "b64" | "u64" | "i64" => Ok(address.to_le_bytes().to_vec()),
            _ => Err(refuse(format!("a {what} does not convert to a {kind}"))),
        },
        Value::F32(_) | Value::F64(_) => {
            let (number, wide) = match *value {
                Value::F32(v) => (f64::from(v), false),
                Value::F64(v) => (v, true),
                _ => unreachable!(),
            };
            match kind {
                "f64" | "b64" => Ok(number.to_le_bytes().to_vec()),
                "f32" | "b32" => {
                    if wide && number.is_finite() && number.abs() > f64::from(f32::MAX) {
                        return Err(refuse(format!(
                            "the {what} {number:e} does not fit an f32 (largest finite {:e})",
                            f32::MAX
                        )));
                    }
                    Ok((number as f32).to_le_bytes().to_vec())
                }
                "f16" | "bf16" | "b16" => {
                    Err(refuse(format!("a {what} does not convert to a {kind} here: pass its bits as a u16")))
                }
                _ => Err(refuse(format!(
                    "a {what} {number} does not convert to a {kind} without loss; pass a value of its type"
                ))),
            }
        }
        Value::Complex32(c) => complex(
            kind,
            param.size,
            8,
            what,
            &[c.re.to_le_bytes(), c.im.to_le_bytes()].concat(),
            (c.re.into(), c.im.into()),
            &refuse,
        ),
        Value::Complex64(c) => complex(
            kind,
            param.size,
            16,
            what,
            &[c.re.to_le_bytes(), c.im.to_le_bytes()].concat(),
            (c.re, c.im),
            &refuse,
        ),
        Value::Bytes(bytes) => {
            if bytes.len() != param.size {
                return Err(refuse(format!("{} byte(s) for a parameter of {}", bytes.len(), param.size)));
            }
            Ok(bytes.to_vec())
        }
        _ => {
            let number = value.integer().expect("the other variants are integers");
            let (low, high): (i128, i128) = match kind {
                "i32" => (i32::MIN.into(), i32::MAX.into()),
                "u32" => (0, u32::MAX.into()),
                "i64" => (i64::MIN.into(), i64::MAX.into()),
                "u64" | "ptr" => (0, u64::MAX.into()),
                "b8" | "b16" | "b32" | "b64" => {
                    let bits = param.size as u32 * 8;
                    (-(1i128 << (bits - 1)), (1i128 << bits) - 1)
                }
                _ => {
                    return Err(refuse(format!(
                        "an {what} does not convert to a {kind} parameter; pass a value of its type"
                    )))
                }
            };
            if number < low || number > high {
                return Err(refuse(format!("the {what} {number} does not fit a {kind} ({low} .. {high})")));
            }
            Ok(number.to_le_bytes()[..param.size].to_vec())
        }
    }
}

/// A complex of `width` bytes (`bytes`: real then imaginary) for a parameter of `size`: byte-exact
/// into a `b64` or opaque parameter of its width, refused into a real one or another width.
fn complex(
    kind: &str,
    size: usize,
    width: usize,
    what: &str,
    bytes: &[u8],
    (re, im): (f64, f64),
    refuse: &dyn Fn(String) -> Error,
) -> Result<Vec<u8>> {
    if kind != "b64" && kind != "opaque" {
        return Err(refuse(format!(
            "a {what} ({re}+{im}i) does not convert to a {kind} without losing its imaginary part; a complex goes to a complex \
             parameter (b64 or opaque:8 for complex<float>, opaque:16 for complex<double>)"
        )));
    }
    if size != width {
        let want = match size {
            8 => "Complex32",
            16 => "Complex64",
            _ => "Bytes of its size",
        };
        return Err(refuse(format!("a {what} is {width} bytes and the parameter {size}; pass a {want}")));
    }
    Ok(bytes.to_vec())
}

impl<R: Deref<Target = Runtime>> KernelHandle<R> {
    /// Launches as [`KernelHandle::launch`] does, with arguments by value, each packed by its
    /// parameter's layout in the kernel's signature (the one given to
    /// [`Runtime::kernel_checked`], else the kernel's own, read once): see [`Value`]. A value the
    /// parameter cannot take without loss is [`Status::INVALID_ARGUMENT`], naming the argument's
    /// index and both types, and nothing is launched; a count other than the signature's is sdm's
    /// to refuse, naming both.
    ///
    /// # Safety
    /// Device pointers must be valid for what the kernel accesses, and `stream` must be null or a
    /// live CUstream: the kernel runs on the GPU with whatever it is given.
    pub unsafe fn launch_values(&self, plan: &Plan, stream: Stream, args: &[Value<'_>]) -> Result<()> {
        let params = self.params()?;
        if args.len() != params.len() {
            return Err(Error::new(
                Status::INVALID_ARGUMENT,
                format!("{} kernel argument(s) for a kernel of {} parameter(s); pass one value per parameter", args.len(), params.len()),
            ));
        }
        let mut packed = Vec::with_capacity(args.len());
        for (index, (value, param)) in args.iter().zip(params).enumerate() {
            if param.size == 0 {
                return Err(Error::new(
                    Status::INVALID_ARGUMENT,
                    format!("kernel argument {index}: parameter type {} has no size these bindings can read", param.name),
                ));
            }
            packed.push(pack(value, param, index)?);
        }
        let pointers: Vec<*mut c_void> = packed.iter_mut().map(|bytes| bytes.as_mut_ptr().cast()).collect();
        // SAFETY: each pointer holds its parameter's bytes through the call; the rest is the caller's.
        unsafe { self.launch(plan, stream, &pointers) }
    }

    /// The signature [`KernelHandle::launch_values`] packs by.
    fn params(&self) -> Result<&[Param]> {
        if let Some(params) = self.params.get() {
            return Ok(params);
        }
        let parsed = match &self.checked {
            Some(signature) => parse_signature(signature),
            None => parse_signature(&self.info()?.signature),
        };
        Ok(self.params.get_or_init(|| parsed))
    }
}
