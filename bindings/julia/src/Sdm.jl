"""
    Sdm

Julia bindings of sdm, the CUDA kernel-archive runtime, over its C ABI (include/sdm/sdm.h).

The raw layer mirrors the header one to one: every `SDM_API` function is a Julia function of the
same name around one `ccall`, every struct an `isbits` struct with the same fields in the same
order, every constant a `const`. It is generated from the header (`src/capi.jl`, by
`capi/gen_abi.py`). Above it, a small idiomatic layer: `Runtime` (closed by `close` or its
finalizer), `Kernel`, and `SdmError` thrown on failure; `bindings/julia/check_calls.py` checks
mechanically that it calls the raw layer as the header declares it.

    using Sdm
    Runtime() do rt
        mount_file(rt, "kernels.sdma")
        k = kernel(rt, 0, "scale"; signature = "ptr,f32,i32")
        launch(k, plan(k, n), (device_pointer, 2.0f0, Int32(n)))
    end

libsdm is `libsdm.so.1` on the loader's search path, or `\$SDM_LIBRARY` (opened at load time).
"""
module Sdm

using Libdl

export SdmError, Runtime, Kernel, abi_version, version, status_string, device_class_name, check_abi,
       last_error, mount_file, mount_memory, reload_archives, poll_archives, archive_count, archive_info,
       archives, driver_version, device_count, device_info, devices, device_class, kernel, release,
       kernel_info, kernel_function, preload, cache_stats, plan, launch, load_plugin,
       launch_plan, with_fields, plan_for_elements, LaunchAttribute, kernel_global, global_write, global_read!,
       global_read, kernels, kernel_attributes, kernel_set, max_active_blocks, max_potential_block_size

# ---- the library -------------------------------------------------------------------------------

# The SONAME. `ccall` resolves it with dlopen, which returns a library already loaded under that
# SONAME: __init__ loads $SDM_LIBRARY first (the JLL packages' technique), so ccalls reach it.
const libsdm = "libsdm.so.1"

function __init__()
    path = get(ENV, "SDM_LIBRARY", "")
    isempty(path) || Libdl.dlopen(path, Libdl.RTLD_NOW | Libdl.RTLD_GLOBAL)
    return nothing
end

# ---- the raw ABI -------------------------------------------------------------------------------

# Constants, structs, opaque handles and one `ccall` function per SDM_API function, generated from
# include/sdm/sdm.h by capi/gen_abi.py.
include("capi.jl")

_zero(::Type{T}) where {T<:Number} = zero(T)
_zero(::Type{Ptr{T}}) where {T} = Ptr{T}(C_NULL)
_zero(::Type{NTuple{N,T}}) where {N,T} = ntuple(_ -> _zero(T), N)

"""
    with_fields(x; fields...)

A copy of the struct `x` with the given fields replaced: `with_fields(p; smem_bytes = 4096)` of an
`sdm_plan` (the structs of sdm.h are immutable).
"""
function with_fields(x::T; fields...) where {T}
    values = map(name -> get(fields, name, getfield(x, name)), fieldnames(T))
    return T(values...)
end

"""
    sized(T; fields...)

A struct `T` of sdm.h with `struct_size = sizeof(T)` (ABI rule 4), the given fields, and zero
elsewhere: `sized(sdm_plan; grid = 1, block = 128)`. Pass `struct_size` to say otherwise.
"""
function sized(::Type{T}; fields...) where {T}
    values = map(fieldnames(T)) do name
        default = name === :struct_size ? UInt32(sizeof(T)) : _zero(fieldtype(T, name))
        get(fields, name, default)
    end
    return T(values...)
end

# ---- errors ------------------------------------------------------------------------------------

"""
    SdmError(status, code, message, native, log)

A failed sdm call: `status` (an `SDM_ERROR_*` value), `code` (its name, `"SDM_ERROR_IO"`),
`message` (names the thing and the fix), `native` (the CUresult or nvJitLink result, else 0),
`log` (a JIT log, else "").
"""
struct SdmError <: Exception
    status::Int32
    code::String
    message::String
    native::Int32
    log::String
end

Base.showerror(io::IO, e::SdmError) = print(io, "SdmError: ", e.code, ": ", e.message)

_string(p::Cstring) = p == C_NULL ? "" : unsafe_string(p)
_string(p::Ptr{UInt8}) = p == C_NULL ? "" : unsafe_string(p)

# The SdmError of `status` and the sdm_error `error` (may be NULL), which it destroys.
function adopt_error(status::Integer, error::Ptr{sdm_error})
    try
        code = _string(sdm_status_string(status))
        error == C_NULL && return SdmError(status, code, code, 0, "")
        return SdmError(status, code, _string(sdm_error_message(error)), sdm_error_native(error),
                        _string(sdm_error_log(error)))
    finally
        sdm_error_destroy(error)
    end
