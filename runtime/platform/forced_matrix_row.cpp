#include "forced_matrix_row.hpp"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <tuple>
#include <vector>

namespace sdm::runtime {
namespace {

std::mutex g_mutex;
std::vector<std::pair<uint64_t, ForcedMatrixRow>> g_stack;
uint64_t g_next_token = 1;
std::atomic<uint64_t> g_epoch{0};  // changes at every push and pop
std::atomic<bool> g_any{false};  // lets every device read skip the lock when no row is forced

}  // namespace

uint64_t push_forced_matrix_row(const ForcedMatrixRow& row) {
    std::lock_guard lock(g_mutex);
    const uint64_t token = g_next_token++;
    g_stack.emplace_back(token, row);
    g_epoch.fetch_add(1, std::memory_order_acq_rel);
    g_any.store(true, std::memory_order_release);
    return token;
}

Result<void> pop_forced_matrix_row(uint64_t token) {
    std::lock_guard lock(g_mutex);
    const auto it = std::find_if(g_stack.begin(), g_stack.end(), [&](const auto& e) { return e.first == token; });
    if (it == g_stack.end())
        return make_error(ErrorCode::invalid_argument, "forced row " + std::to_string(token) + " is not active (popped twice?)");
    const bool innermost = it + 1 == g_stack.end();
    g_stack.erase(it);
    g_epoch.fetch_add(1, std::memory_order_acq_rel);
    g_any.store(!g_stack.empty(), std::memory_order_release);
    if (!innermost)
        return make_error(ErrorCode::invalid_argument, "forced rows must nest: row " + std::to_string(token) +
                                                           " was popped while a row pushed after it was still active");
    return {};
}

bool forced_matrix_row_active() noexcept { return g_any.load(std::memory_order_acquire); }

uint64_t forced_matrix_row_epoch() noexcept { return g_epoch.load(std::memory_order_acquire); }

std::optional<ForcedMatrixRow> current_forced_matrix_row() {
    if (!g_any.load(std::memory_order_acquire)) return std::nullopt;
    std::lock_guard lock(g_mutex);
    if (g_stack.empty()) return std::nullopt;
    return g_stack.back().second;
}

}  // namespace sdm::runtime
