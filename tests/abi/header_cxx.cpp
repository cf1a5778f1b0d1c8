// Each public header compiles alone as C++, with warnings as errors. One file, two builds:
//   c++ -std=c++20 -Wall -Wextra -Werror -pedantic -Iinclude -c tests/abi/header_cxx.cpp                    sdm.h
//   c++ -std=c++20 -Wall -Wextra -Werror -pedantic -Iinclude -DSDM_CHECK_HPP -c tests/abi/header_cxx.cpp     sdm.hpp
// and sdm.hpp again with -std=c++17, with -fno-exceptions, and with -DSDM_HPP_EXCEPTIONS.
// The header is the first and only include.
#if defined(SDM_CHECK_HPP)
#include <sdm/sdm.hpp>
#else
#include <sdm/sdm.h>
#endif

#if defined(SDM_CHECK_HPP)

// Every member of the Result types the wrapper returns, so that a warning in any of them shows
// here and not first in a host's build.
template class sdm::Result<sdm::Runtime>;
template class sdm::Result<sdm::ArchiveInfo>;
template class sdm::Result<std::vector<sdm::ArchiveInfo>>;
template class sdm::Result<sdm::DeviceInfo>;
template class sdm::Result<int32_t>;  // also Result<sdm_device_class>: the same type
template class sdm::Result<uint32_t>;

int header_check(const sdm::Runtime& runtime);

int header_check(const sdm::Runtime& runtime) {
    const sdm::Status abi = sdm::check_abi();
    const int32_t version = runtime.driver_version().value_or(0);
    const std::string label = runtime.archive_info(0).value_or(sdm::ArchiveInfo{}).label;
#if defined(SDM_HPP_EXCEPTIONS) && defined(__cpp_exceptions)
    sdm::throw_if_error(abi);
    return sdm::value_or_throw(runtime.device_count()) + version + static_cast<int>(label.size());
#else
    return (abi ? 0 : 1) + version + static_cast<int>(label.size());
#endif
}

#else

extern "C" sdm_status header_check(const sdm_api* api);

sdm_status header_check(const sdm_api* api) { return api->struct_size >= sizeof(sdm_api) ? SDM_OK : SDM_ERROR_INVALID_ARGUMENT; }

#endif