end

# Calls `f(error_ref)`, an sdm call taking the error out-pointer last; throws SdmError on failure.
function check(f)
    error = Ref{Ptr{sdm_error}}(C_NULL)
    status = f(error)
    status == SDM_OK || throw(adopt_error(status, error[]))
    return nothing
end

# ---- library-wide ------------------------------------------------------------------------------

"`(major, minor)` of the ABI the library implements."
function abi_version()
    v = sdm_abi_version()
    return (Int(v >> 16), Int(v & 0xffff))
end

"The library's release, `\"MAJOR.MINOR.PATCH\"` (sdm's project version)."
version() = _string(sdm_version_string())

"The name of a status (`\"SDM_ERROR_NO_DRIVER\"`)."
status_string(status::Integer) = _string(sdm_status_string(status))

"`\"modern\"`, `\"a100\"`, `\"rtx\"` or `\"unsupported\"`."
device_class_name(device_class::Integer) = _string(sdm_device_class_name(device_class))

"Throws unless the library implements ABI $(SDM_ABI_VERSION_MAJOR).x with a minor of at least $(SDM_ABI_VERSION_MINOR)."
function check_abi()
    major, minor = abi_version()
    if major != SDM_ABI_VERSION_MAJOR || minor < SDM_ABI_VERSION_MINOR
        error("libsdm implements ABI $major.$minor; Sdm.jl needs $SDM_ABI_VERSION_MAJOR.$SDM_ABI_VERSION_MINOR or a later $SDM_ABI_VERSION_MAJOR.x")
    end
    return nothing
end

# ---- the runtime -------------------------------------------------------------------------------

# Entry `index` of `Runtime(; trusted_keys)` as its 32 bytes: an Ed25519 public key's bytes, or
# the path of the .pub file `sdm keygen` wrote (one line: "sdm-ed25519-public " and 64 hex digits).
function _trusted_key(key, index::Integer)
    if key isa AbstractString
        text = rstrip(read(key, String), ['\n', '\r'])  # line ends after the key, as libsdm reads key files
        startswith(text, "sdm-ed25519-secret ") &&
            throw(ArgumentError("trusted_keys[$index]: $key is a secret key; trust its public half (the .pub file sdm keygen wrote beside it)"))
        m = match(r"^sdm-ed25519-public ([0-9a-fA-F]{64})$", text)
        m === nothing &&
            throw(ArgumentError("trusted_keys[$index]: $key is not an sdm public key (one line: 'sdm-ed25519-public' and 64 hex digits, as sdm keygen writes)"))
        return hex2bytes(String(m.captures[1]))
    end
    length(key) == 32 ||
        throw(ArgumentError("trusted_keys[$index] is $(length(key)) bytes; an Ed25519 public key is 32 (a .pub file's path is a string)"))
    return UInt8[key...]
end

