// libFuzzer target: open an archive from arbitrary bytes (its signature block included), check its
// signatures, walk its index, read every entry (with the signed digests enforced when it carries a
// block), decode the manifest, parse every image, and run the full verification. Built with checksums
// skipped (FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION) so the fuzzer reaches the structure behind
// them; the corpus replay test builds it with checksums on.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/crypto.hpp"
#include "archive/image.hpp"
#include "archive/signature_check.hpp"
#include "archive/manifest.hpp"
#include "archive/archive.hpp"
#include "archive/verify.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sdm;
    using namespace sdm::archive;
    auto archive = Archive::open_memory({reinterpret_cast<const std::byte*>(data), size}, "fuzz");
    if (!archive) return 0;
    if (archive->signature_block() && crypto::available()) {
        const crypto::PublicKey anyone{};  // a key no signature verifies under: the check's whole path, never a success
        (void)check_signatures(*archive, std::vector<crypto::PublicKey>{anyone});
        (void)signer_ids(*archive);
        (void)archive->enforce_digests();
    }
    for (size_t i = 0; i < archive->entries().size(); ++i) {
        const Entry& e = archive->entries()[i];
        (void)archive->find(e.name, e.kind, e.sm, e.variant);
        if (e.raw_size > (64u << 20)) continue;  // within the format's limits, but not worth a fuzzer's memory
        auto raw = archive->read(i);
        if (!raw) continue;
        if (e.kind == Kind::manifest) (void)decode_manifest(*raw);
        else if (e.kind != Kind::dictionary) (void)inspect_image(e.kind, *raw);
    }
    (void)verify_archive(*archive);
    return 0;
}
