#include "image_source.hpp"

#include <functional>

#include "runtime/jit/cache.hpp"
#include "archive/fatbin.hpp"
#include "archive/image.hpp"
#include "common/digest.hpp"
#include "runtime/archives/readahead.hpp"
#include "runtime/platform/trace_ranges.hpp"

namespace sdm::runtime {

JitSource archive_jit_source(const ServedBy& served) {
    const archive::Archive& a = served.archive->archive;
    const size_t index = served.selection.image.index;
    return {a.entries()[index].kind, a.identity(index), served.module + "." + a.entries()[index].target(), a.describe(index),
            served.selection.target_sm, served.selection.target_variant};
}

JitJob jit_job(const ServedBy& served, const JitSource& source, Bytes bytes, JitIsolation isolation) {
    JitJob job;
    job.kind = source.kind;
    job.input = bytes;
    job.input_identity = source.identity;
    job.input_name = source.name;
    job.target_sm = source.target_sm;
    job.target_variant = source.target_variant;
    job.target = archive::target_name(archive::Kind::cubin, source.target_sm, source.target_variant);
    job.image = source.image;
    job.device = served.device;
    // What sdm checked of the input is its structure; the compiler reads every byte. LTO-IR's IR is
    // opaque, and PTX is trusted only as far as its signer is (jit_isolation.hpp): a fatbin's PTX
    // as far as the archive holding the fatbin.
    const bool trusted = served.archive->embedded || served.archive->archive.enforces_digests();
    if (isolation == JitIsolation::always) {
        job.isolated = true;
        job.isolated_because = "every link (SDM_JIT_ISOLATION=always)";
    } else if (isolation == JitIsolation::automatic && source.kind == archive::Kind::ltoir) {
        job.isolated = true;
        job.isolated_because = "LTO-IR, whose IR sdm cannot check";
    } else if (isolation == JitIsolation::automatic && !trusted) {
        job.isolated = true;
        job.isolated_because = "PTX from an archive no trusted key signed";
    }
    return job;
}

Result<JitPlan> jit_plan(const ImageRooms& rooms, Driver& driver, const ServedBy& served) {
    const JitJob job = jit_job(served, archive_jit_source(served), {}, rooms.jit.isolation().policy);  // asking needs no input
    JitPlan plan;
    for (const auto& backend : jit_backends(rooms.jit, rooms.load, driver, served.switches)) {
        std::string reason = backend->unavailable(job);
        if (reason.empty()) {
            plan.backend = backend->name();
            return plan;
        }
        plan.passed_over.push_back(std::move(reason));
    }
    return plan;
}

namespace {

using archive::Kind;

class ImageFetch {
public:
    ImageFetch(const ImageRooms& rooms, Driver& driver, const ServedBy& served, CUstream stream)
        : rooms_(rooms),
          driver_(driver),
          served_(served),
          stream_(stream),
          archive_(served.archive->archive),
          entry_(archive_.entries()[served.selection.image.index]),
          image_(archive_.describe(served.selection.image.index)) {}

    Result<LoadableImage> run() {
        const Selection& selected = served_.selection;
        if (selected.path == SelectionPath::cubin && entry_.codec == archive::Codec::stored) {
            // The next modules' images are checked (or decoded) on a worker meanwhile; this one
            // may have been checked ahead already.
            for (const size_t next : next_in_order(archive_, selected.image.index, rooms_.readahead_modules))
                served_.archive->readahead->start(archive_, *served_.archive->references, next);
            served_.archive->readahead->settle(selected.image.index, &out_.decoded_ahead);
            SDM_TRY_GET(view, archive_.view(selected.image.index));  // checked, zero-copy from the mapping
            SDM_TRY(from_archive(*view));
            out_.view = *view;
            return std::move(out_);
        }
        if (selected.path == SelectionPath::cubin) {
            SDM_TRY_GET(raw, decoded());
            out_.owned = std::move(*raw);
            return std::move(out_);
        }
        if (selected.path == SelectionPath::fatbin) {
            SDM_TRY_GET(raw, decoded());
            SDM_TRY(from_fatbin(*raw));
            return std::move(out_);
        }
        input_ = archive_jit_source(served_);
        SDM_TRY(jit());
        return std::move(out_);
    }

private:
    // The checks of the image as the archive holds it; a cubin's entry points are kept for the
    // load's check of the kernels the manifest lists (the image says what it defines).
    Result<void> from_archive(Bytes raw) {
        auto info = archive::check_declared_target(entry_.kind, entry_.sm, entry_.variant, raw, image_);
        if (!info) return make_error(info.error().code, info.error().message + "; it is not loaded");
        if (info->kind == Kind::cubin) SDM_TRY(take_cubin_facts(*info, image_));
        return {};
    }

