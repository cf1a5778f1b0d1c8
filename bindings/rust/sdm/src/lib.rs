//! Safe Rust bindings to libsdm, the CUDA kernel-archive loader (`include/sdm/sdm.h`).
//!
//! ```no_run
//! let runtime = sdm::Runtime::builder().build()?;
//! runtime.mount_file("kernels.sdma")?;
//! let kernel = runtime.kernel(0, "scale")?;
//! let n: i32 = 1 << 20;
//! let plan = kernel.plan(&[n as i64])?;
//! let (y, factor): (sdm::DevicePtr, f32) = (0 /* from cuMemAlloc */, 2.0);
//! // SAFETY: the arguments match the kernel's signature "ptr,f32,i32" and `y` holds n floats.
//! unsafe { kernel.launch(&plan, std::ptr::null_mut(), &[sdm::arg(&y), sdm::arg(&factor), sdm::arg(&n)])? };
//! # Ok::<(), sdm::Error>(())
//! ```
//!
//! Every fallible call returns [`Result<T>`]: an [`Error`] carries the [`Status`], sdm's message
//! (naming the archive, device or kernel and the fix), the native CUresult or nvJitLink code and
//! the JIT log; the C error object is released as soon as they are copied. [`Runtime`] destroys
//! its `sdm_runtime` when dropped; a [`Kernel`] borrows its runtime, an [`OwnedKernel`] shares it
//! (an `Arc<Runtime>`), and either drops its reference (`sdm_kernel_release`) when dropped. A
//! runtime and its kernels may be shared between threads and moved to others.
//!
//! The raw ABI is re-exported as [`sys`] for what this crate does not wrap.

use std::ffi::{c_char, c_void, CStr, CString};
use std::fmt;
use std::ops::Deref;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::ptr::{self, NonNull};
use std::sync::{Arc, OnceLock};

pub use sdm_sys as sys;

mod abi;
mod engine;
mod values;

pub use engine::{Footprint, Warmup};
pub use values::{Complex32, Complex64, Value};

/// `Result<T, sdm::Error>`.
pub type Result<T> = std::result::Result<T, Error>;

/// A CUDA device pointer (`CUdeviceptr`), as a kernel argument takes it: pass `arg(&pointer)`.
pub type DevicePtr = u64;

/// A CUDA stream (`CUstream`); null for the device context's default stream.
pub type Stream = *mut c_void;

/// One kernel argument for [`KernelHandle::launch`]: the address of its value, as `cuLaunchKernel`
/// takes it. The value must outlive the launch call (not the kernel's run: the driver copies it).
pub fn arg<T>(value: &T) -> *mut c_void {
    value as *const T as *mut c_void
}

fn static_str(text: *const c_char) -> &'static str {
    if text.is_null() {
        return "";
    }
    // SAFETY: sdm documents these strings as static and NUL-terminated.
    unsafe { CStr::from_ptr(text) }.to_str().unwrap_or("")
}

/// Copies a string sdm owns (NULL reads as "").
///
/// # Safety
/// `text` is NULL or a valid NUL-terminated string.
unsafe fn owned_string(text: *const c_char) -> String {
    if text.is_null() {
        String::new()
    } else {
        CStr::from_ptr(text).to_string_lossy().into_owned()
    }
}

// ---- statuses and errors ------------------------------------------------------------------------

/// An `sdm_status`. A newtype rather than an enum: a newer libsdm may return codes this crate does
/// not know, and those must survive. Compare with the constants, or `match` on them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Status(pub i32);

// The constants (the values of sdm.h) are in abi.rs, generated from sdm.h.
impl Status {
    /// The C name ("SDM_ERROR_NO_DRIVER"); "SDM_ERROR_UNKNOWN" for a code libsdm does not know.
    pub fn name(self) -> &'static str {
        // SAFETY: takes any value; returns a static string.
        static_str(unsafe { sys::sdm_status_string(self.0) })
    }
}

impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A failed sdm call: its status, message, native code and backend log, copied out of the
/// `sdm_error` (which is destroyed at once).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    status: Status,
    native: i32,
    message: String,
    log: String,
}

impl Error {
    /// An error made on this side of the boundary (an argument sdm cannot take, such as a string
    /// with a NUL byte, or an ABI mismatch).
    pub fn new(status: Status, message: impl Into<String>) -> Error {
        Error { status, native: 0, message: message.into(), log: String::new() }
    }

    /// Takes a C error that a call returned with `status`, copies it and destroys it. A NULL
    /// `error` (sdm had no memory for one) reads as the status's name.
    ///
    /// # Safety
    /// `error` is NULL or an `sdm_error` the caller owns; it must not be used afterwards.
    pub unsafe fn from_raw(status: sdm_sys::sdm_status, error: *mut sys::sdm_error) -> Error {
        if error.is_null() {
            let status = Status(status);
            return Error::new(status, status.name());
        }
        let adopted = Error {
            status: Status(status),
            native: sys::sdm_error_native(error),
            message: owned_string(sys::sdm_error_message(error)),
            log: owned_string(sys::sdm_error_log(error)),
        };
        sys::sdm_error_destroy(error);
        adopted
    }

    pub fn status(&self) -> Status {
        self.status
    }
    /// Names the thing (archive, device, kernel) and, where there is one, the fix.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The CUresult behind [`Status::DRIVER`], the nvJitLink result behind [`Status::JIT`]; else 0.
    pub fn native(&self) -> i32 {
        self.native
    }
    /// A backend's log (the JIT's error log), or "".
    pub fn log(&self) -> &str {
        &self.log
    }
    /// Whether sdm refused the image it loaded ([`Status::IMAGE_REFUSED`]: compiled for an older
    /// arch, on a Hopper / Blackwell GPU). The seed makes this a `BaseException` so that no generic
    /// fallback swallows it: code that retries, or falls back to another route, on an error must
    /// not do so on this one, but propagate it (`?`). The message names the image, the device and
    /// the fix.
    pub fn is_image_refusal(&self) -> bool {
        self.status == Status::IMAGE_REFUSED
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.status.name(), self.message)
    }
}

impl std::error::Error for Error {}

/// Runs one C call that takes a trailing `sdm_error**`, turning its failure into an [`Error`].
fn call(f: impl FnOnce(*mut *mut sys::sdm_error) -> sys::sdm_status) -> Result<()> {
    let mut error: *mut sys::sdm_error = ptr::null_mut();
    let status = f(&mut error);
    if status == sys::SDM_OK {
        // SAFETY: NULL on success, per the ABI; destroying it anyway costs nothing if it is not.
        unsafe { sys::sdm_error_destroy(error) };
        Ok(())
    } else {
        // SAFETY: a failed call hands the caller a new error (or NULL).
        Err(unsafe { Error::from_raw(status, error) })
    }
}

fn c_string(what: &str, text: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::new(Status::INVALID_ARGUMENT, format!("{what} {text:?} contains a NUL byte")))
}

fn c_path(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| Error::new(Status::INVALID_ARGUMENT, format!("the path {} contains a NUL byte", path.display())))
}

// ---- versions -----------------------------------------------------------------------------------

/// The ABI the loaded libsdm implements, as (major, minor).
pub fn abi_version() -> (u32, u32) {
    // SAFETY: no arguments.
    let version = unsafe { sys::sdm_abi_version() };
    (version >> 16, version & 0xffff)
}

/// The loaded libsdm's release, "MAJOR.MINOR.PATCH" (sdm's project version).
pub fn version() -> &'static str {
    // SAFETY: no arguments; a static string.
    static_str(unsafe { sys::sdm_version_string() })
}

/// Whether the loaded libsdm can serve these bindings: the same ABI major as sdm-sys, and a minor
/// at least as high. [`Status::MISMATCH`] otherwise, naming both.
pub fn check_abi() -> Result<()> {
    let (major, minor) = abi_version();
    let (want_major, want_minor) = (sys::SDM_ABI_VERSION_MAJOR, sys::SDM_ABI_VERSION_MINOR);
    if major == want_major && minor >= want_minor {
        return Ok(());
    }
    Err(Error::new(
        Status::MISMATCH,
        format!(
            "libsdm {} implements C ABI {major}.{minor}, but these bindings need {want_major}.{want_minor} or a later \
             {want_major}.x: load a newer libsdm (SDM_LIB_DIR, LD_LIBRARY_PATH) or use bindings of its version",
            version()
        ),
    ))
}

// ---- logging ------------------------------------------------------------------------------------

/// An `sdm_log_level`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct LogLevel(pub i32);

impl LogLevel {
    /// Nothing, whatever `$SDM_LOG` says.
    pub const OFF: LogLevel = LogLevel(sys::SDM_LOG_OFF);
    /// `$SDM_LOG` (error, warn, info, debug, off), else [`LogLevel::WARN`].
    pub const DEFAULT: LogLevel = LogLevel(sys::SDM_LOG_DEFAULT);
    pub const ERROR: LogLevel = LogLevel(sys::SDM_LOG_ERROR);
    pub const WARN: LogLevel = LogLevel(sys::SDM_LOG_WARN);
    pub const INFO: LogLevel = LogLevel(sys::SDM_LOG_INFO);
    pub const DEBUG: LogLevel = LogLevel(sys::SDM_LOG_DEBUG);
}

