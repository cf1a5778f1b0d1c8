# sdm_add_archive: compile CUDA sources with nvcc and pack what they give into an sdm archive, at
# build time. Included by sdmConfig.cmake (find_package(sdm)); needs the sdm tool (sdm_TOOL).
#
#   sdm_add_archive(<target>
#     SOURCES a.cu b.cu ...        # one module per source, named after its file (a, b)
#     [ARCHS 80 90 ...]            # a cubin per source and arch (sm_80, sm_90; 90a, 100f too)
#     [PTX 90 ...]                 # PTX per source and virtual arch (compute_90), for newer GPUs
#     [MANIFEST kernels.toml]      # optional: plans, kernel ABI and content versions, declared
#                                  # signatures (checked against the images)
#     [SIGN <secret key file>]     # optional: sign the archive with this key (from sdm keygen;
#                                  # sdm pack --sign); a host trusts its .pub
#     [OUTPUT <file>]              # default: ${CMAKE_CURRENT_BINARY_DIR}/<target>.sdma
#     [NVCC_FLAGS -O3 ...]         # passed to every nvcc call
#     [NAME_EXPRESSIONS "a=fill<float, 256>" ...]  # MODULE=EXPRESSION: names hosts fetch kernels by,
#                                  # lowered with NVRTC from that module's source into the manifest
#                                  # (sdm pack --name-expression; docs/LOADING.md, "Kernel names")
#     [NVRTC_OPTIONS -std=c++17 ...])  # for NVRTC when it lowers them (-I, -D, -std as nvcc had)
#
# Builds <target> (part of ALL); its property SDM_ARCHIVE_FILE is the archive's path, for a host to
# install or to pass to sdm_archive_mount_file. Without a manifest every __global__ entry of every
# image is a kernel, with its signature derived from the image (docs/FORMAT.md). nvcc is found as
# CMAKE_CUDA_COMPILER, then on PATH, then under $CUDA_HOME/bin or /usr/local/cuda/bin.
#
# Header dependencies: each nvcc call writes a make-style depfile (-MD -MF <image>.d -MT <image>),
# given to add_custom_command(DEPFILE), so editing a header a source includes rebuilds its images
# and the archive. DEPFILE needs CMake 3.20 with the Makefile generators (3.7 with Ninja); older
# Makefile builds fall back to IMPLICIT_DEPENDS CXX (CMake's own scan of the #includes, blind to
# include paths given only in NVCC_FLAGS); other generators on an older CMake track the sources only.
# DEPFILE paths as CMake 3.20+ reads them with Ninja (relative to the current binary directory;
# ours are absolute): set here, where sdm_add_archive is defined, so a project on an older
# cmake_minimum_required gets no CMP0116 warning. include() scopes it to this file.
if(POLICY CMP0116)
  cmake_policy(SET CMP0116 NEW)
endif()

# The nvcc flags and add_custom_command options that track an image's headers, into the caller's
# depflags and depopts (by the caller's deps: depfile, implicit or none). -MT names the target as
# the OUTPUT path CMake gives the rule (nvcc would write the -o path as given; the same here, but
# stated rather than assumed).
macro(_sdm_image_deps image source)
  set(depflags)
  set(depopts)
  if(deps STREQUAL "depfile")
    set(depflags -MD -MF "${image}.d" -MT "${image}")
    set(depopts DEPFILE "${image}.d")
  elseif(deps STREQUAL "implicit")
    set(depopts IMPLICIT_DEPENDS CXX "${source}")
  endif()
endmacro()

