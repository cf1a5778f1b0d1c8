// The `sdm` subcommands. Each returns the process exit status (0 success, 1 failure, 2 usage)
// and prints its own errors to stderr, naming the file or entry and the fix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "archive/format.hpp"
#include "packer.hpp"
#include "archive/writer.hpp"
#include "arch_option.hpp"
#include "progress.hpp"
#include "write_archive.hpp"

namespace sdm::tools {

struct PackOptions {
    WriteOptions write;
    std::vector<std::string> images;  // MODULE:TARGET=PATH (sm_90a, compute_80, lto_90, fatbin)
};
int run_pack(const PackOptions& options);

struct ImportOptions {
    WriteOptions write;
    std::vector<std::string> inputs;  // cubins, PTX, LTO-IR, fatbins, ELF host binaries, static archives
    std::vector<std::string> archs;   // keep only these cubin (sm_XY[a|f]) and LTO-IR (lto_XY) targets; empty: all
    std::vector<std::string> ptx;     // keep only these PTX targets (compute_XY[a|f]); empty: all
};
int run_import(const ImportOptions& options);

struct LsOptions {
    std::string archive;
    bool json{false};
    bool demangle{false};  // the kernels column shows C++ names demangled (the JSON has both)
    bool wide{false};      // every cell whole, on a terminal too
    size_t width{0};       // fit this many columns, terminal or not; 0: the terminal's (table.hpp listing_width)
    std::string kernel;    // only kernels whose listed or demangled name matches this fnmatch(3) glob; empty: all
    std::string module;    // only this module's kernels and entries; empty: all
    std::string self;      // as JitOptions::self
};
// With a filter, the entries listed are those of the modules of the kernels kept; exit 1 when
// the filters keep no kernel.
int run_ls(const LsOptions& options);
// trusted: public key files; given, each archive must also carry a valid signature by one of them
// and every payload must match its signed digest.
int run_verify(const std::vector<std::string>& archives, bool quiet, const std::vector<std::string>& trusted);

struct KeygenOptions {
    std::string output;     // NAME: writes NAME.key and NAME.pub; with public_of, the .pub file itself
    std::string public_of;  // a secret key whose public half to write
    bool force{false};
    bool quiet{false};
};
int run_keygen(const KeygenOptions& options);
struct SignOptions {
    std::string archive;
    std::string key;     // secret key file
    std::string output;  // empty: the archive itself, replaced atomically
    bool quiet{false};
};
int run_sign(const SignOptions& options);
// Writes files only inside `directory`, never following a link and never replacing a file it did
// not create, unless `force` (then regular files only).
int run_extract(const std::string& archive, const std::string& directory, const std::vector<std::string>& entries, bool raw_manifest,
                bool force);
int run_diff(const std::string& left, const std::string& right, bool json);

struct InfoOptions {
    bool json{false};
    std::vector<std::string> archives;  // mounted in order
    std::string driver;                 // empty: $SDM_CUDA_DRIVER, else libcuda.so.1
    std::string nvjitlink;              // empty: $SDM_NVJITLINK, then the search order
    std::string libsdm;                 // whose embedded archive to mount; empty: the libsdm.so.1 the loader finds
    std::string kernel;                 // only kernels whose name or demangled name matches this fnmatch(3) glob (kernel_filter.hpp), in the summary and per device; empty: all
    bool summary{false};                // the text: the summary alone (the JSON is whole either way)
    bool load{false};                   // load every module each device is served (sdm_preload) before the footprint
    std::string self;                   // this program's path, which runs the JIT helper as `sdm --jit-helper`
};
int run_info(const InfoOptions& options);

struct CacheCommand {
    std::string action;     // stats | prune | clear
    std::string directory;  // empty: $SDM_CACHE_DIR, then the default
    uint64_t max_bytes{0};  // prune target; 0: the cache's cap
    bool json{false};
};
int run_cache(const CacheCommand& command);

struct JitOptions {
    std::string input;
    std::string output;
    std::vector<std::string> archs;  // "90", "100a", ...
    std::string nvjitlink;
    unsigned threads{0};
    bool quiet{false};
    bool full{false};  // the original's entries too (an archive that replaces it), not an overlay
    std::string sign;  // a secret key: sign the output
    std::vector<std::string> trust;  // public keys: the input's signature must verify under one
    std::string self;  // this program's path, which runs the JIT helper as `sdm --jit-helper`
};
int run_jit(const JitOptions& options);

struct PlanOptions {
    std::string archive;
    std::string kernel;
    std::vector<std::string> problem;  // NAME=VALUE
    bool json{false};
};
int run_plan(const PlanOptions& options);

// The registry commands (docs/REGISTRY.md). REF: REGISTRY[:PORT]/REPOSITORY[:TAG][@sha256:DIGEST].
struct PushOptions {
    std::string archive;
    std::string reference;      // with a tag
    std::string subject;        // sha256:... of a manifest in the same repository this artifact refers to (an overlay's base)
    bool image{false};          // sdm's image variant (an OCI image for a pod's image volume) instead of the artifact
    bool per_target{false};     // also a part per GPU target and an index of them at the tag (archive_parts.hpp)
    std::string sign;           // --per-target: the secret key that signed the archive, to sign its parts with
    bool plain_http{false};
    std::string docker_config;  // empty: $DOCKER_CONFIG/config.json, else ~/.docker/config.json
    long stall_timeout_s{30};   // an answer that sends nothing for this long is cut
};
// Prints REGISTRY/REPOSITORY@DIGEST of the manifest stored (with --image, of the index; with --per-target: a line for the whole archive and each part, then the index's).
int run_push(const PushOptions& options);

struct PullOptions {
    std::string reference;
    std::string output;               // the file to install; empty: INTO/REPOSITORY-NAME.sdma
    std::string into;                 // a directory (empty: the current one)
    std::vector<std::string> trust;   // public keys; given, a signature by one of them is required; else $SDM_REQUIRE_SIGNED decides
    bool plain_http{false};
    std::string docker_config;
    long stall_timeout_s{30};
    bool quiet{false};
    bool locked{false};      // pull the digest the lock file records for the reference
    bool for_devices{false}; // also the overlays (referrers of the archive) holding a cubin for a GPU of this machine: pinned or signed ones only
    std::vector<std::string> overlays;  // --overlay: manifest digests of overlays pinned for --for-devices
    std::string driver;      // libcuda for --for-devices' device list; empty: $SDM_CUDA_DRIVER, else libcuda.so.1
    std::string lock_file{"sdm.lock"};
};
int run_pull(const PullOptions& options);

struct LockOptions {
    std::vector<std::string> references;  // each with a tag
    std::string lock_file{"sdm.lock"};    // updated atomically: other references' entries are kept
    bool overlays{false};                 // also pin the overlays each one's referrers index lists now
    bool plain_http{false};
    std::string docker_config;
    long stall_timeout_s{30};
    bool quiet{false};
};
int run_lock(const LockOptions& options);

}  // namespace sdm::tools
