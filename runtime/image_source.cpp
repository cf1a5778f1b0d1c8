#include "image_source.hpp"

#include <functional>

#include "cache.hpp"
#include "archive/image.hpp"
#include "readahead.hpp"

namespace sdm::runtime {

JitJob jit_job(const ServedBy& served, Bytes input, JitIsolation isolation) {
    const archive::Archive& a = served.archive->archive;
    const archive::Entry& entry = a.entries()[served.selection.image.index];
    JitJob job;
    job.kind = entry.kind;
    job.input = input;
    job.input_identity = a.identity(served.selection.image.index);
    job.input_name = served.module + "." + entry.target();
    job.target_sm = served.selection.target_sm;
    job.target_variant = served.selection.target_variant;
    job.target = archive::target_name(archive::Kind::cubin, served.selection.target_sm, served.selection.target_variant);
    job.image = a.describe(served.selection.image.index);
    job.device = served.device;
    // What sdm checked of the input is its structure; the compiler reads every byte. LTO-IR's IR is
    // opaque, and PTX is trusted only as far as its signer is (jit_isolation.hpp).
    const bool trusted = served.archive->embedded || a.enforces_digests();
    if (isolation == JitIsolation::always) {
        job.isolated = true;
        job.isolated_because = "every link (SDM_JIT_ISOLATION=always)";
    } else if (isolation == JitIsolation::automatic && entry.kind == archive::Kind::ltoir) {
        job.isolated = true;
        job.isolated_because = "LTO-IR, whose IR sdm cannot check";
    } else if (isolation == JitIsolation::automatic && !trusted) {
        job.isolated = true;
        job.isolated_because = "PTX from an archive no trusted key signed";
    }
    return job;
}

Result<JitPlan> jit_plan(const ImageRooms& rooms, Driver& driver, const ServedBy& served) {
    const JitJob job = jit_job(served, {}, rooms.jit.isolation().policy);  // asking needs no input
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
        if (selected.path == SelectionPath::cubin || selected.path == SelectionPath::fatbin) {
            // Compressed: decoded into memory the loaded image owns, at each load (a prefix base
            // once for all that reference it: ReferenceMemo), and never written to the cache,
            // which holds JIT outputs only: a decoded copy on disk multiplied an imported library
            // into a cache many times the archive's size, and reading it back saved less than
            // zstd costs (bench/RESULTS.md, issue 27).
            // The next modules' same target starts decoding on a worker first (readahead.hpp):
            // a host fetching module after module finds each decoded while the last one loaded.
            for (const size_t next : next_in_order(archive_, selected.image.index, rooms_.readahead_modules))
                served_.archive->readahead->start(archive_, *served_.archive->references, next);
            SDM_TRY_GET(raw, served_.archive->readahead->read(archive_, *served_.archive->references, selected.image.index, &out_.decoded_ahead));
            SDM_TRY(from_archive(*raw));
            out_.source = selected.path == SelectionPath::fatbin ? ImageSource::fatbin : ImageSource::archive_cubin;
            out_.owned = std::move(*raw);
            return std::move(out_);
        }
        SDM_TRY(jit());
        return std::move(out_);
    }

private:
    // The checks of the image as the archive holds it; a cubin's entry points are kept for the
    // load's check of the kernels the manifest lists (the image says what it defines).
    Result<void> from_archive(Bytes raw) {
        auto info = archive::check_declared_target(entry_.kind, entry_.sm, entry_.variant, raw, image_);
        if (!info) return make_error(info.error().code, info.error().message + "; it is not loaded");
        if (info->kind == Kind::cubin) out_.kernels = std::move(info->kernels);
        return {};
    }

    Result<void> well_formed(Kind kind, Bytes raw, const std::string& what) {
        auto info = archive::inspect_image(kind, raw);
        if (!info) return make_error(ErrorCode::archive_corrupt, what + ": " + info.error().message + "; it is not loaded");
        if (info->kind == Kind::cubin) out_.kernels = std::move(info->kernels);
        return {};
    }

