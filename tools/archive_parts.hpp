// An archive's per-target parts (docs/REGISTRY.md, "Per-target pulls"): for one GPU target sm_XY,
// an archive holding every image a device of capability X.Y could be served from (runtime's
// can_serve: the same major's cubins of minor <= Y, sm_XYa, the family's f cubins, PTX and LTO-IR
// not newer than XY, fatbins), the manifest (less the kernels of modules it holds no image of) and
// the input's kernel ABI, archive version and base identity. `sdm push --per-target` writes them;
// `sdm pull` checks a part it downloaded against the target its index names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "archive/archive.hpp"
#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::tools {

// "sm_90" for 90; a part's target is always a base-variant cubin target.
std::string part_target_name(uint16_t sm);
// 90 for "sm_90"; nullopt for anything else (compute_90, sm_90a, a typo).
std::optional<uint16_t> parse_part_target(std::string_view text) noexcept;

// The targets `archive` gets a part for, ascending: the sm_XY of each of its cubins, PTX and
// LTO-IR images (sm_90a and sm_100f give sm_90 and sm_100; compute_80 gives sm_80). A GPU of
// another capability (sm_87) pulls the whole archive.
std::vector<uint16_t> part_targets(const archive::Archive& archive);

// The part of `whole` for sm_XY (`sm`), its bytes read back through `sdm verify`'s checks and
// signed by the secret key file `sign_key` when one is given. `whole` must verify (its digests
// enforced when it is signed) before parts are made of it.
Result<ByteVector> write_part(const archive::Archive& whole, uint16_t sm, const std::string& sign_key);

// Whether a downloaded part holds only images that can serve sm_XY, and at least one: else an
// error naming the first image that cannot, the target its index named, and that the part is refused.
Result<void> check_part(const archive::Archive& part, uint16_t sm);

}  // namespace sdm::tools
