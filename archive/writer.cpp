#include "writer.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <thread>
#include <tuple>

#include <gsl/util>  // gsl::narrow_cast: a narrowing the limits below make safe (never one that throws)

#include "codec.hpp"
#include "common/hash.hpp"
#include "image.hpp"
#include "manifest.hpp"
#include "sdm_version.h"
#include "similarity.hpp"
#include "common/text.hpp"

namespace sdm::archive {
namespace {

constexpr const char* kDictionaryName = "sdm.dictionary";
// A reference must shrink an entry by this fraction of its plain zstd size to be worth the
// second decompression it costs the reader.
constexpr double kPrefixGain = 0.97;
// Prefix trials per entry: the entries whose sketches it shares most (any module, any arch), then
// the other targets of its own module nearest in size where those are not among them already.
constexpr size_t kSimilarCandidates = 6;
constexpr size_t kSameNameCandidates = 2;
constexpr size_t kMinDictionarySamples = 8;
// Every choice (stored or compressed, which prefix, whether a dictionary pays) is made on trial
// encodes at this level, an estimate about forty times cheaper than level 19 that ranks the same
// candidates; each entry is then coded once at the level asked for, with the codec chosen.
constexpr int kTrialLevel = 3;

auto input_key(const WriterInput& e) {
    return std::tuple(std::string_view(e.name), static_cast<uint8_t>(e.kind), e.sm, static_cast<uint8_t>(e.variant));
}

// Runs body(worker, i) for i in [0, n) on `threads` threads (worker < threads names the thread's
// encoder; the calling thread is worker 0), ticking after every unit on the thread that did it, so
// that progress counts every thread's work as it lands. Each i is independent, so the result does
// not depend on scheduling.
template <typename Body>
void parallel_for(size_t n, unsigned threads, const std::function<void(size_t)>& tick, Body&& body) {
    std::atomic<size_t> next{0};
    const auto work = [&](unsigned worker) {
        for (size_t i = next++; i < n; i = next++) {
            body(worker, i);
            if (tick) tick(i);
        }
    };
    std::vector<std::thread> pool;
    const unsigned extra = std::min<unsigned>(threads > 0 ? threads - 1 : 0, static_cast<unsigned>(n));
    for (unsigned t = 0; t < extra; ++t) pool.emplace_back(work, t + 1);
    work(0);
    for (auto& t : pool) t.join();
}

// Bytes of WriterOptions::work_memory: a task takes what it needs before it allocates, and waits
// while others hold it.
class Budget {
public:
    explicit Budget(size_t total) : total_(std::max<size_t>(total, 1)), free_(total_) {}
    class Taken {
    public:
        Taken(Budget& b, size_t n) : budget_(b), n_(n) {}
        ~Taken() { budget_.give(n_); }
        Taken(const Taken&) = delete;
        Taken& operator=(const Taken&) = delete;