"""
    Runtime(; flags, log_level, cuda_driver, cuda_context, cache_dir, cache_max_bytes, cache_flags,
            jit_flags, kernel_abi_major, signature_policy, trusted_keys, jit_isolation,
            jit_time_limit_ms, jit_memory_limit_bytes)
    Runtime(f; options...)

An sdm runtime (`sdm_runtime_params` as keywords; their defaults are sdm's). `close(rt)`, or the
finalizer, destroys it and every `Kernel` it handed out; the `do` form closes it after `f(rt)`.
Warnings and errors go to stderr (`log_level = SDM_LOG_OFF` silences them): this layer binds no
log callback.

`signature_policy` (`SDM_SIGNATURES_*`, ABI 1.2, docs/SIGNING.md) is which archives may mount:
with `SDM_SIGNATURES_REQUIRE` an archive without a valid signature by a trusted key throws
`SDM_ERROR_UNTRUSTED` at mount. `trusted_keys` are the Ed25519 public keys trusted, at most 256:
each 32 bytes (a `Vector{UInt8}` or an `NTuple{32,UInt8}`) or the path of a `.pub` file;
`nothing`: those of `\$SDM_TRUSTED_KEYS`; a vector, even an empty one, replaces them.

`jit_isolation` (`SDM_ISOLATION_*`, ABI 1.2, docs/LOADING.md) is where PTX and LTO-IR links run:
in sdm-jit-helper, a process of their own, or in Julia's; `jit_time_limit_ms` and
`jit_memory_limit_bytes` bound them (0: the environment's, else 120 s and 8 GiB).
"""
mutable struct Runtime
    handle::Ptr{sdm_runtime}

    function Runtime(; flags::Integer = 0, log_level::Integer = SDM_LOG_DEFAULT,
                     cuda_driver::Union{Nothing,AbstractString} = nothing, cuda_context::Ptr{Cvoid} = C_NULL,
                     cache_dir::Union{Nothing,AbstractString} = nothing, cache_max_bytes::Integer = 0,
                     cache_flags::Integer = 0, jit_flags::Integer = 0, kernel_abi_major::Integer = 0,
                     signature_policy::Integer = SDM_SIGNATURES_DEFAULT,
                     trusted_keys::Union{Nothing,AbstractVector} = nothing,
                     jit_isolation::Integer = SDM_ISOLATION_DEFAULT, jit_time_limit_ms::Integer = 0,
                     jit_memory_limit_bytes::Integer = 0)
        driver = cuda_driver === nothing ? nothing : String(cuda_driver)
        cache = cache_dir === nothing ? nothing : String(cache_dir)
        # Back to back, as sdm_runtime_params takes them; one byte more, so that no keys is not
        # NULL, which would mean $SDM_TRUSTED_KEYS.
        keys = trusted_keys === nothing ? nothing :
               UInt8[reduce(vcat, [_trusted_key(k, i) for (i, k) in enumerate(trusted_keys)]; init = UInt8[]); 0x00]
        handle = Ref{Ptr{sdm_runtime}}(C_NULL)
        GC.@preserve driver cache keys begin
            params = Ref(sized(sdm_runtime_params;
                               flags = UInt32(flags), log_level = Int32(log_level),
                               cuda_driver = driver === nothing ? Ptr{UInt8}(C_NULL) : pointer(driver),
                               cuda_context = cuda_context,
                               cache_dir = cache === nothing ? Ptr{UInt8}(C_NULL) : pointer(cache),
                               cache_max_bytes = UInt64(cache_max_bytes), cache_flags = UInt32(cache_flags),
                               jit_flags = UInt32(jit_flags), kernel_abi_major = UInt32(kernel_abi_major),
                               signature_policy = UInt32(signature_policy),
                               trusted_keys = keys === nothing ? Ptr{UInt8}(C_NULL) : pointer(keys),
                               trusted_key_count = UInt32(keys === nothing ? 0 : length(trusted_keys)),
                               jit_isolation = UInt32(jit_isolation), jit_time_limit_ms = UInt32(jit_time_limit_ms),
                               jit_memory_limit_bytes = UInt64(jit_memory_limit_bytes)))
            check(error -> sdm_runtime_create(params, handle, error))
        end
        runtime = new(handle[])
        return finalizer(close, runtime)
    end
end

function Runtime(f::Function; options...)
    runtime = Runtime(; options...)
    try
        return f(runtime)
    finally
        close(runtime)
    end
end

"Destroys the runtime (unloading its modules); its kernels are invalid after. Idempotent."
function Base.close(runtime::Runtime)
    if runtime.handle != C_NULL
        sdm_runtime_destroy(runtime.handle)
        runtime.handle = C_NULL
    end
    return nothing
end

Base.isopen(runtime::Runtime) = runtime.handle != C_NULL

function _handle(runtime::Runtime)
    runtime.handle == C_NULL && throw(ArgumentError("the sdm runtime is closed"))
    return runtime.handle
end

"A copy of the last error any call on the runtime reported, or `nothing`."
function last_error(runtime::Runtime)
    last = Ref{Ptr{sdm_error}}(C_NULL)
    sdm_runtime_last_error(_handle(runtime), last) == SDM_OK || return nothing
    return adopt_error(sdm_error_code(last[]), last[])
end

# ---- archives ----------------------------------------------------------------------------------

"Mounts an archive file (mapped read-only); later mounts take precedence."
mount_file(runtime::Runtime, path::AbstractString) =
    check(error -> sdm_archive_mount_file(_handle(runtime), String(path), error))

"Mounts an archive from memory (copied); `label` names it in messages."
function mount_memory(runtime::Runtime, data::Vector{UInt8}; label::Union{Nothing,AbstractString} = nothing)
    name = label === nothing ? nothing : String(label)
    GC.@preserve data name begin
        check(error -> sdm_archive_mount_memory(_handle(runtime), pointer(data), length(data),
                                                name === nothing ? Ptr{UInt8}(C_NULL) : pointer(name), error))
    end
end

"Remounts every mounted archive file; the number replaced."
function reload_archives(runtime::Runtime)
    count = Ref{UInt32}(0)
    check(error -> sdm_runtime_reload(_handle(runtime), count, error))
    return Int(count[])
end

"Remounts the archive files changed on disk (one stat each); the number replaced."
function poll_archives(runtime::Runtime)
    count = Ref{UInt32}(0)
    check(error -> sdm_runtime_poll_archives(_handle(runtime), count, error))
    return Int(count[])
end

function archive_count(runtime::Runtime)
    count = Ref{UInt32}(0)
    check(error -> sdm_archive_count(_handle(runtime), count, error))
    return Int(count[])
end

