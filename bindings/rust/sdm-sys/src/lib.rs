//! Raw bindings to libsdm's C ABI, `include/sdm/sdm.h`.
//!
//! Every item mirrors the header one to one: names, types, field order and values. They are
//! generated into `sdm_h.rs` by `capi/gen_abi.py` (run `python3 capi/gen_abi.py` after changing
//! the header) and re-exported here. The header's comments are the documentation; only what Rust
//! adds is commented. The `Default` of each struct is all zeros with `struct_size` set to the size
//! declared here, which is what the C ABI asks a caller to pass. Layouts are pinned by tests with
//! the numbers of `tests/abi/layout.c`.
//!
//! Safe wrappers live in the `sdm` crate.
#![no_std]
#![allow(non_camel_case_types)]

// The Default of each struct of sdm.h (sdm_h.rs lists them): zeros, struct_size set (ABI rule 4).
macro_rules! sized_default {
    ($($t:ty),* $(,)?) => {$(
        impl Default for $t {
            fn default() -> Self {
                // SAFETY: every field is an integer, a float, a raw pointer, an Option of a
                // function pointer or an array of those: all-zero bytes are a valid value (NULL,
                // None, 0).
                let mut value: Self = unsafe { core::mem::zeroed() };
                value.struct_size = core::mem::size_of::<Self>() as u32;
                value
            }
        }
    )*};
}

// The layout tests of sdm_h.rs: a field's offset and size, a struct's size and alignment.
#[cfg(test)]
macro_rules! pin_field {
    ($t:ty, $field:ident, $offset:expr, $size:expr) => {{
        assert_eq!(
            core::mem::offset_of!($t, $field),
            $offset,
            concat!(stringify!($t), ".", stringify!($field), " moved")
        );
        let value: $t = Default::default();
        assert_eq!(
            core::mem::size_of_val(&value.$field),
            $size,
            concat!(stringify!($t), ".", stringify!($field), " changed size")
        );
    }};
}
#[cfg(test)]
macro_rules! pin_size {
    ($t:ty, $size:expr, $align:expr) => {{
        assert_eq!(core::mem::size_of::<$t>(), $size, concat!("size_of::<", stringify!($t), ">() changed"));
        assert_eq!(core::mem::align_of::<$t>(), $align, concat!("align_of::<", stringify!($t), ">() changed"));
    }};
}

mod sdm_h;
pub use sdm_h::*;

#[cfg(test)]
mod defaults {
    use super::*;
    use core::mem::size_of;

    #[test]
    fn defaults_set_struct_size_and_zero_the_rest() {
        assert_eq!(sdm_runtime_params::default().struct_size as usize, size_of::<sdm_runtime_params>());
        assert_eq!(sdm_device_info::default().struct_size as usize, size_of::<sdm_device_info>());
        assert_eq!(sdm_plan::default().struct_size as usize, size_of::<sdm_plan>());
        assert!(sdm_runtime_params::default().cuda_driver.is_null());
        assert!(sdm_runtime_params::default().log_fn.is_none());
    }
}
