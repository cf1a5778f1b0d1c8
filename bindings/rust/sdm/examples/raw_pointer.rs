//! Launches kernel `scale` of tests/golden/kernels.sdma (`ptr,f32,i32`: y[i] *= factor) on memory
//! and a stream the host made itself, as a host built on cudarc or another CUDA wrapper has them:
//! a raw `CUdeviceptr` (a u64: cudarc's `DevicePtr::device_ptr`) and a raw `CUstream` (a pointer:
//! `CudaStream::cu_stream`). sdm takes both as they are. Here they come from the CUDA driver API
//! itself, dlopened, so that the example needs no crate.
//!
//! ```sh
//! cargo run --example raw_pointer [ARCHIVE]   # default: this checkout's tests/golden/kernels.sdma
//! ```
//!
//! Prints `raw_pointer: ok` when the GPU computed what the host expects; exits 1 on any failure,
//! 77 (skipped) without a CUDA driver or device. It loads libcuda.so.1 whatever `$SDM_CUDA_DRIVER`
//! says, for sdm too: the memory, the stream and the kernel must share one driver, and the tests'
//! fake driver runs no kernels.
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::process::ExitCode;

type CUresult = c_int;
type CUdevice = c_int;
type CUcontext = *mut c_void;
type CUstream = *mut c_void;
type CUdeviceptr = u64;

const CUDA_SUCCESS: CUresult = 0;
const CUDA_ERROR_NO_DEVICE: CUresult = 100;
const DRIVER: &str = "libcuda.so.1";
const RTLD_NOW: c_int = 2;

// Rust's std links libdl and libc on Linux, which export these.
extern "C" {
    fn dlopen(filename: *const c_char, flags: c_int) -> *mut c_void;
    fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
}

/// Why the example stopped.
enum Stop {
    /// No driver or no device: nothing to test on (exit 77).
    Skip(String),
    Fail(String),
}

impl From<sdm::Error> for Stop {
    fn from(error: sdm::Error) -> Stop {
        Stop::Fail(error.to_string())
    }
}

// The driver API functions used, each `unsafe extern "C" fn(...) -> CUresult`, by field and symbol
// (the _v2 symbols are what cuda.h's macros name).
macro_rules! driver_api {
    ($($field:ident = $symbol:literal ($($arg:ty),*);)*) => {
        struct Driver {
            $($field: unsafe extern "C" fn($($arg),*) -> CUresult,)*
        }

        impl Driver {
            fn load() -> Result<Driver, Stop> {
                let path = CString::new(DRIVER).expect("no NUL");
                // SAFETY: a NUL-terminated name; the driver's initialisers are the driver's.
                let library = unsafe { dlopen(path.as_ptr(), RTLD_NOW) };
                if library.is_null() {
                    // SAFETY: dlerror's message is valid until the next dl call.
                    let why = unsafe { CStr::from_ptr(dlerror()) }.to_string_lossy();
                    return Err(Stop::Skip(format!("no CUDA driver: {why}")));
                }
                Ok(Driver {
                    $($field: {
                        // SAFETY: a NUL-terminated name.
                        let address = unsafe { dlsym(library, concat!($symbol, "\0").as_ptr().cast()) };
                        if address.is_null() {
                            return Err(Stop::Fail(format!("{DRIVER} lacks {}", $symbol)));
                        }
                        // SAFETY: cuda.h declares the symbol with this signature.
                        unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> CUresult>(address)
                        }
                    },)*
                })
            }
        }
    };
}

driver_api! {
    init = "cuInit" (u32);
    device_get_count = "cuDeviceGetCount" (*mut c_int);
    device_get = "cuDeviceGet" (*mut CUdevice, c_int);
    primary_ctx_retain = "cuDevicePrimaryCtxRetain" (*mut CUcontext, CUdevice);
    primary_ctx_release = "cuDevicePrimaryCtxRelease_v2" (CUdevice);
    ctx_set_current = "cuCtxSetCurrent" (CUcontext);
    mem_alloc = "cuMemAlloc_v2" (*mut CUdeviceptr, usize);
    mem_free = "cuMemFree_v2" (CUdeviceptr);
    memcpy_htod = "cuMemcpyHtoD_v2" (CUdeviceptr, *const c_void, usize);
    memcpy_dtoh = "cuMemcpyDtoH_v2" (*mut c_void, CUdeviceptr, usize);
    stream_create = "cuStreamCreate" (*mut CUstream, u32);
    stream_synchronize = "cuStreamSynchronize" (CUstream);
    stream_destroy = "cuStreamDestroy_v2" (CUstream);
    get_error_name = "cuGetErrorName" (CUresult, *mut *const c_char);
}