/// Receives sdm's log lines: on the thread that logs, possibly on several at once. A panic in it
/// is caught and dropped (it must not unwind into libsdm).
pub type LogFn = dyn Fn(LogLevel, &str) + Send + Sync;

unsafe extern "C" fn forward_log(user: *mut c_void, level: sys::sdm_log_level, message: *const c_char, length: usize) {
    if user.is_null() || message.is_null() {
        return;
    }
    // SAFETY: `user` is the Box<Box<LogFn>> the Runtime keeps alive until after sdm_runtime_destroy;
    // `message` is `length` bytes, valid during the call.
    let log = unsafe { &*(user as *const Box<LogFn>) };
    let bytes = unsafe { std::slice::from_raw_parts(message as *const u8, length) };
    let text = String::from_utf8_lossy(bytes);
    let _ = catch_unwind(AssertUnwindSafe(|| log(LogLevel(level), &text)));
}

// ---- runtime ------------------------------------------------------------------------------------

/// Flags of [`RuntimeBuilder::cache_flags`].
pub mod cache_flags {
    /// Read and write nothing (also `$SDM_CACHE_DISABLE=1`).
    pub const DISABLED: u32 = sdm_sys::SDM_CACHE_DISABLED;
    /// Read, never write.
    pub const READ_ONLY: u32 = sdm_sys::SDM_CACHE_READ_ONLY;
}

/// Flags of [`RuntimeBuilder::jit_flags`]: the JIT backends the host forbids.
pub mod jit_flags {
    pub const NO_NVJITLINK: u32 = sdm_sys::SDM_JIT_NO_NVJITLINK;
    pub const NO_DRIVER: u32 = sdm_sys::SDM_JIT_NO_DRIVER;
    pub const NO_PTX_COMPILER: u32 = sdm_sys::SDM_JIT_NO_PTX_COMPILER;
}

/// Which archives a runtime mounts ([`RuntimeBuilder::signature_policy`]; ABI 1.2,
/// docs/SIGNING.md). A newtype, as [`LogLevel`] is.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct SignaturePolicy(pub u32);

impl SignaturePolicy {
    /// `$SDM_REQUIRE_SIGNED` decides (1: [`SignaturePolicy::REQUIRE`], warn:
    /// [`SignaturePolicy::WARN`]), else [`SignaturePolicy::OFF`].
    pub const DEFAULT: SignaturePolicy = SignaturePolicy(sys::SDM_SIGNATURES_DEFAULT);
    /// Signatures are not looked at (the behaviour before ABI 1.2).
    pub const OFF: SignaturePolicy = SignaturePolicy(sys::SDM_SIGNATURES_OFF);
    /// An archive without a valid signature by a trusted key mounts, and the log says why.
    pub const WARN: SignaturePolicy = SignaturePolicy(sys::SDM_SIGNATURES_WARN);
    /// Such an archive is refused at mount ([`Status::UNTRUSTED`]).
    pub const REQUIRE: SignaturePolicy = SignaturePolicy(sys::SDM_SIGNATURES_REQUIRE);
}

/// Where PTX and LTO-IR links run ([`RuntimeBuilder::jit_isolation`]; ABI 1.2, docs/LOADING.md,
/// "A compiler that crashes"): in sdm-jit-helper, a process of their own whose crash or hang is a
/// [`Status::JIT`] error, or in the host's.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct JitIsolation(pub u32);

impl JitIsolation {
    /// `$SDM_JIT_ISOLATION` (auto, always, never) decides, else [`JitIsolation::AUTO`].
    pub const DEFAULT: JitIsolation = JitIsolation(sys::SDM_ISOLATION_DEFAULT);
    /// LTO-IR, and PTX from an archive no trusted key signed, link in the helper.
    pub const AUTO: JitIsolation = JitIsolation(sys::SDM_ISOLATION_AUTO);
    /// Every link in the helper.
    pub const ALWAYS: JitIsolation = JitIsolation(sys::SDM_ISOLATION_ALWAYS);
    /// Every link in this process (a watchdog bounds the wait, not the link).
    pub const NEVER: JitIsolation = JitIsolation(sys::SDM_ISOLATION_NEVER);
}

/// `sdm_runtime_params`, built up. Every default is sdm's (environment variables included).
pub struct RuntimeBuilder {
    flags: u32,
    log_level: LogLevel,
    log: Option<Box<Box<LogFn>>>,
    cuda_driver: Option<CString>,
    cuda_context: *mut c_void,
    cache_dir: Option<CString>,
    cache_max_bytes: u64,
    cache_flags: u32,
    jit_flags: u32,
    kernel_abi_major: u32,
    signature_policy: SignaturePolicy,
    trusted_keys: Option<Vec<[u8; 32]>>,
    jit_isolation: JitIsolation,
    jit_time_limit_ms: u32,
    jit_memory_limit_bytes: u64,
    device_memory_budget: u64,
    invalid: Option<Error>,
}

impl RuntimeBuilder {
    /// Do not mount the archive embedded in libsdm, only those mounted later.
    pub fn no_embedded_archive(mut self) -> Self {
        self.flags |= sys::SDM_RUNTIME_NO_EMBEDDED_ARCHIVE;
        self
    }
    pub fn log_level(mut self, level: LogLevel) -> Self {
        self.log_level = level;
        self
    }
    /// Sends log lines to `log` instead of stderr.
    pub fn log(mut self, log: impl Fn(LogLevel, &str) + Send + Sync + 'static) -> Self {
        self.log = Some(Box::new(Box::new(log)));
        self
    }
    /// The libcuda to load (default: `$SDM_CUDA_DRIVER`, else libcuda.so.1).
    pub fn cuda_driver(mut self, path: impl AsRef<Path>) -> Self {
        match c_path(path.as_ref()) {
            Ok(path) => self.cuda_driver = Some(path),
            Err(error) => self.invalid = Some(error),
        }
        self
    }
    /// A CUcontext the host owns, used for every device operation on its device (default: each
    /// device's primary context).
    ///
    /// # Safety
    /// `context` is a live CUcontext of the driver sdm loads, and outlives the runtime.
    pub unsafe fn cuda_context(mut self, context: *mut c_void) -> Self {
        self.cuda_context = context;
        self
    }
    /// The kernel cache's directory (default: `$SDM_CACHE_DIR`, else `$XDG_CACHE_HOME/sdm`, else
    /// `~/.cache/sdm`).
    pub fn cache_dir(mut self, path: impl AsRef<Path>) -> Self {
        match c_path(path.as_ref()) {
            Ok(path) => self.cache_dir = Some(path),
            Err(error) => self.invalid = Some(error),
        }
        self
    }
    /// 0: `$SDM_CACHE_MAX_BYTES`, else 1 GiB.
    pub fn cache_max_bytes(mut self, bytes: u64) -> Self {
        self.cache_max_bytes = bytes;
        self
    }
    /// [`cache_flags`]`::*`.
    pub fn cache_flags(mut self, flags: u32) -> Self {
        self.cache_flags = flags;
        self
    }
    /// [`jit_flags`]`::*`.
    pub fn jit_flags(mut self, flags: u32) -> Self {
        self.jit_flags = flags;
        self
    }
    /// The kernel ABI major this host was built for: an archive declaring another is refused at
    /// mount ([`Status::MISMATCH`]). 0 (the default): any.
    pub fn kernel_abi_major(mut self, major: u32) -> Self {
        self.kernel_abi_major = major;
        self
    }
    /// Which archives may mount (default: [`SignaturePolicy::DEFAULT`]). Another policy is the
    /// host's: `$SDM_REQUIRE_SIGNED` cannot weaken it. Without libsodium in libsdm, WARN and
    /// REQUIRE are [`Status::UNSUPPORTED`] at build.
    pub fn signature_policy(mut self, policy: SignaturePolicy) -> Self {
        self.signature_policy = policy;
        self
    }
    /// The Ed25519 public keys whose signatures are trusted (each the 32 bytes of a `.pub` file
    /// from `sdm keygen`; at most 256). They replace `$SDM_TRUSTED_KEYS`, which is used when this
    /// is never called; an empty slice trusts no key.
    pub fn trusted_keys(mut self, keys: &[[u8; 32]]) -> Self {
        self.trusted_keys = Some(keys.to_vec());
        self
    }

    /// Where links run (default: [`JitIsolation::DEFAULT`]).
    pub fn jit_isolation(mut self, isolation: JitIsolation) -> Self {
        self.jit_isolation = isolation;
        self
    }
    /// Every link's wall-clock limit (default: `$SDM_JIT_TIME_LIMIT`, else 120 s): past it an
    /// isolated link is killed, one in this process abandoned, and the fetch is a [`Status::JIT`].
    pub fn jit_time_limit(mut self, limit: std::time::Duration) -> Self {
        self.jit_time_limit_ms = u32::try_from(limit.as_millis()).unwrap_or(u32::MAX).max(1);
        self
    }
    /// An isolated link's address space in bytes, at least 64 MiB (default:
    /// `$SDM_JIT_MEMORY_LIMIT`, else 8 GiB).
    pub fn jit_memory_limit(mut self, bytes: u64) -> Self {
        self.jit_memory_limit_bytes = bytes;
        self
    }
    /// The device memory this runtime's loaded modules may take on each device, as their images
    /// declare it (ABI 1.5; default: `$SDM_DEVICE_MEMORY_BUDGET`, else none): past it the least
    /// recently used idle modules are evicted, and reload at their next use.
    pub fn device_memory_budget(mut self, bytes: u64) -> Self {
        self.device_memory_budget = bytes;
        self
    }

