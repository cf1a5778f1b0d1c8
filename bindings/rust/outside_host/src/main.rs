//! A host of the sdm crate, built outside the repository by bindings/rust/test_outside.sh.
//!
//! `sdm-outside-host [ARCHIVE [KERNEL]]`: says which libsdm the loader found (test_outside.sh
//! checks it is the installed one), mounts ARCHIVE, lists the archives (libsdm's embedded one
//! included), and fetches KERNEL on device 0 as an OwnedKernel that another thread plans with.
//! Without KERNEL nothing needs a driver.
use std::process::ExitCode;
use std::sync::Arc;

/// The file the loader mapped for libsdm, from /proc/self/maps.
fn loaded_libsdm() -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.contains("/libsdm.so"))
        .map(String::from)
}

fn run() -> sdm::Result<()> {
    sdm::check_abi()?;
    let (major, minor) = sdm::abi_version();
    let from = loaded_libsdm().unwrap_or_else(|| "nowhere /proc/self/maps shows".into());
    println!("libsdm {} (C ABI {major}.{minor}) loaded from {from}", sdm::version());
    let mut args = std::env::args().skip(1);
    let runtime = Arc::new(sdm::Runtime::new()?);
    if let Some(archive) = args.next() {
        runtime.mount_file(archive)?;
    }
    for archive in runtime.archives()? {
        let origin = if archive.embedded { " (embedded)" } else { "" };
        println!(
            "archive {}{origin}: content {:?}, {} kernels",
            archive.label, archive.content_version, archive.kernel_count
        );
    }
    if let Some(name) = args.next() {
        let device = runtime.device_info(0)?;
        let kernel = runtime.owned_kernel(0, &name)?;
        // The kernel holds the runtime: it needs nothing borrowed to go to another thread.
        let worker = std::thread::spawn(move || -> sdm::Result<String> {
            let info = kernel.info()?;
            let plan = kernel.plan(&[1 << 20])?;
            Ok(format!(
                "kernel {} ({}) on device 0: {} sm_{} from the {}; for 2^20: grid {} x block {}",
                info.name, info.signature, info.image_kind, info.loaded_sm, info.source, plan.grid, plan.block
            ))
        });
        let line = worker.join().expect("the worker does not panic")?;
        println!("{line} [{}]", device.name);
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("sdm-outside-host: {error}");
            ExitCode::FAILURE
        }
    }
}
