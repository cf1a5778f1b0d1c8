// Writing an archive. The writer checks every input (names, declared targets against the image
// bytes, one manifest, no duplicates), chooses a codec per entry by measuring, lays the entries
// out sorted, and returns the bytes. Output is deterministic: the same inputs and options give
// the same bytes on any machine and with any thread count.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "bytes.hpp"
#include "format.hpp"
#include "result.hpp"

namespace sdm::archive {

struct WriterOptions {
    int level{19};              // zstd level for every compressed payload
    bool dictionary{true};      // add a trained zstd dictionary where it pays including its own size
    bool prefix{true};          // code an entry against a similar entry's raw bytes where it pays
    bool store_cubins{false};   // keep cubins uncompressed (page-aligned, mappable straight to the driver)
    bool compress{true};        // false: store every entry uncompressed
    uint16_t kernel_abi_major{0}, kernel_abi_minor{0};
    unsigned threads{0};        // 0: one per hardware thread
    // Called from the writing thread as entries finish compressing (done <= total).
    std::function<void(size_t done, size_t total)> progress;
};

struct WriterInput {
    std::string name;
    Kind kind{Kind::cubin};
    uint16_t sm{0};
    Variant variant{Variant::base};
    ByteVector bytes;
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
};

}  // namespace sdm::archive
