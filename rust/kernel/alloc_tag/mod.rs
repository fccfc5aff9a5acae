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
//! module.
//!
//! # Layers
//!
//! Each file uses only the files above it in this list, never one below.
//! The modules are private; users see [`AllocTag`] and [`Counters`], the
//! kernel crate's allocators the site lookup, and C the entry points each
//! module exports. The profiler's own tests reach a few internals through
//! `testing` (`CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS`).
//!
//! 1. Pure code, no state: [`parse`] (the boot values),
//!    [`demangle`] (Rust symbol names), [`layout`] (Rust's view of the C
//!    structs checked against C's at compile time), [`hook_page`] (the pages
//!    and folios a page hook's caller owns), [`keys`] (the static keys C
//!    defines), [`hook_module`] (the modules the loader's hooks get),
//!    [`sites_mem`] (zeroed memory kept for good, and the pointers that
//!    publish it), with `MEM_ALLOC_PROFILING_CAPTURE` `capture_c` (capture's
//!    C calls: the stack, its printing, the static calls, the refill, the
//!    control file); per-CPU and seq_file access are the crate's
//!    [`crate::percpu`] and [`crate::seq_file`].
//! 2. [`tag`]: the tag type, its per-CPU counters and code tag fields, and
//!    where vmlinux's tags are.
//! 3. State and stores: [`control`] (the static key, whether profiling is
//!    supported, `sysctl.vm.mem_profiling=` and what the sysctl reads and
//!    lets a write do), [`tag_ref`] (an object's tag reference;
//!    `__alloc_tag_add()` and `__alloc_tag_sub()`), [`compressed`] (page
//!    tags as indexes in `page->flags`, the store chosen once at boot), and
//!    with `MEM_ALLOC_PROFILING_CAPTURE` `record_pool` (capture's records,
//!    their chunks and lists) and `record` (capture's record path: the
//!    armed sites' state, the pool's refill, the capturing entry points;
//!    without the option `no_capture` stands in for it and `capture`);
//!    then [`node`] (per-node attribution: the corrections of a tag's
//!    nodes, and a tag read per node), then [`tag_mem`] (a module's tag
//!    area, and the counters of tags that go live); for the Rust call
//!    sites, [`sites_lock`] (their locks, and the data the sites lock
//!    serialises without holding it) and [`caller`] (a site's module and
//!    the symbols on the stack, from C).
//! 4. [`registry`]: the tags of vmlinux, of each module and of each block of
//!    Rust call-site tags, as generic segments under one read-write
//!    semaphore. It learns about its users through [`registry::Hooks`], as
//!    codetag's users do through `struct codetag_type_desc`.
//! 5. Users: with `MEM_ALLOC_PROFILING_CAPTURE`, `capture` (arming,
//!    disarming and the report of the callers of armed sites), then [`page`]
//!    (the page allocator's hooks over `page_ext` or [`compressed`]; it asks
//!    `record` about references holding a record), [`rust_sites`] (the tags
//!    of Rust call sites, found from the caller's `#[track_caller]` location
//!    by `kernel::alloc`), [`ioctl`]
//!    (the `ALLOCINFO_IOC_*` ioctls), [`report`] (`/proc/allocinfo` and the
//!    top users for `show_mem()`), [`sysctl`] (the `vm` sysctls' table and
//!    handler over [`control`]).
//! 6. [`init`]: the profiler's initcall and the module loader's hooks, which
//!    set the others up, load and unload modules, in order, and give the
//!    registry its hooks.
//! 7. [`exports`]: every function C calls, each a shim over the module above
//!    that does the work; and with `CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS`,
//!    `testing`.
//!
//! # Lock order
//!
//! Each lock is only taken with none or some of those above it held:
//!
//! 1. The registry's read-write semaphore (`alloc_tag_registry`): read by
//!    `/proc/allocinfo` (from seq_file `start` to `stop`), each ioctl,
//!    capture's arm, disarm and report, and `show_mem()` (trylock only, from
//!    `alloc_tag_top_users_begin()` to `_end()`); written by module load and
//!    unload, reclaim and the adding of a block of Rust call-site tags. May
//!    sleep; allocates with `GFP_KERNEL` when written.
//! 2. Capture's control mutex (arm, disarm, its report, module unload),
//!    held across the static-call switch of `alloc_tag_add`/`alloc_tag_sub`.
//! 3. The Rust sites' raw spinlock (interrupts off): taken when a site
//!    registers (a Rust allocation from a new site, in any context but NMI,
//!    under whatever its caller holds), when sites are added or freed, and
//!    under the registry held for writing when a module goes and at
//!    reclaim. Nothing is taken, allocated or waited for under it.
//! 4. Capture's raw spinlock (interrupts off): from the slab, percpu and
//!    page hooks of an armed site's allocations, from a page split,
//!    migration or tail-page free whose reference holds a record, and under
//!    the control mutex.
//!
//! The two spinlocks are never held together. No lock of the core is held
//! across a grace-period wait (`synchronize_rcu_tasks()`,
//! `kvfree_rcu_barrier()`) or a static-key change, and the allocation hot
//! paths (the slab, percpu and page hooks, and a known Rust site's lookup)
//! take none while no site is armed for capture.

// The modules the `testing` surface re-exports from keep those items `pub`;
// without the test hooks nothing reaches them from outside.
mod caller;
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
mod capture;
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
mod capture_c;
#[cfg_attr(not(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS), allow(unreachable_pub))]
mod compressed;
mod control;
#[cfg_attr(not(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS), allow(unreachable_pub))]
mod demangle;
mod exports;
mod hook_module;
mod hook_page;
mod init;
#[cfg_attr(not(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS), allow(unreachable_pub))]
mod ioctl;
mod keys;
mod layout;
#[cfg(not(CONFIG_MEM_ALLOC_PROFILING_CAPTURE))]
mod no_capture;
mod node;
mod page;
#[cfg_attr(not(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS), allow(unreachable_pub))]
mod parse;
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
mod record;
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
mod record_pool;
#[cfg(not(CONFIG_MEM_ALLOC_PROFILING_CAPTURE))]
use no_capture::{capture, record};
mod registry;
mod report;
#[cfg_attr(not(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS), allow(unreachable_pub))]
mod rust_sites;
mod sites_lock;
mod sites_mem;
mod sysctl;
mod tag;
mod tag_mem;
mod tag_ref;
#[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
pub mod testing;

pub(crate) use rust_sites::tag_for;
pub use tag::{AllocTag, Counters};