    /// Creates the runtime. Cheap: the driver loads on first need, and a machine without one
    /// still mounts and lists archives.
    pub fn build(self) -> Result<Runtime> {
        if let Some(error) = self.invalid {
            return Err(error);
        }
        let as_ptr = |text: &Option<CString>| text.as_ref().map_or(ptr::null(), |text| text.as_ptr());
        // An empty Vec's pointer is dangling but not NULL, as it must be: NULL would mean
        // $SDM_TRUSTED_KEYS.
        let (trusted_keys, trusted_key_count) = match &self.trusted_keys {
            None => (ptr::null(), 0),
            Some(keys) => (
                keys.as_ptr().cast::<u8>(),
                u32::try_from(keys.len())
                    .map_err(|_| Error::new(Status::INVALID_ARGUMENT, "trusted_keys takes at most 2^32 - 1 keys"))?,
            ),
        };
        let mut params = sys::sdm_runtime_params {
            flags: self.flags,
            log_level: self.log_level.0,
            cuda_driver: as_ptr(&self.cuda_driver),
            cuda_context: self.cuda_context,
            cache_dir: as_ptr(&self.cache_dir),
            cache_max_bytes: self.cache_max_bytes,
            cache_flags: self.cache_flags,
            jit_flags: self.jit_flags,
            kernel_abi_major: self.kernel_abi_major,
            signature_policy: self.signature_policy.0,
            trusted_keys,
            trusted_key_count,
            jit_isolation: self.jit_isolation.0,
            jit_time_limit_ms: self.jit_time_limit_ms,
            jit_memory_limit_bytes: self.jit_memory_limit_bytes,
            device_memory_budget: self.device_memory_budget,
            ..Default::default()
        };
        if let Some(log) = &self.log {
            params.log_fn = Some(forward_log);
            // The inner Box's address: stable when the outer box moves into the Runtime.
            params.log_user_data = &**log as *const Box<LogFn> as *mut c_void;
        }
        let mut raw: *mut sys::sdm_runtime = ptr::null_mut();
        // SAFETY: params, its strings and its keys live through the call; sdm copies what it keeps.
        call(|error| unsafe { sys::sdm_runtime_create(&params, &mut raw, error) })?;
        let raw = NonNull::new(raw).ok_or_else(|| Error::new(Status::INTERNAL, "sdm_runtime_create returned NULL"))?;
        Ok(Runtime { raw, _log: self.log })
    }
}

/// An sdm runtime (`sdm_runtime`): mounted archives, devices, loaded modules, the kernel cache.
/// Destroyed when dropped, which unloads its modules; kernels borrow or share it, so it outlives
/// them. Put it in an `Arc` to fetch [`OwnedKernel`]s, which can be stored beside it or moved to
/// other threads.
pub struct Runtime {
    raw: NonNull<sys::sdm_runtime>,
    // Declared after `raw` and dropped after Drop::drop destroyed the runtime, which may log until
    // then.
    _log: Option<Box<Box<LogFn>>>,
}

// SAFETY: sdm.h: runtime handles may be shared between threads and every call is thread-safe,
// except sdm_runtime_destroy, which Drop runs with exclusive access.
unsafe impl Send for Runtime {}
unsafe impl Sync for Runtime {}

impl Drop for Runtime {
    fn drop(&mut self) {
        // SAFETY: owned; no Kernel borrows it any more.
        unsafe { sys::sdm_runtime_destroy(self.raw.as_ptr()) };
    }
}

impl fmt::Debug for Runtime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runtime").field("raw", &self.raw).finish()
    }
}

/// One mounted archive (`sdm_archive_info`), strings copied. Non-exhaustive: a later ABI minor may
/// tell more.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ArchiveInfo {
    /// The path, or the label given to [`Runtime::mount_memory`].
    pub label: String,
    /// From the manifest; "" without one.
    pub content_version: String,
    pub size_bytes: u64,
    pub entry_count: u32,
    pub kernel_count: u32,
    pub kernel_abi: (u16, u16),
    pub format: (u16, u16),
    /// The archive embedded in libsdm.
    pub embedded: bool,
}

/// An `sdm_device_class`: a newtype, as a newer libsdm may know more classes.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct DeviceClass(pub i32);

// The constants (the values of sdm.h) are in abi.rs, generated from sdm.h.
impl DeviceClass {
    /// "modern", "a100", "rtx", "unsupported".
    pub fn name(self) -> &'static str {
        // SAFETY: takes any value; returns a static string.
        static_str(unsafe { sys::sdm_device_class_name(self.0) })
    }
}

impl fmt::Display for DeviceClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One CUDA device as sdm sees it (`sdm_device_info`). Non-exhaustive, as [`ArchiveInfo`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DeviceInfo {
    /// The driver's name for the device.
    pub name: String,
    pub ordinal: i32,
    pub capability: (i32, i32),
    /// [`DeviceClass::UNSUPPORTED`] outside the hardware matrix.
    pub device_class: DeviceClass,
    pub sm_count: i32,
    pub l2_bytes: u64,
    /// The device's own opt-in shared memory per block.
    pub smem_optin_bytes: i32,
    /// What the class's plans assume (0 when unsupported).
    pub smem_cap_bytes: i32,
    /// `smem_cap_bytes` + 1,024 reserved per block (0 when unsupported).
    pub smem_per_sm_bytes: i32,
    /// Programmatic dependent launch.
    pub pdl_allowed: bool,
    /// Thread-block clusters.
    pub clusters_allowed: bool,
    /// A class this release has not tested (rtx): results are unverified.
    pub untested: bool,
}

/// This runtime's kernel-cache counters (`sdm_cache_stats`), since its creation. Non-exhaustive,
/// as [`ArchiveInfo`] is.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct CacheStats {
    pub hits: u64,
    pub misses: u64,
    /// JIT links run.
    pub builds: u64,
    pub evictions: u64,
    /// Damaged entries found and removed.
    pub bad_entries: u64,
    pub bytes_written: u64,
    pub build_milliseconds: f64,
}

/// The module-qualified spelling of kernel `name` of `module`, `"MODULE!NAME"` (ABI 1.4), for
/// [`Runtime::kernel`]: the kernel of that module, where several modules define the name.
pub fn qualified_name(module: &str, name: &str) -> String {
    format!("{module}!{name}")
}

