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
    bool framed{false};  // several zstd frames (kFeatureFrames)
};

ByteVector copy_of(Bytes b) { return ByteVector(b.begin(), b.end()); }

bool image_kind(Kind k) { return k == Kind::cubin || k == Kind::ptx || k == Kind::ltoir || k == Kind::fatbin; }

// What finish() carries from phase to phase: the inputs in index order, each entry's size, hash
// and coding choice so far, the workers' encoders and buffers, the memory budget, the progress
// count and the first error a worker met.
struct Coding {
    Coding(std::vector<WriterInput> inputs, const WriterOptions& writer_options)
        : options(writer_options),
          in(std::move(inputs)),
          n(in.size()),
          threads(options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency())),
          final_level(options.level),
          level(std::min(final_level, kTrialLevel)),
          final_pass(final_level > level),
          prefix(options.prefix && options.compress),
          encoders(threads),
          scratch(threads),
          scratch2(threads),
          raw_size(n),
          raw_hash(n),
          budget(options.work_memory),
          choice(n),
          pinned(n, 0),
          referrer(n, 0),
          sketches(prefix ? n : 0),
          total_work(n) {
        std::sort(in.begin(), in.end(), [](const auto& a, const auto& b) { return input_key(a) < input_key(b); });
        for (size_t i = 0; i < n; ++i) raw_size[i] = in[i].raw_size();
    }
    Coding(const Coding&) = delete;
    Coding& operator=(const Coding&) = delete;

    // What coding entry i against `reference` bytes holds: its encoder, and the decode buffers of
    // the entry and of a reference that comes from sources.
    size_t cost(size_t i, uint64_t reference, bool reference_decoded, int at = 0) const {
        return ZstdEncoder::memory(raw_size[i], reference, at ? at : level) + (in[i].source ? raw_size[i] : 0) + (reference_decoded ? reference : 0);
    }
    // Work units, counted per phase: n plain compressions, then the prefix trials of each entry, the
    // entries recoded against their prefix, and the dictionary trials. The phase changes only
    // between parallel_for calls, never while a worker reads it.
    void next_phase(const char* name, size_t units) {
        phase = name;
        done = 0;
        total_work = units;
    }
    template <typename Body>
    void parallel(size_t units, Body&& body) {
        parallel_for(units, threads, tick, std::forward<Body>(body));
    }
    void record_error(Error e) {
        std::lock_guard lock(error_mutex);
        if (!failed.exchange(true)) first_error = std::move(e);
    }

    const WriterOptions& options;
    std::vector<WriterInput> in;
    const size_t n;
    const unsigned threads;
    const int final_level;
    const int level;        // the trials'
    const bool final_pass;  // the trials' outputs are not the archive's
    const bool prefix;
    // Memory: the raw inputs, each entry's chosen payload, and one encoder per thread. A trial's
    // output is kept only while it is its entry's best; the rest are sized and dropped.
    std::vector<ZstdEncoder> encoders;
    std::vector<ByteVector> scratch, scratch2;  // each worker's decode buffers
    std::vector<uint64_t> raw_size;
    std::vector<Hash128> raw_hash;
    Budget budget;
    std::vector<Choice> choice;
    // Bytes, not std::vector<bool>: the plain pass writes entries' flags from several threads, and
    // a vector<bool> packs neighbours into one word (a data race ThreadSanitizer found).
    std::vector<uint8_t> pinned;    // stays plain: stored by request, or a prefix others use
    std::vector<uint8_t> referrer;  // codes against another entry: never a base itself
    std::vector<Sketch> sketches;
    // The trained dictionary, its stored form, and the entries coded against it.
    ByteVector dictionary, dictionary_stored;
    std::vector<size_t> dictionary_users;

    const char* phase = "compress";
    std::atomic<size_t> done{0};
    size_t total_work;
    const std::function<void(size_t)> tick = [this](size_t) {
        if (options.progress) options.progress(phase, done.load(), total_work);
    };
    std::atomic<bool> failed{false};
    Error first_error;
    std::mutex error_mutex;
};

