#include "archive.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <tuple>

#include "codec.hpp"
#include "file_map.hpp"
#include "sdm_version.h"
#include "common/text.hpp"

namespace sdm::archive {
namespace {

#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
// A fuzzer cannot forge checksums; skipping them lets it reach the structure checks behind them.
constexpr bool kCheckHashes = false;
#else
constexpr bool kCheckHashes = true;
#endif

// A name for a message: escaped, and cut short (a hostile name may be 65535 bytes).
std::string quoted_name(std::string_view name) {
    constexpr size_t kShown = 64;
    return printable(name.substr(0, kShown)) + (name.size() > kShown ? "..." : "");
}

auto entry_key(const Entry& e) { return std::tuple(e.name, static_cast<uint8_t>(e.kind), e.sm, static_cast<uint8_t>(e.variant)); }
auto tail_key(const Entry& e) { return std::tuple(static_cast<uint8_t>(e.kind), e.sm, static_cast<uint8_t>(e.variant)); }

// "entry 3 (name)" for a message; built only on failure: formatting it for every record cost most
// of the open time.
std::string entry_text(size_t index, const Entry& e) { return "entry " + std::to_string(index) + " (" + std::string(e.name) + ")"; }

// A record's fields but for its name.
void read_record(Bytes r, Entry& e) {
    e.kind = static_cast<Kind>(load_u8(r, record::kind));
    e.codec = static_cast<Codec>(load_u8(r, record::codec));
    e.sm = load_u16(r, record::sm);
    e.variant = static_cast<Variant>(load_u8(r, record::variant));
    e.ref = load_u32(r, record::ref);
    e.data_offset = load_u64(r, record::data_offset);
    e.stored_size = load_u64(r, record::stored_size);
    e.raw_size = load_u64(r, record::raw_size);
    e.raw_hash = load_hash128(r, record::raw_hash);
    e.stored_hash = load_u64(r, record::stored_hash);
}

}  // namespace

// One flag per entry: its digest was checked (shared by the copies of an Archive).
struct Archive::DigestChecks {
    explicit DigestChecks(size_t n) : checked(std::make_unique<std::atomic<bool>[]>(n)) {}
    std::unique_ptr<std::atomic<bool>[]> checked;
};

// One digest per entry, computed at first use (a mount allocates nothing per entry); and one flag
// per entry, set once its stored bytes passed their checksum (each is hashed once, by whichever
// thread reads it first: a load, or a worker checking it ahead of one).
struct Archive::Identities {
    std::once_flag made;
    std::unique_ptr<std::once_flag[]> once;
    std::unique_ptr<crypto::Digest[]> digest;
    std::once_flag checks_made;
    std::unique_ptr<std::atomic<bool>[]> stored_checked;
};

crypto::Digest Archive::identity(size_t index) const {
    Identities& ids = *identities_;
    std::call_once(ids.made, [&] {
        ids.once = std::make_unique<std::once_flag[]>(entries_.size());
        ids.digest = std::make_unique<crypto::Digest[]>(entries_.size());
    });
    std::call_once(ids.once[index], [&] {
        const Entry& e = entries_[index];
        crypto::Digest stored{};
        if (digest_checks_) {
            const Bytes d = signature_block_->digest(index);
            std::memcpy(stored.data(), d.data(), stored.size());
        } else {
            stored = *crypto::blake2b(bytes_.subspan(e.data_offset, e.stored_size));
        }
        crypto::Blake2b h;
        h.field(std::string_view("sdm entry identity 1"));
        h.update_u64(static_cast<uint64_t>(e.kind));
        h.update_u64(static_cast<uint64_t>(e.codec));
        h.update_u64(e.raw_size);
        h.field(Bytes(reinterpret_cast<const std::byte*>(stored.data()), stored.size()));
        if (e.codec == Codec::zstd_dict || e.codec == Codec::zstd_prefix) {
            const crypto::Digest reference = identity(e.ref);  // one step: open() refuses chains
            h.field(Bytes(reinterpret_cast<const std::byte*>(reference.data()), reference.size()));
        }
        ids.digest[index] = h.digest();
    });
    return ids.digest[index];
}

Result<Archive> Archive::open_memory(Bytes bytes, std::string label, std::shared_ptr<const void> keep_alive) {
    Archive archive;
    archive.label_ = std::move(label);
    archive.bytes_ = bytes;
    archive.keep_alive_ = std::move(keep_alive);
    SDM_TRY(archive.validate());
    archive.identities_ = std::make_shared<Identities>();
    return archive;
}

Result<Archive> Archive::open_file(const std::string& path) {
    auto map = FileMap::open(path);
    if (!map) return make_error(map.error().code, "archive " + map.error().message);
    auto archive = open_memory((*map)->bytes(), path, *map);
    if (!archive) return archive;
    archive->file_ = std::move(*map);
    return archive;
}

// Where the index and the string table lie, as the header gives them.
struct Archive::IndexLayout {
    uint64_t index_offset{0};
    uint32_t count{0};
    uint64_t strings_offset{0}, strings_size{0};
};

Error Archive::corrupt(const std::string& why) const {
    return make_error(ErrorCode::archive_corrupt, "archive " + label_ + ": " + why);
}

// The checks run in the order of the bytes they read: the header, the index and string table, each
// record, then what only the whole index tells (references, the signature block, overlaps).
Result<void> Archive::validate() {
    SDM_TRY(validate_header());
    SDM_TRY_GET(index, validate_index());
    SDM_TRY_GET(payload_end, validate_records(*index));
    SDM_TRY(validate_references());
    // The signature block (optional_features bit 0) follows every payload; its structure is
    // checked here, what it says only when a policy asks (signature.hpp).
    if ((header_.optional_features & kFeatureSigned) != 0) {
        auto block = parse_signature_block(bytes_, index->count, *payload_end);
        if (!block) return make_error(block.error().code, "archive " + label_ + ": " + block.error().message);
        signature_block_ = std::move(*block);
    }
    return validate_payload_ranges();
}

// The magic, the format, the header's size and checksum, the archive's size, the features, and
// the fields of header_ that the index does not need.
Result<void> Archive::validate_header() {
    const Bytes b = bytes_;
    if (b.size() < kHeaderSize)
        return corrupt("only " + std::to_string(b.size()) + " bytes, shorter than the 128-byte header (truncated, or not an sdm archive)");
    if (!std::equal(kMagic.begin(), kMagic.end(), reinterpret_cast<const uint8_t*>(b.data()))) {
        // A cubin, or a shared library, executable or object holding fatbins: sdm import reads all of them.
        if (load_u8(b, 0) == 0x7f && load_u8(b, 1) == 'E')
            return corrupt("this is an ELF file (a cubin, or a library, executable or object with device code), not an sdm archive; make an "
                           "archive of its kernels with `sdm import " + label_ + " -o " + label_ + ".sdma`");
        if (std::equal(kMagic.begin() + 1, kMagic.begin() + 4, reinterpret_cast<const uint8_t*>(b.data()) + 1))
            return corrupt("the magic is damaged: the file went through a text-mode transfer (newline or 8-bit conversion); copy it in binary mode");
        return corrupt("no sdm archive magic at the start (not an sdm archive)");
    }
    HeaderInfo& h = header_;
    h.format_major = load_u16(b, header::format_major);
    h.format_minor = load_u16(b, header::format_minor);
    if (h.format_major != kFormatMajor)
        return make_error(ErrorCode::archive_unsupported, "archive " + label_ + ": format " + std::to_string(h.format_major) + "." +
                                                      std::to_string(h.format_minor) + " cannot be read by this sdm (it reads format " +
                                                      std::to_string(kFormatMajor) + ".x); use an sdm release that reads it, or repack the archive");
    h.header_size = load_u32(b, header::header_size);
    if (h.header_size < kHeaderSize || h.header_size > limits::max_header_size || h.header_size % 8 != 0)
        return corrupt("header size " + std::to_string(h.header_size) + " is not a multiple of 8 between 128 and 4096");
    if (h.header_size > b.size()) return corrupt("truncated inside the header");
    if (kCheckHashes && header_hash_of(b, h.header_size) != load_u64(b, header::header_hash))
        return corrupt("header checksum mismatch (the first " + std::to_string(h.header_size) + " bytes are damaged)");

    h.archive_size = load_u64(b, header::archive_size);
    if (h.archive_size > b.size())
        return corrupt("truncated: the header says " + std::to_string(h.archive_size) + " bytes, only " + std::to_string(b.size()) +
                       " are present; copy the file again");
    if (h.archive_size < b.size())
        return corrupt(std::to_string(b.size() - h.archive_size) + " bytes follow the end of the archive (" + std::to_string(h.archive_size) +
                       " bytes); the file was appended to or overwritten");
    h.required_features = load_u64(b, header::required_features);
    h.optional_features = load_u64(b, header::optional_features);
    if ((h.required_features & ~kKnownRequiredFeatures) != 0) {
        const auto text = as_text(b.subspan(header::created_by, 16));
        return make_error(ErrorCode::archive_unsupported, "archive " + label_ + ": needs format features 0x" +
                                                      hex(h.required_features & ~kKnownRequiredFeatures) + " that this sdm (" +
                                                      SDM_VERSION_STRING + ") does not know; it was written by " +
                                                      printable(text.substr(0, text.find('\0'))) + ": update sdm to that release or later");
    }
    // Reserved fields and bytes past the 1.0 header are zero in 1.0; a later minor may define them.
    if (h.format_minor == 0) {
        if (load_u32(b, header::flags) != 0 || load_u64(b, header::reserved) != 0) return corrupt("reserved header fields are not zero");
        for (size_t extra = kHeaderSize; extra < h.header_size; ++extra)
            if (load_u8(b, extra) != 0) return corrupt("bytes past the 1.0 header are not zero");
    }
    h.kernel_abi_major = load_u16(b, header::kernel_abi_major);
    h.kernel_abi_minor = load_u16(b, header::kernel_abi_minor);
    const auto text = as_text(b.subspan(header::created_by, 16));
    h.created_by = std::string(text.substr(0, text.find('\0')));
    return read_header_extension();
}

// Format 1.2's fields, where the optional bits say they are there.
Result<void> Archive::read_header_extension() {
    const Bytes b = bytes_;
    HeaderInfo& h = header_;
    const uint64_t used = h.optional_features & kHeaderExtensionFeatures;
    const bool extended = h.format_minor >= kFormatMinor12 && h.header_size >= kHeaderSize12;
    if (used == 0 && !extended) return {};
    if (!extended)
        return corrupt("optional features 0x" + hex(used) + " (archive version, overlay base, release line) need a format 1.2 header of at least " +
                       std::to_string(kHeaderSize12) + " bytes; this one is format 1." + std::to_string(h.format_minor) + " of " +
                       std::to_string(h.header_size) + " bytes");
    if ((used & kFeatureArchiveVersion) != 0) h.archive_version = load_u64(b, header::archive_version);
    else if (load_u64(b, header::archive_version) != 0) return corrupt("an archive version is stored but the feature bit 0x2 is not set");
    if ((used & kFeatureBase) != 0) h.base = load_hash128(b, header::base_identity);
    else if (load_hash128(b, header::base_identity) != Hash128{}) return corrupt("an overlay base is stored but the feature bit 0x4 is not set");
    return read_release_line();
}

// The release line (kFeatureReleaseLine), in a header long enough to hold it.
Result<void> Archive::read_release_line() {
    const Bytes b = bytes_;
    HeaderInfo& h = header_;
    const bool room = h.header_size >= kHeaderSizeLine;
    if ((h.optional_features & kFeatureReleaseLine) == 0) {
        if (room)
            for (size_t i = 0; i < header::release_line_size; ++i)
                if (load_u8(b, header::release_line + i) != 0) return corrupt("a release line is stored but the feature bit 0x8 is not set");
        return {};
    }
    if (!room)
        return corrupt("optional feature 0x8 (release line) needs a header of at least " + std::to_string(kHeaderSizeLine) + " bytes; this one has " +
                       std::to_string(h.header_size));
    const auto text = as_text(b.subspan(header::release_line, header::release_line_size));
    const std::string_view name = text.substr(0, text.find('\0'));
    if (text.find_first_not_of('\0', name.size()) != std::string_view::npos) return corrupt("the release line has bytes after its NUL padding");
    if (const auto why = release_line_problem(name); !why.empty()) return corrupt("the release line " + why);
    h.release_line = std::string(name);
    return {};
}

// Where the index, the string table and the payload region lie, and the checksum over the index
// and the names.
Result<Archive::IndexLayout> Archive::validate_index() {
    const Bytes b = bytes_;
    HeaderInfo& h = header_;
    IndexLayout t;
    t.index_offset = load_u64(b, header::index_offset);
    t.count = load_u32(b, header::index_count);
    h.record_size = load_u32(b, header::record_size);
    t.strings_offset = load_u64(b, header::strings_offset);
    t.strings_size = load_u64(b, header::strings_size);
    h.payload_offset = load_u64(b, header::payload_offset);
    if (t.index_offset != h.header_size) return corrupt("the index does not follow the header");
    if (t.count > limits::max_entries) return corrupt(std::to_string(t.count) + " entries exceed the limit of " + std::to_string(limits::max_entries));
    if (h.record_size < kRecordSize || h.record_size > limits::max_record_size || h.record_size % 8 != 0)
        return corrupt("index record size " + std::to_string(h.record_size) + " is not a multiple of 8 between 64 and 1024");
    const uint64_t index_bytes = uint64_t{t.count} * h.record_size;  // <= 2^16 * 2^10: no overflow
    if (t.strings_offset != t.index_offset + index_bytes) return corrupt("the string table does not follow the index");
    if (t.strings_size > limits::max_strings) return corrupt("string table of " + std::to_string(t.strings_size) + " bytes exceeds the limit");
    if (!in_bounds(t.strings_offset, t.strings_size, h.archive_size)) return corrupt("the string table runs past the end of the archive");
    const uint64_t meta_end = t.strings_offset + t.strings_size;
    if (h.payload_offset < meta_end || h.payload_offset > h.archive_size || h.payload_offset % kZstdAlignment != 0)
        return corrupt("payload region offset " + std::to_string(h.payload_offset) + " is misplaced");
    if (kCheckHashes && xxh3_64(b.subspan(t.index_offset, meta_end - t.index_offset)) != load_u64(b, header::meta_hash))
        return corrupt("index checksum mismatch (the entry table or names are damaged)");
    return t;
}

// Every record into entries_, each checked alone and against the one before it (the index is
// sorted); returns where the last payload ends.
Result<uint64_t> Archive::validate_records(const IndexLayout& t) {
    const HeaderInfo& h = header_;
    const Bytes strings = bytes_.subspan(t.strings_offset, t.strings_size);
    const size_t max_name = (h.required_features & kFeatureFormat11) != 0 ? limits::max_long_name_length : limits::max_name_length;
    entries_.reserve(t.count);
    uint64_t total_raw = 0;
    size_t manifests = 0;
    uint32_t prev_name_offset = 0;
    uint16_t prev_name_length = 0;
    uint64_t payload_end = h.payload_offset;
    for (uint32_t i = 0; i < t.count; ++i) {
        const Bytes r = bytes_.subspan(t.index_offset + uint64_t{i} * h.record_size, h.record_size);
        const auto entry_fail = [&](const std::string& why) { return corrupt("entry " + std::to_string(i) + ": " + why); };
        Entry& e = entries_.emplace_back();  // filled in place: a failure discards the whole Archive
        const uint32_t name_offset = load_u32(r, record::name_offset);
        const uint16_t name_length = load_u16(r, record::name_length);
        if (!in_bounds(name_offset, name_length, strings.size())) return entry_fail("name outside the string table");
        e.name = as_text(strings.subspan(name_offset, name_length));
        const bool same_name = i > 0 && name_offset == prev_name_offset && name_length == prev_name_length;
        if (!same_name && !valid_name(e.name, max_name))
            return entry_fail("name '" + quoted_name(e.name) + "' " + name_problem(e.name, max_name) + " (" + kNameRules + ")");
        prev_name_offset = name_offset;
        prev_name_length = name_length;
        read_record(r, e);
        SDM_TRY(validate_record(i, r, e));
        total_raw += e.raw_size;
        if (total_raw > limits::max_raw_total) return corrupt("the entries' raw sizes add up past the limit of " + std::to_string(limits::max_raw_total));
        SDM_TRY(validate_payload(i, e));
        payload_end = std::max(payload_end, e.data_offset + e.stored_size);
        if (e.kind == Kind::manifest) {
            if (++manifests > 1) return corrupt("more than one manifest entry");
            SDM_TRY(validate_manifest_size(i, e));
        }
        // Records of one module share one string-table name (the writer stores each name once):
        // its text was checked above, and only the rest of the key needs comparing.
        if (i > 0 && !(same_name ? tail_key(entries_[i - 1]) < tail_key(e) : entry_key(entries_[i - 1]) < entry_key(e)))
            return corrupt(entry_key(entries_[i - 1]) == entry_key(e) ? entry_text(i, e) + ": duplicate entry " + e.target()
                                                                      : entry_text(i, e) + ": the index is not sorted");
    }
    return payload_end;
}

// Record `i` alone: its reserved bytes, and whether its kind, codec, variant, arch and raw size
// are ones this sdm knows and allows.
Result<void> Archive::validate_record(uint32_t i, Bytes r, const Entry& e) const {
    if (header_.format_minor == 0) {
        const auto entry_fail = [&](const std::string& why) { return corrupt("entry " + std::to_string(i) + ": " + why); };
        if (load_u8(r, record::flags) != 0) return entry_fail("reserved flags are not zero");
        for (size_t extra = kRecordSize; extra < header_.record_size; ++extra)
            if (load_u8(r, extra) != 0) return entry_fail("bytes past the 1.0 record are not zero");
    }
    if (!is_known(e.kind))
        return make_error(ErrorCode::archive_unsupported, "archive " + label_ + ": " + entry_text(i, e) + " has kind " + std::to_string(static_cast<int>(e.kind)) +
                                                      ", unknown to this sdm; update sdm");
    if (!is_known(e.codec))
        return make_error(ErrorCode::archive_unsupported, "archive " + label_ + ": " + entry_text(i, e) + " uses codec " +
                                                      std::to_string(static_cast<int>(e.codec)) + ", unknown to this sdm; update sdm");
    if (!is_known(e.variant)) return corrupt(entry_text(i, e) + ": variant " + std::to_string(static_cast<int>(e.variant)) + " is not base, a or f");
    if (kind_has_arch(e.kind) ? (e.sm < 10 || e.sm > 999) : (e.sm != 0 || e.variant != Variant::base))
        return corrupt(entry_text(i, e) + ": arch " + std::to_string(e.sm) + " does not fit kind " + kind_name(e.kind));
    if (e.raw_size > limits::max_raw_entry)
        return corrupt(entry_text(i, e) + ": raw size " + std::to_string(e.raw_size) + " exceeds the per-entry limit of " + std::to_string(limits::max_raw_entry));
    return {};
}

// Entry `i`'s payload: sizes its codec can give, its alignment, and its range inside the payload region.
Result<void> Archive::validate_payload(uint32_t i, const Entry& e) const {
    if (e.codec == Codec::stored) {
        if (e.stored_size != e.raw_size) return corrupt(entry_text(i, e) + ": a stored entry whose stored and raw sizes differ");
        if (e.data_offset % kStoredAlignment != 0) return corrupt(entry_text(i, e) + ": stored payload not aligned to 4096 bytes");
    } else {
        if (e.stored_size == 0) return corrupt(entry_text(i, e) + ": empty compressed payload");
        if (e.data_offset % kZstdAlignment != 0) return corrupt(entry_text(i, e) + ": compressed payload not aligned to 64 bytes");
        // A zstd frame cannot expand data by more than its block overhead.
        if (e.stored_size > e.raw_size + e.raw_size / 128 + 1024) return corrupt(entry_text(i, e) + ": stored size larger than any zstd frame of its raw size");
        // Nor can it expand more than zstd can: a 4-byte block (RLE) decodes to at most 128 KiB.
        if (e.raw_size / kMaxZstdExpansion > e.stored_size)
            return corrupt(entry_text(i, e) + ": raw size " + std::to_string(e.raw_size) + " cannot come out of a zstd frame of " +
                           std::to_string(e.stored_size) + " bytes (at most " + std::to_string(kMaxZstdExpansion) + " bytes per stored byte)");
    }
    if (e.data_offset < header_.payload_offset || !in_bounds(e.data_offset, e.stored_size, header_.archive_size))
        return corrupt(entry_text(i, e) + ": payload range [" + std::to_string(e.data_offset) + ", +" + std::to_string(e.stored_size) +
                       ") lies outside the payload region");
    return {};
}

Result<void> Archive::validate_manifest_size(uint32_t i, const Entry& e) const {
    if (e.raw_size > limits::max_manifest)
        return corrupt(entry_text(i, e) + ": a manifest of " + std::to_string(e.raw_size) + " bytes exceeds the limit of " + std::to_string(limits::max_manifest));
    if (e.codec != Codec::stored && e.raw_size > limits::max_compressed_manifest)
        return corrupt(entry_text(i, e) + ": a compressed manifest of " + std::to_string(e.raw_size) + " bytes exceeds the limit of " +
                       std::to_string(limits::max_compressed_manifest) + " for a compressed one; store it (the sdm writer does)");
    return {};
}

// References: after all records are known.
Result<void> Archive::validate_references() const {
    for (size_t i = 0; i < entries_.size(); ++i) {
        const Entry& e = entries_[i];
        if (e.codec == Codec::zstd_dict || e.codec == Codec::zstd_prefix) {
            if (e.ref == i) return corrupt(entry_text(i, e) + ": references itself");
            if (e.ref >= entries_.size())
                return corrupt(entry_text(i, e) + ": references entry " + std::to_string(e.ref) + ", but the archive has " + std::to_string(entries_.size()) +
                               " entries");
            const Entry& r = entries_[e.ref];
            if (r.codec != Codec::stored && r.codec != Codec::zstd)
                return corrupt(entry_text(i, e) + ": references entry " + std::to_string(e.ref) + ", which itself references another (chains are limited to one step)");
            if ((e.codec == Codec::zstd_dict) != (r.kind == Kind::dictionary))
                return corrupt(entry_text(i, e) + ": " + codec_name(e.codec) + " references a " + kind_name(r.kind) + " entry");
        } else if (e.ref != kNoRef) {
            return corrupt(entry_text(i, e) + ": codec " + codec_name(e.codec) + " with a reference");
        }
    }
    return {};
}

// Payload ranges must not overlap. The writer lays payloads out in index order: check that in
// one pass, and sort only an archive laid out otherwise.
Result<void> Archive::validate_payload_ranges() const {
    bool in_order = true;
    for (size_t i = 1; i < entries_.size() && in_order; ++i)
        in_order = entries_[i - 1].data_offset + entries_[i - 1].stored_size <= entries_[i].data_offset;
    if (in_order) return {};
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    ranges.reserve(entries_.size());
    for (const Entry& e : entries_)
        if (e.stored_size > 0) ranges.emplace_back(e.data_offset, e.stored_size);
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i)
        if (ranges[i - 1].first + ranges[i - 1].second > ranges[i].first)
            return corrupt("payloads at offsets " + std::to_string(ranges[i - 1].first) + " and " + std::to_string(ranges[i].first) + " overlap");
    return {};
}