function(sdm_add_archive target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "MANIFEST;OUTPUT;SIGN" "SOURCES;ARCHS;PTX;NVCC_FLAGS;NAME_EXPRESSIONS;NVRTC_OPTIONS")
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "sdm_add_archive(${target}): unknown arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT arg_SOURCES)
    message(FATAL_ERROR "sdm_add_archive(${target}): SOURCES is required")
  endif()
  if(NOT arg_ARCHS AND NOT arg_PTX)
    message(FATAL_ERROR "sdm_add_archive(${target}): give ARCHS (cubins) or PTX (virtual archs), or both")
  endif()
  if(NOT sdm_TOOL)
    message(FATAL_ERROR "sdm_add_archive(${target}): the sdm tool is not installed with this sdm (built with -Dtools=disabled?)")
  endif()
  if(CMAKE_CUDA_COMPILER)
    set(nvcc "${CMAKE_CUDA_COMPILER}")
  else()
    find_program(SDM_NVCC nvcc HINTS "$ENV{CUDA_HOME}/bin" /usr/local/cuda/bin)
    if(NOT SDM_NVCC)
      message(FATAL_ERROR "sdm_add_archive(${target}): nvcc not found; set CMAKE_CUDA_COMPILER or CUDA_HOME")
    endif()
    set(nvcc "${SDM_NVCC}")
  endif()
  if(arg_OUTPUT)
    set(output "${arg_OUTPUT}")
  else()
    set(output "${CMAKE_CURRENT_BINARY_DIR}/${target}.sdma")
  endif()
  set(work "${CMAKE_CURRENT_BINARY_DIR}/${target}.sdm")
  # How header dependencies are tracked (see above): depfile, implicit or none.
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.20 OR CMAKE_GENERATOR MATCHES "Ninja")
    set(deps depfile)
  elseif(CMAKE_GENERATOR MATCHES "Makefiles")
    set(deps implicit)
  else()
    set(deps none)
  endif()
  set(images)
  set(image_args)
  set(name_args)
  set(sources)
  foreach(source IN LISTS arg_SOURCES)
    get_filename_component(path "${source}" ABSOLUTE)
    get_filename_component(module "${source}" NAME_WE)
    list(APPEND sources "${path}")
    if(arg_NAME_EXPRESSIONS)
      list(APPEND name_args --source "${module}=${path}")
    endif()
    foreach(arch IN LISTS arg_ARCHS)
      set(image "${work}/${module}.sm_${arch}.cubin")
      _sdm_image_deps("${image}" "${path}")
      add_custom_command(OUTPUT "${image}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${work}"
        COMMAND "${nvcc}" -cubin -arch=sm_${arch} ${arg_NVCC_FLAGS} ${depflags} -o "${image}" "${path}"
        DEPENDS "${path}" ${depopts} COMMENT "nvcc ${module}.cu for sm_${arch}" VERBATIM)
      list(APPEND images "${image}")
      list(APPEND image_args "${module}:sm_${arch}=${image}")
    endforeach()
    foreach(arch IN LISTS arg_PTX)
      set(image "${work}/${module}.compute_${arch}.ptx")
      _sdm_image_deps("${image}" "${path}")
      add_custom_command(OUTPUT "${image}"
        COMMAND "${CMAKE_COMMAND}" -E make_directory "${work}"
        COMMAND "${nvcc}" -ptx -arch=compute_${arch} ${arg_NVCC_FLAGS} ${depflags} -o "${image}" "${path}"
        DEPENDS "${path}" ${depopts} COMMENT "nvcc ${module}.cu to PTX for compute_${arch}" VERBATIM)
      list(APPEND images "${image}")
      list(APPEND image_args "${module}:compute_${arch}=${image}")
    endforeach()
  endforeach()
  set(manifest_args)
  set(manifest_dep)
  if(arg_MANIFEST)
    get_filename_component(manifest "${arg_MANIFEST}" ABSOLUTE)
    set(manifest_args -m "${manifest}")
    set(manifest_dep "${manifest}")
  endif()
  foreach(expression IN LISTS arg_NAME_EXPRESSIONS)
    list(APPEND name_args --name-expression "${expression}")
  endforeach()
  foreach(option IN LISTS arg_NVRTC_OPTIONS)
    list(APPEND name_args "--nvrtc-option=${option}")
  endforeach()
  set(sign_args)
  set(sign_dep)
  if(arg_SIGN)
    get_filename_component(key "${arg_SIGN}" ABSOLUTE)
    set(sign_args --sign "${key}")
    set(sign_dep "${key}")
  endif()
  add_custom_command(OUTPUT "${output}"
    COMMAND "${sdm_TOOL}" pack -q ${manifest_args} ${sign_args} ${name_args} -o "${output}" ${image_args}
    DEPENDS ${images} ${manifest_dep} ${sign_dep} ${sources} "${sdm_TOOL}" COMMENT "sdm pack ${target}" VERBATIM)
  add_custom_target(${target} ALL DEPENDS "${output}")
  set_target_properties(${target} PROPERTIES SDM_ARCHIVE_FILE "${output}")
endfunction()