impl Runtime {
    /// A runtime with sdm's defaults (`$SDM_CUDA_DRIVER`, `$SDM_CACHE_DIR`, `$SDM_LOG`, ...).
    pub fn new() -> Result<Runtime> {
        Runtime::builder().build()
    }

    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder {
            flags: 0,
            log_level: LogLevel::DEFAULT,
            log: None,
            cuda_driver: None,
            cuda_context: ptr::null_mut(),
            cache_dir: None,
            cache_max_bytes: 0,
            cache_flags: 0,
            jit_flags: 0,
            kernel_abi_major: 0,
            signature_policy: SignaturePolicy::DEFAULT,
            trusted_keys: None,
            jit_isolation: JitIsolation::DEFAULT,
            jit_time_limit_ms: 0,
            jit_memory_limit_bytes: 0,
            device_memory_budget: 0,
            invalid: None,
        }
    }

    /// The C handle, for sdm.h calls this crate does not wrap. Owned by this Runtime: do not
    /// destroy it.
    pub fn as_raw(&self) -> *mut sys::sdm_runtime {
        self.raw.as_ptr()
    }

    /// A copy of the last error any call on this runtime reported (from any thread); None before
    /// the first failure. Every call here returns its own error already: this is for diagnostics.
    pub fn last_error(&self) -> Option<Error> {
        let mut last: *mut sys::sdm_error = ptr::null_mut();
        // SAFETY: a valid runtime and out-pointer.
        if unsafe { sys::sdm_runtime_last_error(self.as_raw(), &mut last) } != sys::SDM_OK || last.is_null() {
            return None;
        }
        // SAFETY: we own `last`.
        Some(unsafe { Error::from_raw(sys::sdm_error_code(last), last) })
    }

    // ---- archives ----

    /// Mounts an archive file, mapped read-only; later mounts take precedence. A missing file is
    /// [`Status::IO`], a damaged one [`Status::ARCHIVE_CORRUPT`], one needing a newer sdm
    /// [`Status::ARCHIVE_UNSUPPORTED`]; each message names the file.
    pub fn mount_file(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = c_path(path.as_ref())?;
        // SAFETY: valid runtime and string.
        call(|error| unsafe { sys::sdm_archive_mount_file(self.as_raw(), path.as_ptr(), error) })
    }

    /// Mounts an archive from memory (the bytes are copied); `label` names it in messages.
    pub fn mount_memory(&self, bytes: &[u8], label: Option<&str>) -> Result<()> {
        let label = label.map(|label| c_string("the label", label)).transpose()?;
        let label_ptr = label.as_ref().map_or(ptr::null(), |label| label.as_ptr());
        // SAFETY: `bytes` is valid for its length; sdm copies it.
        call(|error| unsafe {
            sys::sdm_archive_mount_memory(self.as_raw(), bytes.as_ptr().cast(), bytes.len(), label_ptr, error)
        })
    }

    /// Mounted archives, in mount order.
    pub fn archives(&self) -> Result<Vec<ArchiveInfo>> {
        let mut count = 0u32;
        // SAFETY: valid runtime and out-pointer.
        call(|error| unsafe { sys::sdm_archive_count(self.as_raw(), &mut count, error) })?;
        (0..count).map(|index| self.archive(index)).collect()
    }

    /// The mounted archive `index` (mount order); [`Status::NOT_FOUND`] past the last.
    pub fn archive(&self, index: u32) -> Result<ArchiveInfo> {
        let mut info = sys::sdm_archive_info::default();
        // SAFETY: valid runtime; `info` has its struct_size set.
        call(|error| unsafe { sys::sdm_archive_info_get(self.as_raw(), index, &mut info, error) })?;
        Ok(ArchiveInfo {
            // SAFETY: strings the runtime owns, valid until it is destroyed.
            label: unsafe { owned_string(info.label) },
            content_version: unsafe { owned_string(info.content_version) },
            size_bytes: info.size_bytes,
            entry_count: info.entry_count,
            kernel_count: info.kernel_count,
            kernel_abi: (info.kernel_abi_major, info.kernel_abi_minor),
            format: (info.format_major, info.format_minor),
            embedded: info.embedded != 0,
        })
    }

    /// Remounts every mounted archive file from disk; returns how many were replaced. Kernels
    /// fetched before keep working until dropped.
    pub fn reload(&self) -> Result<u32> {
        let mut reloaded = 0u32;
        // SAFETY: valid runtime and out-pointer.
        call(|error| unsafe { sys::sdm_runtime_reload(self.as_raw(), &mut reloaded, error) })?;
        Ok(reloaded)
    }

    /// Remounts only the archive files that changed on disk (one `stat` each: cheap enough for
    /// every frame); returns how many were replaced.
    pub fn poll_archives(&self) -> Result<u32> {
        let mut reloaded = 0u32;
        // SAFETY: valid runtime and out-pointer.
        call(|error| unsafe { sys::sdm_runtime_poll_archives(self.as_raw(), &mut reloaded, error) })?;
        Ok(reloaded)
    }

    // ---- driver and devices ----

    /// The CUDA driver's version (12080 for 12.8); loads the driver if needed.
    pub fn driver_version(&self) -> Result<i32> {
        let mut version = 0i32;
        // SAFETY: valid runtime and out-pointer.
        call(|error| unsafe { sys::sdm_driver_version(self.as_raw(), &mut version, error) })?;
        Ok(version)
    }

    /// Visible CUDA devices (0 is a success). Without a driver: [`Status::NO_DRIVER`].
    pub fn device_count(&self) -> Result<i32> {
        let mut count = 0i32;
        // SAFETY: valid runtime and out-pointer.
        call(|error| unsafe { sys::sdm_device_count(self.as_raw(), &mut count, error) })?;
        Ok(count)
    }

    /// What sdm knows of device `ordinal`, supported or not.
    pub fn device_info(&self, ordinal: i32) -> Result<DeviceInfo> {
        let mut info = sys::sdm_device_info::default();
        // SAFETY: valid runtime; `info` has its struct_size set.
        call(|error| unsafe { sys::sdm_device_info_get(self.as_raw(), ordinal, &mut info, error) })?;
        // The name is NUL-terminated within its 256 bytes; read no further than the array even if not.
        let name_bytes: Vec<u8> = info.name.iter().map(|&c| c as u8).take_while(|&b| b != 0).collect();
        Ok(DeviceInfo {
            name: String::from_utf8_lossy(&name_bytes).into_owned(),
            ordinal: info.ordinal,
            capability: (info.capability_major, info.capability_minor),
            device_class: DeviceClass(info.device_class),
            sm_count: info.sm_count,
            l2_bytes: info.l2_bytes,
            smem_optin_bytes: info.smem_optin_bytes,
            smem_cap_bytes: info.smem_cap_bytes,
            smem_per_sm_bytes: info.smem_per_sm_bytes,
            pdl_allowed: info.pdl_allowed != 0,
            clusters_allowed: info.clusters_allowed != 0,
            untested: info.untested != 0,
        })
    }

    /// Every visible device's info.
    pub fn devices(&self) -> Result<Vec<DeviceInfo>> {
        (0..self.device_count()?).map(|ordinal| self.device_info(ordinal)).collect()
    }

    /// The device's class, or [`Status::UNSUPPORTED_DEVICE`] with a message naming the supported
    /// GPUs and the device.
    pub fn device_class(&self, ordinal: i32) -> Result<DeviceClass> {
        let mut class = 0i32;
        // SAFETY: valid runtime and out-pointer.
        call(|error| unsafe { sys::sdm_device_class_get(self.as_raw(), ordinal, &mut class, error) })?;
        Ok(DeviceClass(class))
    }

    // ---- kernels ----

    /// The kernel `name` on device `ordinal`, loading its module on first use. It borrows the
    /// runtime; [`Runtime::owned_kernel`] gives one that shares it.
    ///
    /// `name` is what an archive lists (a C++ kernel's mangled symbol) or, since ABI 1.3, a C++
    /// spelling of it: the declaration as c++filt prints it (`"ns::reduce<int>(int const*, int*,
    /// int)"`), or a name expression as CuPy takes it (`"ns::reduce<int>"`, `"fill<float, 256>"`,
    /// or `"reduce"` when one instantiation has that name). One matching several kernels is
    /// [`Status::AMBIGUOUS`], its message listing them; [`Runtime::kernels`] lists the names.
    ///
    /// Since ABI 1.4, `name` may be module-qualified, `"MODULE!NAME"` ([`qualified_name`]): two
    /// modules defining one name (as two CuPy RawModules do) make the plain name
    /// [`Status::AMBIGUOUS`], naming the modules, never one module's kernel for the other's.
    pub fn kernel(&self, ordinal: i32, name: &str) -> Result<Kernel<'_>> {
        // SAFETY: a null stream.
        unsafe { self.kernel_with(ordinal, name, None, ptr::null_mut()) }
    }

    /// [`Runtime::kernel`], also checking the kernel's parameter signature against the one this
    /// host was written for ("ptr,f32,i32"): another is [`Status::MISMATCH`], naming both. A
    /// signature derived from an image (what `sdm import` writes: b32, b64, ...) agrees with every
    /// typed one of its layout (ABI 1.3): b32 with i32, u32 or f32, b64 with ptr, i64, u64 or f64.
    pub fn kernel_checked(&self, ordinal: i32, name: &str, signature: &str) -> Result<Kernel<'_>> {
        // SAFETY: a null stream.
        unsafe { self.kernel_with(ordinal, name, Some(signature), ptr::null_mut()) }
    }

    /// The general form: an optional signature check, and the `stream` (a CUstream, or null)
    /// about to capture a CUDA graph: a load that would JIT while it captures is
    /// [`Status::GRAPH_CAPTURE`].
    ///
    /// # Safety
    /// `stream` is null or a live CUstream of device `ordinal`'s context: sdm hands it to the
    /// driver.
    pub unsafe fn kernel_with(
        &self,
        ordinal: i32,
        name: &str,
        signature: Option<&str>,
        stream: Stream,
    ) -> Result<Kernel<'_>> {
        // SAFETY: the caller's stream.
        let raw = unsafe { self.fetch(ordinal, name, signature, stream) }?;
        Ok(KernelHandle { raw, runtime: self, checked: signature.map(str::to_owned), params: OnceLock::new() })
    }

    /// [`Runtime::kernel`], holding a clone of the `Arc` instead of a borrow: the kernel can be
    /// kept beside the runtime (in one struct) or moved into another thread.
    pub fn owned_kernel(self: &Arc<Self>, ordinal: i32, name: &str) -> Result<OwnedKernel> {
        // SAFETY: a null stream.
        unsafe { self.owned_kernel_with(ordinal, name, None, ptr::null_mut()) }
    }

    /// [`Runtime::kernel_checked`], as an [`OwnedKernel`].
    pub fn owned_kernel_checked(self: &Arc<Self>, ordinal: i32, name: &str, signature: &str) -> Result<OwnedKernel> {
        // SAFETY: a null stream.
        unsafe { self.owned_kernel_with(ordinal, name, Some(signature), ptr::null_mut()) }
    }

    /// [`Runtime::kernel_with`], as an [`OwnedKernel`].
    ///
    /// # Safety
    /// As for [`Runtime::kernel_with`].
    pub unsafe fn owned_kernel_with(
        self: &Arc<Self>,
        ordinal: i32,
        name: &str,
        signature: Option<&str>,
        stream: Stream,
    ) -> Result<OwnedKernel> {
        // SAFETY: the caller's stream.
        let raw = unsafe { self.fetch(ordinal, name, signature, stream) }?;
        Ok(KernelHandle {
            raw,
            runtime: Arc::clone(self),
            checked: signature.map(str::to_owned),
            params: OnceLock::new(),
        })
    }

    /// sdm_kernel_get(_checked): a new reference, which the handle made of it releases.
    ///
    /// # Safety
    /// As for [`Runtime::kernel_with`].
    unsafe fn fetch(
        &self,
        ordinal: i32,
        name: &str,
        signature: Option<&str>,
        stream: Stream,
    ) -> Result<NonNull<sys::sdm_kernel>> {
        let name = c_string("the kernel name", name)?;
        let signature = signature.map(|signature| c_string("the signature", signature)).transpose()?;
        let mut raw: *mut sys::sdm_kernel = ptr::null_mut();
        // SAFETY: valid runtime, strings and out-pointer; `stream` is the caller's CUstream or NULL.
        call(|error| unsafe {
            match &signature {
                None => sys::sdm_kernel_get(self.as_raw(), ordinal, name.as_ptr(), stream, &mut raw, error),
                Some(signature) => sys::sdm_kernel_get_checked(
                    self.as_raw(),
                    ordinal,
                    name.as_ptr(),
                    signature.as_ptr(),
                    stream,
                    &mut raw,
                    error,
                ),
            }
        })?;
        NonNull::new(raw).ok_or_else(|| Error::new(Status::INTERNAL, "sdm_kernel_get returned NULL"))
    }

    /// Loads the modules of `names` on device `ordinal` eagerly (JIT links in parallel), or of
    /// every kernel of every mounted archive when `names` is empty. The first failure is returned;
    /// the other modules still load.
    pub fn preload(&self, ordinal: i32, names: &[&str]) -> Result<()> {
        let owned = names.iter().map(|name| c_string("the kernel name", name)).collect::<Result<Vec<_>>>()?;
        let pointers: Vec<*const c_char> = owned.iter().map(|name| name.as_ptr()).collect();
        let count = u32::try_from(pointers.len())
            .map_err(|_| Error::new(Status::INVALID_ARGUMENT, "preload takes at most 2^32 - 1 names"))?;
        // SAFETY: `count` valid strings.
        call(|error| unsafe { sys::sdm_preload(self.as_raw(), ordinal, pointers.as_ptr(), count, error) })
    }

    /// The kernels of mounted archive `archive` (mount order; its `shadowed` entries are served by
    /// a newer archive), or, for `None`, every kernel the runtime serves, each name once from the
    /// newest archive listing it: a snapshot sorted by name (ABI 1.3). An index past the mounted
    /// archives is [`Status::NOT_FOUND`].
    pub fn kernels(&self, archive: Option<u32>) -> Result<Vec<KernelEntry>> {
        /// Destroys the list however this function returns.
        struct List(*mut sys::sdm_kernel_list);
        impl Drop for List {
            fn drop(&mut self) {
                // SAFETY: a list sdm_kernel_list_create made (or NULL, which it accepts).
                unsafe { sys::sdm_kernel_list_destroy(self.0) };
            }
        }
        let index = match archive {
            Some(index) if index == sys::SDM_LIST_SERVED => {
                return Err(Error::new(
                    Status::NOT_FOUND,
                    format!("there is no mounted archive {index}: pass None for what the runtime serves"),
                ))
            }
            Some(index) => index,
            None => sys::SDM_LIST_SERVED,
        };
        let mut list = List(ptr::null_mut());
        // SAFETY: valid runtime and out-pointer.
        call(|error| unsafe { sys::sdm_kernel_list_create(self.as_raw(), index, &mut list.0, error) })?;
        let mut count = 0u32;
        // SAFETY: a live list and an out-pointer.
        call(|error| unsafe { sys::sdm_kernel_list_count(list.0, &mut count, error) })?;
        (0..count)
            .map(|i| {
                let mut entry = sys::sdm_kernel_entry::default();
                // SAFETY: a live list; `entry` has its struct_size set.
                call(|error| unsafe { sys::sdm_kernel_list_get(list.0, i, &mut entry, error) })?;
                // SAFETY: strings the list owns, alive until it is destroyed after this.
                unsafe {
                    Ok(KernelEntry {
                        archive_index: entry.archive_index,
                        name: owned_string(entry.name),
                        demangled: owned_string(entry.demangled),
                        module: owned_string(entry.module),
                        signature: owned_string(entry.signature),
                        targets: owned_string(entry.targets),
                        shadowed: entry.shadowed != 0,
                    })
                }
            })
            .collect()
    }

    /// This runtime's kernel-cache counters.
    pub fn cache_stats(&self) -> Result<CacheStats> {
        let mut stats = sys::sdm_cache_stats::default();
        // SAFETY: valid runtime; `stats` has its struct_size set.
        call(|error| unsafe { sys::sdm_cache_stats_get(self.as_raw(), &mut stats, error) })?;
        Ok(CacheStats {
            hits: stats.hits,
            misses: stats.misses,
            builds: stats.builds,
            evictions: stats.evictions,
            bad_entries: stats.bad_entries,
            bytes_written: stats.bytes_written,
            build_milliseconds: stats.build_milliseconds,
        })
    }

    /// Loads a plan-provider plugin (`sdm_plugin.h`): sdm dlopens the library, negotiates with it,
    /// and from then on asks it for plans (and, minor 1, to check each loaded image), on whichever
    /// threads fetch kernels and select plans. A plugin whose negotiation fails is not loaded: the
    /// error says why.
    ///
    /// # Safety
    /// `path` is native code loaded into this process: its initialisers run during this call and
    /// its functions run inside sdm's calls afterwards, with nothing checking what they do. It must
    /// be a plugin the host trusts, written to `sdm_plugin.h`'s contract (thread-safe, keeping to
    /// the memory it is given, never unwinding into sdm). `$SDM_PLUGIN_PATH` loads plugins the same
    /// way when a runtime is built: the environment is the host's to trust.
    pub unsafe fn load_plugin(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = c_path(path.as_ref())?;
        // SAFETY: valid runtime and string; the library is the caller's to vouch for.
        call(|error| unsafe { sys::sdm_plugin_load(self.as_raw(), path.as_ptr(), error) })
    }
}

