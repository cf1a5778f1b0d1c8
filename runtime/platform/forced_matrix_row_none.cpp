// The shipped libsdm's forced hardware rows: none, ever. The test-only rows (forced_matrix_row.cpp)
// are linked only into libsdm_testing and the tests' own binaries: an installed libsdm has no
// entry point that could make a device report another row (which would let PTX of an older arch
// pass the image policy).
#include "forced_matrix_row.hpp"

namespace sdm::runtime {

std::optional<ForcedMatrixRow> current_forced_matrix_row() { return std::nullopt; }
bool forced_matrix_row_active() noexcept { return false; }
uint64_t forced_matrix_row_epoch() noexcept { return 0; }

}  // namespace sdm::runtime