    Result<void> not_capturing() const {
        CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
        SDM_TRY(SDM_DRIVER_CALL(driver_, cuStreamIsCapturing, "checking the stream for graph capture before a JIT", stream_, &status));
        if (status != CU_STREAM_CAPTURE_STATUS_NONE)
            return make_error(ErrorCode::graph_capture, "loading module " + served_.module + " on " + served_.device + " needs a JIT of " + image_ +
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
            SDM_TRY(well_formed(kind, *built, "the image built from " + image_));
            return built;
        };
        SDM_TRY_GET(got, cache_ != nullptr ? cache_->get_or_build(key, run, mark) : run());
        if (!ran) {
            if (auto checked = well_formed(kind, *got, "the cache entry for " + image_ + " (" + cache_->entry_path(key) + ")"); !checked) {
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
        JitJob job = jit_job(served_, {}, rooms_.jit.isolation().policy);
        std::optional<ByteVector> input;
        std::string why_not, failures;
        for (const auto& backend : jit_backends(rooms_.jit, rooms_.load, driver_, served_.switches)) {
            const std::string reason = backend->unavailable(job);
            if (!reason.empty()) {
                why_not += (why_not.empty() ? "" : "; ") + reason;
                continue;
            }
            if (!why_not.empty() || !failures.empty())
                rooms_.log.info("building " + image_ + " with " + backend->name() + ": " + why_not + (why_not.empty() || failures.empty() ? "" : "; ") +
                                    failures);
            auto built = build_with(*backend, job, input);
            if (built) return {};
            // A backend that ran and failed (it refused the input, or broke) is not the end: the
            // next may take it (a driver's JIT newer than nvJitLink). Anything else is the load's.
            if (built.error().code != ErrorCode::jit) return built;
            rooms_.log.info(std::string(backend->name()) + " failed to build " + image_ + "; trying the next backend: " + built.error().message);
            failures += (failures.empty() ? "" : "; ") + std::string(backend->name()) + " failed: " + built.error().message;
        }
        if (!failures.empty())
            return make_error(ErrorCode::jit, "loading " + image_ + " on " + served_.device + " needs a JIT, and every backend that ran failed: " + failures +
                                                  (why_not.empty() ? "" : " (not tried: " + why_not + ")"));
        return make_error(ErrorCode::jit, "loading " + image_ + " on " + served_.device + " needs a JIT, and no backend may run: " + why_not);
    }

    // `job`'s input, decoded from the archive and checked, on the first build that needs it.
    Result<void> read_input(JitJob& job, std::optional<ByteVector>& input) {
        if (input) return {};
        SDM_TRY_GET(raw, served_.archive->references->read(archive_, served_.selection.image.index));
        SDM_TRY(from_archive(*raw));
        input = std::move(*raw);
        job.input = *input;
        return {};
    }

    Result<void> build_with(JitBackend& backend, JitJob& job, std::optional<ByteVector>& input) {
        SDM_TRY_GET(key, backend.cache_key(job));
        if (*key) {
            const std::string what = std::string(backend.name()) + " building " + image_ + " for " + job.target + (job.isolated ? " in the JIT helper" : "");
            return cached(**key, Kind::cubin, backend.source(), [&]() -> Result<ByteVector> {
                SDM_TRY(not_capturing());
                SDM_TRY(read_input(job, input));
                SDM_TRY_GET(product, backend.build(job));
                return std::move(product->cubin);
            }, {what, rooms_.jit.isolation().limits.seconds});
        }
        SDM_TRY(not_capturing());
        SDM_TRY(read_input(job, input));
        SDM_TRY_GET(product, backend.build(job));
        out_.source = backend.source();
        out_.module = product->module;
        out_.owned = std::move(product->cubin);
        if (out_.module == nullptr) SDM_TRY(well_formed(Kind::cubin, out_.owned, "the image built from " + image_));
        return {};
    }

    const ImageRooms& rooms_;
    Driver& driver_;
    const ServedBy& served_;
    CUstream stream_;
    const archive::Archive& archive_;
    const archive::Entry& entry_;
    const std::string image_;
    Cache* cache_{nullptr};  // once cached() ran; null: no usable cache (logged once), images are built every time
    LoadableImage out_;
};

}  // namespace

Result<LoadableImage> load_image_bytes(const ImageRooms& rooms, Driver& driver, const ServedBy& served, CUstream stream) {
    return ImageFetch(rooms, driver, served, stream).run();
}

}  // namespace sdm::runtime