std::optional<size_t> Archive::find(std::string_view name, Kind kind, uint16_t sm, Variant variant) const {
    const auto key = std::tuple(name, static_cast<uint8_t>(kind), sm, static_cast<uint8_t>(variant));
    const auto it = std::lower_bound(entries_.begin(), entries_.end(), key,
                                     [](const Entry& e, const auto& k) { return entry_key(e) < k; });
    if (it == entries_.end() || entry_key(*it) != key) return std::nullopt;
    return static_cast<size_t>(it - entries_.begin());
}

std::pair<size_t, size_t> Archive::find_name(std::string_view name) const {
    const auto lo = std::lower_bound(entries_.begin(), entries_.end(), name, [](const Entry& e, std::string_view n) { return e.name < n; });
    const auto hi = std::upper_bound(lo, entries_.end(), name, [](std::string_view n, const Entry& e) { return n < e.name; });
    return {static_cast<size_t>(lo - entries_.begin()), static_cast<size_t>(hi - entries_.begin())};
}

std::optional<size_t> Archive::find_manifest() const {
    for (size_t i = 0; i < entries_.size(); ++i)
        if (entries_[i].kind == Kind::manifest) return i;
    return std::nullopt;
}

Result<std::optional<Manifest>> Archive::read_manifest() const {
    const auto index = find_manifest();
    if (!index) return std::optional<Manifest>();
    ByteVector copy;
    Bytes bytes;
    if (entries_[*index].codec == Codec::stored) {
        SDM_TRY_GET(v, view(*index));
        bytes = *v;
    } else {
        SDM_TRY_GET(raw, read(*index));
        copy = std::move(*raw);
        bytes = copy;
    }
    auto manifest = decode_manifest(bytes);
    if (!manifest) return make_error(manifest.error().code, describe(*index) + ": " + manifest.error().message);
    return std::optional<Manifest>(std::move(*manifest));
}

