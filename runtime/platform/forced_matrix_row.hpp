// TEST ONLY: forced hardware rows (the seed's _device._force_row). While a row is pushed, every
// device reports its capability, opt-in shared memory, SM count and (when given) L2 size, so a test
// reproduces any row of the hardware matrix on any machine, the fake driver's or a real GPU.
// Process-wide, like the seed's; rows nest, and popping out of order is an error. Not part of the
// stable ABI: reached from C through tests/abi/sdm_testing.h only.
#pragma once

#include <cstdint>
#include <optional>
#include <tuple>

#include "common/hardware_matrix.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct ForcedMatrixRow {
    Capability capability;
    int32_t smem_optin_bytes{0};
    int32_t sm_count{0};
    std::optional<uint64_t> l2_bytes;
    bool operator==(const ForcedMatrixRow&) const = default;
    auto operator<=>(const ForcedMatrixRow& other) const {
        return std::tie(capability.major, capability.minor, smem_optin_bytes, sm_count, l2_bytes) <=>
               std::tie(other.capability.major, other.capability.minor, other.smem_optin_bytes, other.sm_count, other.l2_bytes);
    }
};

// Pushes a row; the token pops it.
uint64_t push_forced_matrix_row(const ForcedMatrixRow& row);
// Pops the row of `token`. A token that is not the innermost row is still removed, and the call
// reports the out-of-order exit as an error (as the seed raises after restoring the stack).
Result<void> pop_forced_matrix_row(uint64_t token);
// The innermost row, if any.
std::optional<ForcedMatrixRow> current_forced_matrix_row();
// Whether a row is pushed. The runtime's memos (device reads, image verdicts, plans) are neither read
// nor filled while one is, so no production memo key carries test-only state.
bool forced_matrix_row_active() noexcept;
// A number that changes whenever a row is pushed or popped: a result computed across a change is
// not memoized.
uint64_t forced_matrix_row_epoch() noexcept;

}  // namespace sdm::runtime