// 1. Plain zstd for everything; stored where compression does not pay or was not asked for.
// Each entry's sketch is taken in the same pass, while its bytes are in cache.
Result<void> code_plain(Coding& c) {
    c.parallel(c.n, [&](unsigned w, size_t i) {
        // The manifest is always stored: every mount reads it, and a stored one needs no
        // decompressor at all (a warm start's cheapest path).
        const bool store = !c.options.compress || (c.options.store_cubins && c.in[i].kind == Kind::cubin) || c.in[i].kind == Kind::manifest;
        const auto held = c.budget.take(c.cost(i, 0, false));
        auto raw = c.in[i].raw(c.scratch[w]);
        if (!raw) return c.record_error(std::move(raw).error());
        c.raw_hash[i] = xxh3_128(*raw);
        if (!store) {
            auto out = c.encoders[w].compress(*raw, c.level, {Codec::zstd, {}});
            if (!out) return c.record_error(std::move(out).error());
            const bool loadable = c.in[i].kind == Kind::cubin || c.in[i].kind == Kind::fatbin;
            const size_t saving = loadable ? c.options.min_saving : 1;
            if (out->size() + saving <= raw->size()) c.choice[i].stored = copy_of(*out);
        }
        if (store || c.choice[i].stored.empty()) {
            c.choice[i].codec = Codec::stored;
            c.pinned[i] = store ? 1 : 0;
        }
        if (c.prefix && image_kind(c.in[i].kind) && !store) c.sketches[i] = sketch_of(*raw);
        trim(c.scratch[w]);
        ++c.done;
    });
    if (c.failed) return c.first_error;
    return {};
}

// Each eligible image's prefix candidates: the images most like it (by sketch: the same kernels
// for another arch, a sibling instantiation in another module), then the nearest-sized other
// targets of its own module. None for the rest.
std::vector<std::vector<size_t>> prefix_candidates(Coding& c) {
    const size_t n = c.n;
    const auto& in = c.in;
    std::vector<uint32_t> group(n);
    for (size_t i = 0; i < n; ++i) {
        const bool eligible = image_kind(in[i].kind) && !c.pinned[i] && c.choice[i].codec != Codec::stored;
        group[i] = eligible ? static_cast<uint32_t>(in[i].kind) : 0xffu;  // a group no eligible entry shares
        if (!eligible) c.sketches[i].bins.fill(Sketch::kEmptyBin);
    }
    std::vector<std::vector<size_t>> candidates = similar_items(c.sketches, group, kSimilarCandidates);
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
            return std::max(c.raw_size[a], c.raw_size[i]) - std::min(c.raw_size[a], c.raw_size[i]);
        };
        std::sort(same_name.begin(), same_name.end(), [&](size_t a, size_t b) { return std::pair(distance(a), a) < std::pair(distance(b), b); });
        // The nearest kSameNameCandidates (a slice, not resize(): GCC 12 -O3 warns -Warray-bounds on
        // resize's growing path, which a shrink never takes).
        const size_t kept = std::min(same_name.size(), kSameNameCandidates);
        candidates[i].insert(candidates[i].end(), same_name.begin(), same_name.begin() + static_cast<std::ptrdiff_t>(kept));
    }
    return candidates;
}

struct PrefixTrials {
    std::vector<std::vector<size_t>> size;  // per candidate of each entry
    std::vector<ByteVector> best_out;       // the entry's smallest trial output
    std::vector<size_t> best_of;            // its index in candidates[i]
};

// Every entry coded against each of its candidates, at the trial level.
Result<PrefixTrials> run_prefix_trials(Coding& c, const std::vector<std::vector<size_t>>& candidates) {
    PrefixTrials trials{std::vector<std::vector<size_t>>(c.n), std::vector<ByteVector>(c.n), std::vector<size_t>(c.n, SIZE_MAX)};
    c.next_phase("prefix trials", c.n);
    c.parallel(c.n, [&](unsigned w, size_t i) {
        if (candidates[i].empty()) return void(++c.done);
        uint64_t largest = 0;
        bool decoded = false;
        for (size_t j : candidates[i]) {
            largest = std::max(largest, c.raw_size[j]);
            decoded = decoded || c.in[j].source;
        }
        const auto held = c.budget.take(c.cost(i, largest, decoded));
        auto raw = c.in[i].raw(c.scratch[w]);
        if (!raw) return c.record_error(std::move(raw).error());
        for (size_t k = 0; k < candidates[i].size(); ++k) {
            auto base = c.in[candidates[i][k]].raw(c.scratch2[w]);
            if (!base) return c.record_error(std::move(base).error());
            auto out = c.encoders[w].compress(*raw, c.level, {Codec::zstd_prefix, *base});
            if (!out) return c.record_error(std::move(out).error());
            trials.size[i].push_back(out->size());
            if (trials.best_of[i] == SIZE_MAX || out->size() < trials.size[i][trials.best_of[i]]) {
                trials.best_of[i] = k;
                trials.best_out[i] = copy_of(*out);
            }
        }
        trim(c.scratch[w]);
        trim(c.scratch2[w]);
        ++c.done;
    });
    if (c.failed) return c.first_error;
    return trials;
}

