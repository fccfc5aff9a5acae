// SPDX-License-Identifier: GPL-2.0

//! Start-up: the profiler's initcall, which sets the other files up in
//! order: the registry, the Rust call-site tags, the compressed module index
//! table (and indexes for the site tags added before it), the boot percpu
//! chunks' extension arrays, the sysctls, `/proc/allocinfo`, then one log
//! line.

use super::compressed::{self, Store};
use super::{control, registry, report, rust_sites};
use crate::{bindings, pr_info, pr_warn};
use core::ffi::c_int;

/// The profiler's initcall, at subsys level: before rootfs_initcall, from
/// which user-mode helpers run and the first module can be requested, so
/// that every module load finds the registry set up (upstream's is at
/// device level, where the registry of a Rust core linked after `kernel/`,
/// `mm/`, `fs/` and `crypto/` would come too late for their device
/// initcalls). Slab, vmalloc, per-CPU memory, workqueues, sysctl and procfs
/// are all up by then.
#[no_mangle]
extern "C" fn alloc_tag_init() -> c_int {
    registry::init();
    // Before anything else allocates from Rust, so that it is on rows of
    // its own.
    rust_sites::init();
    compressed::init();
    registry::assign_rust_ids();
    // Extension vectors for the boot percpu chunks, so that what they serve
    // is counted; memcg then charges their __GFP_ACCOUNT allocations too,
    // as it does for every other chunk. Not with `never`, which leaves
    // percpu (memcg included) as without the profiler.
    if control::profiling_supported() {
        // SAFETY: the percpu allocator is up at initcalls.
        unsafe { bindings::pcpu_alloc_tag_init_boot_chunks() };
    }
    control::sysctl_init(compressed::store() == Store::Compressed);
    report::procfs_init();
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
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
            "alloc_tag: compressed page tags do not fit: {} tags + {} module ids > {} ids of a {}-bit field ({} free page-flag bits); using page_ext\n",
            tags,
            compressed::MODULE_IDS,
            capacity,
            width,
            compressed::FREE_BITS
        );
    } else if control::profiling_supported() && compressed::store() == Store::Compressed {
        pr_info!(
            "alloc_tag: {}-bit page tag index ({} free page-flag bits), capacity {}, {} ids for modules{}\n",
            width,
            compressed::FREE_BITS,
            capacity,
            compressed::module_slots(),
            if compressed::fits(tags, capacity as usize) {
                ""
            } else {
                "; tags without an index count their pages on the overflow row"
            }
        );
    }
    0
}

#[cfg(CONFIG_HAVE_ARCH_PREL32_RELOCATIONS)]
core::arch::global_asm!(
    r#".section ".initcall4.init", "a"
    __alloc_tag_initcall:
        .long   alloc_tag_init - .
    .previous"#
);

#[cfg(not(CONFIG_HAVE_ARCH_PREL32_RELOCATIONS))]
#[used]
#[link_section = ".initcall4.init"]
static ALLOC_TAG_INITCALL: extern "C" fn() -> c_int = alloc_tag_init;
