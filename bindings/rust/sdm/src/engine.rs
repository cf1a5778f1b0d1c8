//! An engine's loader (ABI 1.5, docs/LOADING.md): unmounting an archive, the footprint report and
//! background warm-up.
use crate::{c_string, call, sys, Error, Result, Runtime, Status};
use std::ffi::c_char;
use std::ptr::{self, NonNull};
use std::time::Duration;

/// What a runtime holds, summed over its devices (`sdm_footprint`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Footprint {
    /// Loaded modules, those still held or draining (and evicted ones) included.
    pub module_count: u32,
    /// As the loaded modules' images declare it, before the driver rounds its allocations.
    pub device_bytes: u64,
    /// Image bytes kept for the driver's library path.
    pub host_bytes: u64,
    /// Images decoded ahead of their first fetch.
    pub readahead_bytes: u64,
    /// Decoded references of compressed images.
    pub reference_bytes: u64,
    /// sdm's copies of archives mounted from memory, and decoded manifests.
    pub archive_memory_bytes: u64,
    /// Archive files mapped read-only.
    pub archive_mapped_bytes: u64,
    /// The kernel cache's entries on disk (0 when this runtime has not opened it).
    pub cache_bytes: u64,
    /// Modules whose device bytes are unknown (the driver's JIT loaded them).
    pub unknown_device_modules: u32,
}

impl Runtime {
    /// Takes the archive whose label is `label` (its path, or the label given to `mount_memory`)
    /// out of the layer order, with the overlays bound to it, and returns how many archives left.
    /// Kernels fetched from it keep working until released. A label naming no archive, or several,
    /// unmounts nothing ([`Status::NOT_FOUND`], [`Status::AMBIGUOUS`]).
    pub fn unmount(&self, label: &str) -> Result<u32> {
        let label = c_string("the archive label", label)?;
        let mut unmounted = 0u32;
        // SAFETY: a valid string and out-parameter.
        call(|error| unsafe { sys::sdm_archive_unmount(self.as_raw(), label.as_ptr(), &mut unmounted, error) })?;
        Ok(unmounted)
    }

    /// What the runtime holds now: a walk of every loaded module and mounted archive (a report,
    /// not a call for every frame).
    pub fn footprint(&self) -> Result<Footprint> {
        let mut f = sys::sdm_footprint {
            struct_size: std::mem::size_of::<sys::sdm_footprint>() as u32,
            module_count: 0,
            device_bytes: 0,
            host_bytes: 0,
            readahead_bytes: 0,
            reference_bytes: 0,
            archive_memory_bytes: 0,
            archive_mapped_bytes: 0,
            cache_bytes: 0,
            unknown_device_modules: 0,
            reserved0: 0,
        };
        // SAFETY: a struct of the size it says.
        call(|error| unsafe { sys::sdm_footprint_get(self.as_raw(), &mut f, error) })?;
        Ok(Footprint {
            module_count: f.module_count,
            device_bytes: f.device_bytes,
            host_bytes: f.host_bytes,
            readahead_bytes: f.readahead_bytes,
            reference_bytes: f.reference_bytes,
            archive_memory_bytes: f.archive_memory_bytes,
            archive_mapped_bytes: f.archive_mapped_bytes,
            cache_bytes: f.cache_bytes,
            unknown_device_modules: f.unknown_device_modules,
        })
    }

    /// Starts loading what [`Runtime::preload`] would (the modules of `names`, or of every kernel
    /// of every mounted archive when `names` is empty) on device `ordinal` in the background, and
    /// returns at once; across warm-ups, one of higher `priority` starts its modules first. A fetch
    /// of a kernel being warmed up waits for that load instead of loading it again. What fails in
    /// the background is the warm-up's outcome ([`Warmup::wait`]), not this call's.
    pub fn preload_async(&self, ordinal: i32, names: &[&str], priority: i32) -> Result<Warmup> {
        let owned = names.iter().map(|name| c_string("the kernel name", name)).collect::<Result<Vec<_>>>()?;
        let pointers: Vec<*const c_char> = owned.iter().map(|name| name.as_ptr()).collect();
        let count = u32::try_from(pointers.len())
            .map_err(|_| Error::new(Status::INVALID_ARGUMENT, "preload_async takes at most 2^32 - 1 names"))?;
        let mut raw: *mut sys::sdm_warmup = ptr::null_mut();
        // SAFETY: `count` valid strings (sdm copies them); no callback.
        call(|error| unsafe {
            sys::sdm_preload_async(
                self.as_raw(),
                ordinal,
                pointers.as_ptr(),
                count,
                priority,
                None,
                ptr::null_mut(),
                &mut raw,
                error,
            )
        })?;
        NonNull::new(raw)
            .map(|raw| Warmup { raw })
            .ok_or_else(|| Error::new(Status::INTERNAL, "sdm_preload_async returned no warm-up"))
    }
}

/// A background warm-up ([`Runtime::preload_async`]). Dropping it cancels what has not started and
/// waits for the loads it started. It may outlive its runtime; its calls then still answer. The C
/// completion callback is not bound: wait on a thread instead.
pub struct Warmup {
    raw: NonNull<sys::sdm_warmup>,
}

// SAFETY: sdm's warm-up calls may come from any thread, at once.
unsafe impl Send for Warmup {}
unsafe impl Sync for Warmup {}

impl Warmup {
    /// How far it got: modules finished (loaded or failed) and modules to load (0 until it has
    /// listed them).
    pub fn progress(&self) -> Result<(u32, u32)> {
        let (mut done, mut total) = (0u32, 0u32);
        // SAFETY: a live warm-up and valid out-parameters.
        call(|error| unsafe { sys::sdm_warmup_progress(self.raw.as_ptr(), &mut done, &mut total, error) })?;
        Ok((done, total))
    }

    /// Waits at most `timeout` (zero: only looks) for it to finish and returns its outcome: `Ok`,
    /// its first failure (naming every kernel that did not load), or [`Status::CANCELLED`];
    /// [`Status::TIMEOUT`] when it has not finished by then (it goes on).
    pub fn wait(&self, timeout: Duration) -> Result<()> {
        let ms = u32::try_from(timeout.as_millis()).unwrap_or(u32::MAX);
        // SAFETY: a live warm-up.
        call(|error| unsafe { sys::sdm_warmup_wait(self.raw.as_ptr(), ms, error) })
    }

    /// Skips the modules it has not started and returns at once; those loading finish.
    pub fn cancel(&self) -> Result<()> {
        // SAFETY: a live warm-up.
        call(|error| unsafe { sys::sdm_warmup_cancel(self.raw.as_ptr(), error) })
    }
}

impl Drop for Warmup {
    fn drop(&mut self) {
        // SAFETY: the warm-up sdm_preload_async made, destroyed once.
        unsafe { sys::sdm_warmup_destroy(self.raw.as_ptr()) };
    }
}
