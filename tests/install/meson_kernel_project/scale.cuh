// The Meson kernel project's header (tests/install/run.sh edits it and checks that the archive is
// rebuilt: the header dependencies nvcc reports through the depfile).
#pragma once
constexpr float kScaleOffset = 0.0f;
