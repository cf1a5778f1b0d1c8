// A runtime: the archives a host mounted, the driver (loaded on first need), the devices, the log
// and the last error. Everything the C ABI's sdm_runtime handle reaches. Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "context.hpp"
#include "device.hpp"
#include "driver.hpp"
#include "log.hpp"
#include "manifest.hpp"
#include "reader.hpp"
#include "result.hpp"

namespace sdm::runtime {

struct RuntimeOptions {
    bool mount_embedded{true};
    Logger::Sink log_sink;
    std::optional<LogLevel> log_level;  // unset: $SDM_LOG, else warn
    std::string cuda_driver;            // empty: $SDM_CUDA_DRIVER, else libcuda.so.1
    CUcontext host_context{nullptr};    // the host's own context; null: primary contexts
};

struct MountedArchive {
    archive::Archive archive;
    std::optional<archive::Manifest> manifest;
    bool embedded{false};
    std::shared_ptr<const archive::ByteVector> owned;  // bytes copied from the host, when mounted from memory
};

class Runtime {
public:
    explicit Runtime(RuntimeOptions options);
    Runtime(const Runtime&) = delete;
    Runtime& operator=(const Runtime&) = delete;

    const Logger& log() const noexcept { return log_; }
    // The driver, loaded on first need. A failure is returned (and logged) but not kept: a later
    // call tries again.
    Result<std::shared_ptr<Driver>> driver();
    Devices& devices() noexcept { return devices_; }
    // The contexts device work runs in (loads the driver on first need).
    Result<Contexts*> contexts();
    CUcontext host_context() const noexcept { return options_.host_context; }

    Result<void> mount_file(const std::string& path);
    Result<void> mount_memory(archive::Bytes bytes, const std::string& label);
    std::vector<std::shared_ptr<const MountedArchive>> archives() const;

    // Records an error a call on this runtime returned (for sdm_runtime_last_error) and logs it at
    // debug level.
    void record_error(const Error& error);
    std::optional<Error> last_error() const;

private:
    Result<void> mount(std::shared_ptr<MountedArchive> mounted);

    RuntimeOptions options_;
    Logger log_;
    Devices devices_;
    mutable std::mutex mutex_;
    std::shared_ptr<Driver> driver_;
    std::unique_ptr<Contexts> contexts_;  // released before driver_ (declared after it)
    std::vector<std::shared_ptr<const MountedArchive>> archives_;
    std::optional<Error> last_error_;
};

}  // namespace sdm::runtime
