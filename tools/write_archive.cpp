#include "write_archive.hpp"
#include "archive/file_map.hpp"
#include "archive/archive.hpp"
#include "archive/verify.hpp"

namespace sdm::tools {

Result<ByteVector> finish_verified_archive(archive::ArchiveWriter& writer, const std::string& label, archive::WriterReport* report,
                                           const std::string& sign_key) {
    SDM_TRY_GET(bytes, writer.finish(report));
    if (!sign_key.empty()) {
        SDM_TRY_GET(signed_bytes, sign_bytes(*bytes, label, sign_key));
        *bytes = std::move(*signed_bytes);
    }
    // Read back what was written before anything uses it.
    auto check = archive::Archive::open_memory(*bytes, label);
    const Result<void> checked = check ? archive::verify_archive(*check) : Result<void>(check.error());
    if (!checked)
        return make_error(ErrorCode::internal, "internal error: the archive written for " + label + " does not verify: " + checked.error().message);
    return std::move(*bytes);
}

Result<size_t> write_verified_archive(archive::ArchiveWriter& writer, const std::string& output, archive::WriterReport* report,
                                      const std::string& sign_key) {
    SDM_TRY_GET(bytes, finish_verified_archive(writer, output, report, sign_key));
    SDM_TRY(archive::write_file_atomic(output, *bytes));
    return bytes->size();
}

}  // namespace sdm::tools
