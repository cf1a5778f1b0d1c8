// Reading an archive: open validates the header, the index and the string table (limits, ranges,
// order, references, checksums) before anything is allocated for entries; reading an entry checks
// the XXH3-64 of its stored bytes before decompressing and the XXH3-128 of the raw bytes after.
// An Archive is immutable after open and safe to share across threads.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/bytes.hpp"
#include "common/digest.hpp"
#include "format.hpp"
#include "common/hash.hpp"
#include "manifest.hpp"
#include "common/result.hpp"
#include "signature_block.hpp"

namespace sdm::archive {

class FileMap;

struct Entry {
    std::string_view name;  // points into the archive bytes
    Kind kind{Kind::cubin};
    Codec codec{Codec::zstd};
    uint16_t sm{0};
    Variant variant{Variant::base};
    uint32_t ref{kNoRef};
    uint64_t data_offset{0};
    uint64_t stored_size{0};
    uint64_t raw_size{0};
    Hash128 raw_hash{};
    uint64_t stored_hash{0};

    std::string target() const { return target_name(kind, sm, variant); }  // sm_90a, compute_80, manifest
};

struct HeaderInfo {
    uint16_t format_major{0}, format_minor{0};
    uint32_t header_size{0}, record_size{0};
    uint64_t archive_size{0};
    uint64_t payload_offset{0};
    uint64_t required_features{0}, optional_features{0};
    uint16_t kernel_abi_major{0}, kernel_abi_minor{0};
    std::string created_by;
    std::optional<uint64_t> archive_version;  // format 1.2, kFeatureArchiveVersion; absent: unversioned (read as 0 by the rollback check)
    std::optional<Hash128> base;              // format 1.2, kFeatureBase: the identity of the archive this overlay was built from
    std::optional<std::string> release_line;  // format 1.2, kFeatureReleaseLine: the line its version belongs to (release_line_problem's grammar)
};

class Archive {
public:
    // Validates `bytes` and keeps a view of them; `keep_alive` (may be null) owns them. `label`
    // names the archive in every message ("embedded", a path).
    static Result<Archive> open_memory(Bytes bytes, std::string label, std::shared_ptr<const void> keep_alive = {});
    // Maps the file (or reads it where it cannot be mapped) and validates it.
    static Result<Archive> open_file(const std::string& path);

    const std::string& label() const noexcept { return label_; }
    const HeaderInfo& header() const noexcept { return header_; }
    const std::vector<Entry>& entries() const noexcept { return entries_; }
    Bytes bytes() const noexcept { return bytes_; }
    const FileMap* file() const noexcept { return file_.get(); }

    // Binary search of the sorted index.
    std::optional<size_t> find(std::string_view name, Kind kind, uint16_t sm, Variant variant) const;
    // The index range [first, last) of every entry named `name`.
    std::pair<size_t, size_t> find_name(std::string_view name) const;
    std::optional<size_t> find_manifest() const;
    // The decoded manifest: nullopt when the archive has none; an error naming the entry when it
    // does not decode. A stored manifest (what the writer makes) is decoded in place.
    Result<std::optional<Manifest>> read_manifest() const;