    // A compressed cubin or a fatbin: decoded into memory the loaded image owns, at each load (a
    // prefix base once for all that reference it: ReferenceMemo), and never written to the cache,
    // which holds JIT outputs only: a decoded copy on disk multiplied an imported library into a
    // cache many times the archive's size, and reading it back saved less than zstd costs
    // (bench/RESULTS.md, issue 27). The next modules' same target starts decoding on a worker
    // first (readahead.hpp): a host fetching module after module finds each decoded while the
    // last one loaded.
    Result<ByteVector> decoded() {
        const size_t index = served_.selection.image.index;
        for (const size_t next : next_in_order(archive_, index, rooms_.readahead_modules))
            served_.archive->readahead->start(archive_, *served_.archive->references, next);
        SDM_TRY_GET(raw, served_.archive->readahead->read(archive_, *served_.archive->references, index, &out_.decoded_ahead));
        SDM_TRY(from_archive(*raw));
        return std::move(*raw);
    }

    // A fatbin reaches the driver only as one of its cubins. Handed over whole, the driver chose
    // inside it and JIT-compiled its PTX or LTO-IR in this process, past the isolation policy,
    // the time limit and SDM_JIT_NO_DRIVER (issue 38: a raw LTO-IR killed the host, a slow PTX
    // held it for minutes). So sdm chooses, by the rules for bare entries: a cubin goes to the
    // driver alone, PTX to sdm's own backends as a bare PTX entry would. `fatbin` passed
    // from_archive: every inner image is checked, and it holds no LTO-IR.
    Result<void> from_fatbin(Bytes fatbin) {
        SDM_TRY_GET(container, archive::parse_fatbin(fatbin));
        SDM_TRY_GET(selected, select_inner(*container));
        const archive::FatbinEntry& inner = container->entries[selected->image.index];
        const std::string what = image_ + ", its " + archive::fatbin_entry_label(inner);
        rooms_.log.info("module " + served_.module + " on " + served_.device + ": " + what + " is chosen (" + selected->reason + ")");
        SDM_TRY_GET(payload, archive::fatbin_entry_payload(inner));
        if (inner.image_kind == Kind::cubin) {
            auto info = archive::check_declared_target(Kind::cubin, inner.sm, inner.variant, *payload, what);
            if (!info) return make_error(info.error().code, info.error().message + "; it is not loaded");
            SDM_TRY(take_cubin_facts(*info, what));
            out_.source = ImageSource::fatbin;
            out_.owned = std::move(*payload);
            return {};
        }
        // The cache key's content is the inner image's own (not the container's): the same PTX
        // builds the same cubin whatever else the fatbin holds.
        crypto::Blake2b identity;
        identity.field("sdm fatbin inner image");
        identity.field(archive::kind_name(Kind::ptx));
        identity.field(*payload);
        input_ = {Kind::ptx, identity.digest(), served_.module + ".fatbin[" + archive::fatbin_entry_label(inner) + "]", what,
                  selected->target_sm, selected->target_variant};
        input_bytes_ = std::move(*payload);
        return jit();
    }