// Takes the trials that pay, largest saving first (ties: entry, then candidate order, so the
// result is deterministic). An image that references another can no longer be a base, and a base
// can no longer reference. Returns the entries whose taken trial's output was not kept.
std::vector<size_t> take_prefixes(Coding& c, const std::vector<std::vector<size_t>>& candidates, PrefixTrials& trials) {
    struct Trial {
        size_t saved, entry, candidate;
    };
    std::vector<Trial> order;
    for (size_t i = 0; i < c.n; ++i)
        for (size_t k = 0; k < trials.size[i].size(); ++k) {
            const size_t plain = c.choice[i].stored.size();
            if (static_cast<double>(trials.size[i][k]) < static_cast<double>(plain) * kPrefixGain)
                order.push_back({plain - trials.size[i][k], i, k});
        }
    std::sort(order.begin(), order.end(), [](const Trial& a, const Trial& b) {
        return std::tie(b.saved, a.entry, a.candidate) < std::tie(a.saved, b.entry, b.candidate);
    });
    std::vector<size_t> recode;
    for (const Trial& t : order) {
        const size_t i = t.entry, j = candidates[i][t.candidate];
        if (c.referrer[i] || c.pinned[i] || c.referrer[j]) continue;
        c.choice[i].codec = Codec::zstd_prefix;
        c.choice[i].ref = static_cast<uint32_t>(j);
        if (t.candidate == trials.best_of[i]) c.choice[i].stored = std::move(trials.best_out[i]);
        else recode.push_back(i);
        c.referrer[i] = 1;
        c.pinned[j] = 1;
    }
    trials.best_out.clear();
    trials.best_out.shrink_to_fit();
    return recode;
}

// The entries that took a trial whose output was not kept, coded against their prefix (unless
// the final pass codes them anyway).
Result<void> recode_prefixed(Coding& c, std::vector<size_t> recode) {
    if (c.final_pass) recode.clear();  // coded once, at the final level, below
    c.next_phase("prefix coding", recode.size());
    c.parallel(recode.size(), [&](unsigned w, size_t r) {
        const size_t i = recode[r];
        const auto held = c.budget.take(c.cost(i, c.raw_size[c.choice[i].ref], c.in[c.choice[i].ref].source != nullptr));
        auto raw = c.in[i].raw(c.scratch[w]);
        if (!raw) return c.record_error(std::move(raw).error());
        auto base = c.in[c.choice[i].ref].raw(c.scratch2[w]);
        if (!base) return c.record_error(std::move(base).error());
        auto out = c.encoders[w].compress(*raw, c.level, {Codec::zstd_prefix, *base});
        if (!out) return c.record_error(std::move(out).error());
        c.choice[i].stored = copy_of(*out);
        trim(c.scratch[w]);
        trim(c.scratch2[w]);
        ++c.done;
    });
    if (c.failed) return c.first_error;
    return {};
}

// 2. Prefix coding: each image against the images most like it and the nearest-sized other
// targets of its own module. A base stays plain (references go one step), so which images
// become bases matters most: the trials that save most are taken first, and an image may
// reference one after it in the index.
Result<void> code_prefixes(Coding& c) {
    const std::vector<std::vector<size_t>> candidates = prefix_candidates(c);
    SDM_TRY_GET(trials, run_prefix_trials(c, candidates));
    return recode_prefixed(c, take_prefixes(c, candidates, *trials));
}

