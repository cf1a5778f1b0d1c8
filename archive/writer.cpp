#include "writer.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>

#include <gsl/util>  // gsl::narrow_cast: a narrowing the limits below make safe (never one that throws)

#include "codec.hpp"
#include "hash.hpp"
#include "image.hpp"
#include "manifest.hpp"
#include "sdm_version.h"
#include "text.hpp"

namespace sdm::archive {
namespace {

constexpr const char* kDictionaryName = "sdm.dictionary";
// A reference must shrink an entry by this fraction of its plain zstd size to be worth the
// second decompression it costs the reader.
constexpr double kPrefixGain = 0.97;
constexpr size_t kSameNameCandidates = 8;
constexpr size_t kSameArchCandidates = 4;
constexpr size_t kMinDictionarySamples = 8;

auto input_key(const WriterInput& e) {
    return std::tuple(std::string_view(e.name), static_cast<uint8_t>(e.kind), e.sm, static_cast<uint8_t>(e.variant));
}

// Runs body(i) for i in [0, n) on `threads` threads; the calling thread takes part and reports
// progress. Each i is independent, so the result does not depend on scheduling.
template <typename Body>
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& tick, Body&& body) {
    std::atomic<size_t> next{0};
    const auto work = [&](bool report) {
        for (size_t i = next++; i < n; i = next++) {
            body(i);
            if (report && tick) tick(i);
        }
    };
    std::vector<std::thread> pool;
    const unsigned extra = std::min<unsigned>(threads > 0 ? threads - 1 : 0, static_cast<unsigned>(n));
    for (unsigned t = 0; t < extra; ++t) pool.emplace_back(work, false);
    work(true);
    for (auto& t : pool) t.join();
}

struct Choice {
    Codec codec{Codec::zstd};
    uint32_t ref{kNoRef};
    ByteVector stored;
};

}  // namespace

ArchiveWriter::ArchiveWriter(WriterOptions options) : options_(std::move(options)) {}

Result<void> ArchiveWriter::add(WriterInput input) {
    if (!valid_name(input.name, limits::max_long_name_length))  // past 256 bytes, the archive is written as format 1.1
        return make_error(ErrorCode::invalid_argument, "entry name '" + printable(input.name.substr(0, 64)) + "' " +
                                                           name_problem(input.name, limits::max_long_name_length) + " (" + kNameRules + ")");
    if (!is_known(input.kind) || input.kind == Kind::dictionary)
        return make_error(ErrorCode::invalid_argument, "entry " + input.name + ": kind cannot be added by hand");
    if (input.bytes.size() > limits::max_raw_entry)
        return make_error(ErrorCode::invalid_argument, "entry " + input.name + ": " + std::to_string(input.bytes.size()) +
                                                           " bytes exceed the per-entry limit of " + std::to_string(limits::max_raw_entry));
    const std::string what = std::string(kind_name(input.kind)) + " " + input.name +
                             (kind_has_arch(input.kind) ? ", " + target_name(input.kind, input.sm, input.variant) : std::string());
    if (kind_has_arch(input.kind)) {
        if (input.sm < 10 || input.sm > 999) return make_error(ErrorCode::invalid_argument, what + ": arch out of range");
        SDM_TRY_GET(info, check_declared_target(input.kind, input.sm, input.variant, input.bytes, what));
    } else {
        if (input.sm != 0 || input.variant != Variant::base)
            return make_error(ErrorCode::invalid_argument, what + ": a " + kind_name(input.kind) + " entry has no arch");
        if (input.kind == Kind::fatbin) {
            auto info = inspect_fatbin(input.bytes);
            if (!info) return make_error(info.error().code, what + ": " + info.error().message);
        }
    }
    if (input.kind == Kind::manifest) {
        if (input.bytes.size() > limits::max_manifest)
            return make_error(ErrorCode::invalid_argument, what + ": " + std::to_string(input.bytes.size()) + " bytes exceed the manifest limit of " +
                                                               std::to_string(limits::max_manifest));
        auto manifest = decode_manifest(input.bytes);
        if (!manifest) return make_error(manifest.error().code, what + ": " + manifest.error().message);
        for (const auto& other : inputs_)
            if (other.kind == Kind::manifest) return make_error(ErrorCode::invalid_argument, "an archive holds one manifest; " + what + " is a second");
        options_.kernel_abi_major = manifest->kernel_abi_major;
        options_.kernel_abi_minor = manifest->kernel_abi_minor;
    }
    for (const auto& other : inputs_)
        if (input_key(other) == input_key(input)) return make_error(ErrorCode::invalid_argument, "duplicate entry: " + what);
    uint64_t total = input.bytes.size();
    for (const auto& other : inputs_) total += other.bytes.size();
    if (total > limits::max_raw_total)
        return make_error(ErrorCode::invalid_argument, what + ": the entries add up to " + std::to_string(total) +
                                                           " bytes, past the archive limit of " + std::to_string(limits::max_raw_total));
    if (inputs_.size() + 2 > limits::max_entries)
        return make_error(ErrorCode::invalid_argument, "more than " + std::to_string(limits::max_entries - 1) + " entries");
    inputs_.push_back(std::move(input));
    return {};
}