"Mounted archive `index` (0-based, in mount order) as a NamedTuple."
function archive_info(runtime::Runtime, index::Integer)
    info = Ref(sized(sdm_archive_info))
    check(error -> sdm_archive_info_get(_handle(runtime), index, info, error))
    c = info[]
    return (label = _string(c.label), content_version = _string(c.content_version), size_bytes = Int(c.size_bytes),
            entry_count = Int(c.entry_count), kernel_count = Int(c.kernel_count),
            kernel_abi = (Int(c.kernel_abi_major), Int(c.kernel_abi_minor)),
            format_version = (Int(c.format_major), Int(c.format_minor)), embedded = c.embedded != 0)
end

archives(runtime::Runtime) = [archive_info(runtime, i) for i in 0:archive_count(runtime)-1]

# ---- driver and devices ------------------------------------------------------------------------

"The CUDA driver's version (12080 for 12.8); loads the driver if needed."
function driver_version(runtime::Runtime)
    value = Ref{Int32}(0)
    check(error -> sdm_driver_version(_handle(runtime), value, error))
    return Int(value[])
end

function device_count(runtime::Runtime)
    value = Ref{Int32}(0)
    check(error -> sdm_device_count(_handle(runtime), value, error))
    return Int(value[])
end

"Device `ordinal`, supported or not, as a NamedTuple."
function device_info(runtime::Runtime, ordinal::Integer)
    info = Ref(sized(sdm_device_info))
    check(error -> sdm_device_info_get(_handle(runtime), ordinal, info, error))
    c = info[]
    name = collect(c.name)
    return (ordinal = Int(c.ordinal), name = String(name[1:something(findfirst(iszero, name), length(name) + 1)-1]),
            capability = (Int(c.capability_major), Int(c.capability_minor)), device_class = c.device_class,
            sm_count = Int(c.sm_count), l2_bytes = Int(c.l2_bytes), smem_optin_bytes = Int(c.smem_optin_bytes),
            smem_cap_bytes = Int(c.smem_cap_bytes), smem_per_sm_bytes = Int(c.smem_per_sm_bytes),
            pdl_allowed = c.pdl_allowed != 0, clusters_allowed = c.clusters_allowed != 0, untested = c.untested != 0)
end

devices(runtime::Runtime) = [device_info(runtime, i) for i in 0:device_count(runtime)-1]

"The device's class (`SDM_DEVICE_CLASS_*`); SdmError `SDM_ERROR_UNSUPPORTED_DEVICE` outside the matrix."
function device_class(runtime::Runtime, ordinal::Integer)
    value = Ref{sdm_device_class}(0)
    check(error -> sdm_device_class_get(_handle(runtime), ordinal, value, error))
    return value[]
end

# ---- kernels -----------------------------------------------------------------------------------

"""
A kernel a Runtime fetched (`kernel`). Valid while its runtime is open, or after a reload replaced
its archive, until `release`.
"""
struct Kernel
    runtime::Runtime
    handle::Ptr{sdm_kernel}
end

_handle(k::Kernel) = (_handle(k.runtime); k.handle)

"""
    kernel(runtime, ordinal, name; stream = C_NULL, signature = nothing)

Kernel `name` on device `ordinal`, loading its module on first use. With `signature`
(`"ptr,f32,i32"`), a kernel declaring another throws `SDM_ERROR_MISMATCH`; a signature derived from
an image (what `sdm import` writes: `b32`, `b64`, ...) agrees with every typed one of its layout
(ABI 1.3: `b32` with `i32`, `u32` or `f32`, `b64` with `ptr`, `i64`, `u64` or `f64`).

`name` is what an archive lists (a C++ kernel's mangled symbol) or, since ABI 1.3, a C++ spelling
of it: the declaration as c++filt prints it (`"ns::reduce<int>(int const*, int*, int)"`), or a
name expression as CuPy takes it (`"ns::reduce<int>"`, `"fill<float, 256>"`, or `"reduce"` when
one instantiation has that name). A name matching several kernels throws `SDM_ERROR_AMBIGUOUS`
listing them; `kernels` lists the names.
"""
function kernel(runtime::Runtime, ordinal::Integer, name::AbstractString; stream::Ptr{Cvoid} = C_NULL,
                signature::Union{Nothing,AbstractString} = nothing)
    handle = Ref{Ptr{sdm_kernel}}(C_NULL)
    if signature === nothing
        check(error -> sdm_kernel_get(_handle(runtime), ordinal, String(name), stream, handle, error))
    else
        text = String(signature)
        GC.@preserve text check(error -> sdm_kernel_get_checked(_handle(runtime), ordinal, String(name), pointer(text),
                                                                stream, handle, error))
    end
    return Kernel(runtime, handle[])
end