// The entries a dictionary may serve (images still coded alone), and the dictionary trained on
// them where there are enough (left empty otherwise).
Result<std::vector<size_t>> train_dictionary(Coding& c) {
    std::vector<size_t> eligible;
    uint64_t sample_bytes = 0;
    for (size_t i = 0; i < c.n; ++i)
        if (image_kind(c.in[i].kind) && !c.pinned[i] && !c.referrer[i] && c.choice[i].codec == Codec::zstd) {
            eligible.push_back(i);
            sample_bytes += c.raw_size[i];
        }
    if (eligible.size() >= kMinDictionarySamples) {
        // The training sample: each eligible entry's first bytes, an equal share of
        // kDictionarySampleBytes each (the whole entry where the entries fit).
        const size_t share = std::max<size_t>(kDictionarySampleBytes / eligible.size(), 1024);
        std::vector<ByteVector> sample_copies;
        std::vector<Bytes> samples;
        for (size_t i : eligible) {
            auto raw = c.in[i].raw(c.scratch[0]);
            if (!raw) return std::move(raw).error();
            sample_copies.emplace_back(raw->begin(), raw->begin() + static_cast<std::ptrdiff_t>(std::min(raw->size(), share)));
        }
        for (const auto& copy : sample_copies) samples.emplace_back(copy);
        c.dictionary = zstd_train_dictionary(samples, std::clamp<size_t>(static_cast<size_t>(sample_bytes / 50), 4096, 112 * 1024));
    }
    return eligible;
}

// Codes the eligible entries against the dictionary and keeps it only if the bytes it saves
// exceed what it costs.
Result<void> try_dictionary(Coding& c, const std::vector<size_t>& eligible) {
    std::vector<ByteVector> trial_out(eligible.size());  // kept only where smaller than the plain frame
    c.next_phase("dictionary trials", eligible.size());
    c.parallel(eligible.size(), [&](unsigned w, size_t t) {
        const auto held = c.budget.take(c.cost(eligible[t], c.dictionary.size(), false));
        auto raw = c.in[eligible[t]].raw(c.scratch[w]);
        if (!raw) return c.record_error(std::move(raw).error());
        auto out = c.encoders[w].compress(*raw, c.level, {Codec::zstd_dict, c.dictionary});
        if (!out) return c.record_error(std::move(out).error());
        if (out->size() < c.choice[eligible[t]].stored.size()) trial_out[t] = copy_of(*out);
        trim(c.scratch[w]);
        ++c.done;
    });
    if (c.failed) return c.first_error;
    auto packed = zstd_compress(c.dictionary, c.final_level, {Codec::zstd, {}});
    if (!packed) return std::move(packed).error();
    c.dictionary_stored = packed->size() < c.dictionary.size() ? std::move(*packed) : c.dictionary;
    size_t gain = 0;
    for (size_t t = 0; t < eligible.size(); ++t)
        if (!trial_out[t].empty()) gain += c.choice[eligible[t]].stored.size() - trial_out[t].size();
    // The dictionary costs its stored bytes, a record, its name and its alignment (64 bytes when
    // compressed, which a dictionary of this size always is in practice).
    if (gain > c.dictionary_stored.size() + kRecordSize + 64 + std::strlen(kDictionaryName)) {
        for (size_t t = 0; t < eligible.size(); ++t)
            if (!trial_out[t].empty()) {
                c.choice[eligible[t]].codec = Codec::zstd_dict;
                c.choice[eligible[t]].stored = std::move(trial_out[t]);
                c.dictionary_users.push_back(eligible[t]);
            }
    }
    return {};
}

// 3. A trained dictionary over the entries still coded alone, kept only if the bytes it saves
// exceed its own stored size (zstd dictionaries pay for many small, similar payloads).
Result<void> code_dictionary(Coding& c) {
    SDM_TRY_GET(eligible, train_dictionary(c));
    if (c.dictionary.empty()) return {};
    return try_dictionary(c, *eligible);
}

// How many frames entry `i`'s final payload is coded in: an image of more than
// WriterOptions::frame_bytes raw bytes in ceil(raw / frame_bytes) frames of equal size, else one.
size_t framed_count(const Coding& c, size_t i) {
    const size_t frame = c.options.frame_bytes;
    if (frame == 0 || !image_kind(c.in[i].kind) || c.raw_size[i] <= frame) return 1;
    return std::min<size_t>((c.raw_size[i] + frame - 1) / frame, limits::max_frames);
}

