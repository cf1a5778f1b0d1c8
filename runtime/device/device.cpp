#include "device.hpp"

#include <array>

namespace sdm::runtime {

Result<int32_t> Devices::count() {
    SDM_TRY_GET(driver, driver_());
    if (!(*driver)->has_devices()) return 0;
    int n = 0;
    SDM_TRY(SDM_DRIVER_CALL(**driver, cuDeviceGetCount, "counting CUDA devices", &n));
    return static_cast<int32_t>(n);
}

std::optional<Devices::Value> Devices::memo_get(const Key& key) const {
    std::lock_guard lock(mutex_);
    const auto it = memo_.find(key);
    if (it == memo_.end()) return std::nullopt;
    return it->second;
}

void Devices::memo_put(Key key, Value value) {
    std::lock_guard lock(mutex_);
    if (memo_.size() >= kMemoLimit) memo_.clear();
    memo_.emplace(std::move(key), std::move(value));
}

size_t Devices::memo_size() const {
    std::lock_guard lock(mutex_);
    return memo_.size();
}

Result<DeviceProperties> Devices::read_properties(int32_t ordinal) {
    SDM_TRY_GET(driver_result, driver_());
    Driver& driver = **driver_result;
    SDM_TRY_GET(n, count());
    if (ordinal < 0 || ordinal >= *n)
        return make_error(ErrorCode::no_device, "there is no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(*n) +
                                                    " visible; check CUDA_VISIBLE_DEVICES)");
    const std::string what = "reading CUDA device " + std::to_string(ordinal);
    CUdevice device = 0;
    SDM_TRY(SDM_DRIVER_CALL(driver, cuDeviceGet, what, &device, ordinal));
    std::array<char, 256> name{};
    SDM_TRY(SDM_DRIVER_CALL(driver, cuDeviceGetName, what, name.data(), static_cast<int>(name.size() - 1), device));
    DeviceProperties p;
    p.ordinal = ordinal;
    p.name = name.data();
    const auto attribute = [&](CUdevice_attribute a, int& out) { return SDM_DRIVER_CALL(driver, cuDeviceGetAttribute, what, &out, a, device); };
    int major = 0, minor = 0, optin = 0, sms = 0, l2 = 0;
    SDM_TRY(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, major));
    SDM_TRY(attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, minor));
    SDM_TRY(attribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, optin));
    SDM_TRY(attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, sms));
    SDM_TRY(attribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, l2));
    p.capability = {major, minor};
    p.smem_optin_bytes = optin;
    p.sm_count = sms;
    p.l2_bytes = static_cast<uint64_t>(l2);
    return p;
}

Result<DeviceProperties> Devices::properties(int32_t ordinal) {
    const Key key{Read::properties, ordinal};
    Result<DeviceProperties> p = make_error(ErrorCode::internal, "");
    if (auto hit = memo_get(key)) {
        p = std::get<DeviceProperties>(*hit);
    } else {
        p = read_properties(ordinal);
        if (!p) return p;  // errors are never memoized
        memo_put(key, *p);  // the hardware's values
    }
    if (const std::optional<ForcedMatrixRow> row = current_forced_matrix_row()) {
        p->capability = row->capability;
        p->smem_optin_bytes = row->smem_optin_bytes;
        p->sm_count = row->sm_count;
        if (row->l2_bytes) p->l2_bytes = *row->l2_bytes;
    }
    return p;
}

Result<DeviceClass> Devices::device_class(int32_t ordinal) {
    const Key key{Read::device_class, ordinal};
    const uint64_t epoch = forced_matrix_row_epoch();
    const bool forced = forced_matrix_row_active();
    if (!forced)
        if (auto hit = memo_get(key)) return std::get<DeviceClass>(*hit);
    SDM_TRY_GET(p, properties(ordinal));
    auto c = classify(ordinal, p->name, p->capability, p->smem_optin_bytes);
    if (!c) return c;
    if (!forced && forced_matrix_row_epoch() == epoch) memo_put(key, *c);
    return c;
}

}  // namespace sdm::runtime