"Drops the reference `kernel` took (matters across reloads only)."
release(k::Kernel) = check(error -> sdm_kernel_release(_handle(k.runtime), _handle(k), error))

"What the kernel is, as a NamedTuple (image_kind: SDM_IMAGE_KIND_*, source: SDM_IMAGE_SOURCE_*)."
function kernel_info(k::Kernel)
    info = Ref(sized(sdm_kernel_info))
    check(error -> sdm_kernel_info_get(_handle(k), info, error))
    c = info[]
    return (name = _string(c.name), module_name = _string(c.module_), archive = _string(c.archive),
            signature = _string(c.signature), ordinal = Int(c.ordinal), image_kind = Int(c.image_kind),
            image_sm = Int(c.image_sm), loaded_sm = Int(c.loaded_sm), source = Int(c.source))
end

"The kernel's CUfunction."
function kernel_function(k::Kernel)
    func = Ref{Ptr{Cvoid}}(C_NULL)
    check(error -> sdm_kernel_function(_handle(k), func, error))
    return func[]
end

"Loads eagerly the modules of `names`, or of every kernel of every mounted archive (`nothing`)."
function preload(runtime::Runtime, ordinal::Integer, names::Union{Nothing,AbstractVector{<:AbstractString}} = nothing)
    if names === nothing
        return check(error -> sdm_preload(_handle(runtime), ordinal, Ptr{Ptr{UInt8}}(C_NULL), 0, error))
    end
    isempty(names) && return nothing  # count 0 would mean every kernel
    strings = String[String(n) for n in names]
    GC.@preserve strings begin
        pointers = Ptr{UInt8}[pointer(s) for s in strings]
        check(error -> sdm_preload(_handle(runtime), ordinal, pointers, length(pointers), error))
    end
end

"The runtime's kernel-cache counters since its creation, as a NamedTuple."
function cache_stats(runtime::Runtime)
    stats = Ref(sized(sdm_cache_stats))
    check(error -> sdm_cache_stats_get(_handle(runtime), stats, error))
    c = stats[]
    return (hits = Int(c.hits), misses = Int(c.misses), builds = Int(c.builds), evictions = Int(c.evictions),
            bad_entries = Int(c.bad_entries), bytes_written = Int(c.bytes_written),
            build_milliseconds = c.build_milliseconds)
end

"""
    plan(k, problem...)

The `sdm_plan` for launching `k` on its device for `problem`, the kernel's problem parameters in
manifest order. Change one with `with_fields(p; ...)`, or make one with `launch_plan`.
"""
function plan(k::Kernel, problem::Integer...)
    values = Int64[problem...]
    result = Ref(sized(sdm_plan))
    check(error -> sdm_plan_select(_handle(k), values, length(values), result, error))
    return result[]
end

# (x, y, z) of an integer (x) or a tuple of one to three integers; the missing ones 1.
_dims(d::Integer, what) = (UInt32(d), UInt32(1), UInt32(1))
function _dims(d::Tuple, what)
    1 <= length(d) <= 3 || throw(ArgumentError("$what has $(length(d)) dimensions; give 1 to 3 (x, y, z)"))
    return ntuple(i -> UInt32(i <= length(d) ? d[i] : 1), 3)
end

"""
    launch_plan(grid, block; smem_bytes = 0, cooperative = false, pdl = false, priority = 0,
                cluster = (1, 1, 1))

An `sdm_plan` of `grid` blocks of `block` threads, each an integer (x) or a tuple `(x, y, z)` (ABI
1.3: 3-D; missing dimensions are 1), with `smem_bytes` of dynamic shared memory per block.
`cooperative` sets `SDM_PLAN_COOPERATIVE` (grid-wide sync: refused unless the device supports it
and the whole grid can be resident at once), `pdl` `SDM_PLAN_PDL`; `priority` is the launch's
priority within the context's stream priority range (0: the stream's own). Its `rule` is -1.
"""
function launch_plan(grid, block; smem_bytes::Integer = 0, cooperative::Bool = false, pdl::Bool = false,
                     priority::Integer = 0, cluster = (1, 1, 1))
    g, b, c = _dims(grid, "grid"), _dims(block, "block"), _dims(cluster, "cluster")
    flags = (cooperative ? SDM_PLAN_COOPERATIVE : UInt32(0)) | (pdl ? SDM_PLAN_PDL : UInt32(0))
    return sized(sdm_plan; flags = UInt32(flags), grid = g[1], grid_y = g[2], grid_z = g[3], block = b[1],
                 block_y = b[2], block_z = b[3], smem_bytes = UInt32(smem_bytes), cluster = c, rule = Int32(-1),
                 priority = Int32(priority))
end