// 4. The archive's payloads: every compressed entry coded once at the level asked for, with the
// codec and reference its trials chose, largest first so that no core waits on one long entry
// at the end. A final frame larger than its trial's (zstd's levels do not promise an order)
// keeps the trial's. Where the trials ran at the level asked for, only the images coded in frames
// are coded again.
Result<void> code_final(Coding& c) {
    std::vector<size_t> coded;
    for (size_t i = 0; i < c.n; ++i)
        if (c.choice[i].codec != Codec::stored && (c.final_pass || framed_count(c, i) > 1)) coded.push_back(i);
    if (coded.empty()) return {};
    std::stable_sort(coded.begin(), coded.end(), [&](size_t a, size_t b) { return c.raw_size[a] > c.raw_size[b]; });
    c.next_phase("coding", coded.size());
    c.parallel(coded.size(), [&](unsigned w, size_t r) {
        const size_t i = coded[r];
        const Choice& chosen = c.choice[i];
        const bool prefixed = chosen.codec == Codec::zstd_prefix;
        const uint64_t reference = prefixed ? c.raw_size[chosen.ref] : chosen.codec == Codec::zstd_dict ? c.dictionary.size() : 0;
        const auto held = c.budget.take(c.cost(i, reference, prefixed && c.in[chosen.ref].source != nullptr, c.final_level));
        auto raw = c.in[i].raw(c.scratch[w]);
        if (!raw) return c.record_error(std::move(raw).error());
        Result<Bytes> base = Bytes(c.dictionary);
        if (prefixed) base = c.in[chosen.ref].raw(c.scratch2[w]);
        if (!base) return c.record_error(std::move(base).error());
        // An image larger than a frame is coded in frames of about frame_bytes each, so that its
        // load decodes it on several cores; it keeps its frames even where its one-frame trial was
        // smaller.
        const size_t frames = framed_count(c, i);
        const size_t frame_bytes = frames > 1 ? (raw->size() + frames - 1) / frames : 0;
        auto out = c.encoders[w].compress(*raw, c.final_level, {chosen.codec, chosen.codec == Codec::zstd ? Bytes() : *base}, frame_bytes);
        if (!out) return c.record_error(std::move(out).error());
        if (frames > 1 || c.choice[i].stored.empty() || out->size() < c.choice[i].stored.size()) c.choice[i].stored = copy_of(*out);
        c.choice[i].framed = frames > 1;
        trim(c.scratch[w]);
        trim(c.scratch2[w]);
        ++c.done;
    });
    if (c.failed) return c.first_error;
    return {};
}

// The dictionary as an entry of its own, inserted in sorted position, with the references
// renumbered.
void insert_dictionary(Coding& c) {
    WriterInput d;
    d.name = kDictionaryName;
    d.kind = Kind::dictionary;
    d.bytes = c.dictionary;
    Choice chosen;
    chosen.codec = c.dictionary_stored.size() < c.dictionary.size() ? Codec::zstd : Codec::stored;
    if (chosen.codec == Codec::zstd) chosen.stored = std::move(c.dictionary_stored);
    const auto pos = static_cast<size_t>(std::lower_bound(c.in.begin(), c.in.end(), d, [](const auto& a, const auto& b) {
                                             return input_key(a) < input_key(b);
                                         }) - c.in.begin());
    for (auto& ch : c.choice)
        if (ch.codec == Codec::zstd_prefix && ch.ref >= pos) ++ch.ref;
    for (size_t u : c.dictionary_users) c.choice[u].ref = static_cast<uint32_t>(pos);
    c.raw_size.insert(c.raw_size.begin() + static_cast<std::ptrdiff_t>(pos), d.bytes.size());
    c.raw_hash.insert(c.raw_hash.begin() + static_cast<std::ptrdiff_t>(pos), xxh3_128(d.bytes));
    c.in.insert(c.in.begin() + static_cast<std::ptrdiff_t>(pos), std::move(d));
    c.choice.insert(c.choice.begin() + static_cast<std::ptrdiff_t>(pos), std::move(chosen));
}

// Where everything goes: header, index, strings, then payloads in index order.
struct Layout {
    std::string strings;                // each distinct name once
    std::vector<uint32_t> name_offsets;  // per entry, into strings
    bool format11{false};
    bool framed{false};  // a payload of several frames: kFeatureFrames
    uint32_t header_size{kHeaderSize};  // kHeaderSize12 with the 1.2 extension
    uint64_t index_offset{0}, strings_offset{0}, payload_offset{0};
    std::vector<uint64_t> offsets;  // per entry, its payload's
    uint64_t archive_size{0};
};