impl Driver {
    /// `result` as a Result, naming the call and the CUresult.
    fn check(&self, call: &str, result: CUresult) -> Result<(), Stop> {
        if result == CUDA_SUCCESS {
            return Ok(());
        }
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: an out-pointer; the name, when set, is a static string.
        let name = if unsafe { (self.get_error_name)(result, &mut name) } == CUDA_SUCCESS && !name.is_null() {
            unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
        } else {
            format!("CUresult {result}")
        };
        Err(Stop::Fail(format!("{call}: {name}")))
    }
}

fn run(archive: &str) -> Result<(), Stop> {
    let cu = Driver::load()?;
    // SAFETY (every driver call below): the arguments are what cuda.h asks for, out-pointers to
    // live locals, and handles this function created.
    match unsafe { (cu.init)(0) } {
        CUDA_ERROR_NO_DEVICE => return Err(Stop::Skip("no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)".into())),
        result => cu.check("cuInit", result)?,
    }
    let mut count = 0;
    cu.check("cuDeviceGetCount", unsafe { (cu.device_get_count)(&mut count) })?;
    if count == 0 {
        return Err(Stop::Skip("no CUDA device".into()));
    }
    let mut device: CUdevice = 0;
    cu.check("cuDeviceGet", unsafe { (cu.device_get)(&mut device, 0) })?;
    // Device 0's primary context: the one sdm uses when the host gives it none.
    let mut context: CUcontext = std::ptr::null_mut();
    cu.check("cuDevicePrimaryCtxRetain", unsafe { (cu.primary_ctx_retain)(&mut context, device) })?;
    cu.check("cuCtxSetCurrent", unsafe { (cu.ctx_set_current)(context) })?;

    // What a cudarc host would hold: a device allocation and a stream, as raw handles.
    let n: i32 = 1 << 20;
    let factor: f32 = 3.0;
    let host: Vec<f32> = (0..n).map(|i| i as f32).collect();
    let bytes = host.len() * std::mem::size_of::<f32>();
    let mut y: CUdeviceptr = 0;
    cu.check("cuMemAlloc", unsafe { (cu.mem_alloc)(&mut y, bytes) })?;
    cu.check("cuMemcpyHtoD", unsafe { (cu.memcpy_htod)(y, host.as_ptr().cast(), bytes) })?;
    let mut stream: CUstream = std::ptr::null_mut();
    cu.check("cuStreamCreate", unsafe { (cu.stream_create)(&mut stream, 0) })?;

    {
        // README begin (docs/HOSTS.md's Rust host: tests/tool/readme_examples.py checks the copy)
        let runtime = sdm::Runtime::builder().cuda_driver(DRIVER).no_embedded_archive().build()?;
        runtime.mount_file(archive)?;
        let kernel = runtime.kernel_checked(0, "scale", "ptr,f32,i32")?;
        let plan = kernel.plan(&[i64::from(n)])?;
        let device_ptr: sdm::DevicePtr = y;
        let raw_stream: sdm::Stream = stream;
        // SAFETY: the values match "ptr,f32,i32", `y` holds n floats on device 0, and the stream
        // is a live one of device 0's primary context.
        unsafe { kernel.launch(&plan, raw_stream, &[sdm::arg(&device_ptr), sdm::arg(&factor), sdm::arg(&n)]) }?;
        // README end
        cu.check("cuStreamSynchronize", unsafe { (cu.stream_synchronize)(stream) })?;
        let info = kernel.info()?;
        println!(
            "raw_pointer: scale on device 0, {} sm_{} from the {}, grid {} x block {}",
            info.image_kind, info.loaded_sm, info.source, plan.grid, plan.block
        );
        // The kernel and the runtime go here, their modules unloading while the context lives.
    }

    let mut result = vec![0f32; host.len()];
    cu.check("cuMemcpyDtoH", unsafe { (cu.memcpy_dtoh)(result.as_mut_ptr().cast(), y, bytes) })?;
    cu.check("cuStreamDestroy", unsafe { (cu.stream_destroy)(stream) })?;
    cu.check("cuMemFree", unsafe { (cu.mem_free)(y) })?;
    cu.check("cuDevicePrimaryCtxRelease", unsafe { (cu.primary_ctx_release)(device) })?;
    // i * 3 is exact in f32 below 2^24, so the comparison can be exact.
    match host.iter().zip(&result).position(|(&x, &got)| got != x * factor) {
        None => Ok(()),
        Some(i) => Err(Stop::Fail(format!("y[{i}] is {}, not {}", result[i], host[i] * factor))),
    }
}

fn main() -> ExitCode {
    let archive = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/golden/kernels.sdma").to_owned());
    match run(&archive) {
        Ok(()) => {
            println!("raw_pointer: ok");
            ExitCode::SUCCESS
        }
        Err(Stop::Skip(why)) => {
            eprintln!("raw_pointer: skipped: {why}");
            ExitCode::from(77)
        }
        Err(Stop::Fail(why)) => {
            eprintln!("raw_pointer: {why}");
            ExitCode::FAILURE
        }
    }
}