    private:
        Budget& budget_;
        size_t n_;
    };
    // Waits until `want` (at most the whole budget) is free and holds it for the Taken's life.
    [[nodiscard]] Taken take(size_t want) {
        want = std::min(want, total_);
        std::unique_lock lock(mutex_);
        freed_.wait(lock, [&] { return free_ >= want; });
        free_ -= want;
        return Taken(*this, want);
    }

private:
    void give(size_t n) {
        {
            std::lock_guard lock(mutex_);
            free_ += n;
        }
        freed_.notify_all();
    }
    const size_t total_;
    size_t free_;
    std::mutex mutex_;
    std::condition_variable freed_;
};

// A decode buffer grown past what the encoder keeps goes back after its task.
void trim(ByteVector& scratch) {
    if (scratch.capacity() >= ZstdEncoder::kKeepBelow) ByteVector().swap(scratch);
}

struct Choice {
    Codec codec{Codec::zstd};
    uint32_t ref{kNoRef};
    ByteVector stored;
};

}  // namespace

Result<Bytes> WriterInput::raw(ByteVector& scratch) const {
    if (!source) return Bytes(bytes);
    SDM_TRY_GET(read, source->read(scratch));
    if (read->size() != source->size())
        return make_error(ErrorCode::io, "entry " + name + " (" + target_name(kind, sm, variant) + "): its input gave " + std::to_string(read->size()) +
                                             " bytes, not the " + std::to_string(source->size()) + " it had (did the input file change while sdm read it?)");
    return *read;
}

ArchiveWriter::ArchiveWriter(WriterOptions options) : options_(std::move(options)) {}

Result<void> ArchiveWriter::add(WriterInput input) {
    if (!valid_name(input.name, limits::max_long_name_length))  // past 256 bytes, the archive is written as format 1.1
        return make_error(ErrorCode::invalid_argument, "entry name '" + printable(input.name.substr(0, 64)) + "' " +
                                                           name_problem(input.name, limits::max_long_name_length) + " (" + kNameRules + ")");
    if (!is_known(input.kind) || input.kind == Kind::dictionary)
        return make_error(ErrorCode::invalid_argument, "entry " + input.name + ": kind cannot be added by hand");
    if (input.source && (!input.bytes.empty() || input.kind == Kind::manifest))
        return make_error(ErrorCode::invalid_argument, "entry " + input.name + ": a source stands for an image's bytes, not beside them or for a manifest");
    if (input.raw_size() > limits::max_raw_entry)
        return make_error(ErrorCode::invalid_argument, "entry " + input.name + ": " + std::to_string(input.raw_size()) +
                                                           " bytes exceed the per-entry limit of " + std::to_string(limits::max_raw_entry));
    const std::string what = std::string(kind_name(input.kind)) + " " + input.name +
                             (kind_has_arch(input.kind) ? ", " + target_name(input.kind, input.sm, input.variant) : std::string());
    ByteVector scratch;
    SDM_TRY_GET(bytes, input.raw(scratch));
    if (kind_has_arch(input.kind)) {
        if (input.sm < 10 || input.sm > 999) return make_error(ErrorCode::invalid_argument, what + ": arch out of range");
        SDM_TRY_GET(info, check_declared_target(input.kind, input.sm, input.variant, *bytes, what));
    } else {
        if (input.sm != 0 || input.variant != Variant::base)
            return make_error(ErrorCode::invalid_argument, what + ": a " + kind_name(input.kind) + " entry has no arch");
        if (input.kind == Kind::fatbin) {
            auto info = inspect_fatbin(*bytes);
            if (!info) return make_error(info.error().code, what + ": " + info.error().message);
        }
    }
    if (input.kind == Kind::manifest) {
        if (input.bytes.size() > limits::max_manifest)
            return make_error(ErrorCode::invalid_argument, what + ": " + std::to_string(input.bytes.size()) + " bytes exceed the manifest limit of " +
                                                               std::to_string(limits::max_manifest));
        auto manifest = decode_manifest(input.bytes);
        if (!manifest) return make_error(manifest.error().code, what + ": " + manifest.error().message);
        if (has_manifest_) return make_error(ErrorCode::invalid_argument, "an archive holds one manifest; " + what + " is a second");
        options_.kernel_abi_major = manifest->kernel_abi_major;
        options_.kernel_abi_minor = manifest->kernel_abi_minor;
    }
    if (keys_.count(Key(input.name, static_cast<uint8_t>(input.kind), input.sm, static_cast<uint8_t>(input.variant))))
        return make_error(ErrorCode::invalid_argument, "duplicate entry: " + what);
    const uint64_t total = raw_total_ + input.raw_size();
    if (total > limits::max_raw_total)
        return make_error(ErrorCode::invalid_argument, what + ": the entries add up to " + std::to_string(total) +
                                                           " bytes, past the archive limit of " + std::to_string(limits::max_raw_total));
    if (inputs_.size() + 2 > limits::max_entries)
        return make_error(ErrorCode::invalid_argument, "more than " + std::to_string(limits::max_entries - 1) + " entries");
    keys_.emplace(input.name, static_cast<uint8_t>(input.kind), input.sm, static_cast<uint8_t>(input.variant));
    raw_total_ = total;
    has_manifest_ = has_manifest_ || input.kind == Kind::manifest;
    inputs_.push_back(std::move(input));
    return {};
}

Result<ByteVector> ArchiveWriter::finish(WriterReport* report) {
    std::vector<WriterInput> in = std::move(inputs_);
    inputs_.clear();
    keys_.clear();
    raw_total_ = 0;
    has_manifest_ = false;
    std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) { return input_key(a) < input_key(b); });
    const size_t n = in.size();
    const unsigned threads = options_.threads ? options_.threads : std::max(1u, std::thread::hardware_concurrency());
    const int final_level = options_.level;
    const int level = std::min(final_level, kTrialLevel);  // the trials'
    const bool final_pass = final_level > level;            // the trials' outputs are not the archive's
    // Memory: the raw inputs, each entry's chosen payload, and one encoder per thread. A trial's
    // output is kept only while it is its entry's best; the rest are sized and dropped.
    std::vector<ZstdEncoder> encoders(threads);
    std::vector<ByteVector> scratch(threads), scratch2(threads);  // each worker's decode buffers
    std::vector<uint64_t> raw_size(n);
    std::vector<Hash128> raw_hash(n);
    for (size_t i = 0; i < n; ++i) raw_size[i] = in[i].raw_size();
    Budget budget(options_.work_memory);
    // What coding entry i against `reference` bytes holds: its encoder, and the decode buffers of
    // the entry and of a reference that comes from sources.
    const auto cost = [&](size_t i, uint64_t reference, bool reference_decoded, int at = 0) {
        return ZstdEncoder::memory(raw_size[i], reference, at ? at : level) + (in[i].source ? raw_size[i] : 0) + (reference_decoded ? reference : 0);
    };
    std::vector<Choice> choice(n);
    std::vector<bool> pinned(n, false);   // stays plain: stored by request, or a prefix others use
    std::vector<bool> referrer(n, false); // codes against another entry: never a base itself
    const auto image_kind = [](Kind k) { return k == Kind::cubin || k == Kind::ptx || k == Kind::ltoir || k == Kind::fatbin; };

    // Work units, counted per phase: n plain compressions, then the prefix trials of each entry, the
    // entries recoded against their prefix, and the dictionary trials. The phase changes only
    // between parallel_for calls, never while a worker reads it.
    const char* phase = "compress";
    std::atomic<size_t> done{0};
    size_t total_work = n;
    const auto tick = [&](size_t) {
        if (options_.progress) options_.progress(phase, done.load(), total_work);
    };
    const auto next_phase = [&](const char* name, size_t units) {
        phase = name;
        done = 0;
        total_work = units;
    };

    std::atomic<bool> failed{false};
    Error first_error;
    std::mutex error_mutex;
    const auto record_error = [&](Error e) {
        std::lock_guard lock(error_mutex);
        if (!failed.exchange(true)) first_error = std::move(e);
    };
    const auto copy_of = [](Bytes b) { return ByteVector(b.begin(), b.end()); };

    // 1. Plain zstd for everything; stored where compression does not pay or was not asked for.
    // Each entry's sketch is taken in the same pass, while its bytes are in cache.
    const bool prefix = options_.prefix && options_.compress;
    std::vector<Sketch> sketches(prefix ? n : 0);
    parallel_for(n, threads, tick, [&](unsigned w, size_t i) {
        // The manifest is always stored: every mount reads it, and a stored one needs no
        // decompressor at all (a warm start's cheapest path).
        const bool store = !options_.compress || (options_.store_cubins && in[i].kind == Kind::cubin) || in[i].kind == Kind::manifest;
        const auto held = budget.take(cost(i, 0, false));
        auto raw = in[i].raw(scratch[w]);
        if (!raw) return record_error(std::move(raw).error());
        raw_hash[i] = xxh3_128(*raw);
        if (!store) {
            auto c = encoders[w].compress(*raw, level, {Codec::zstd, {}});
            if (!c) return record_error(std::move(c).error());
            const bool loadable = in[i].kind == Kind::cubin || in[i].kind == Kind::fatbin;
            const size_t saving = loadable ? options_.min_saving : 1;
            if (c->size() + saving <= raw->size()) choice[i].stored = copy_of(*c);
        }
        if (store || choice[i].stored.empty()) {
            choice[i].codec = Codec::stored;
            pinned[i] = store;
        }
        if (prefix && image_kind(in[i].kind) && !store) sketches[i] = sketch_of(*raw);
        trim(scratch[w]);
        ++done;
    });
    if (failed) return first_error;

    // 2. Prefix coding: each image against the images most like it (by sketch: the same kernels
    // for another arch, a sibling instantiation in another module) and the nearest-sized other
    // targets of its own module. A base stays plain (references go one step), so which images
    // become bases matters most: the trials that save most are taken first, and an image may
    // reference one after it in the index.
    if (prefix) {
        std::vector<uint32_t> group(n);
        for (size_t i = 0; i < n; ++i) {
            const bool eligible = image_kind(in[i].kind) && !pinned[i] && choice[i].codec != Codec::stored;
            group[i] = eligible ? static_cast<uint32_t>(in[i].kind) : 0xffu;  // a group no eligible entry shares
            if (!eligible) sketches[i].bins.fill(Sketch::kEmptyBin);
        }
        std::vector<std::vector<size_t>> candidates = similar_items(sketches, group, kSimilarCandidates);
        for (size_t i = 0, first = 0; i < n; ++i) {
            if (i > 0 && in[i].name != in[i - 1].name) first = i;
            if (group[i] == 0xffu) {
                candidates[i].clear();
                continue;
            }
            std::vector<size_t> same_name;  // `in` is sorted by name: the module's entries are together
            for (size_t j = first; j < n && in[j].name == in[i].name; ++j)
                if (j != i && group[j] == group[i] && std::find(candidates[i].begin(), candidates[i].end(), j) == candidates[i].end())
                    same_name.push_back(j);
            const auto distance = [&](size_t a) {
                return std::max(raw_size[a], raw_size[i]) - std::min(raw_size[a], raw_size[i]);
            };
            std::sort(same_name.begin(), same_name.end(), [&](size_t a, size_t b) { return std::pair(distance(a), a) < std::pair(distance(b), b); });
            same_name.resize(std::min(same_name.size(), kSameNameCandidates));
            candidates[i].insert(candidates[i].end(), same_name.begin(), same_name.end());
        }
        std::vector<std::vector<size_t>> trial_size(n);  // per candidate of each entry
        std::vector<ByteVector> best_out(n);              // the entry's smallest trial output
        std::vector<size_t> best_of(n, SIZE_MAX);         // its index in candidates[i]
        next_phase("prefix trials", n);
        parallel_for(n, threads, tick, [&](unsigned w, size_t i) {
            if (candidates[i].empty()) return void(++done);
            uint64_t largest = 0;
            bool decoded = false;
            for (size_t j : candidates[i]) {
                largest = std::max(largest, raw_size[j]);
                decoded = decoded || in[j].source;
            }
            const auto held = budget.take(cost(i, largest, decoded));
            auto raw = in[i].raw(scratch[w]);
            if (!raw) return record_error(std::move(raw).error());
            for (size_t c = 0; c < candidates[i].size(); ++c) {
                auto base = in[candidates[i][c]].raw(scratch2[w]);
                if (!base) return record_error(std::move(base).error());
                auto out = encoders[w].compress(*raw, level, {Codec::zstd_prefix, *base});
                if (!out) return record_error(std::move(out).error());
                trial_size[i].push_back(out->size());
                if (best_of[i] == SIZE_MAX || out->size() < trial_size[i][best_of[i]]) {
                    best_of[i] = c;
                    best_out[i] = copy_of(*out);
                }
            }
            trim(scratch[w]);
            trim(scratch2[w]);
            ++done;
        });
        if (failed) return first_error;
        // Largest saving first (ties: entry, then candidate order, so the result is deterministic).
        // An image that references another can no longer be a base, and a base can no longer reference.
        struct Trial {
            size_t saved, entry, candidate;
        };
        std::vector<Trial> order;
        for (size_t i = 0; i < n; ++i)
            for (size_t c = 0; c < trial_size[i].size(); ++c) {
                const size_t plain = choice[i].stored.size();
                if (static_cast<double>(trial_size[i][c]) < static_cast<double>(plain) * kPrefixGain)
                    order.push_back({plain - trial_size[i][c], i, c});
            }
        std::sort(order.begin(), order.end(), [](const Trial& a, const Trial& b) {
            return std::tie(b.saved, a.entry, a.candidate) < std::tie(a.saved, b.entry, b.candidate);
        });
        std::vector<size_t> recode;  // took a trial whose output was not kept
        for (const Trial& t : order) {
            const size_t i = t.entry, j = candidates[i][t.candidate];
            if (referrer[i] || pinned[i] || referrer[j]) continue;
            choice[i].codec = Codec::zstd_prefix;
            choice[i].ref = static_cast<uint32_t>(j);
            if (t.candidate == best_of[i]) choice[i].stored = std::move(best_out[i]);
            else recode.push_back(i);
            referrer[i] = true;
            pinned[j] = true;
        }
        best_out.clear();
        best_out.shrink_to_fit();
        if (final_pass) recode.clear();  // coded once, at the final level, below
        next_phase("prefix coding", recode.size());
        parallel_for(recode.size(), threads, tick, [&](unsigned w, size_t r) {
            const size_t i = recode[r];
            const auto held = budget.take(cost(i, raw_size[choice[i].ref], in[choice[i].ref].source != nullptr));
            auto raw = in[i].raw(scratch[w]);
            if (!raw) return record_error(std::move(raw).error());
            auto base = in[choice[i].ref].raw(scratch2[w]);
            if (!base) return record_error(std::move(base).error());
            auto out = encoders[w].compress(*raw, level, {Codec::zstd_prefix, *base});
            if (!out) return record_error(std::move(out).error());
            choice[i].stored = copy_of(*out);
            trim(scratch[w]);
            trim(scratch2[w]);
            ++done;
        });
        if (failed) return first_error;
    }

    // 3. A trained dictionary over the entries still coded alone, kept only if the bytes it saves
    // exceed its own stored size (zstd dictionaries pay for many small, similar payloads).
    ByteVector dictionary, dictionary_stored;
    std::vector<size_t> dictionary_users;
    if (options_.dictionary && options_.compress) {
        std::vector<size_t> eligible;
        uint64_t sample_bytes = 0;
        for (size_t i = 0; i < n; ++i)
            if (image_kind(in[i].kind) && !pinned[i] && !referrer[i] && choice[i].codec == Codec::zstd) {
                eligible.push_back(i);
                sample_bytes += raw_size[i];
            }
        if (eligible.size() >= kMinDictionarySamples) {
            // The training sample: each eligible entry's first bytes, an equal share of
            // kDictionarySampleBytes each (the whole entry where the entries fit).
            const size_t share = std::max<size_t>(kDictionarySampleBytes / eligible.size(), 1024);
            std::vector<ByteVector> sample_copies;
            std::vector<Bytes> samples;
            for (size_t i : eligible) {
                auto raw = in[i].raw(scratch[0]);
                if (!raw) return std::move(raw).error();
                sample_copies.emplace_back(raw->begin(), raw->begin() + static_cast<std::ptrdiff_t>(std::min(raw->size(), share)));
            }
            for (const auto& c : sample_copies) samples.emplace_back(c);
            dictionary = zstd_train_dictionary(samples, std::clamp<size_t>(static_cast<size_t>(sample_bytes / 50), 4096, 112 * 1024));
        }
        if (!dictionary.empty()) {
            std::vector<ByteVector> trial_out(eligible.size());  // kept only where smaller than the plain frame
            next_phase("dictionary trials", eligible.size());
            parallel_for(eligible.size(), threads, tick, [&](unsigned w, size_t t) {
                const auto held = budget.take(cost(eligible[t], dictionary.size(), false));
                auto raw = in[eligible[t]].raw(scratch[w]);
                if (!raw) return record_error(std::move(raw).error());
                auto c = encoders[w].compress(*raw, level, {Codec::zstd_dict, dictionary});
                if (!c) return record_error(std::move(c).error());
                if (c->size() < choice[eligible[t]].stored.size()) trial_out[t] = copy_of(*c);
                trim(scratch[w]);
                ++done;
            });
            if (failed) return first_error;
            auto packed = zstd_compress(dictionary, final_level, {Codec::zstd, {}});
            if (!packed) return std::move(packed).error();
            dictionary_stored = packed->size() < dictionary.size() ? std::move(*packed) : dictionary;
            size_t gain = 0;
            for (size_t t = 0; t < eligible.size(); ++t)
                if (!trial_out[t].empty()) gain += choice[eligible[t]].stored.size() - trial_out[t].size();
            // The dictionary costs its stored bytes, a record, its name and its alignment (64 bytes when
            // compressed, which a dictionary of this size always is in practice).
            if (gain > dictionary_stored.size() + kRecordSize + 64 + std::strlen(kDictionaryName)) {
                for (size_t t = 0; t < eligible.size(); ++t)
                    if (!trial_out[t].empty()) {
                        choice[eligible[t]].codec = Codec::zstd_dict;
                        choice[eligible[t]].stored = std::move(trial_out[t]);
                        dictionary_users.push_back(eligible[t]);
                    }
            }
        }
    }
    // 4. The archive's payloads: every compressed entry coded once at the level asked for, with the
    // codec and reference its trials chose, largest first so that no core waits on one long entry
    // at the end. A final frame larger than its trial's (zstd's levels do not promise an order)
    // keeps the trial's.
    if (final_pass) {
        std::vector<size_t> coded;
        for (size_t i = 0; i < n; ++i)
            if (choice[i].codec != Codec::stored) coded.push_back(i);
        std::stable_sort(coded.begin(), coded.end(), [&](size_t a, size_t b) { return raw_size[a] > raw_size[b]; });
        next_phase("coding", coded.size());
        parallel_for(coded.size(), threads, tick, [&](unsigned w, size_t r) {
            const size_t i = coded[r];
            const Choice& c = choice[i];
            const bool prefixed = c.codec == Codec::zstd_prefix;
            const uint64_t reference = prefixed ? raw_size[c.ref] : c.codec == Codec::zstd_dict ? dictionary.size() : 0;
            const auto held = budget.take(cost(i, reference, prefixed && in[c.ref].source != nullptr, final_level));
            auto raw = in[i].raw(scratch[w]);
            if (!raw) return record_error(std::move(raw).error());
            Result<Bytes> base = Bytes(dictionary);
            if (prefixed) base = in[c.ref].raw(scratch2[w]);
            if (!base) return record_error(std::move(base).error());
            auto out = encoders[w].compress(*raw, final_level, {c.codec, c.codec == Codec::zstd ? Bytes() : *base});
            if (!out) return record_error(std::move(out).error());
            if (choice[i].stored.empty() || out->size() < choice[i].stored.size()) choice[i].stored = copy_of(*out);
            trim(scratch[w]);
            trim(scratch2[w]);
            ++done;
        });
        if (failed) return first_error;
    }
    encoders.clear();
    scratch2.clear();
    if (!dictionary_users.empty()) {
        WriterInput d;
        d.name = kDictionaryName;
        d.kind = Kind::dictionary;
        d.bytes = dictionary;
        Choice c;
        c.codec = dictionary_stored.size() < dictionary.size() ? Codec::zstd : Codec::stored;
        if (c.codec == Codec::zstd) c.stored = std::move(dictionary_stored);
        // Insert in sorted position and renumber references.
        const auto pos = static_cast<size_t>(std::lower_bound(in.begin(), in.end(), d, [](const auto& a, const auto& b) {
                                                 return input_key(a) < input_key(b);
                                             }) - in.begin());
        for (auto& ch : choice)
            if (ch.codec == Codec::zstd_prefix && ch.ref >= pos) ++ch.ref;
        for (size_t u : dictionary_users) choice[u].ref = static_cast<uint32_t>(pos);
        raw_size.insert(raw_size.begin() + static_cast<std::ptrdiff_t>(pos), d.bytes.size());
        raw_hash.insert(raw_hash.begin() + static_cast<std::ptrdiff_t>(pos), xxh3_128(d.bytes));
        in.insert(in.begin() + static_cast<std::ptrdiff_t>(pos), std::move(d));
        choice.insert(choice.begin() + static_cast<std::ptrdiff_t>(pos), std::move(c));
    }
    const size_t count = in.size();
    if (options_.progress) options_.progress(phase, total_work, total_work);
    // What each entry's payload is: its raw bytes when stored, else its frame.
    const auto payload = [&](size_t i) -> Result<Bytes> {
        if (choice[i].codec == Codec::stored) return in[i].raw(scratch[0]);
        return Bytes(choice[i].stored);
    };

    // 5. Layout: header, index, strings, then payloads in index order.
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
        at += choice[i].codec == Codec::stored ? raw_size[i] : choice[i].stored.size();
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
    WriterReport tally;
    tally.entries = count;
    tally.archive_bytes = out.size();
    for (size_t i = 0; i < count; ++i) {
        const std::span<std::byte> r = o.subspan(index_offset + i * kRecordSize, kRecordSize);
        SDM_TRY_GET(p, payload(i));
        if (offsets[i] + p->size() > out.size()) return make_error(ErrorCode::internal, "entry " + in[i].name + " grew while it was written");
        store_u32(r, record::name_offset, name_offsets[i]);
        store_u16(r, record::name_length, gsl::narrow_cast<uint16_t>(in[i].name.size()));  // valid_name: <= 65535
        store_u8(r, record::kind, static_cast<uint8_t>(in[i].kind));
        store_u8(r, record::codec, static_cast<uint8_t>(choice[i].codec));
        store_u16(r, record::sm, in[i].sm);
        store_u8(r, record::variant, static_cast<uint8_t>(in[i].variant));
        store_u32(r, record::ref, choice[i].ref);
        store_u64(r, record::data_offset, offsets[i]);
        store_u64(r, record::stored_size, p->size());
        store_u64(r, record::raw_size, raw_size[i]);
        store_hash128(r, record::raw_hash, raw_hash[i]);
        store_u64(r, record::stored_hash, xxh3_64(*p));
        std::copy(p->begin(), p->end(), out.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
        if (in[i].kind != Kind::dictionary) tally.raw_bytes += raw_size[i];
        tally.prefix_coded += choice[i].codec == Codec::zstd_prefix;
        tally.dictionary_coded += choice[i].codec == Codec::zstd_dict;
        tally.stored += choice[i].codec == Codec::stored;
        if (in[i].kind == Kind::dictionary) tally.dictionary_bytes = p->size();
        // Copied: its memory goes back now, so the archive and the inputs are not all held at once.
        // No later entry needs it (references were coded above).
        ByteVector().swap(choice[i].stored);
        ByteVector().swap(in[i].bytes);
        in[i].source.reset();
    }
    std::memcpy(out.data() + strings_offset, strings.data(), strings.size());
    store_u64(o, header::meta_hash, xxh3_64(Bytes(out).subspan(index_offset, strings_offset + strings.size() - index_offset)));
    store_u64(o, header::header_hash, xxh3_64(Bytes(out).first(header::header_hash)));

    if (report != nullptr) *report = tally;
    return out;
}

}  // namespace sdm::archive