    // The fatbin's image for this device, by select_image's rules over its cubins and PTX (the
    // driver's switches included).
    Result<Selection> select_inner(const archive::FatbinContainer& container) const {
        std::vector<ImageCandidate> candidates;
        for (const archive::FatbinEntry& e : container.entries)
            if (e.image_kind == Kind::cubin || e.image_kind == Kind::ptx) candidates.push_back({e.index, *e.image_kind, e.sm, e.variant});
        // A fatbin is selected for the device's own capability (select_image's step 4).
        const uint16_t sm = served_.selection.target_sm;
        const SelectionDevice device{{sm / 10, sm % 10}, served_.device_class, served_.device};
        auto selected = select_image(candidates, device, served_.module, image_, served_.switches);
        if (!selected && selected.error().code == ErrorCode::no_image)
            return make_error(ErrorCode::no_image, selected.error().message +
                                                       " (sdm loads a fatbin's cubin or links its PTX itself; the driver never gets the fatbin whole)");
        return selected;
    }

    // What the load checks and reports of a cubin: its entry points and its device bytes; a
    // device link's input (a relocatable cubin calling functions it lacks) is refused by name.
    Result<void> take_cubin_facts(archive::ImageInfo& info, const std::string& what) {
        if (auto refused = archive::link_input_error(info, what)) return make_error(refused->code, refused->message + "; it is not loaded");
        out_.kernels = std::move(info.kernels);
        out_.device_bytes = info.device_bytes;
        return {};
    }

    Result<void> well_formed(Kind kind, Bytes raw, const std::string& what) {
        auto info = archive::inspect_image(kind, raw);
        if (!info) return make_error(ErrorCode::archive_corrupt, what + ": " + info.error().message + "; it is not loaded");
        if (info->kind == Kind::cubin) SDM_TRY(take_cubin_facts(*info, what));
        return {};
    }

    Result<void> not_capturing() const {
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        SDM_TRY(SDM_DRIVER_CALL(driver_, cuStreamIsCapturing, "checking the stream for graph capture before a JIT", stream_, &status));
        if (status != CU_STREAM_CAPTURE_STATUS_NONE)
            return make_error(ErrorCode::graph_capture, "loading module " + served_.module + " on " + served_.device + " needs a JIT of " + input_.image +
                                                            ", but the stream is capturing a CUDA graph. Load it before capture: "
                                                            "sdm_preload, or one sdm_kernel_get outside the capture");
        return {};
    }

    // Through the cache (when there is one): a hit that fails the checks is evicted and built again.
    Result<void> cached(const Hash128& key, Kind kind, ImageSource built_by, const std::function<Result<ByteVector>()>& build,
                        const platform::LockMark& mark) {
        out_.cache_key = key;
        cache_ = rooms_.cache.get();  // opened here, on first need: a load that decodes in memory never touches it
        bool ran = false;
        const auto run = [&]() -> Result<ByteVector> {
            ran = true;
            auto built = build();
            if (!built) return built;
            SDM_TRY(well_formed(kind, *built, "the image built from " + input_.image));
            return built;
        };
        SDM_TRY_GET(got, cache_ != nullptr ? cache_->get_or_build(key, run, mark) : run());
        if (!ran) {
            if (auto checked = well_formed(kind, *got, "the cache entry for " + input_.image + " (" + cache_->entry_path(key) + ")"); !checked) {
                rooms_.log.warn(checked.error().message + "; it was removed, and the image is built again");
                cache_->evict(key);
                got = cache_->get_or_build(key, run, mark);  // gone now: built, checked and stored
                if (!got) return std::move(got).error();
            }
        }
        out_.source = ran || cache_ == nullptr ? built_by : ImageSource::cache;
        out_.owned = std::move(*got);
        return {};
    }

