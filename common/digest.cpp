#include "digest.hpp"

#include <sodium.h>

namespace sdm::crypto {
namespace {

// sodium_init is thread-safe and idempotent; once is enough. BLAKE2b itself needs none of what it
// sets up (it picks an implementation), so a failure there leaves the portable one in use.
void ready() noexcept {
    static const bool ok = sodium_init() >= 0;
    (void)ok;
}

}  // namespace

struct Blake2b::State {
    crypto_generichash_state state;
};

Blake2b::Blake2b() : state_(std::make_unique<State>()) {
    ready();
    crypto_generichash_init(&state_->state, nullptr, 0, std::tuple_size_v<Digest>);
}

Blake2b::Blake2b(const MacKey& key) : state_(std::make_unique<State>()) {
    ready();
    crypto_generichash_init(&state_->state, key.data(), key.size(), std::tuple_size_v<Mac>);
}

Blake2b::~Blake2b() { sodium_memzero(state_.get(), sizeof(State)); }

void Blake2b::update(Bytes data) noexcept {
    crypto_generichash_update(&state_->state, reinterpret_cast<const unsigned char*>(data.data()), data.size());
}

void Blake2b::update_u64(uint64_t value) noexcept {
    unsigned char b[8];
    for (int i = 0; i < 8; ++i) b[i] = static_cast<unsigned char>(value >> (8 * i));
    crypto_generichash_update(&state_->state, b, sizeof b);
}

void Blake2b::field(Bytes data) noexcept {
    update_u64(data.size());
    update(data);
}

Digest Blake2b::digest() noexcept {
    Digest d{};
    crypto_generichash_final(&state_->state, d.data(), d.size());
    return d;
}

Mac Blake2b::mac() noexcept {
    Mac m{};
    crypto_generichash_final(&state_->state, m.data(), m.size());
    return m;
}

Result<Digest> blake2b(Bytes data) {
    ready();
    Digest d{};
    crypto_generichash(d.data(), d.size(), reinterpret_cast<const unsigned char*>(data.data()), data.size(), nullptr, 0);
    return d;
}

Hash128 truncated(const Digest& d) noexcept {
    Hash128 h;
    for (int i = 0; i < 8; ++i) {
        h.high = (h.high << 8) | d[static_cast<size_t>(i)];
        h.low = (h.low << 8) | d[static_cast<size_t>(8 + i)];
    }
    return h;
}

std::string digest_hex(const Digest& d) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (const uint8_t b : d) {
        out.push_back(digits[b >> 4]);
        out.push_back(digits[b & 15]);
    }
    return out;
}

}  // namespace sdm::crypto