"""
    plan_for_elements(k, elements; smem_bytes = 0)

An `sdm_plan` for a kernel without plan rules (ABI 1.3): one thread per element of `elements`, in
blocks of the size the driver's occupancy calculator suggests for `k` with `smem_bytes` of dynamic
shared memory, and as many blocks as cover them (`rule` -1, `occupancy` the driver's blocks per
SM). 0 elements or more than 2^31-1 blocks throws `SDM_ERROR_INVALID_ARGUMENT`.
"""
function plan_for_elements(k::Kernel, elements::Integer; smem_bytes::Integer = 0)
    result = Ref(sized(sdm_plan))
    check(error -> sdm_plan_for_elements(_handle(k), UInt64(elements), UInt32(smem_bytes), result, error))
    return result[]
end

"""
    kernel_attributes(k)

What the driver says of the kernel's function (ABI 1.4: the `cuFuncGetAttribute` set), as a
NamedTuple; `has_cluster` says the cluster fields were read (a device of 9.0 or later). Unlike
`kernel_function`, it does not hand the CUfunction out.
"""
function kernel_attributes(k::Kernel)
    attributes = Ref(sized(sdm_kernel_attributes))
    check(error -> sdm_kernel_attributes_get(_handle(k), attributes, error))
    c = attributes[]
    return (max_threads_per_block = Int(c.max_threads_per_block), shared_size_bytes = Int(c.shared_size_bytes),
            const_size_bytes = Int(c.const_size_bytes), local_size_bytes = Int(c.local_size_bytes),
            num_regs = Int(c.num_regs), ptx_version = Int(c.ptx_version), binary_version = Int(c.binary_version),
            cache_mode_ca = Int(c.cache_mode_ca), max_dynamic_shared_size_bytes = Int(c.max_dynamic_shared_size_bytes),
            preferred_shared_memory_carveout = Int(c.preferred_shared_memory_carveout),
            has_cluster = (c.flags & SDM_KERNEL_ATTRIBUTES_CLUSTER) != 0,
            cluster_size_must_be_set = Int(c.cluster_size_must_be_set), required_cluster_width = Int(c.required_cluster_width),
            required_cluster_height = Int(c.required_cluster_height), required_cluster_depth = Int(c.required_cluster_depth),
            non_portable_cluster_size_allowed = Int(c.non_portable_cluster_size_allowed),
            cluster_scheduling_policy_preference = Int(c.cluster_scheduling_policy_preference))
end

"""
    kernel_set(k, setting, value)

Sets `setting` (`SDM_KERNEL_SETTING_MAX_DYNAMIC_SHARED_BYTES`, `SDM_KERNEL_SETTING_PREFERRED_CARVEOUT`)
to `value` on the kernel's function and records it for its name on its device: the kernel fetched
again after a reload gets it too (ABI 1.4). Past the device's limit: `SDM_ERROR_INVALID_ARGUMENT`.
"""
kernel_set(k::Kernel, setting::Integer, value::Integer) =
    check(error -> sdm_kernel_set(_handle(k), Int32(setting), Int32(value), error))

"Blocks of `block_threads` threads with `smem_bytes` of dynamic shared memory resident per SM (ABI 1.4)."
function max_active_blocks(k::Kernel, block_threads::Integer; smem_bytes::Integer = 0)
    blocks = Ref{Int32}(0)
    check(error -> sdm_kernel_max_active_blocks(_handle(k), UInt32(block_threads), UInt32(smem_bytes), blocks, error))
    return Int(blocks[])
end

"(block_threads, min_grid_blocks) of the highest occupancy (`cuOccupancyMaxPotentialBlockSize`; ABI 1.4)."
function max_potential_block_size(k::Kernel; smem_bytes::Integer = 0, block_threads_limit::Integer = 0)
    block, grid = Ref{Int32}(0), Ref{Int32}(0)
    check(error -> sdm_kernel_max_potential_block_size(_handle(k), UInt32(smem_bytes), UInt32(block_threads_limit), block, grid, error))
    return (block_threads = Int(block[]), min_grid_blocks = Int(grid[]))
end

# Kernel parameter types of a manifest signature (archive/manifest.cpp kParamTypes): the typed
# ones convert the argument; b8..b64 (derived from an image, ABI 1.3) take any isbits value of
# their size as it is, and an integer or float converted to the signed integer or float of that
# size; bf16 a 2-byte bits value; opaque:SIZE:ALIGN an isbits value or a byte vector of SIZE bytes.
const PARAM_TYPES = Dict("ptr" => UInt64, "i32" => Int32, "u32" => UInt32, "i64" => Int64, "u64" => UInt64,
                         "f32" => Float32, "f64" => Float64, "f16" => Float16)
const BITS_TYPES = Dict("b8" => (Int8, UInt8), "b16" => (Int16, Float16), "b32" => (Int32, Float32),
                        "b64" => (Int64, Float64))

