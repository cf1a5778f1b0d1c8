// Name expressions recorded at build time (issue 39; docs/FORMAT.md, tag 6): `sdm import` and
// `sdm pack` take the CUDA source a module was compiled from and the name expressions its hosts
// write ("fill<float, 256>", "ptr_param<size_t>", "enum_param<mylib::Tag::B>"), lower each with
// the toolkit's NVRTC (nvrtcAddNameExpression, nvrtcGetLoweredName) as CuPy does, and record
// expression -> symbol in the manifest, so that a host's lookup by the expression finds the
// kernel whatever typedefs, enumerators or default arguments it spells.
#pragma once

#include <string>
#include <vector>

#include "archive/manifest.hpp"
#include "common/result.hpp"

namespace sdm::tools {

struct NameExpressionOptions {
    std::vector<std::string> sources;      // MODULE=FILE.cu: the source module MODULE was compiled from
    std::vector<std::string> expressions;  // MODULE=EXPRESSION
    std::vector<std::string> nvrtc_options;  // as nvcc takes them: -std=c++17, -I DIR, -DNAME=VALUE
    bool empty() const noexcept { return sources.empty() && expressions.empty(); }
};

// Lowers every expression of `options` with NVRTC (libnvrtc.so.13 from $CUDA_HOME/lib64, else the
// loader's search path) and appends what it records to manifest.expressions. Each module with
// expressions needs its source; the source is a regular file of at most 64 MiB, each expression at
// most 4096 printable bytes. NVRTC's log is in the error of a compile that fails.
Result<void> lower_name_expressions(const NameExpressionOptions& options, archive::Manifest& manifest);

}  // namespace sdm::tools
