// Device reads through the driver: name, capability, opt-in shared memory, SM count, L2 size, and
// the class they put the device in (hardware_matrix.hpp). Memoized per (read, device ordinal) in a
// bounded table, so a call makes no driver query after the device's first one; errors are never
// memoized. A forced row (forced_matrix_row.hpp, tests only) is laid over the hardware's values after the
// memo, and the class under one is not memoized. Thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include "common/hardware_matrix.hpp"
#include "runtime/platform/driver.hpp"
#include "runtime/platform/forced_matrix_row.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct DeviceProperties {
    int32_t ordinal{0};
    std::string name;
    Capability capability;
    int32_t smem_optin_bytes{0};
    int32_t sm_count{0};
    uint64_t l2_bytes{0};
};

class Devices {
public:
    using DriverSource = std::function<Result<std::shared_ptr<Driver>>()>;
    explicit Devices(DriverSource driver) : driver_(std::move(driver)) {}

    Result<int32_t> count();
    // The device as read (a forced row's values in place of the hardware's, when one is active).
    Result<DeviceProperties> properties(int32_t ordinal);
    // Its class, or ErrorCode::unsupported_device with the seed's message.
    Result<DeviceClass> device_class(int32_t ordinal);

    // Bound on memoized reads; the table is cleared when it fills (the seed keeps 64).
    static constexpr size_t kMemoLimit = 64;
    size_t memo_size() const;

private:
    enum class Read : int { properties = 0, device_class = 1 };
    using Key = std::pair<Read, int32_t>;
    using Value = std::variant<DeviceProperties, DeviceClass>;
    Result<DeviceProperties> read_properties(int32_t ordinal);
    std::optional<Value> memo_get(const Key& key) const;
    void memo_put(Key key, Value value);

    DriverSource driver_;
    mutable std::mutex mutex_;
    std::map<Key, Value> memo_;
};

}  // namespace sdm::runtime
