// Writing an archive file, as `sdm pack`, `import`, `jit` and `sign` do: verified before it
// replaces anything, signed when asked.
#pragma once

#include <string>

#include "archive/writer.hpp"
#include "common/bytes.hpp"
#include "common/result.hpp"

namespace sdm::tools {

// Finishes `writer`, reads the bytes back through the full verification, and only then replaces
// `output` atomically. Returns the archive's size; errors name the file.
// With `sign_key` (a secret key file), the archive is signed before it is written.
Result<size_t> write_verified_archive(archive::ArchiveWriter& writer, const std::string& output, archive::WriterReport* report,
                                      const std::string& sign_key = {});
// The same in memory: the archive's bytes, signed when asked and read back through the full
// verification; `label` names it in messages (a file, "part sm_90 of k.sdma").
Result<ByteVector> finish_verified_archive(archive::ArchiveWriter& writer, const std::string& label, archive::WriterReport* report,
                                           const std::string& sign_key = {});


// `bytes` (an archive) with a signature by the secret key in `secret_path` added.
Result<ByteVector> sign_bytes(Bytes bytes, const std::string& label, const std::string& secret_path);

}  // namespace sdm::tools