_argument(::Type{UInt64}, p::Ptr) = UInt64(UInt(p))
_argument(::Type{T}, x) where {T} = convert(T, x)  # InexactError rather than a silent wrap

function _argument(type::AbstractString, x, index::Integer)
    haskey(PARAM_TYPES, type) && return _argument(PARAM_TYPES[type], x)
    if type == "bf16"  # Base has no BFloat16: its 2 bytes as they are (a BFloat16, a UInt16 of its bits)
        isbits(x) && sizeof(x) == 2 && return x
        throw(ArgumentError("kernel argument $index: a $(typeof(x)) for a bf16 parameter (2 bytes: a BFloat16 or its bits as a UInt16)"))
    end
    if haskey(BITS_TYPES, type)
        integer, float = BITS_TYPES[type]
        x isa Ptr && integer === Int64 && return _argument(UInt64, x)
        isbits(x) && sizeof(x) == sizeof(integer) && return x
        x isa Signed && return convert(integer, x)
        x isa Unsigned && return convert(unsigned(integer), x)
        x isa AbstractFloat && float <: AbstractFloat && return convert(float, x)
        throw(ArgumentError("kernel argument $index: a $(typeof(x)) for a $type parameter ($(sizeof(integer)) bytes)"))
    end
    m = match(r"^opaque:(\d+):(\d+)$", type)
    if m !== nothing
        bytes = parse(Int, m.captures[1])
        x isa AbstractVector{UInt8} && length(x) == bytes && return Tuple(x)
        isbits(x) && sizeof(x) == bytes && return x
        throw(ArgumentError("kernel argument $index: a $(typeof(x)) of $(sizeof(x)) bytes for an $type parameter"))
    end
    throw(ArgumentError("kernel argument $index: parameter type $type is unknown to Sdm.jl ($(typeof(x)) passed)"))
end

"""
    LaunchAttribute(id, value)

One `CUlaunchAttribute` of cuda.h (a 4-byte id, padding, a 64-byte value union; 72 bytes aligned
to 8) for `launch(...; attributes)` (ABI 1.3): the attributes sdm has no plan field for.
`value` is an `Int32` (an `int` or enum value: a memory sync domain, a carveout) or the union's
bytes (at most 64).
"""
struct LaunchAttribute
    id::UInt32
    pad::UInt32
    value::NTuple{8,UInt64}
end

LaunchAttribute(id::Integer, value::Integer) = LaunchAttribute(id, reinterpret(UInt8, [Int32(value)]))
function LaunchAttribute(id::Integer, value::AbstractVector{UInt8})
    length(value) <= 64 || throw(ArgumentError("launch attribute $id: a value of $(length(value)) bytes (a CUlaunchAttributeValue holds 64)"))
    bytes = zeros(UInt8, 64)
    bytes[1:length(value)] .= value
    return LaunchAttribute(UInt32(id), UInt32(0), Tuple(reinterpret(UInt64, bytes)))
end

"""
    launch(k, plan, args; stream = C_NULL, attributes = LaunchAttribute[])

Launches `k` with `plan` on `stream` (a CUstream; C_NULL: the device's context current on this
thread). `args` follow the kernel's signature: device pointers as integers or `Ptr`s, numbers
converted to the signature's types (an `InexactError` if they do not fit); for a signature
derived from an image (`b32`, `b64`, ...), any bits value of the size, or an integer or float
converted to one. `attributes` (ABI 1.3) go to cuLaunchKernelEx after sdm's own; at most 16, and
none that a plan field sets (cluster, PDL, cooperative, priority).
"""
function launch(k::Kernel, p::sdm_plan, args; stream::Ptr{Cvoid} = C_NULL,
                attributes::AbstractVector{LaunchAttribute} = LaunchAttribute[])
    signature = split(kernel_info(k).signature, ','; keepempty = false)
    values = Any[i <= length(signature) ? _argument(String(strip(signature[i])), a, i - 1) : a
                 for (i, a) in enumerate(args)]
    refs = Any[Ref(v) for v in values]
    extra = Vector{LaunchAttribute}(attributes)
    GC.@preserve refs extra begin
        chain = Ref(sized(sdm_launch_attributes; type = SDM_CHAIN_LAUNCH_ATTRIBUTES,
                          attributes = Ptr{Cvoid}(pointer(extra)), count = UInt32(length(extra))))
        GC.@preserve chain begin
            next = isempty(extra) ? Ptr{sdm_chain}(C_NULL) :
                   Ptr{sdm_chain}(Base.unsafe_convert(Ptr{sdm_launch_attributes}, chain))
            plan_ref = Ref(with_fields(p; next = next))
            pointers = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, r) for r in refs]
            check(error -> sdm_launch(_handle(k), plan_ref, stream, pointers, length(pointers), error))
        end
    end
end

# ---- module globals (ABI 1.3) ------------------------------------------------------------------

