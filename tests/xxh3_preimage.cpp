#include "xxh3_preimage.hpp"

#include <algorithm>
#include <array>

namespace sdm::test {
namespace {

// XXH3's default secret, from the xxHash specification (doc/xxhash_spec.md, "Seed and Secret",
// there since 0.8.2; XXH3_kSecret in 0.8.x's xxhash.h). Pasted: libxxhash exports no symbol for
// it, and inlining all of xxHash for one table is not worth it.
constexpr uint8_t k_secret[192] = {
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
    0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
    0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
    0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
    0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
    0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
    0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
    0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
    0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
    0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
    0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
};

constexpr size_t stripe_len = 64;
constexpr size_t stripes_per_block = (sizeof(k_secret) - stripe_len) / 8;  // 16
constexpr size_t bridge_len = 2 * stripe_len;
constexpr unsigned choices = 1024;  // per lane pair; a few suffice unless most byte values are rejected

using Lanes = std::array<uint64_t, 8>;

uint64_t le64(const uint8_t* p) {
    uint64_t v = 0;
    for (int k = 7; k >= 0; --k) v = v << 8 | p[k];
    return v;
}

// The secret word that lane `lane` of stripe `stripe` meets: stripes advance 8 secret bytes each
// and start over with every block.
uint64_t key(size_t stripe, size_t lane) {
    return le64(k_secret + 8 * (stripe % stripes_per_block) + 8 * lane);
}

void scramble(Lanes& acc) {
    for (size_t i = 0; i < 8; ++i)
        acc[i] = (acc[i] ^ acc[i] >> 47 ^ le64(k_secret + sizeof(k_secret) - stripe_len + 8 * i)) * 0x9E3779B1u;
}

// XXH3's accumulators after stripes [0, n) of `data`. A block's scramble is applied as the next
// block begins, so the state after stripe n - 1 is never scrambled yet: the bridge is solved
// before its block's scramble, and that is where the victim's state must be taken.
Lanes accumulate(const uint8_t* data, size_t n) {
    Lanes acc{0xC2B2AE3Du, 0x9E3779B185EBCA87u, 0xC2B2AE3D27D4EB4Fu, 0x165667B19E3779F9u,
              0x85EBCA77C2B2AE63u, 0x85EBCA77u, 0x27D4EB2F165667C5u, 0x9E3779B1u};
    for (size_t s = 0; s < n; ++s) {
        if (s != 0 && s % stripes_per_block == 0) scramble(acc);
        for (size_t i = 0; i < 8; ++i) {
            const uint64_t word = le64(data + s * stripe_len + 8 * i), mixed = word ^ key(s, i);
            acc[i ^ 1] += word;
            acc[i] += (mixed & 0xffffffffu) * (mixed >> 32);
        }
    }
    return acc;
}

// Inverse of an odd u mod 2^32 by Newton's iteration (each step doubles the correct low bits).
uint32_t inverse(uint32_t u) {
    uint32_t x = u;
    for (int k = 0; k < 4; ++k) x *= 2 - u * x;
    return x;
}

// Bridge words w[stripe][lane] of lanes 2p and 2p + 1, for choice k. Each lane gets one word with
// lo32(word ^ key) == 0 (no product: it only adds itself to acc[lane^1]) and, in the other stripe,
// one with lo32 == u (product u * t, t its free high half, added to acc[lane]). Bits 0 and 1 of k
// say which stripe takes the zero product, k >> 2 picks u; k == 0 is u = 1, stripe 1 zero. The
// low halves of lane i's words being fixed, u * t[j] alone sets lo32(acc[j]); the zero word's
// free high half takes what is left of the 64-bit difference, carries included.
void solve_pair(const Lanes& from, const Lanes& to, size_t s, size_t p, unsigned k, uint64_t (&w)[2][8]) {
    const uint32_t u = static_cast<uint32_t>(k >> 2) * 0x9E3779B9u | 1;
    uint64_t t[2];
    for (size_t j = 2 * p; j < 2 * p + 2; ++j) {
        const size_t i = j ^ 1, zero = k >> (i & 1) & 1;
        t[j & 1] = static_cast<uint32_t>((to[j] - from[j] - key(s + zero, i) - (key(s + 1 - zero, i) ^ u)) * inverse(u));
    }
    for (size_t j = 2 * p; j < 2 * p + 2; ++j) {
        const size_t i = j ^ 1, zero = k >> (i & 1) & 1;
        w[1 - zero][i] = key(s + 1 - zero, i) ^ t[i & 1] << 32 ^ u;
        w[zero][i] = to[j] - from[j] - w[1 - zero][i] - uint64_t{u} * t[j & 1];
    }
}

}  // namespace

std::optional<std::vector<uint8_t>> xxh3_second_preimage(const std::vector<uint8_t>& victim,
                                                         const std::vector<uint8_t>& attacker,
                                                         size_t bridge_offset,
                                                         const std::function<bool(uint8_t)>& allowed) {
    const size_t len = victim.size(), s = bridge_offset / stripe_len;
    if (len <= 240 || bridge_offset % stripe_len != 0 || s % stripes_per_block == stripes_per_block - 1 ||
        bridge_offset + bridge_len + stripe_len > len || attacker.size() < bridge_offset)
        return std::nullopt;

    Lanes from = accumulate(attacker.data(), s);
    if (s != 0 && s % stripes_per_block == 0) scramble(from);  // the bridge opens a block
    const Lanes to = accumulate(victim.data(), s + 2);

    uint64_t w[2][8];
    const auto pair_allowed = [&](size_t p) {
        for (const uint64_t word : {w[0][2 * p], w[0][2 * p + 1], w[1][2 * p], w[1][2 * p + 1]})
            for (int b = 0; b < 8; ++b)
                if (!allowed(static_cast<uint8_t>(word >> 8 * b))) return false;
        return true;
    };
    for (size_t p = 0; p < 4; ++p) {
        for (unsigned k = 0;; ++k) {
            if (k == choices) return std::nullopt;
            solve_pair(from, to, s, p, k, w);
            if (!allowed || pair_allowed(p)) break;
        }
    }

    std::vector<uint8_t> out = victim;
    std::copy_n(attacker.begin(), bridge_offset, out.begin());
    for (size_t b = 0; b < bridge_len; ++b)
        out[bridge_offset + b] = static_cast<uint8_t>(w[b / stripe_len][b % stripe_len / 8] >> 8 * (b % 8));
    return out;
}

std::optional<std::vector<uint8_t>> xxh3_second_preimage_avoiding(const std::vector<uint8_t>& victim,
                                                                  std::vector<uint8_t> attacker,
                                                                  size_t bridge_offset, size_t vary_at,
                                                                  std::string_view forbidden) {
    if (vary_at >= bridge_offset || vary_at >= attacker.size()) return std::nullopt;
    const auto allowed = [forbidden](uint8_t c) { return forbidden.find(static_cast<char>(c)) == forbidden.npos; };
    const uint8_t first = attacker[vary_at];
    for (unsigned k = 0; k < 256; ++k) {
        attacker[vary_at] = static_cast<uint8_t>(first + k);
        if (!allowed(attacker[vary_at])) continue;
        if (auto out = xxh3_second_preimage(victim, attacker, bridge_offset, allowed)) return out;
    }
    return std::nullopt;
}

}  // namespace sdm::test
