// SPDX-License-Identifier: GPL-2.0

//! Memory allocation profiling, the core.
//!
//! C headers: [`include/linux/alloc_tag.h`](srctree/include/linux/alloc_tag.h),
//! [`include/linux/pgalloc_tag.h`](srctree/include/linux/pgalloc_tag.h)
//!
//! Every allocation call site in C has a static [`AllocTag`] in the
//! `alloc_tags` section (the `alloc_hooks()` macro defines it and points
//! `current->alloc_tag` at it around the allocation). The allocators' hooks,
//! guarded in C by the `mem_alloc_profiling_key` static key, call into this
//! module:
//!
//! - [`tag_ref`]: charging and uncharging through an object's tag reference
//!   (slab object extensions, percpu chunk extensions);
//! - [`page`]: the page allocator's hooks, split and migration, over the
//!   page's tag reference in `page_ext` or its tag index in `page->flags`
//!   ([`compressed`]), chosen once at boot;
//! - [`registry`]: the tags of vmlinux and of each loaded module;
//! - [`control`]: the static key, `sysctl.vm.mem_profiling=` and
//!   `/proc/sys/vm/mem_profiling`;
//! - [`report`]: `/proc/allocinfo` and the top users for `show_mem()`;
//! - [`rust_sites`]: the tags of Rust call sites, found from the caller's
//!   `#[track_caller]` location by the `kernel::alloc` allocators.
//!
//! [`tag`] defines the tag type, [`AllocTag`], and its per-CPU counters.

#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
pub mod capture;
pub mod compressed;
pub mod control;
pub mod demangle;
pub mod init;
pub mod ioctl;
pub mod layout;
pub mod page;
pub mod parse;
pub mod registry;
pub mod report;
pub mod rust_sites;
pub mod tag;
pub mod tag_ref;

pub use tag::{AllocTag, Counters};
