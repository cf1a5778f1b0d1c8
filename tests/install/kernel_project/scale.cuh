// The kernel project's header (tests/install/run.sh edits it and checks that sdm_add_archive's
// archive is rebuilt: the header dependencies nvcc reports).
#pragma once
constexpr float kScaleOffset = 0.0f;
