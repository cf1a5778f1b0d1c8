// The `sdm` subcommands. Each returns the process exit status (0 success, 1 failure, 2 usage)
// and prints its own errors to stderr, naming the file or entry and the fix.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "archive/format.hpp"
#include "packer.hpp"
#include "archive/writer.hpp"

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

// demangle: the kernels column shows C++ names demangled (the JSON has both).
int run_ls(const std::string& archive, bool json, bool demangle, const std::string& self);  // self: as JitOptions::self
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
// `bytes` (an archive) with a signature by the secret key in `secret_path` added.
Result<ByteVector> sign_bytes(Bytes bytes, const std::string& label, const std::string& secret_path);
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

// Finishes `writer`, reads the bytes back through the full verification, and only then replaces
// `output` atomically. Returns the archive's size; errors name the file.
// With `sign_key` (a secret key file), the archive is signed before it is written.
Result<size_t> write_verified_archive(archive::ArchiveWriter& writer, const std::string& output, archive::WriterReport* report,
                                      const std::string& sign_key = {});

// An --arch value as people write it: a bare SM ("90", "90a": of kind `bare`), or a target name
// ("sm_90", "sm_90a", "compute_90", "lto_90"); nullopt when it is neither.
std::optional<archive::Target> parse_arch_option(std::string_view text, archive::Kind bare);

// Progress on stderr, by phase ("sdm pack: compress [=====>    ] 12/40, 3.1/s, ~9 s left"): on a
// terminal one line redrawn at most ten times a second; elsewhere (a CI log) one line as each phase
// ends, with its count, time and rate. update() may be called from several threads at once.
class Progress {
public:
    Progress(std::string label, bool enabled);
    void update(const char* phase, size_t done, size_t total);
    void finish();

private:
    std::string label_;
    bool enabled_, terminal_;
    std::mutex mutex_;
    std::string phase_;
    std::chrono::steady_clock::time_point phase_start_{}, last_draw_{};
    size_t last_done_{0}, last_total_{0};
    bool drawn_{false};
    void end_phase();  // holds mutex_
};

}  // namespace sdm::tools