// ---- kernels, plans, launches -------------------------------------------------------------------

/// What kind of image served a kernel (`sdm_kernel_info.image_kind`: the archive's kinds). A
/// newtype, as [`Status`] is: a newer libsdm may know more kinds. Its constants are sdm.h's
/// SDM_IMAGE_KIND_* (abi.rs).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageKind(pub u32);

// The constants (the values of sdm.h) are in abi.rs, generated from sdm.h.
impl ImageKind {
    /// "cubin", "PTX", "LTO-IR", "fatbin"; "unknown" for a kind this crate does not know.
    pub fn name(self) -> &'static str {
        match self {
            ImageKind::CUBIN => "cubin",
            ImageKind::PTX => "PTX",
            ImageKind::LTO_IR => "LTO-IR",
            ImageKind::FATBIN => "fatbin",
            _ => "unknown",
        }
    }
}

/// `ImageKind(cubin)`; `ImageKind(unknown 9)` for a kind this crate does not know.
impl fmt::Debug for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            "unknown" => write!(f, "ImageKind(unknown {})", self.0),
            name => write!(f, "ImageKind({name})"),
        }
    }
}

impl fmt::Display for ImageKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Where the loaded image came from (`sdm_kernel_info.source`). A newtype, as [`ImageKind`] is;
/// the numbers are sdm.h's.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ImageSource(pub u32);

// The constants (the values of sdm.h) are in abi.rs, generated from sdm.h.
impl ImageSource {
    /// "archive cubin", "cache", "nvJitLink", "driver JIT", "fatbin", "nvPTXCompiler"; "unknown"
    /// for a source this crate does not know.
    pub fn name(self) -> &'static str {
        match self {
            ImageSource::ARCHIVE_CUBIN => "archive cubin",
            ImageSource::CACHE => "cache",
            ImageSource::NVJITLINK => "nvJitLink",
            ImageSource::DRIVER_JIT => "driver JIT",
            ImageSource::FATBIN => "fatbin",
            ImageSource::PTX_COMPILER => "nvPTXCompiler",
            _ => "unknown",
        }
    }
}

/// `ImageSource(nvJitLink)`; `ImageSource(unknown 9)` for a source this crate does not know.
impl fmt::Debug for ImageSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name() {
            "unknown" => write!(f, "ImageSource(unknown {})", self.0),
            name => write!(f, "ImageSource({name})"),
        }
    }
}

