#include "mounted_archive.hpp"

#include "archive/identity.hpp"

namespace sdm::runtime {

const Hash128& MountedArchive::identity() const {
    std::call_once(identity_once->once, [this] { identity_once->value = archive::identity(archive); });
    return identity_once->value;
}

}  // namespace sdm::runtime