    // PTX or LTO-IR: the first backend that may run builds it; the others say why they do not.
    // The input is decoded and checked only when a backend builds: a cache hit, keyed by the
    // entry's raw hash from the index, reads nothing of it.
    Result<void> jit() {
        JitJob job = jit_job(served_, input_, {}, rooms_.jit.isolation().policy);
        std::string why_not, failures;
        for (const auto& backend : jit_backends(rooms_.jit, rooms_.load, driver_, served_.switches)) {
            const std::string reason = backend->unavailable(job);
            if (!reason.empty()) {
                why_not += (why_not.empty() ? "" : "; ") + reason;
                continue;
            }
            if (!why_not.empty() || !failures.empty())
                rooms_.log.info("building " + input_.image + " with " + backend->name() + ": " + why_not + (why_not.empty() || failures.empty() ? "" : "; ") +
                                    failures);
            auto built = build_with(*backend, job);
            if (built) return {};
            // A backend that ran and failed (it refused the input, or broke) is not the end: the
            // next may take it (a driver's JIT newer than nvJitLink). Anything else is the load's.
            if (built.error().code != ErrorCode::jit) return built;
            rooms_.log.info(std::string(backend->name()) + " failed to build " + input_.image + "; trying the next backend: " + built.error().message);
            failures += (failures.empty() ? "" : "; ") + std::string(backend->name()) + " failed: " + built.error().message;
        }
        if (!failures.empty())
            return make_error(ErrorCode::jit, "loading " + input_.image + " on " + served_.device + " needs a JIT, and every backend that ran failed: " + failures +
                                                  (why_not.empty() ? "" : " (not tried: " + why_not + ")"));
        return make_error(ErrorCode::jit, "loading " + input_.image + " on " + served_.device + " needs a JIT, and no backend may run: " + why_not);
    }

    // `job`'s input, on the first build that needs it: decoded from the archive and checked (a
    // fatbin's inner PTX was, before its selection).
    Result<void> read_input(JitJob& job) {
        if (!input_bytes_) {
            SDM_TRY_GET(raw, served_.archive->references->read(archive_, served_.selection.image.index));
            SDM_TRY(from_archive(*raw));
            input_bytes_ = std::move(*raw);
        }
        job.input = *input_bytes_;
        return {};
    }

    Result<void> build_with(JitBackend& backend, JitJob& job) {
        SDM_TRY_GET(key, backend.cache_key(job));
        if (*key) {
            const std::string what = std::string(backend.name()) + " building " + input_.image + " for " + job.target + (job.isolated ? " in the JIT helper" : "");
            return cached(**key, Kind::cubin, backend.source(), [&]() -> Result<ByteVector> {
                SDM_TRY(not_capturing());
                SDM_TRY(read_input(job));
                const TraceRange range("jit", backend.name(), input_.image);
                SDM_TRY_GET(product, backend.build(job));
                return std::move(product->cubin);
            }, {what, rooms_.jit.isolation().limits.seconds});
        }
        SDM_TRY(not_capturing());
        SDM_TRY(read_input(job));
        const TraceRange range("jit", backend.name(), input_.image);
        SDM_TRY_GET(product, backend.build(job));
        out_.source = backend.source();
        out_.module = product->module;
        out_.owned = std::move(product->cubin);
        if (out_.module == nullptr) SDM_TRY(well_formed(Kind::cubin, out_.owned, "the image built from " + input_.image));
        return {};
    }

    const ImageRooms& rooms_;
    Driver& driver_;
    const ServedBy& served_;
    CUstream stream_;
    const archive::Archive& archive_;
    const archive::Entry& entry_;
    const std::string image_;
    JitSource input_;                        // the JIT path's: the entry, or a fatbin's inner PTX
    std::optional<ByteVector> input_bytes_;  // its bytes, once read and checked
    Cache* cache_{nullptr};  // once cached() ran; null: no usable cache (logged once), images are built every time
    LoadableImage out_;
};

}  // namespace

Result<LoadableImage> load_image_bytes(const ImageRooms& rooms, Driver& driver, const ServedBy& served, CUstream stream) {
    return ImageFetch(rooms, driver, served, stream).run();
}

}  // namespace sdm::runtime