Result<ByteVector> ArchiveWriter::finish(WriterReport* report) {
    std::vector<WriterInput> in = std::move(inputs_);
    inputs_.clear();
    std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) { return input_key(a) < input_key(b); });
    const size_t n = in.size();
    const unsigned threads = options_.threads ? options_.threads : std::max(1u, std::thread::hardware_concurrency());
    const int level = options_.level;
    std::vector<Choice> choice(n);
    std::vector<bool> pinned(n, false);   // stays plain: stored by request, or a prefix others use
    std::vector<bool> referrer(n, false); // codes against another entry: never a base itself
    const auto image_kind = [](Kind k) { return k == Kind::cubin || k == Kind::ptx || k == Kind::ltoir || k == Kind::fatbin; };

    // Work units: n plain compressions, then prefix trials, then dictionary trials.
    std::atomic<size_t> done{0};
    size_t total_work = n;
    const auto tick = [&](size_t) {
        if (options_.progress) options_.progress(done.load(), total_work);
    };

    std::atomic<bool> failed{false};
    Error first_error;
    std::mutex error_mutex;
    const auto record_error = [&](Error e) {
        std::lock_guard lock(error_mutex);
        if (!failed.exchange(true)) first_error = std::move(e);
    };

    // 1. Plain zstd for everything; stored where compression does not pay or was not asked for.
    parallel_for(n, threads, tick, [&](size_t i) {
        // The manifest is always stored: every mount reads it, and a stored one needs no
        // decompressor at all (a warm start's cheapest path).
        const bool store = !options_.compress || (options_.store_cubins && in[i].kind == Kind::cubin) || in[i].kind == Kind::manifest;
        if (!store) {
            auto c = zstd_compress(in[i].bytes, level, {Codec::zstd, {}});
            if (!c) return record_error(std::move(c).error());
            choice[i].stored = std::move(*c);
        }
        if (store || choice[i].stored.size() >= in[i].bytes.size()) {
            choice[i].codec = Codec::stored;
            choice[i].stored = in[i].bytes;
            pinned[i] = store;
        }
        ++done;
    });
    if (failed) return first_error;

    // 2. Prefix coding: each image against other images of the same kind, first those of the same
    // module (other archs: sm_86 beside sm_80), then those of the same arch (other modules). A base
    // stays plain (references go one step), so which images become bases matters most: the trials
    // that save most are taken first, and an image may reference one after it in the index.
    if (options_.prefix && options_.compress) {
        std::vector<std::vector<size_t>> candidates(n);
        for (size_t i = 0; i < n; ++i) {
            if (!image_kind(in[i].kind) || pinned[i] || choice[i].codec == Codec::stored) continue;
            std::vector<size_t> same_name, same_arch;
            for (size_t j = 0; j < n; ++j) {
                if (j == i || in[j].kind != in[i].kind) continue;
                if (in[j].name == in[i].name) same_name.push_back(j);
                else if (in[j].sm == in[i].sm && in[j].variant == in[i].variant) same_arch.push_back(j);
            }
            const auto closer = [&](size_t a, size_t b) {
                const auto da = std::max(in[a].bytes.size(), in[i].bytes.size()) - std::min(in[a].bytes.size(), in[i].bytes.size());
                const auto db = std::max(in[b].bytes.size(), in[i].bytes.size()) - std::min(in[b].bytes.size(), in[i].bytes.size());
                return std::tie(da, a) < std::tie(db, b);
            };
            std::sort(same_name.begin(), same_name.end(), closer);
            std::sort(same_arch.begin(), same_arch.end(), closer);
            same_name.resize(std::min(same_name.size(), kSameNameCandidates));
            same_arch.resize(std::min(same_arch.size(), kSameArchCandidates));
            candidates[i] = same_name;
            candidates[i].insert(candidates[i].end(), same_arch.begin(), same_arch.end());
        }
        std::vector<std::pair<size_t, size_t>> trials;  // (entry, candidate)
        for (size_t i = 0; i < n; ++i)
            for (size_t j : candidates[i]) trials.emplace_back(i, j);
        std::vector<ByteVector> trial_out(trials.size());
        total_work += trials.size();
        parallel_for(trials.size(), threads, tick, [&](size_t t) {
            const auto [i, j] = trials[t];
            auto c = zstd_compress(in[i].bytes, level, {Codec::zstd_prefix, in[j].bytes});
            if (!c) return record_error(std::move(c).error());
            trial_out[t] = std::move(*c);
            ++done;
        });
        if (failed) return first_error;
        // Largest saving first (ties: trial order, so the result is deterministic). An image that
        // references another can no longer be a base, and a base can no longer reference.
        std::vector<std::pair<size_t, size_t>> order;  // (bytes saved, trial)
        for (size_t t = 0; t < trials.size(); ++t) {
            const size_t plain = choice[trials[t].first].stored.size();
            if (static_cast<double>(trial_out[t].size()) < static_cast<double>(plain) * kPrefixGain)
                order.emplace_back(plain - trial_out[t].size(), t);
        }
        std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
        for (const auto& [saved, t] : order) {
            const auto [i, j] = trials[t];
            if (referrer[i] || pinned[i] || referrer[j]) continue;
            choice[i] = Choice{Codec::zstd_prefix, static_cast<uint32_t>(j), std::move(trial_out[t])};
            referrer[i] = true;
            pinned[j] = true;
        }
    }

    // 3. A trained dictionary over the entries still coded alone, kept only if the bytes it saves
    // exceed its own stored size (zstd dictionaries pay for many small, similar payloads).
    ByteVector dictionary, dictionary_stored;
    std::vector<size_t> dictionary_users;
    if (options_.dictionary && options_.compress) {
        std::vector<size_t> eligible;
        std::vector<Bytes> samples;
        size_t sample_bytes = 0;
        for (size_t i = 0; i < n; ++i)
            if (image_kind(in[i].kind) && !pinned[i] && !referrer[i] && choice[i].codec == Codec::zstd) {
                eligible.push_back(i);
                samples.emplace_back(in[i].bytes);
                sample_bytes += in[i].bytes.size();
            }
        if (eligible.size() >= kMinDictionarySamples) {
            dictionary = zstd_train_dictionary(samples, std::clamp<size_t>(sample_bytes / 50, 4096, 112 * 1024));
        }
        if (!dictionary.empty()) {
            std::vector<ByteVector> trial_out(eligible.size());
            total_work += eligible.size();
            parallel_for(eligible.size(), threads, tick, [&](size_t t) {
                auto c = zstd_compress(in[eligible[t]].bytes, level, {Codec::zstd_dict, dictionary});
                if (!c) return record_error(std::move(c).error());
                trial_out[t] = std::move(*c);
                ++done;
            });
            if (failed) return first_error;
            auto packed = zstd_compress(dictionary, level, {Codec::zstd, {}});
            if (!packed) return std::move(packed).error();
            dictionary_stored = packed->size() < dictionary.size() ? std::move(*packed) : dictionary;
            size_t gain = 0;
            for (size_t t = 0; t < eligible.size(); ++t)
                if (trial_out[t].size() < choice[eligible[t]].stored.size()) gain += choice[eligible[t]].stored.size() - trial_out[t].size();
            // The dictionary costs its stored bytes, a record, its name and its alignment (64 bytes when
            // compressed, which a dictionary of this size always is in practice).
            if (gain > dictionary_stored.size() + kRecordSize + 64 + std::strlen(kDictionaryName)) {
                for (size_t t = 0; t < eligible.size(); ++t)
                    if (trial_out[t].size() < choice[eligible[t]].stored.size()) {
                        choice[eligible[t]].codec = Codec::zstd_dict;
                        choice[eligible[t]].stored = std::move(trial_out[t]);
                        dictionary_users.push_back(eligible[t]);
                    }
            }
        }
    }
    if (!dictionary_users.empty()) {
        WriterInput d;
        d.name = kDictionaryName;
        d.kind = Kind::dictionary;
        d.bytes = dictionary;
        Choice c;
        c.codec = dictionary_stored.size() < dictionary.size() ? Codec::zstd : Codec::stored;
        c.stored = std::move(dictionary_stored);
        // Insert in sorted position and renumber references.
        const auto pos = static_cast<size_t>(std::lower_bound(in.begin(), in.end(), d, [](const auto& a, const auto& b) {
                                                 return input_key(a) < input_key(b);
                                             }) - in.begin());
        for (auto& ch : choice)
            if (ch.codec == Codec::zstd_prefix && ch.ref >= pos) ++ch.ref;
        for (size_t u : dictionary_users) choice[u].ref = static_cast<uint32_t>(pos);
        in.insert(in.begin() + static_cast<std::ptrdiff_t>(pos), std::move(d));
        choice.insert(choice.begin() + static_cast<std::ptrdiff_t>(pos), std::move(c));
    }
    const size_t count = in.size();
    if (options_.progress) options_.progress(total_work, total_work);

    // 4. Layout: header, index, strings, then payloads in index order.
    std::string strings;
    std::vector<uint32_t> name_offsets(count);
    for (size_t i = 0; i < count; ++i) {
        // Entries of one module share its name: store each distinct name once.
        if (i > 0 && in[i].name == in[i - 1].name) {
            name_offsets[i] = name_offsets[i - 1];
            continue;
        }
        name_offsets[i] = gsl::narrow_cast<uint32_t>(strings.size());  // checked against max_strings below
        strings += in[i].name;
        if (strings.size() > limits::max_strings)
            return make_error(ErrorCode::invalid_argument, "the entry names add up to more than " + std::to_string(limits::max_strings) +
                                                               " bytes, the string table's limit; use shorter module names");
    }
    // Format 1.1 only where an input needs it: a name past 256 bytes, or a manifest of minor 1.
    bool format11 = false;
    for (size_t i = 0; i < count; ++i) {
        format11 = format11 || in[i].name.size() > limits::max_name_length;
        if (in[i].kind == Kind::manifest && in[i].bytes.size() >= 8) format11 = format11 || load_u16(in[i].bytes, 6) >= 1;
    }
    const uint64_t index_offset = kHeaderSize;
    const uint64_t strings_offset = index_offset + uint64_t{count} * kRecordSize;
    const uint64_t payload_offset = align_up(strings_offset + strings.size(), kZstdAlignment);
    std::vector<uint64_t> offsets(count);
    uint64_t at = payload_offset;
    for (size_t i = 0; i < count; ++i) {
        at = align_up(at, choice[i].codec == Codec::stored ? kStoredAlignment : kZstdAlignment);
        offsets[i] = at;
        at += choice[i].stored.size();
    }
    ByteVector out;
    try {
        out.assign(at, std::byte{0});
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(at) + " bytes for the archive");
    }
    const std::span<std::byte> o(out);
    std::copy(kMagic.begin(), kMagic.end(), reinterpret_cast<uint8_t*>(out.data()));
    store_u16(o, header::format_major, kFormatMajor);
    store_u16(o, header::format_minor, format11 ? kFormatMinor11 : kFormatMinor);
    store_u64(o, header::required_features, format11 ? kFeatureFormat11 : 0);
    store_u32(o, header::header_size, kHeaderSize);
    store_u64(o, header::archive_size, at);
    store_u64(o, header::index_offset, index_offset);
    store_u32(o, header::index_count, gsl::narrow_cast<uint32_t>(count));  // add() keeps it <= max_entries
    store_u32(o, header::record_size, kRecordSize);
    store_u64(o, header::strings_offset, strings_offset);
    store_u64(o, header::strings_size, strings.size());
    store_u64(o, header::payload_offset, payload_offset);
    store_u16(o, header::kernel_abi_major, options_.kernel_abi_major);
    store_u16(o, header::kernel_abi_minor, options_.kernel_abi_minor);
    const std::string created_by = std::string("sdm ") + SDM_VERSION_STRING;
    std::memcpy(out.data() + header::created_by, created_by.data(), std::min<size_t>(created_by.size(), 15));
    for (size_t i = 0; i < count; ++i) {
        const std::span<std::byte> r = o.subspan(index_offset + i * kRecordSize, kRecordSize);
        store_u32(r, record::name_offset, name_offsets[i]);
        store_u16(r, record::name_length, gsl::narrow_cast<uint16_t>(in[i].name.size()));  // valid_name: <= 65535
        store_u8(r, record::kind, static_cast<uint8_t>(in[i].kind));
        store_u8(r, record::codec, static_cast<uint8_t>(choice[i].codec));
        store_u16(r, record::sm, in[i].sm);
        store_u8(r, record::variant, static_cast<uint8_t>(in[i].variant));
        store_u32(r, record::ref, choice[i].ref);
        store_u64(r, record::data_offset, offsets[i]);
        store_u64(r, record::stored_size, choice[i].stored.size());
        store_u64(r, record::raw_size, in[i].bytes.size());
        store_hash128(r, record::raw_hash, xxh3_128(in[i].bytes));
        store_u64(r, record::stored_hash, xxh3_64(choice[i].stored));
        std::copy(choice[i].stored.begin(), choice[i].stored.end(), out.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
    }
    std::memcpy(out.data() + strings_offset, strings.data(), strings.size());
    store_u64(o, header::meta_hash, xxh3_64(Bytes(out).subspan(index_offset, strings_offset + strings.size() - index_offset)));
    store_u64(o, header::header_hash, xxh3_64(Bytes(out).first(header::header_hash)));

    if (report != nullptr) {
        *report = WriterReport{};
        report->entries = count;
        report->archive_bytes = out.size();
        for (size_t i = 0; i < count; ++i) {
            if (in[i].kind != Kind::dictionary) report->raw_bytes += in[i].bytes.size();
            report->prefix_coded += choice[i].codec == Codec::zstd_prefix;
            report->dictionary_coded += choice[i].codec == Codec::zstd_dict;
            report->stored += choice[i].codec == Codec::stored;
            if (in[i].kind == Kind::dictionary) report->dictionary_bytes = choice[i].stored.size();
        }
    }
    return out;
}

}  // namespace sdm::archive
