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
       kernel_info, kernel_function, preload, cache_stats, plan, launch, load_plugin

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
(`"ptr,f32,i32"`), a kernel declaring another throws `SDM_ERROR_MISMATCH`.
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

"What the kernel is, as a NamedTuple (image_kind: 1 cubin, 2 PTX, 3 LTO-IR, 4 fatbin)."
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
manifest order. Change one with `Sdm.sized(sdm_plan; ...)` or by building a new `sdm_plan`.
"""
function plan(k::Kernel, problem::Integer...)
    values = Int64[problem...]
    result = Ref(sized(sdm_plan))
    check(error -> sdm_plan_select(_handle(k), values, length(values), result, error))
    return result[]
end

# Kernel parameter types of a manifest signature (archive/manifest.hpp ParamType).
const PARAM_TYPES = Dict("ptr" => UInt64, "i32" => Int32, "u32" => UInt32, "i64" => Int64, "u64" => UInt64,
                         "f32" => Float32, "f64" => Float64)

_argument(::Type{UInt64}, p::Ptr) = UInt64(UInt(p))
_argument(::Type{T}, x) where {T} = convert(T, x)  # InexactError rather than a silent wrap

"""
    launch(k, plan, args; stream = C_NULL)

Launches `k` with `plan` on `stream` (a CUstream; C_NULL: the device's context current on this
thread). `args` follow the kernel's signature: device pointers as integers or `Ptr`s, numbers
converted to the signature's types (an `InexactError` if they do not fit).
"""
function launch(k::Kernel, p::sdm_plan, args; stream::Ptr{Cvoid} = C_NULL)
    signature = split(kernel_info(k).signature, ','; keepempty = false)
    values = Any[i <= length(signature) ? _argument(PARAM_TYPES[strip(signature[i])], a) : a
                 for (i, a) in enumerate(args)]
    refs = Any[Ref(v) for v in values]
    plan_ref = Ref(p)
    GC.@preserve refs begin
        pointers = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, r) for r in refs]
        check(error -> sdm_launch(_handle(k), plan_ref, stream, pointers, length(pointers), error))
    end
end

"Loads a plan-provider plugin (sdm_plugin.h)."
load_plugin(runtime::Runtime, path::AbstractString) =
    check(error -> sdm_plugin_load(_handle(runtime), String(path), error))

end # module Sdm