impl fmt::Display for ImageSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What a fetched kernel is (`sdm_kernel_info`), strings copied. Non-exhaustive, as
/// [`ArchiveInfo`] is.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelInfo {
    pub name: String,
    pub module: String,
    /// The serving archive's label.
    pub archive: String,
    /// "ptr,f32,i32".
    pub signature: String,
    pub ordinal: i32,
    pub image_kind: ImageKind,
    /// The chosen image's arch (90 for sm_90 / compute_90).
    pub image_sm: u32,
    /// What was loaded: the cubin's or the JIT target's SM.
    pub loaded_sm: u32,
    pub source: ImageSource,
}

/// What [`KernelHandle::set`] sets (`sdm_kernel_setting`, ABI 1.4). A newtype, as [`ImageKind`]
/// is; its constants are sdm.h's SDM_KERNEL_SETTING_* (abi.rs).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub struct KernelSetting(pub i32);

/// What the driver says of a fetched kernel's function (`sdm_kernel_attributes`, ABI 1.4: the
/// cuFuncGetAttribute set). Sizes in bytes; versions major * 10 + minor (90 for 9.0). The cluster
/// fields are read on devices of capability 9.0 and later (`has_cluster`), else 0. Non-exhaustive:
/// a later minor may add fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelAttributes {
    pub max_threads_per_block: i32,
    /// Static shared memory per block.
    pub shared_size_bytes: i32,
    pub const_size_bytes: i32,
    /// Local memory per thread.
    pub local_size_bytes: i32,
    /// Registers per thread.
    pub num_regs: i32,
    pub ptx_version: i32,
    pub binary_version: i32,
    pub cache_mode_ca: i32,
    /// The dynamic shared memory a launch may ask for, as set now (48 KiB unless raised).
    pub max_dynamic_shared_size_bytes: i32,
    /// Percent of L1 preferred as shared memory; -1: no preference.
    pub preferred_shared_memory_carveout: i32,
    pub has_cluster: bool,
    pub cluster_size_must_be_set: i32,
    pub required_cluster_width: i32,
    pub required_cluster_height: i32,
    pub required_cluster_depth: i32,
    pub non_portable_cluster_size_allowed: i32,
    pub cluster_scheduling_policy_preference: i32,
}

/// A launch plan (`sdm_plan`): what [`KernelHandle::plan`] or [`KernelHandle::plan_for_elements`]
/// chose, or one the host makes ([`Plan::new`]) or changes (`Plan { smem_bytes: 4096, ..plan }`).
///
/// `grid` and `block` are the x dimensions, as they were before ABI 1.3; `grid_y`, `grid_z`,
/// `block_y` and `block_z` (ABI 1.3) the others, where 0 means 1 (so a plan of 1.1's fields
/// alone is one-dimensional). [`Plan::grid_dims`] and [`Plan::block_dims`] give all three.
pub use abi::Plan;

impl Default for Plan {
    /// Every dimension 0 (grid and block x must then be set: 0 is refused), no flags, no
    /// clusters, rule -1.
    fn default() -> Plan {
        Plan {
            flags: 0,
            grid: 0,
            block: 0,
            smem_bytes: 0,
            cluster: [1, 1, 1],
            blocks_per_sm: 0,
            occupancy: 0,
            rule: -1,
            grid_y: 0,
            grid_z: 0,
            block_y: 0,
            block_z: 0,
            priority: 0,
        }
    }
}

impl Plan {
    /// Launch with programmatic dependent launch (modern class only).
    pub const PDL: u32 = sys::SDM_PLAN_PDL;
    /// A cooperative launch (grid-wide sync): refused unless the device supports it and the whole
    /// grid can be resident at once; the message gives the figures. ABI 1.3.
    pub const COOPERATIVE: u32 = sys::SDM_PLAN_COOPERATIVE;

    /// A plan of `grid` blocks of `block` threads, each `[x, y, z]`, without dynamic shared
    /// memory, flags, clusters or a priority: `Plan::new([n / 16, n / 16, 1], [16, 16, 1])`.
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> Plan {
        Plan::default().with_grid(grid).with_block(block)
    }

    pub fn pdl(&self) -> bool {
        self.flags & Plan::PDL != 0
    }

    /// Whether the plan launches cooperatively ([`Plan::COOPERATIVE`]).
    pub fn cooperative(&self) -> bool {
        self.flags & Plan::COOPERATIVE != 0
    }

    /// The grid's blocks in x, y, z (a y or z of 0 reads as 1).
    pub fn grid_dims(&self) -> [u32; 3] {
        [self.grid, self.grid_y.max(1), self.grid_z.max(1)]
    }

    /// A block's threads in x, y, z (a y or z of 0 reads as 1).
    pub fn block_dims(&self) -> [u32; 3] {
        [self.block, self.block_y.max(1), self.block_z.max(1)]
    }

    /// Blocks in the whole grid.
    pub fn blocks(&self) -> u64 {
        self.grid_dims().iter().map(|&d| u64::from(d)).product()
    }

    /// Threads per block.
    pub fn threads_per_block(&self) -> u64 {
        self.block_dims().iter().map(|&d| u64::from(d)).product()
    }

    /// This plan with `grid` blocks in x, y, z.
    pub fn with_grid(mut self, grid: [u32; 3]) -> Plan {
        [self.grid, self.grid_y, self.grid_z] = grid;
        self
    }

    /// This plan with blocks of `block` threads in x, y, z.
    pub fn with_block(mut self, block: [u32; 3]) -> Plan {
        [self.block, self.block_y, self.block_z] = block;
        self
    }

    /// This plan with [`Plan::COOPERATIVE`] set or cleared.
    pub fn with_cooperative(self, cooperative: bool) -> Plan {
        self.with_flag(Plan::COOPERATIVE, cooperative)
    }

    /// This plan with [`Plan::PDL`] set or cleared.
    pub fn with_pdl(self, pdl: bool) -> Plan {
        self.with_flag(Plan::PDL, pdl)
    }

    /// This plan with launch priority `priority` (0: the stream's own).
    pub fn with_priority(mut self, priority: i32) -> Plan {
        self.priority = priority;
        self
    }

    /// This plan with `bytes` of dynamic shared memory per block.
    pub fn with_smem_bytes(mut self, bytes: u32) -> Plan {
        self.smem_bytes = bytes;
        self
    }

    /// This plan with clusters of `cluster` blocks in x, y, z.
    pub fn with_cluster(mut self, cluster: [u32; 3]) -> Plan {
        self.cluster = cluster;
        self
    }

    fn with_flag(mut self, flag: u32, on: bool) -> Plan {
        if on {
            self.flags |= flag;
        } else {
            self.flags &= !flag;
        }
        self
    }
}

/// One `CUlaunchAttribute` of cuda.h (its layout: a 4-byte id, 4 bytes of padding, a 64-byte value
/// union), for [`KernelHandle::launch_with_attributes`]: the attributes sdm has no plan field for
/// (an access policy window, a memory sync domain, a shared memory carveout, ...). ABI 1.3.
#[repr(C, align(8))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct LaunchAttribute {
    /// A `CUlaunchAttributeID`: `CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN` is 10.
    pub id: u32,
    pad: [u8; 4],
    /// The `CUlaunchAttributeValue` union's bytes, in the host's byte order.
    pub value: [u8; 64],
}

impl LaunchAttribute {
    /// Attribute `id` with `value`'s bytes at the start of the value union (the rest zero): the
    /// bytes of a `u32`, an `i32`, a `CUaccessPolicyWindow`, ... [`Status::INVALID_ARGUMENT`] for
    /// more than 64 bytes.
    pub fn new(id: u32, value: &[u8]) -> Result<LaunchAttribute> {
        if value.len() > 64 {
            return Err(Error::new(
                Status::INVALID_ARGUMENT,
                format!("launch attribute {id}: a value of {} bytes (a CUlaunchAttributeValue holds 64)", value.len()),
            ));
        }
        let mut attribute = LaunchAttribute { id, pad: [0; 4], value: [0; 64] };
        attribute.value[..value.len()].copy_from_slice(value);
        Ok(attribute)
    }

    /// Attribute `id` whose value is an `int` or an enum (`memSyncDomain`, `sharedMemCarveout`,
    /// `cooperative`, ...).
    pub fn int(id: u32, value: i32) -> LaunchAttribute {
        let mut attribute = LaunchAttribute { id, pad: [0; 4], value: [0; 64] };
        attribute.value[..4].copy_from_slice(&value.to_ne_bytes());
        attribute
    }
}

impl fmt::Debug for LaunchAttribute {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LaunchAttribute").field("id", &self.id).field("value", &&self.value[..]).finish()
    }
}

/// A type whose every bit pattern is a valid value and which has no padding, so that sdm may copy
/// bytes of device memory into it ([`KernelHandle::global_read`]) and out of it
/// ([`KernelHandle::global_write`]): the fixed-size integers and floats and arrays of them.
///
/// # Safety
/// Implement it only for a `Copy` type without padding bytes, of which any bytes are a valid value
/// (a `#[repr(C)]` struct of such fields with no gaps between them, as the kernel declares it).
pub unsafe trait Plain: Copy {}

