// SPDX-License-Identifier: GPL-2.0

//! Start-up, module load and module unload: the profiler's initcall and the
//! module loader's hooks, each setting the other files up or telling them
//! what happens in one place, in order; and the [`Hooks`] through which the
//! registry reaches its users.
//!
//! - Start-up (`alloc_tag_init()`): the registry, the Rust call-site tags,
//!   the compressed module index table (and indexes for the site tags
//!   added before it), the boot percpu chunks' extension arrays, the
//!   sysctls, `/proc/allocinfo`, then one log line.
//! - Module load: the tag area (`codetag_alloc_module_section()`), then,
//!   once relocated, counters and page-tag indexes for its tags
//!   (`codetag_load_module()`), after freeing what drained unloaded modules
//!   left.
//! - Module unload (`codetag_unload_module()`): the module's pending
//!   `kfree_rcu()` frees land, its armed capture sites are disarmed, its
//!   Rust call sites and its tags are detached (or freed if nothing is
//!   charged), then drained leftovers are freed. A
//!   failed load (`codetag_free_module_sections()`) is unloaded the same
//!   way.

use super::compressed::{self, Store};
use super::hook_module::HookModule;
use super::registry::{self, Hooks};
use super::{control, report, rust_sites, sysctl};
use crate::{
    bindings,
    error::Result,
    ffi::{c_int, c_ulong, c_void},
    pr_info, pr_warn,
};
use core::ptr::NonNull;

/// What the registry tells the Rust call sites, above it.
static HOOKS: Hooks = Hooks {
    module_gone: rust_sites::module_gone,
    detached: rust_sites::detached,
    unlist_drained: rust_sites::unlist_drained,
    free_unlisted: rust_sites::free_unlisted,
};

/// The profiler's start-up, from its initcall (`subsys_initcall()` in
/// `lib/alloc_tag_init.c`: before any module can be requested).
pub(super) fn initcall() -> c_int {
    // Capture's locks, before the registry is ready: its module hook and
    // report hold the registry first.
    super::record::init_locks();
    registry::init(&HOOKS);
    // Before anything else allocates from Rust, so that it is on rows of
    // its own.
    rust_sites::init();
    compressed::init();
    registry::assign_missing_ids();
    // Extension vectors for the boot percpu chunks, so that what they serve
    // is counted; memcg then charges their __GFP_ACCOUNT allocations too,
    // as it does for every other chunk. Not with `never`, which leaves
    // percpu (memcg included) as without the profiler.
    if control::profiling_supported() {
        // SAFETY: the helper needs the percpu allocator set up and a context
        // that may sleep (it allocates with GFP_KERNEL): an initcall is both.
        unsafe { bindings::pcpu_alloc_tag_init_boot_chunks() };
    }
    sysctl::init(compressed::store() == Store::Compressed);
    report::procfs_init();
    #[cfg(CONFIG_DEBUG_FS)]
    report::nodes_view::init();
    super::capture::init();
    let (store, width, capacity, tags) = compressed::describe();
    pr_info!(
        "alloc_tag: Rust core, {} tags in vmlinux, profiling {}, page tags {}\n",
        tags,
        if control::profiling_enabled() {
            "on"
        } else if control::profiling_supported() {
            "off"
        } else {
            "never"
        },
        if control::profiling_supported() {
            store
        } else {
            "none"
        }
    );
    if control::profiling_supported() && compressed::fell_back() {
        pr_warn!(
            "alloc_tag: compressed page tags do not fit: {} tags + {} module ids + {} Rust site ids > {} ids of a {}-bit field ({} free page-flag bits); using page_ext\n",
            tags,
            compressed::MODULE_IDS,
            compressed::RUST_SITE_IDS,
            capacity,
            width,
            compressed::FREE_BITS
        );
    } else if control::profiling_supported() && compressed::store() == Store::Compressed {
        pr_info!(
            "alloc_tag: {}-bit page tag index ({} free page-flag bits), capacity {}, {} ids for modules, {} for Rust sites{}\n",
            width,
            compressed::FREE_BITS,
            capacity,
            compressed::module_slots(),
            compressed::rust_site_slots(),
            if compressed::fits(tags, capacity as usize) {
                ""
            } else {
                "; tags without an index count their pages on the overflow row"
            }
        );
    }
    0
}

/// The tag area for a module's `alloc_tags` section of `size` bytes: the
/// loader copies the section there and relocates the module against it.
/// An error fails the load (C sees NULL and fails it with -ENOMEM).
pub(super) fn alloc_module_section(
    module: HookModule<'_>,
    size: c_ulong,
    align: c_ulong,
) -> Result<NonNull<c_void>> {
    registry::place_module(module, size, align)
}

/// Gives a relocated module's tags their counters and reports them; runs
/// before any code of the module. -ENOMEM fails the load, and the failed
/// load's `codetag_free_module_sections()` frees the tag area.
pub(super) fn load_module(module: HookModule<'_>) -> Result {
    registry::reclaim();
    registry::module_live(module)
}

/// Drops what a module whose load failed left: its tag area, and its tags
/// with their counters (kept, detached, if its code ran and left
/// allocations behind). The module is still in memory.
pub(super) fn free_module_sections(module: HookModule<'_>) {
    // Its tags were live from `codetag_load_module()` on, so they may
    // have been armed meanwhile (while `parse_args()` ran its code, say).
    super::capture::module_unload(module);
    registry::drop_module(module);
}

/// Detaches an unloading module's tags, whose code no longer runs. Reports
/// every tag that still has allocations charged; those tags stay in
/// `/proc/allocinfo` until the allocations are freed. The module's own
/// memory holds nothing of the profiler's: the loader frees it all.
pub(super) fn unload_module(module: HookModule<'_>) {
    // Let the module's pending kfree_rcu() frees land first.
    // SAFETY: the barrier's only requirement is a context that may sleep
    // with no RCU read lock held, which module unload is.
    unsafe { bindings::alloc_tag_kvfree_rcu_barrier() };
    // Armed sites of the module first: their tags may go once drained.
    super::capture::module_unload(module);
    registry::drop_module(module);
    registry::reclaim();
}