std::string Archive::describe(size_t index) const {
    const Entry& e = entries_.at(index);
    return std::string(kind_name(e.kind)) + " " + std::string(e.name) +
           (kind_has_arch(e.kind) ? ", " + e.target() : std::string()) + " (entry " + std::to_string(index) + ") of archive " + label_;
}

Result<void> Archive::enforce_digests() {
    if (!signature_block_) return make_error(ErrorCode::invalid_argument, "archive " + label_ + " is not signed: no digests to check its payloads against");
    if (!crypto::available()) return crypto::unsupported("checking the payloads of archive " + label_);
    if (!digest_checks_) digest_checks_ = std::make_shared<DigestChecks>(entries_.size());
    return {};
}

Result<void> Archive::check_stored(size_t index) const {
    const Entry& e = entries_[index];
    const Bytes stored = bytes_.subspan(e.data_offset, e.stored_size);
    Identities& ids = *identities_;
    std::call_once(ids.checks_made, [&] { ids.stored_checked = std::make_unique<std::atomic<bool>[]>(entries_.size()); });
    if (kCheckHashes && !ids.stored_checked[index].load(std::memory_order_acquire)) {
        if (xxh3_64(stored) != e.stored_hash)
            return make_error(ErrorCode::archive_corrupt, describe(index) + ": stored bytes fail their checksum (the payload is damaged)");
        ids.stored_checked[index].store(true, std::memory_order_release);
    }
    if (digest_checks_ && !digest_checks_->checked[index].load(std::memory_order_acquire)) {
        SDM_TRY_GET(digest, crypto::blake2b(stored));
        const Bytes signed_digest = signature_block_->digest(index);
        if (!crypto::equal(*digest, std::span(reinterpret_cast<const uint8_t*>(signed_digest.data()), signed_digest.size())))
            return make_error(ErrorCode::archive_corrupt, describe(index) + ": stored bytes do not match the BLAKE2b digest its signature covers "
                                                                            "(the payload was changed after the archive was signed); it is not loaded");
        digest_checks_->checked[index].store(true, std::memory_order_release);
    }
    return {};
}