Result<Layout> lay_out(const Coding& c) {
    const auto& in = c.in;
    const size_t count = in.size();
    Layout l;
    l.name_offsets.resize(count);
    for (size_t i = 0; i < count; ++i) {
        // Entries of one module share its name: store each distinct name once.
        if (i > 0 && in[i].name == in[i - 1].name) {
            l.name_offsets[i] = l.name_offsets[i - 1];
            continue;
        }
        l.name_offsets[i] = gsl::narrow_cast<uint32_t>(l.strings.size());  // checked against max_strings below
        l.strings += in[i].name;
        if (l.strings.size() > limits::max_strings)
            return make_error(ErrorCode::invalid_argument, "the entry names add up to more than " + std::to_string(limits::max_strings) +
                                                               " bytes, the string table's limit; use shorter module names");
    }
    // Format 1.1 only where an input needs it: a name past 256 bytes, or a manifest of minor 1.
    for (size_t i = 0; i < count; ++i) {
        l.format11 = l.format11 || in[i].name.size() > limits::max_name_length;
        if (in[i].kind == Kind::manifest && in[i].bytes.size() >= 8) l.format11 = l.format11 || load_u16(in[i].bytes, 6) >= 1;
    }
    for (size_t i = 0; i < count; ++i) l.framed = l.framed || c.choice[i].framed;
    if (c.options.archive_version || c.options.base) l.header_size = kHeaderSize12;
    if (c.options.release_line) l.header_size = kHeaderSizeLine;
    l.index_offset = l.header_size;
    l.strings_offset = l.index_offset + uint64_t{count} * kRecordSize;
    l.payload_offset = align_up(l.strings_offset + l.strings.size(), kZstdAlignment);
    l.offsets.resize(count);
    uint64_t at = l.payload_offset;
    for (size_t i = 0; i < count; ++i) {
        at = align_up(at, c.choice[i].codec == Codec::stored ? kStoredAlignment : kZstdAlignment);
        l.offsets[i] = at;
        at += c.choice[i].codec == Codec::stored ? c.raw_size[i] : c.choice[i].stored.size();
    }
    l.archive_size = at;
    return l;
}

// The header's fields but for its two checksums.
void write_header(std::span<std::byte> o, const Layout& l, size_t count, const WriterOptions& options) {
    std::copy(kMagic.begin(), kMagic.end(), reinterpret_cast<uint8_t*>(o.data()));
    store_u16(o, header::format_major, kFormatMajor);
    const bool extended = l.header_size >= kHeaderSize12;
    store_u16(o, header::format_minor, extended ? kFormatMinor12 : l.format11 ? kFormatMinor11 : kFormatMinor);
    store_u64(o, header::required_features, (l.format11 ? kFeatureFormat11 : 0) | (l.framed ? kFeatureFrames : 0));
    store_u32(o, header::header_size, l.header_size);
    if (options.archive_version) store_u64(o, header::archive_version, *options.archive_version);
    if (options.base) store_hash128(o, header::base_identity, *options.base);
    if (options.release_line) std::memcpy(o.data() + header::release_line, options.release_line->data(), options.release_line->size());
    store_u64(o, header::optional_features, (options.archive_version ? kFeatureArchiveVersion : 0) | (options.base ? kFeatureBase : 0) |
                                                (options.release_line ? kFeatureReleaseLine : 0));
    store_u64(o, header::archive_size, l.archive_size);
    store_u64(o, header::index_offset, l.index_offset);
    store_u32(o, header::index_count, gsl::narrow_cast<uint32_t>(count));  // add() keeps it <= max_entries
    store_u32(o, header::record_size, kRecordSize);
    store_u64(o, header::strings_offset, l.strings_offset);
    store_u64(o, header::strings_size, l.strings.size());
    store_u64(o, header::payload_offset, l.payload_offset);
    store_u16(o, header::kernel_abi_major, options.kernel_abi_major);
    store_u16(o, header::kernel_abi_minor, options.kernel_abi_minor);
    const std::string created_by = std::string("sdm ") + SDM_VERSION_STRING;
    std::memcpy(o.data() + header::created_by, created_by.data(), std::min<size_t>(created_by.size(), 15));
}