"""
    kernel_global(k, name)

The `__device__` or `__constant__` variable `name` (its symbol: mangled for a C++ variable in a
namespace) of `k`'s module as loaded for its device and context: `(address = UInt64, bytes = Int)`.
None such throws `SDM_ERROR_NOT_FOUND`; a kernel's name `SDM_ERROR_INVALID_ARGUMENT`.
"""
function kernel_global(k::Kernel, name::AbstractString)
    address, bytes = Ref{UInt64}(0), Ref{UInt64}(0)
    check(error -> sdm_global_get(_handle(k), String(name), address, bytes, error))
    return (address = address[], bytes = Int(bytes[]))
end

_bits_array(data) = isbitstype(eltype(data)) ||
                    throw(ArgumentError("a global is copied from and to an array of bits types, not of $(eltype(data))"))

"""
    global_write(k, name, data; offset = 0, stream = C_NULL)

Copies `data` (a dense array of bits values, or one such value) to the global `name` at byte
`offset`, on `stream` (C_NULL: the context's default stream), as cuMemcpyHtoDAsync does: from
Julia's (pageable) memory the driver has taken the bytes when it returns. A range past the
global's size throws `SDM_ERROR_INVALID_ARGUMENT`.
"""
function global_write(k::Kernel, name::AbstractString, data::DenseArray; offset::Integer = 0, stream::Ptr{Cvoid} = C_NULL)
    _bits_array(data)
    GC.@preserve data check(error -> sdm_global_write(_handle(k), String(name), UInt64(offset), pointer(data),
                                                      UInt64(sizeof(data)), stream, error))
end
global_write(k::Kernel, name::AbstractString, value::Number; options...) = global_write(k, name, [value]; options...)

"""
    global_read!(k, name, out; offset = 0, stream = C_NULL)

Copies `sizeof(out)` bytes of the global `name` from byte `offset` into `out` (a dense array of
bits values), as cuMemcpyDtoHAsync does: into Julia's (pageable) memory the copy is done when it
returns. Returns `out`.
"""
function global_read!(k::Kernel, name::AbstractString, out::DenseArray; offset::Integer = 0, stream::Ptr{Cvoid} = C_NULL)
    _bits_array(out)
    GC.@preserve out check(error -> sdm_global_read(_handle(k), String(name), UInt64(offset), pointer(out),
                                                    UInt64(sizeof(out)), stream, error))
    return out
end

"""
    global_read(k, name, T[, count]; offset = 0)

`count` values of type `T` read from the global `name` at byte `offset` (default: as many as fit
in the global after `offset`).
"""
function global_read(k::Kernel, name::AbstractString, ::Type{T}, count::Integer = -1; offset::Integer = 0,
                     stream::Ptr{Cvoid} = C_NULL) where {T}
    n = count >= 0 ? count : (kernel_global(k, name).bytes - offset) ÷ sizeof(T)
    return global_read!(k, name, Vector{T}(undef, n); offset = offset, stream = stream)
end

# ---- kernel listing (ABI 1.3) ------------------------------------------------------------------

"""
    kernels(runtime; archive = nothing)

The kernels of mounted archive `archive` (0-based, in mount order; `shadowed` when a newer mounted
archive lists the name and serves it instead), or, for `nothing`, every kernel the runtime serves,
each name once from the newest archive listing it: a snapshot sorted by name, as NamedTuples
(`archive_index`, `name`: what the archive lists, `demangled`: as c++filt prints it or "",
`module_name`, `signature`, `targets`, `shadowed`). An index past the mounted archives throws
`SDM_ERROR_NOT_FOUND`.
"""
function kernels(runtime::Runtime; archive::Union{Nothing,Integer} = nothing)
    index = archive === nothing ? SDM_LIST_SERVED : UInt32(archive)
    list = Ref{Ptr{sdm_kernel_list}}(C_NULL)
    check(error -> sdm_kernel_list_create(_handle(runtime), index, list, error))
    try
        count = Ref{UInt32}(0)
        check(error -> sdm_kernel_list_count(list[], count, error))
        return map(0:Int(count[])-1) do i
            entry = Ref(sized(sdm_kernel_entry))
            check(error -> sdm_kernel_list_get(list[], i, entry, error))
            c = entry[]
            (archive_index = Int(c.archive_index), name = _string(c.name), demangled = _string(c.demangled),
             module_name = _string(c.module_), signature = _string(c.signature), targets = _string(c.targets),
             shadowed = c.shadowed != 0)
        end
    finally
        sdm_kernel_list_destroy(list[])
    end
end

"Loads a plan-provider plugin (sdm_plugin.h)."
load_plugin(runtime::Runtime, path::AbstractString) =
    check(error -> sdm_plugin_load(_handle(runtime), String(path), error))

end # module Sdm