macro_rules! plain {
    ($($t:ty),*) => {$(
        // SAFETY: a primitive integer or float: no padding, every bit pattern valid.
        unsafe impl Plain for $t {}
    )*};
}
plain!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);
// SAFETY: an array of Plain elements has no padding between them and no invalid value.
unsafe impl<T: Plain, const N: usize> Plain for [T; N] {}

/// One kernel a mounted archive lists (`sdm_kernel_entry`), from [`Runtime::kernels`], strings
/// copied. Non-exhaustive, as [`ArchiveInfo`] is. ABI 1.3.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelEntry {
    /// The archive listing it (mount order: [`Runtime::archive`]).
    pub archive_index: u32,
    /// What the archive lists: a C++ kernel's mangled symbol, which [`Runtime::kernel`] takes.
    pub name: String,
    /// As c++filt prints it; "" for a name that is not a C++ symbol (`extern "C"`) or does not
    /// demangle.
    pub demangled: String,
    pub module: String,
    /// "ptr,f32,i32", or derived from the image: "b64,b32,b32" (docs/FORMAT.md).
    pub signature: String,
    /// The module's images: "sm_90,sm_80,compute_90".
    pub targets: String,
    /// Listing one archive: a newer mounted archive lists the same name and serves it instead.
    /// Listing what the runtime serves: false.
    pub shadowed: bool,
}

/// A kernel fetched from a [`Runtime`], which it holds as `R`: [`Kernel`] borrows it,
/// [`OwnedKernel`] shares it; both have every method below. Holds a reference on its module:
/// dropping it releases the reference (`sdm_kernel_release`), which matters only after a reload
/// replaced its archive (the old module unloads when its last kernel goes). A CUfunction from
/// [`KernelHandle::function`] is valid as long as the handle.
pub struct KernelHandle<R: Deref<Target = Runtime>> {
    raw: NonNull<sys::sdm_kernel>,
    runtime: R,
    checked: Option<String>,              // the signature a checked fetch was given
    params: OnceLock<Vec<values::Param>>, // what launch_values packs by, once read
}

/// A kernel borrowing its runtime ([`Runtime::kernel`]): the cheapest handle, for code that keeps
/// the runtime in scope.
pub type Kernel<'rt> = KernelHandle<&'rt Runtime>;

/// A kernel sharing its runtime through an `Arc` ([`Runtime::owned_kernel`]): `'static`, so it can
/// be stored beside the `Arc<Runtime>` or moved into another thread. The runtime lives until its
/// last owner, kernels included, is dropped.
pub type OwnedKernel = KernelHandle<Arc<Runtime>>;

// SAFETY: sdm.h: kernel handles are safe to share between threads, and every call taking one is
// thread-safe, from any thread. What remains is the runtime holder's own Send and Sync (a
// `&Runtime` and an `Arc<Runtime>` are both, as Runtime is Send and Sync).
unsafe impl<R: Deref<Target = Runtime> + Send> Send for KernelHandle<R> {}
unsafe impl<R: Deref<Target = Runtime> + Sync> Sync for KernelHandle<R> {}

impl<R: Deref<Target = Runtime>> Drop for KernelHandle<R> {
    fn drop(&mut self) {
        // Fails only for a reference released twice, which this type cannot do.
        // SAFETY: the runtime outlives the kernel (borrowed or shared; the field drops after this).
        unsafe { sys::sdm_kernel_release(self.runtime.as_raw(), self.raw.as_ptr(), ptr::null_mut()) };
    }
}

impl<R: Deref<Target = Runtime>> fmt::Debug for KernelHandle<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel").field("raw", &self.raw).finish()
    }
}

impl<'rt> Kernel<'rt> {
    pub fn runtime(&self) -> &'rt Runtime {
        self.runtime
    }
}

impl OwnedKernel {
    /// The runtime it shares: clone the `Arc` to keep the runtime beyond this kernel.
    pub fn runtime(&self) -> &Arc<Runtime> {
        &self.runtime
    }
}

impl<R: Deref<Target = Runtime>> KernelHandle<R> {
    /// The C handle, valid as long as this handle.
    pub fn as_raw(&self) -> *const sys::sdm_kernel {
        self.raw.as_ptr()
    }

    /// The kernel's CUfunction, for hosts that launch it themselves.
    pub fn function(&self) -> Result<*mut c_void> {
        let mut function: *mut c_void = ptr::null_mut();
        // SAFETY: valid kernel and out-pointer.
        call(|error| unsafe { sys::sdm_kernel_function(self.as_raw(), &mut function, error) })?;
        Ok(function)
    }

    /// Which image was chosen and where it came from.
    pub fn info(&self) -> Result<KernelInfo> {
        let mut info = sys::sdm_kernel_info::default();
        // SAFETY: valid kernel; `info` has its struct_size set.
        call(|error| unsafe { sys::sdm_kernel_info_get(self.as_raw(), &mut info, error) })?;
        // SAFETY: strings the runtime owns, alive while it is.
        unsafe {
            Ok(KernelInfo {
                name: owned_string(info.name),
                module: owned_string(info.module),
                archive: owned_string(info.archive),
                signature: owned_string(info.signature),
                ordinal: info.ordinal,
                image_kind: ImageKind(info.image_kind),
                image_sm: info.image_sm,
                loaded_sm: info.loaded_sm,
                source: ImageSource(info.source),
            })
        }
    }

    /// The launch plan on the kernel's device for `problem` (the kernel's problem parameters, in
    /// manifest order). No rule for the device: [`Status::NOT_FOUND`]; a plan that cannot run:
    /// [`Status::INVALID_ARGUMENT`].
    pub fn plan(&self, problem: &[i64]) -> Result<Plan> {
        let count = u32::try_from(problem.len())
            .map_err(|_| Error::new(Status::INVALID_ARGUMENT, "a problem has at most 2^32 - 1 parameters"))?;
        let mut plan = sys::sdm_plan::default();
        // SAFETY: `count` values; `plan` has its struct_size set.
        call(|error| unsafe { sys::sdm_plan_select(self.as_raw(), problem.as_ptr(), count, &mut plan, error) })?;
        Ok(Plan::from_raw(&plan))
    }

    /// Launches the kernel with `plan` on `stream` (a CUstream of the kernel's device, or null for
    /// the device's context current on this thread) through cuLaunchKernelEx. `args` are the
    /// addresses of the argument values ([`arg`]), as many as the signature has (sdm checks the
    /// count). Nothing checks their types or sizes: [`KernelHandle::launch_values`] packs values
    /// by the signature and refuses lossy ones.
    ///
    /// # Safety
    /// Each argument must point to a value of the type the kernel's signature declares at that
    /// position, device pointers must be valid for what the kernel accesses, and `stream` must be
    /// null or a live CUstream: the kernel runs on the GPU with whatever it is given.
    pub unsafe fn launch(&self, plan: &Plan, stream: Stream, args: &[*mut c_void]) -> Result<()> {
        let count = u32::try_from(args.len())
            .map_err(|_| Error::new(Status::INVALID_ARGUMENT, "a launch takes at most 2^32 - 1 arguments"))?;
        let raw = plan.to_raw();
        call(|error| unsafe { sys::sdm_launch(self.as_raw(), &raw, stream, args.as_ptr(), count, error) })
    }
    /// Launches as [`KernelHandle::launch`] does, with `attributes` handed to cuLaunchKernelEx
    /// after sdm's own (an `sdm_launch_attributes` on the plan's chain; ABI 1.3). At most 16; one
    /// that a plan field sets (cluster, PDL, cooperative, priority) is
    /// [`Status::INVALID_ARGUMENT`]: set the field instead.
    ///
    /// # Safety
    /// As for [`KernelHandle::launch`]; and each attribute's value must be what the driver takes
    /// for its id (a pointer inside one, such as an access policy window's base, must be valid).
    pub unsafe fn launch_with_attributes(
        &self,
        plan: &Plan,
        stream: Stream,
        args: &[*mut c_void],
        attributes: &[LaunchAttribute],
    ) -> Result<()> {
        let count = u32::try_from(args.len())
            .map_err(|_| Error::new(Status::INVALID_ARGUMENT, "a launch takes at most 2^32 - 1 arguments"))?;
        let attribute_count = u32::try_from(attributes.len())
            .map_err(|_| Error::new(Status::INVALID_ARGUMENT, "a launch takes at most 16 attributes"))?;
        let chain = sys::sdm_launch_attributes {
            type_: sys::SDM_CHAIN_LAUNCH_ATTRIBUTES,
            attributes: attributes.as_ptr().cast(),
            count: attribute_count,
            ..Default::default()
        };
        let mut raw = plan.to_raw();
        if !attributes.is_empty() {
            // sdm_launch_attributes begins with the sdm_chain header, as every chain struct does.
            raw.next = (&chain as *const sys::sdm_launch_attributes).cast();
        }
        // SAFETY: `raw`, `chain` and `attributes` live through the call, which reads them only
        // during it; the arguments and stream are the caller's to vouch for.
        call(|error| unsafe { sys::sdm_launch(self.as_raw(), &raw, stream, args.as_ptr(), count, error) })
    }