    // The verified raw bytes of entry `index` (a dictionary- or prefix-coded entry decodes its
    // reference first). Nothing is allocated before the stored checksum and the zstd frame header
    // have passed their checks. An entry of several frames (kFeatureFrames) decodes on up to
    // `threads` threads (0: codec.hpp's default_decode_threads(); a caller already running in
    // parallel with others passes 1).
    Result<ByteVector> read(size_t index, unsigned threads = 0) const;
    // read(), for an entry whose reference's raw bytes the caller already holds (decoded before
    // with read(ref)): bytes that are not the reference's fail the entry's checksum.
    Result<ByteVector> read_against(size_t index, Bytes reference, unsigned threads = 0) const;
    // Stored entries only: the verified raw bytes inside the archive, without a copy.
    Result<Bytes> view(size_t index) const;
    // Calls `visit` with every entry's verified raw bytes, each entry decoded exactly once: an
    // entry that others reference is decoded once and kept while they decode, so the work is
    // linear in the archive's size plus its raw bytes, and peak memory is the largest entry plus
    // its reference. The order is not index order (an entry's referrers follow it). The first
    // failure, the archive's or the visitor's, ends the walk and is returned.
    using Visitor = std::function<Result<void>(size_t index, Bytes raw)>;
    Result<void> for_each_entry(const Visitor& visit) const;
    // Reads and checks every entry (for_each_entry, passing each to `visit` when given), and that
    // every byte outside header, index, strings and payloads is zero padding. The first failure
    // is returned, naming the entry.
    Result<void> verify(const Visitor& visit = {}) const;
    // The signature block, when the header says there is one (its structure checked at open; what
    // it says is checked by check_signatures, signature.hpp).
    const std::optional<SignatureBlock>& signature_block() const noexcept { return signature_block_; }
    // From now on, every entry's stored bytes are checked against the digest the signature block
    // holds for them the first time they are read (decoded, copied or viewed), once per entry and
    // for every copy of this Archive; a mismatch is ErrorCode::archive_corrupt naming the entry.
    // For an archive whose signature was verified (the runtime's policy); needs a block.
    Result<void> enforce_digests();
    bool enforces_digests() const noexcept { return digest_checks_ != nullptr; }
    // What entry `index` holds, as a digest nobody can choose two images for: BLAKE2b-256 over a
    // domain string, its kind, codec and raw size, the BLAKE2b-256 of its stored bytes and, for a
    // dictionary- or prefix-coded entry, its reference's identity (which decides its raw bytes).
    // The stored bytes' digest is hashed here from the bytes, once per entry for every copy of this
    // Archive; under enforce_digests it is the signed digest, which every read checks the bytes
    // against. Never the XXH3 checksums the index declares: those catch corruption, not an
    // attacker (docs/CACHE.md). Thread-safe.
    crypto::Digest identity(size_t index) const;
    // "module gather, sm_90a (entry 3) of archive kernels.sdma" for messages.
    std::string describe(size_t index) const;

private:
    Archive() = default;
    Result<void> validate();
    // validate()'s phases, in the order it runs them; each counts on the ones before it.
    struct IndexLayout;
    Result<void> validate_header();
    Result<void> read_header_extension();
    Result<void> read_release_line();
    Result<IndexLayout> validate_index();
    Result<uint64_t> validate_records(const IndexLayout& index);  // where the last payload ends
    Result<void> validate_record(uint32_t index, Bytes record, const Entry& e) const;
    Result<void> validate_payload(uint32_t index, const Entry& e) const;
    Result<void> validate_manifest_size(uint32_t index, const Entry& e) const;
    Result<void> validate_references() const;
    Result<void> validate_payload_ranges() const;
    // An archive_corrupt error that names the archive.
    Error corrupt(const std::string& why) const;
    Result<void> check_stored(size_t index) const;
    // The raw bytes of entry `index`, whose reference (if it has one) decodes to `reference`.
    Result<ByteVector> decode(size_t index, Bytes reference, unsigned threads = 0) const;
    // A stored entry's bytes in place, both checksums checked.
    Result<Bytes> checked_view(size_t index) const;

    std::string label_;
    Bytes bytes_{};
    std::shared_ptr<const void> keep_alive_;
    std::shared_ptr<const FileMap> file_;
    HeaderInfo header_;
    std::vector<Entry> entries_;
    std::optional<SignatureBlock> signature_block_;
    struct DigestChecks;
    std::shared_ptr<DigestChecks> digest_checks_;
    struct Identities;
    std::shared_ptr<Identities> identities_;  // made at open, filled on first use
};

}  // namespace sdm::archive
