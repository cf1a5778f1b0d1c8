// Second preimages for XXH3 (seed 0, default secret), so that tests can show that bytes which
// merely hash like the genuine ones are not taken for them: XXH3 is a checksum, not an identity.
//
// Above 240 bytes XXH3 folds each 64-byte stripe into 8 accumulators by additions only (lane i
// adds its word to acc[i^1] and lo32(word^key) * hi32(word^key) to acc[i]), scrambles each lane
// after every 1024-byte block, adds a last stripe over the final 64 bytes, and merges the
// accumulators with the length. Two stripes inside one block can take the accumulators from any
// state to any other, so a 128-byte bridge after the attacker's prefix reaches the victim's state;
// the victim's suffix and length then give the same XXH3-64 and XXH3-128 (same accumulators).
//
// Constraints on bridge_offset (b), with len = victim.size(); outside them the result is nullopt:
//  - len > 240: shorter inputs take XXH3's short and mid-size paths, which have no accumulators.
//  - b % 64 == 0: the bridge must be two whole stripes, each lane's word entirely free.
//  - b % 1024 != 960: both stripes in one block; a scramble between them would put a non-linear
//    map between the two stripes' terms, which this solution does not invert.
//  - b + 192 <= len: XXH3 rereads the last 64 bytes as a final stripe, so they must be the
//    victim's own. (This also keeps both bridge stripes inside the block loops.)
//  - attacker.size() >= b; attacker bytes from b on are ignored.
//
// Rejected bytes: lanes interact only within the pairs (0,1) (2,3) (4,5) (6,7), so a prefix byte
// reaches only its own pair's 32 bridge bytes, and varying one cannot clear the other pairs. Each
// pair is therefore searched here: the plain bridge (per lane one word with lo32(word^key) == 0,
// one with 1) when `allowed` is empty, else up to 1024 variants (which stripe takes the zero
// product; an odd u for the 1). A few rejected values are cleared at once. Fixed in every variant
// is the low half of a lane's zero-product word, the secret's own: a lane whose two key words
// (secret[8(n+i), +4) and secret[8(n+1+i), +4), n = b/64 % 16) both hold a rejected byte fails for
// any prefix. '\0' '\n' '\r' never do; rejecting all control bytes and DEL fails for n in 11..14.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

namespace sdm::test {

// A second preimage of `victim` for XXH3-64 and XXH3-128 at once (seed 0, default secret):
// bytes of victim.size() whose first bridge_offset bytes are `attacker`'s, then a 128-byte bridge
// computed here, then victim's own bytes from bridge_offset + 128 on. nullopt when bridge_offset
// breaks the constraints above, or when no bridge searched avoids the bytes `allowed` rejects (the
// caller may vary its prefix and try again; an empty `allowed` accepts all and searches nothing).
std::optional<std::vector<uint8_t>> xxh3_second_preimage(const std::vector<uint8_t>& victim,
                                                         const std::vector<uint8_t>& attacker,
                                                         size_t bridge_offset,
                                                         const std::function<bool(uint8_t)>& allowed = {});

// Tries attacker prefixes varied in the byte at `vary_at` (< bridge_offset), from its own value
// on and never to a forbidden one, until the bridge holds none of `forbidden`; nullopt once the
// byte's values are spent (at most 256 tries: one byte has no more, so a 4096 cap is never hit).
// Past the first, a try can only help the lane pair that vary_at falls in.
std::optional<std::vector<uint8_t>> xxh3_second_preimage_avoiding(const std::vector<uint8_t>& victim,
                                                                  std::vector<uint8_t> attacker,
                                                                  size_t bridge_offset, size_t vary_at,
                                                                  std::string_view forbidden);

}  // namespace sdm::test