    /// A plan for a kernel without plan rules (ABI 1.3): one thread per element of `elements`, in
    /// blocks of the size the driver's occupancy calculator suggests for the kernel with
    /// `smem_bytes` of dynamic shared memory, and as many blocks as cover the elements (rule -1;
    /// `occupancy` is the driver's blocks per SM). Change it before launching as any plan. 0
    /// elements, more than 2^31-1 blocks, or more shared memory than the device has, is
    /// [`Status::INVALID_ARGUMENT`].
    pub fn plan_for_elements(&self, elements: u64, smem_bytes: u32) -> Result<Plan> {
        let mut plan = sys::sdm_plan::default();
        // SAFETY: valid kernel; `plan` has its struct_size set.
        call(|error| unsafe { sys::sdm_plan_for_elements(self.as_raw(), elements, smem_bytes, &mut plan, error) })?;
        Ok(Plan::from_raw(&plan))
    }

    /// The driver's attributes of the kernel's function (ABI 1.4). Unlike [`KernelHandle::function`],
    /// it does not hand the CUfunction out: a reload's retirement of the module still waits only
    /// for the streams sdm launched on.
    pub fn attributes(&self) -> Result<KernelAttributes> {
        let mut a = sys::sdm_kernel_attributes::default();
        // SAFETY: valid kernel; `a` has its struct_size set.
        call(|error| unsafe { sys::sdm_kernel_attributes_get(self.as_raw(), &mut a, error) })?;
        Ok(KernelAttributes {
            max_threads_per_block: a.max_threads_per_block,
            shared_size_bytes: a.shared_size_bytes,
            const_size_bytes: a.const_size_bytes,
            local_size_bytes: a.local_size_bytes,
            num_regs: a.num_regs,
            ptx_version: a.ptx_version,
            binary_version: a.binary_version,
            cache_mode_ca: a.cache_mode_ca,
            max_dynamic_shared_size_bytes: a.max_dynamic_shared_size_bytes,
            preferred_shared_memory_carveout: a.preferred_shared_memory_carveout,
            has_cluster: a.flags & sys::SDM_KERNEL_ATTRIBUTES_CLUSTER != 0,
            cluster_size_must_be_set: a.cluster_size_must_be_set,
            required_cluster_width: a.required_cluster_width,
            required_cluster_height: a.required_cluster_height,
            required_cluster_depth: a.required_cluster_depth,
            non_portable_cluster_size_allowed: a.non_portable_cluster_size_allowed,
            cluster_scheduling_policy_preference: a.cluster_scheduling_policy_preference,
        })
    }

    /// Sets `setting` to `value` on the kernel's function and records it for the kernel's name on
    /// its device, so that the kernel fetched again after a reload gets it too (ABI 1.4):
    /// [`KernelSetting::MAX_DYNAMIC_SHARED_BYTES`] in bytes, [`KernelSetting::PREFERRED_CARVEOUT`]
    /// 0..=100 percent or -1. A value past the device's limit is [`Status::INVALID_ARGUMENT`]
    /// naming both, and nothing is recorded.
    pub fn set(&self, setting: KernelSetting, value: i32) -> Result<()> {
        // SAFETY: valid kernel.
        call(|error| unsafe { sys::sdm_kernel_set(self.as_raw(), setting.0, value, error) })
    }

    /// Blocks of `block_threads` threads with `smem_bytes` of dynamic shared memory that fit on
    /// one multiprocessor at once (cuOccupancyMaxActiveBlocksPerMultiprocessor; ABI 1.4); 0 when
    /// none does.
    pub fn max_active_blocks(&self, block_threads: u32, smem_bytes: u32) -> Result<i32> {
        let mut blocks = 0i32;
        // SAFETY: valid kernel and out-pointer.
        call(|error| unsafe {
            sys::sdm_kernel_max_active_blocks(self.as_raw(), block_threads, smem_bytes, &mut blocks, error)
        })?;
        Ok(blocks)
    }

    /// (the block size of the highest occupancy, the fewest blocks that reach it on the device)
    /// for `smem_bytes` of dynamic shared memory per block and blocks of at most
    /// `block_threads_limit` threads (0: the kernel's own limit): cuOccupancyMaxPotentialBlockSize
    /// (ABI 1.4).
    pub fn max_potential_block_size(&self, smem_bytes: u32, block_threads_limit: u32) -> Result<(i32, i32)> {
        let (mut block, mut min_grid) = (0i32, 0i32);
        // SAFETY: valid kernel and out-pointers.
        call(|error| unsafe {
            sys::sdm_kernel_max_potential_block_size(
                self.as_raw(),
                smem_bytes,
                block_threads_limit,
                &mut block,
                &mut min_grid,
                error,
            )
        })?;
        Ok((block, min_grid))
    }

    /// The `__device__` or `__constant__` variable `name` of the kernel's module, as loaded for
    /// the kernel's device and context: its device address and its size in bytes (ABI 1.3).
    /// `name` is its symbol: mangled for a C++ variable in a namespace. None such is
    /// [`Status::NOT_FOUND`] naming the module; a kernel's name [`Status::INVALID_ARGUMENT`]. After
    /// a reload replaced the archive, a kernel fetched again has the new image's globals, while
    /// this handle keeps the old ones.
    pub fn global(&self, name: &str) -> Result<(DevicePtr, u64)> {
        let name = c_string("the global's name", name)?;
        let (mut address, mut bytes) = (0u64, 0u64);
        // SAFETY: valid kernel, string and out-pointers.
        call(|error| unsafe { sys::sdm_global_get(self.as_raw(), name.as_ptr(), &mut address, &mut bytes, error) })?;
        Ok((address, bytes))
    }

    /// Copies `data` to the global `name` at byte `offset`, on the device context's default
    /// stream (ABI 1.3). A range past the global's size is [`Status::INVALID_ARGUMENT`] naming both.
    ///
    /// The copy is `cuMemcpyHtoDAsync` from `data`: from ordinary (pageable) host memory, which is
    /// what safe Rust allocates, the driver has taken the bytes when it returns. For page-locked
    /// memory (`cuMemHostAlloc`, `cuMemHostRegister`) it may not have: use
    /// [`KernelHandle::global_write_async`] and synchronize the stream.
    pub fn global_write<T: Plain>(&self, name: &str, offset: u64, data: &[T]) -> Result<()> {
        // SAFETY: `data` is valid for its size in bytes and, being pageable, read before the call returns.
        unsafe {
            self.global_write_async(
                name,
                offset,
                data.as_ptr().cast(),
                std::mem::size_of_val(data) as u64,
                ptr::null_mut(),
            )
        }
    }

    /// Copies bytes of the global `name` from byte `offset` into `out` (as many as it holds), on
    /// the device context's default stream (ABI 1.3). A range past the global's size is
    /// [`Status::INVALID_ARGUMENT`].
    ///
    /// The copy is `cuMemcpyDtoHAsync` to `out`: into ordinary (pageable) host memory the driver
    /// has finished when it returns. For page-locked memory it may not have: use
    /// [`KernelHandle::global_read_async`] and synchronize the stream before reading.
    pub fn global_read<T: Plain>(&self, name: &str, offset: u64, out: &mut [T]) -> Result<()> {
        // SAFETY: `out` is valid for its size in bytes, any bytes are a T, and pageable memory is
        // written before the call returns.
        unsafe {
            self.global_read_async(
                name,
                offset,
                out.as_mut_ptr().cast(),
                std::mem::size_of_val(out) as u64,
                ptr::null_mut(),
            )
        }
    }

    /// [`KernelHandle::global_write`] of `bytes` bytes at `data`, on `stream` (null: the device
    /// context's default stream), as `cuMemcpyHtoDAsync` does it.
    ///
    /// # Safety
    /// `data` is valid for reading `bytes` bytes until the stream has done the copy (for pageable
    /// memory: until this returns); `stream` is null or a live CUstream of the kernel's context.
    pub unsafe fn global_write_async(
        &self,
        name: &str,
        offset: u64,
        data: *const c_void,
        bytes: u64,
        stream: Stream,
    ) -> Result<()> {
        let name = c_string("the global's name", name)?;
        // SAFETY: valid kernel and string; the rest is the caller's to vouch for.
        call(|error| unsafe { sys::sdm_global_write(self.as_raw(), name.as_ptr(), offset, data, bytes, stream, error) })
    }

    /// [`KernelHandle::global_read`] of `bytes` bytes into `data`, on `stream` (null: the device
    /// context's default stream), as `cuMemcpyDtoHAsync` does it: synchronize the stream before
    /// reading `data`.
    ///
    /// # Safety
    /// `data` is valid for writing `bytes` bytes until the stream has done the copy, and nothing
    /// reads or writes them meanwhile; `stream` is null or a live CUstream of the kernel's context.
    pub unsafe fn global_read_async(
        &self,
        name: &str,
        offset: u64,
        data: *mut c_void,
        bytes: u64,
        stream: Stream,
    ) -> Result<()> {
        let name = c_string("the global's name", name)?;
        // SAFETY: valid kernel and string; the rest is the caller's to vouch for.
        call(|error| unsafe { sys::sdm_global_read(self.as_raw(), name.as_ptr(), offset, data, bytes, stream, error) })
    }
}