// Each entry's record and payload, its memory given back as soon as it is copied; returns the tally.
Result<WriterReport> write_entries(Coding& c, const Layout& l, ByteVector& out) {
    const std::span<std::byte> o(out);
    const size_t count = c.in.size();
    // What each entry's payload is: its raw bytes when stored, else its frame.
    const auto payload = [&](size_t i) -> Result<Bytes> {
        if (c.choice[i].codec == Codec::stored) return c.in[i].raw(c.scratch[0]);
        return Bytes(c.choice[i].stored);
    };
    WriterReport tally;
    tally.entries = count;
    tally.archive_bytes = out.size();
    for (size_t i = 0; i < count; ++i) {
        const WriterInput& e = c.in[i];
        const std::span<std::byte> r = o.subspan(l.index_offset + i * kRecordSize, kRecordSize);
        SDM_TRY_GET(p, payload(i));
        if (l.offsets[i] + p->size() > out.size()) return make_error(ErrorCode::internal, "entry " + e.name + " grew while it was written");
        store_u32(r, record::name_offset, l.name_offsets[i]);
        store_u16(r, record::name_length, gsl::narrow_cast<uint16_t>(e.name.size()));  // valid_name: <= 65535
        store_u8(r, record::kind, static_cast<uint8_t>(e.kind));
        store_u8(r, record::codec, static_cast<uint8_t>(c.choice[i].codec));
        store_u16(r, record::sm, e.sm);
        store_u8(r, record::variant, static_cast<uint8_t>(e.variant));
        store_u32(r, record::ref, c.choice[i].ref);
        store_u64(r, record::data_offset, l.offsets[i]);
        store_u64(r, record::stored_size, p->size());
        store_u64(r, record::raw_size, c.raw_size[i]);
        store_hash128(r, record::raw_hash, c.raw_hash[i]);
        store_u64(r, record::stored_hash, xxh3_64(*p));
        std::copy(p->begin(), p->end(), out.begin() + static_cast<std::ptrdiff_t>(l.offsets[i]));
        if (e.kind != Kind::dictionary) tally.raw_bytes += c.raw_size[i];
        tally.prefix_coded += c.choice[i].codec == Codec::zstd_prefix;
        tally.dictionary_coded += c.choice[i].codec == Codec::zstd_dict;
        tally.stored += c.choice[i].codec == Codec::stored;
        if (e.kind == Kind::dictionary) tally.dictionary_bytes = p->size();
        // Copied: its memory goes back now, so the archive and the inputs are not all held at once.
        // No later entry needs it (references were coded above).
        ByteVector().swap(c.choice[i].stored);
        ByteVector().swap(c.in[i].bytes);
        c.in[i].source.reset();
    }
    return tally;
}

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

// The phases run in order, each on what the ones before it chose; their progress and errors
// go through the Coding they share.
Result<ByteVector> ArchiveWriter::finish(WriterReport* report) {
    if (options_.release_line) {
        if (const auto why = release_line_problem(*options_.release_line); !why.empty())
            return make_error(ErrorCode::invalid_argument, "release line '" + *options_.release_line + "' " + why);
        if (!options_.archive_version)
            return make_error(ErrorCode::invalid_argument, "a release line names the line an archive version belongs to: give --archive-version too");
    }
    std::vector<WriterInput> in = std::move(inputs_);
    inputs_.clear();
    keys_.clear();
    raw_total_ = 0;
    has_manifest_ = false;
    Coding c(std::move(in), options_);
    SDM_TRY(code_plain(c));
    if (c.prefix) SDM_TRY(code_prefixes(c));
    if (options_.dictionary && options_.compress) SDM_TRY(code_dictionary(c));
    SDM_TRY(code_final(c));
    c.encoders.clear();
    c.scratch2.clear();
    if (!c.dictionary_users.empty()) insert_dictionary(c);
    if (options_.progress) options_.progress(c.phase, c.total_work, c.total_work);

    // 5. Layout: header, index, strings, then payloads in index order.
    SDM_TRY_GET(layout, lay_out(c));
    const Layout& l = *layout;
    ByteVector out;
    try {
        out.assign(l.archive_size, std::byte{0});
    } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::out_of_memory, "cannot allocate " + std::to_string(l.archive_size) + " bytes for the archive");
    }
    const std::span<std::byte> o(out);
    write_header(o, l, c.in.size(), options_);
    SDM_TRY_GET(tally, write_entries(c, l, out));
    std::memcpy(out.data() + l.strings_offset, l.strings.data(), l.strings.size());
    store_u64(o, header::meta_hash, xxh3_64(Bytes(out).subspan(l.index_offset, l.strings_offset + l.strings.size() - l.index_offset)));
    store_u64(o, header::header_hash, header_hash_of(out, l.header_size));

    if (report != nullptr) *report = *tally;
    return out;
}

}  // namespace sdm::archive
