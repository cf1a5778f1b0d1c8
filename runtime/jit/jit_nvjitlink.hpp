// nvJitLink, loaded with dlopen only when a JIT is needed: $SDM_NVJITLINK, then its sonames, then
// $CUDA_HOME/lib64 and /usr/local/cuda/lib64. It links PTX or LTO-IR for one SM into a cubin,
// with no GPU and no driver involved, and keeps its error log for the error message.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/bytes.hpp"
#include "archive/format.hpp"
#include "runtime/platform/platform.hpp"
#include "common/result.hpp"

namespace sdm::runtime {

struct JitInput {
    archive::Kind kind{archive::Kind::ptx};  // ptx or ltoir
    Bytes bytes;
    std::string name;                        // names the input in nvJitLink's log and in errors
};

struct JitOutput {
    ByteVector cubin;
    std::string info_log;
    double milliseconds{0};
};

// Where nvJitLink would be loaded from, found without loading it (dlopen of its 100 MB costs
// milliseconds, which a warm start must not pay): the file and its identity (real path, size,
// mtime), which keys the cache in place of the version.
struct NvJitLinkLocation {
    std::string file;
    std::string identity;
};
// `path` empty: $SDM_NVJITLINK, else its file names (platform::toolkit_library_names) in the
// loader's folders ($LD_LIBRARY_PATH's and the system's; on Windows the application's folder and
// System32), then in the toolkit's ($CUDA_PATH's and $CUDA_HOME's: lib64, or bin\x64 and bin on
// Windows; /usr/local/cuda/lib64). nullopt when no file is found there.
std::optional<NvJitLinkLocation> locate_nvjitlink(const std::string& path);

// Every option NvJitLink::link passes for an input of `kind` built for (sm, variant) with `extra`
// options: what its output is cached under, with the tool and the driver.
std::vector<std::string> nvjitlink_options(archive::Kind kind, uint16_t sm, archive::Variant variant, const std::vector<std::string>& extra);

class NvJitLink {
public:
    // `path` empty: the search order above. The error lists every place tried.
    static Result<NvJitLink> load(const std::string& path);

    unsigned major() const noexcept { return major_; }
    unsigned minor() const noexcept { return minor_; }
    std::string version() const { return std::to_string(major_) + "." + std::to_string(minor_); }
    const std::string& path() const noexcept { return library_.path(); }
    std::string file() const;  // the file the dynamic loader actually opened

    // Links `input` for sm_XY[a]: the options are -arch=sm_XY[a], -lto for LTO-IR, then `options`.
    // A failure is ErrorCode::jit with nvJitLink's result in Error::native and its log in Error::log.
    Result<JitOutput> link(const JitInput& input, uint16_t sm, archive::Variant variant, const std::vector<std::string>& options) const;

private:
    platform::Library library_;
    unsigned major_{0}, minor_{0};
    void* create_{nullptr};
    void* destroy_{nullptr};
    void* add_data_{nullptr};
    void* complete_{nullptr};
    void* cubin_size_{nullptr};
    void* cubin_{nullptr};
    void* error_log_size_{nullptr};
    void* error_log_{nullptr};
    void* info_log_size_{nullptr};
    void* info_log_{nullptr};
};

}  // namespace sdm::runtime
