// sdm_kernels.hpp: the deterministic sparse delta write of the SDM kernels (kernels/sdm_kernels.cu)
// as one call, on top of sdm.hpp. It is three steps on one stream, each an sdm_launch with the
// manifest's plan, so any language can run it through the C ABI the same way (docs/KERNELS.md):
//
//   1. sdm_group_keys_<i32|i64>(idx, rows, n, keys_a, error)           n = B * K; plan problem {n}
//   2. sdm_group_merge(in, out, n, width) for width = 2048, 4096, ...   while width < n, swapping
//      keys_a and keys_b after each pass;                               plan problem {n}
//   3. sdm_scatter_delta_grouped_<f32|bf16>(V, keys, n, w, delta, lr, K, D)  plan problem {n, K, D}
//
// `workspace` holds keys_a and keys_b: grouped_workspace_bytes(B, K) bytes of device memory.
// Equal indices add in position order (b * K + j), in fp32, and each row is written once: the
// result is bitwise the same on every run. An index outside [0, rows) is never applied; with
// `error` (a device int the caller set to INT_MAX), the first such position is stored there.
#ifndef SDM_SDM_KERNELS_HPP
#define SDM_SDM_KERNELS_HPP

#include <cstdint>
#include <string>
#include <utility>

#include "sdm.hpp"

namespace sdm {

// The three kernels of the deterministic write for one value type ("f32", "bf16") and index type
// ("i32", "i64") on one device.
class GroupedWrite {
public:
    static constexpr int kTile = 2048;  // keys sdm_group_keys sorts per block

    static Result<GroupedWrite> get(const Runtime& runtime, int32_t device, const std::string& value_type, const std::string& index_type) {
        auto keys = runtime.kernel(device, "sdm_group_keys_" + index_type);
        if (!keys) return std::move(keys).error();
        auto merge = runtime.kernel(device, "sdm_group_merge");
        if (!merge) return std::move(merge).error();
        auto apply = runtime.kernel(device, "sdm_scatter_delta_grouped_" + value_type);
        if (!apply) return std::move(apply).error();
        return GroupedWrite(std::move(*keys), std::move(*merge), std::move(*apply));
    }

    // Device memory the workspace needs for B rows of K slots.
    static uint64_t workspace_bytes(int B, int K) { return 2 * sizeof(uint64_t) * static_cast<uint64_t>(B) * static_cast<uint64_t>(K); }

    // V[idx[b, j], :] += lr * w[b, j] * delta[b, :], deterministically. Pointers are device
    // addresses (CUdeviceptr); `error` may be 0. Launches on `stream` (nullptr: the device's context
    // current on this thread) and returns without waiting.
    Status launch(void* stream, uint64_t V, int64_t rows, uint64_t idx, uint64_t w, uint64_t delta, float lr, int B, int K, int D,
                  uint64_t workspace, uint64_t error) const {
        if (B < 0 || K < 0 || static_cast<int64_t>(B) * K > INT32_MAX)
            return Error(SDM_ERROR_INVALID_ARGUMENT, "the deterministic write takes 0 to 2^31 - 1 positions (B * K); got B = " +
                                                         std::to_string(B) + ", K = " + std::to_string(K) +
                                                         ": split the batch into launches of fewer rows");
        int n = B * K;
        if (n == 0) return {};
        uint64_t a = workspace, b = workspace + sizeof(uint64_t) * static_cast<uint64_t>(n);
        auto plan = keys_.plan({n});
        if (!plan) return std::move(plan).error();
        if (auto s = keys_.launch(*plan, stream, {&idx, &rows, &n, &a, &error}); !s) return s;
        if (n > kTile) {
            plan = merge_.plan({n});
            if (!plan) return std::move(plan).error();
            for (int width = kTile; width < n; width *= 2) {
                if (auto s = merge_.launch(*plan, stream, {&a, &b, &n, &width}); !s) return s;
                std::swap(a, b);
                if (width > n / 2) break;  // the next width would overflow past n
            }
        }
        plan = apply_.plan({n, K, D});
        if (!plan) return std::move(plan).error();
        return apply_.launch(*plan, stream, {&V, &a, &n, &w, &delta, &lr, &K, &D});
    }

private:
    GroupedWrite(Kernel keys, Kernel merge, Kernel apply) : keys_(std::move(keys)), merge_(std::move(merge)), apply_(std::move(apply)) {}
    Kernel keys_, merge_, apply_;  // each owns its reference: a GroupedWrite is move-only, and goes before its Runtime
};

}  // namespace sdm

#endif  // SDM_SDM_KERNELS_HPP
