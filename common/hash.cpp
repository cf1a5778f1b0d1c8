#include "hash.hpp"

#include <new>

#include <xxhash.h>

namespace sdm {

std::string hex(uint64_t value, int digits) {
    static constexpr char kDigits[] = "0123456789abcdef";
    std::string out(static_cast<size_t>(digits), '0');
    for (int i = digits - 1; i >= 0 && value != 0; --i, value >>= 4) out[static_cast<size_t>(i)] = kDigits[value & 15];
    return out;
}

std::string Hash128::hex() const { return sdm::hex(high) + sdm::hex(low); }

uint64_t xxh3_64(Bytes data) noexcept { return XXH3_64bits(data.data(), data.size()); }

Hash128 xxh3_128(Bytes data) noexcept {
    const XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
    return {h.high64, h.low64};
}

Hash128 load_hash128(Bytes b, size_t at) { return {load_u64(b, at), load_u64(b, at + 8)}; }

void store_hash128(std::span<std::byte> b, size_t at, const Hash128& h) {
    store_u64(b, at, h.high);
    store_u64(b, at + 8, h.low);
}

Xxh3State::Xxh3State() : state_(XXH3_createState()) {
    if (state_ == nullptr) throw std::bad_alloc();
}
Xxh3State::~Xxh3State() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }

Hasher64::Hasher64() { XXH3_64bits_reset(static_cast<XXH3_state_t*>(state_)); }
void Hasher64::update(Bytes data) noexcept { XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size()); }
uint64_t Hasher64::digest() const noexcept { return XXH3_64bits_digest(static_cast<const XXH3_state_t*>(state_)); }

Hasher128::Hasher128() { XXH3_128bits_reset(static_cast<XXH3_state_t*>(state_)); }

void Hasher128::update(Bytes data) noexcept {
    XXH3_128bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
}

void Hasher128::field(Bytes data) noexcept {
    field(static_cast<uint64_t>(data.size()));
    update(data);
}

void Hasher128::field(uint64_t value) noexcept {
    std::array<std::byte, 8> le{};
    store_u64(le, 0, value);
    update(le);
}

Hash128 Hasher128::digest() const noexcept {
    const XXH128_hash_t h = XXH3_128bits_digest(static_cast<const XXH3_state_t*>(state_));
    return {h.high64, h.low64};
}

}  // namespace sdm
