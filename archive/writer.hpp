// Writing an archive. The writer checks every input (names, declared targets against the image
// bytes, one manifest, no duplicates), chooses a codec per entry by measuring, lays the entries
// out sorted, and returns the bytes. Output is deterministic: the same inputs and options give
// the same bytes on any machine and with any thread count.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "common/bytes.hpp"
#include "format.hpp"
#include "common/hash.hpp"
#include "common/result.hpp"

namespace sdm::archive {

struct WriterOptions {
    int level{19};              // zstd level for every compressed payload
    bool dictionary{true};      // add a trained zstd dictionary where it pays including its own size
    bool prefix{true};          // code an entry against a similar entry's raw bytes where it pays
    bool store_cubins{false};   // keep cubins uncompressed (page-aligned, mappable straight to the driver)
    bool compress{true};        // false: store every entry uncompressed
    // A cubin or fatbin whose zstd form saves fewer bytes than this is stored: the driver takes it
    // in place, and a load pays no decoder start and no decode for a few KiB of file (the tool's
    // default is kDefaultMinSaving).
    size_t min_saving{0};
    // An image of more raw bytes than this is coded in frames of about this size (format feature
    // kFeatureFrames: a reader decodes them on several cores, and a reader older than the feature
    // refuses the archive, naming the release to update to); 0: one frame per entry, the tool's
    // default too (measured on the H200, frames cost bytes and did not pay: bench/RESULTS.md,
    // "Frames").
    size_t frame_bytes{0};
    uint16_t kernel_abi_major{0}, kernel_abi_minor{0};
    // Format 1.2's header extension, written only when one is given: the archive's version (the
    // rollback check's: docs/SIGNING.md) and, for an overlay, the identity of its base (identity.hpp).
    std::optional<uint64_t> archive_version;
    std::optional<Hash128> base;
    std::optional<std::string> release_line;  // with a version: the line it belongs to (format::release_line_problem's grammar)
    unsigned threads{0};        // 0: one per hardware thread
    // What the threads' encoders and decode buffers may hold at once: a payload whose coding needs
    // more waits for others to finish (one that needs more than all of it runs alone). The output
    // does not depend on it.
    size_t work_memory{size_t{512} << 20};
    // Called as work units finish ("compress", "prefix trials", "prefix coding", "dictionary
    // trials": done <= total within the phase), from whichever worker thread finished one, possibly
    // from several at once: it must be thread-safe.
    std::function<void(const char* phase, size_t done, size_t total)> progress;
};

// Memory: finish() holds each input's raw bytes or its source, one chosen payload per entry, a
// trial's output only while it is its entry's best, the encoders and decode buffers of the
// payloads being coded (WriterOptions::work_memory, and one small encoder kept per thread),
// a dictionary's training sample (at most kDictionarySampleBytes) and the archive as it is laid out
// (each payload's buffer goes back as it is copied in).
// The tool's min_saving: a small module's decode (a decoder's first use in a fresh process is
// most of it) costs more of a warm start than 8 KiB of file costs on disk (the test kernels' 5.7 KB
// cubin compresses to 1.2 KB; every sm_90 cubin of cuFFT saves more than this).
constexpr size_t kDefaultMinSaving = 8192;
// The frame size `sdm jit` and per-target parts write where their input has frames (the size
// `--frame-size` most often takes; bench/RESULTS.md, "Frames").
constexpr size_t kDefaultFrameBytes = size_t{1} << 20;
constexpr size_t kDictionarySampleBytes = size_t{16} << 20;

// An entry's raw bytes, read each time the writer needs them instead of held for the whole write:
// an image decoded from the compressed form a fatbin stored it in (a library's images are several
// times their stored size). read() must give the same size()-byte answer every time.
class RawSource {
public:
    virtual ~RawSource() = default;
    virtual uint64_t size() const noexcept = 0;
    // The bytes: a view of memory the source keeps, or of `scratch` where it decodes them.
    virtual Result<Bytes> read(ByteVector& scratch) const = 0;
};

struct WriterInput {
    std::string name;
    Kind kind{Kind::cubin};
    uint16_t sm{0};
    Variant variant{Variant::base};
    ByteVector bytes;                          // the raw bytes, unless `source` gives them
    std::shared_ptr<const RawSource> source{};  // images only (never the manifest)

    uint64_t raw_size() const noexcept { return source ? source->size() : bytes.size(); }
    // The raw bytes: `bytes`, or the source's answer (checked against its size()).
    Result<Bytes> raw(ByteVector& scratch) const;
};

// Per-entry outcome, for `sdm pack` to report.
struct WriterReport {
    size_t raw_bytes{0};
    size_t archive_bytes{0};
    size_t entries{0};
    size_t prefix_coded{0};
    size_t dictionary_coded{0};
    size_t dictionary_bytes{0};  // 0: no dictionary was added
    size_t stored{0};
};

class ArchiveWriter {
public:
    explicit ArchiveWriter(WriterOptions options = {});
    // Checks the input now (name, target against its bytes, manifest decodes) so a bad one is
    // named before any compression work starts.
    Result<void> add(WriterInput input);
    Result<ByteVector> finish(WriterReport* report = nullptr);

private:
    WriterOptions options_;
    std::vector<WriterInput> inputs_;
    // What add() checks each input against, kept as it goes (a library's 20,000 images are not
    // compared pairwise): the entries' keys, their raw total, whether a manifest came.
    using Key = std::tuple<std::string, uint8_t, uint16_t, uint8_t>;
    std::set<Key> keys_;
    uint64_t raw_total_{0};
    bool has_manifest_{false};
};

}  // namespace sdm::archive