Result<Bytes> Archive::checked_view(size_t index) const {
    const Entry& e = entries_[index];
    SDM_TRY(check_stored(index));
    const Bytes raw = bytes_.subspan(e.data_offset, e.stored_size);
    if (kCheckHashes && xxh3_128(raw) != e.raw_hash) return make_error(ErrorCode::archive_corrupt, describe(index) + ": bytes fail their checksum");
    return raw;
}

Result<ByteVector> Archive::decode(size_t index, Bytes reference, unsigned threads) const {
    const Entry& e = entries_[index];
    SDM_TRY(check_stored(index));
    const Bytes stored = bytes_.subspan(e.data_offset, e.stored_size);
    ByteVector out;
    if (e.codec == Codec::stored) {
        try {
            out.assign(stored.begin(), stored.end());
        } catch (const std::bad_alloc&) {
            return make_error(ErrorCode::out_of_memory, describe(index) + ": cannot allocate " + std::to_string(e.raw_size) + " bytes");
        }
    } else {
        // The frame headers are checked before anything is allocated, and memory then grows with
        // what the frames really decode to (codec.hpp). Several frames only with kFeatureFrames.
        auto decoded = (header_.required_features & kFeatureFrames) != 0
                           ? zstd_decompress_frames(stored, e.raw_size, {e.codec, reference}, describe(index), threads)
                           : zstd_decompress(stored, e.raw_size, {e.codec, reference}, describe(index));
        if (!decoded) return std::move(decoded).error();
        out = std::move(*decoded);
    }
    if (kCheckHashes && xxh3_128(out) != e.raw_hash)
        return make_error(ErrorCode::archive_corrupt, describe(index) + ": decompressed bytes fail their checksum");
    return out;
}

