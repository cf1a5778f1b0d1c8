#include "load_context.hpp"

#include <chrono>

#include "runtime/platform/settings.hpp"

namespace sdm::runtime {

LoadContext::LoadContext(const Logger& log, std::string cuda_driver, ContextChoice contexts)
    : log_(log), cuda_driver_(std::move(cuda_driver)), choice_(std::move(contexts)), traces_launches_(settings::flag(settings::Id::nvtx_launch)),
      devices_([this] { return driver(); }) {}

Result<std::shared_ptr<Driver>> LoadContext::driver() {
    std::lock_guard lock(mutex_);
    if (driver_) return driver_;
    const auto started = std::chrono::steady_clock::now();
    auto loaded = Driver::load(cuda_driver_);
    if (log_.enabled(LogLevel::debug))
        log_.debug("driver load: " + std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count()) +
                   " us");
    if (!loaded) {
        log_.debug(loaded.error().message);
        return loaded;
    }
    driver_ = std::move(*loaded);
    log_.info("loaded CUDA driver " + driver_->path() + " version " + std::to_string(driver_->version()));
    return driver_;
}

Result<Contexts*> LoadContext::contexts() {
    SDM_TRY_GET(d, driver());
    std::lock_guard lock(mutex_);
    if (!contexts_) contexts_ = std::make_unique<Contexts>(*d, choice_, log_);
    return contexts_.get();
}

}  // namespace sdm::runtime