Result<ByteVector> Archive::read(size_t index, unsigned threads) const {
    if (index >= entries_.size()) return make_error(ErrorCode::not_found, "archive " + label_ + " has no entry " + std::to_string(index));
    const Entry& e = entries_[index];
    if (e.codec != Codec::zstd_dict && e.codec != Codec::zstd_prefix) return decode(index, {}, threads);
    // The reference is stored or plain zstd (open() allows one step only): in place, or decoded.
    if (entries_[e.ref].codec == Codec::stored) {
        SDM_TRY_GET(reference, checked_view(e.ref));
        return decode(index, *reference, threads);
    }
    SDM_TRY(check_stored(index));  // this entry's own damage is reported before its reference is decoded
    auto reference = decode(e.ref, {}, threads);
    if (!reference) return std::move(reference).error();
    return decode(index, *reference, threads);
}

Result<ByteVector> Archive::read_against(size_t index, Bytes reference, unsigned threads) const {
    if (index >= entries_.size()) return make_error(ErrorCode::not_found, "archive " + label_ + " has no entry " + std::to_string(index));
    const Entry& e = entries_[index];
    if (e.codec != Codec::zstd_dict && e.codec != Codec::zstd_prefix) return decode(index, {}, threads);
    if (reference.size() != entries_[e.ref].raw_size)
        return make_error(ErrorCode::internal, describe(index) + ": its reference was given as " + std::to_string(reference.size()) + " bytes, not " +
                                                   std::to_string(entries_[e.ref].raw_size));
    return decode(index, reference, threads);
}

Result<Bytes> Archive::view(size_t index) const {
    if (index >= entries_.size()) return make_error(ErrorCode::not_found, "archive " + label_ + " has no entry " + std::to_string(index));
    if (entries_[index].codec != Codec::stored) return make_error(ErrorCode::invalid_argument, describe(index) + " is compressed; read it instead");
    // A stored entry's raw bytes are its stored bytes: the stored checksum (and the signed digest)
    // covers what the driver gets, so a load hashes them once. The second checksum the writer
    // recorded over the same bytes is compared by sdm verify (checked_view, for_each_entry).
    SDM_TRY(check_stored(index));
    const Entry& e = entries_[index];
    return bytes_.subspan(e.data_offset, e.stored_size);
}

Result<void> Archive::for_each_entry(const Visitor& visit) const {
    const size_t n = entries_.size();
    // referrers[first[i] .. first[i+1]) are the entries that reference entry i, in index order.
    std::vector<uint32_t> first(n + 1, 0), referrers;
    const auto refers = [&](const Entry& e) { return e.codec == Codec::zstd_dict || e.codec == Codec::zstd_prefix; };
    for (const Entry& e : entries_)
        if (refers(e)) ++first[e.ref + 1];
    for (size_t i = 0; i < n; ++i) first[i + 1] += first[i];
    referrers.resize(first[n]);
    {
        std::vector<uint32_t> at(first.begin(), first.end() - 1);
        for (size_t i = 0; i < n; ++i)
            if (refers(entries_[i])) referrers[at[entries_[i].ref]++] = static_cast<uint32_t>(i);
    }
    for (size_t i = 0; i < n; ++i) {
        if (refers(entries_[i])) continue;  // decoded right after its reference
        ByteVector owned;
        Bytes raw;
        if (entries_[i].codec == Codec::stored) {
            SDM_TRY_GET(v, checked_view(i));
            raw = *v;
        } else {
            auto d = decode(i, {});
            if (!d) return std::move(d).error();
            owned = std::move(*d);
            raw = owned;
        }
        if (visit) SDM_TRY(visit(i, raw));
        for (uint32_t r = first[i]; r < first[i + 1]; ++r) {
            SDM_TRY_GET(d, decode(referrers[r], raw));
            if (visit) SDM_TRY(visit(referrers[r], *d));
        }
    }
    return {};
}

Result<void> Archive::verify(const Visitor& visit) const {
    SDM_TRY(for_each_entry(visit));
    // Every byte not covered by header, index, strings or a payload must be zero padding.
    std::vector<std::pair<uint64_t, uint64_t>> covered;
    covered.emplace_back(0, load_u64(bytes_, header::strings_offset) + load_u64(bytes_, header::strings_size));
    for (const Entry& e : entries_) covered.emplace_back(e.data_offset, e.stored_size);
    if (signature_block_) covered.emplace_back(signature_block_->offset, signature_block_->size);
    std::sort(covered.begin(), covered.end());
    uint64_t at = 0;
    covered.emplace_back(header_.archive_size, 0);
    for (const auto& [offset, size] : covered) {
        for (; at < offset; ++at)
            if (bytes_[at] != std::byte{0})
                return make_error(ErrorCode::archive_corrupt, "archive " + label_ + ": padding byte at offset " + std::to_string(at) + " is not zero");
        at = std::max(at, offset + size);
    }
    return {};
}

}  // namespace sdm::archive
