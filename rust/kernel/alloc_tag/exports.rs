// SPDX-License-Identifier: GPL-2.0

//! Every function C calls in the profiler, in one place.
//!
//! C declares them in [`include/linux/alloc_tag.h`](srctree/include/linux/alloc_tag.h),
//! [`include/linux/pgalloc_tag.h`](srctree/include/linux/pgalloc_tag.h) and
//! [`include/linux/codetag.h`](srctree/include/linux/codetag.h). Each is a shim
//! over the module that does the work: the contract a caller keeps is that
//! function's, stated there once, and nothing is decided here.

use super::hook_module::HookModule;
use super::hook_page::{HookFolio, HookPage};
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
use super::{capture, record};
use super::{control, init, node, page, report, rust_sites, tag::AllocTag, tag_ref::TagRef};
use crate::ffi::{c_char, c_int, c_ulong, c_void};
use crate::{bindings, error::code::EINVAL, str::CStr};
use core::ptr::{null_mut, NonNull};

/// A command of `/sys/kernel/debug/allocinfo_capture`'s language from
/// kernel code (the bench module arms its own site): 0 or a negative
/// errno. See [`capture::command_str`].
///
/// # Safety
///
/// `cmd` is a NUL-terminated string; process context.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
#[no_mangle]
unsafe extern "C" fn alloc_tag_capture_command(cmd: *const c_char) -> c_int {
    // SAFETY: the caller's contract: a NUL-terminated string.
    let text = unsafe { CStr::from_char_ptr(cmd) }.as_bytes();
    match capture::command_str(text) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Whether profiling is off for good (`never`). See [`control::permanently_disabled`].
#[no_mangle]
extern "C" fn mem_alloc_profiling_permanently_disabled() -> bool {
    control::permanently_disabled()
}

/// `sysctl.vm.mem_profiling=` on the kernel command line; always handled
/// (0). See [`control::early_param`].
///
/// # Safety
///
/// `value` is NULL or a NUL-terminated string (from the command line).
#[no_mangle]
unsafe extern "C" fn alloc_tag_early_param(value: *mut c_char) -> c_int {
    // SAFETY: the caller's contract: NULL or a NUL-terminated string.
    control::early_param(unsafe { param_bytes(value) });
    0
}

/// `alloc_tag_page_bits=` on the kernel command line; always handled (0).
/// See [`control::page_bits_param`].
///
/// # Safety
///
/// `value` is NULL or a NUL-terminated string (from the command line).
#[no_mangle]
unsafe extern "C" fn alloc_tag_page_bits_param(value: *mut c_char) -> c_int {
    // SAFETY: the caller's contract: NULL or a NUL-terminated string.
    control::page_bits_param(unsafe { param_bytes(value) });
    0
}

/// The bytes of an early parameter's value: empty for NULL (no `=`).
///
/// # Safety
///
/// `value` is NULL or a NUL-terminated string that outlives `'a`.
unsafe fn param_bytes<'a>(value: *mut c_char) -> &'a [u8] {
    if value.is_null() {
        return &[];
    }
    // SAFETY: a NUL-terminated string (caller).
    unsafe { CStr::from_char_ptr(value) }.as_bytes()
}

/// The profiler's initcall. See [`init::initcall`].
#[no_mangle]
extern "C" fn alloc_tag_init() -> c_int {
    init::initcall()
}

/// The module loader asks for the area of a module's `alloc_tags` section.
/// See [`init::alloc_module_section`].
///
/// # Safety
///
/// `module` is NULL or a module being loaded, which the loader holds for
/// the call.
#[no_mangle]
unsafe extern "C" fn codetag_alloc_module_section(
    module: *mut bindings::module,
    size: c_ulong,
    align: c_ulong,
) -> *mut c_void {
    // SAFETY: NULL or a module the loader holds (caller).
    unsafe { HookModule::from_nullable(module) }
        .ok_or(EINVAL)
        .and_then(|m| init::alloc_module_section(m, size, align))
        .map_or(core::ptr::null_mut(), NonNull::as_ptr)
}

/// The module loader has loaded a module. See [`init::load_module`].
///
/// # Safety
///
/// `module` is NULL or a module being loaded whose code has not run, which
/// the loader holds for the call.
#[no_mangle]
unsafe extern "C" fn codetag_load_module(module: *mut bindings::module) -> c_int {
    // SAFETY: NULL or a module the loader holds (caller).
    match unsafe { HookModule::from_nullable(module) }.map(init::load_module) {
        Some(Err(e)) => e.to_errno(),
        _ => 0,
    }
}

/// The module loader frees a module's sections (after a failed load too).
/// See [`init::free_module_sections`].
///
/// # Safety
///
/// `module` is NULL or a module whose load failed, still in memory and held
/// by the loader for the call.
#[no_mangle]
unsafe extern "C" fn codetag_free_module_sections(module: *mut bindings::module) {
    // SAFETY: NULL or a module the loader holds (caller).
    if let Some(m) = unsafe { HookModule::from_nullable(module) } {
        init::free_module_sections(m);
    }
}

/// The module loader unloads a module: always true, the loader frees the
/// module's memory whole. See [`init::unload_module`].
///
/// # Safety
///
/// `module` is NULL or a module being unloaded whose code no longer runs,
/// held by the loader for the call.
#[no_mangle]
unsafe extern "C" fn codetag_unload_module(module: *mut bindings::module) -> bool {
    // SAFETY: NULL or a module the loader holds (caller).
    if let Some(m) = unsafe { HookModule::from_nullable(module) } {
        init::unload_module(m);
    }
    true
}

// Per-node attribution (`lib/alloc_tag_node.c`).

/// A charge moves from one NUMA node to another: after a charge of memory
/// on another node than the CPU's, before its uncharge, and when migration
/// moves it. See [`node::move_charge`].
///
/// # Safety
///
/// `tag` is NULL (nothing moves) or a tag in an `alloc_tags` section.
#[no_mangle]
unsafe extern "C" fn __alloc_tag_node_move(
    tag: *mut bindings::alloc_tag,
    from: i32,
    to: i32,
    bytes: i64,
    calls: i64,
) {
    // SAFETY: the caller's contract: NULL or a tag.
    if let Some(tag) = unsafe { AllocTag::from_nullable(tag) } {
        node::move_charge(tag, from, to, bytes, calls);
    }
}

/// A percpu allocation's tag is marked as one of percpu memory, whose row
/// is spread over the nodes of the CPUs. See [`node::charge_percpu`].
///
/// # Safety
///
/// `tag` is NULL (nothing to mark) or a tag in an `alloc_tags` section.
#[no_mangle]
unsafe extern "C" fn __alloc_tag_node_percpu(tag: *mut bindings::alloc_tag) {
    // SAFETY: the caller's contract: NULL or a tag.
    if let Some(tag) = unsafe { AllocTag::from_nullable(tag) } {
        node::charge_percpu(tag);
    }
}

/// The tag a tag reference holds (through a capture record too), or NULL.
/// See [`node::ref_tag`].
///
/// # Safety
///
/// `ref_` is NULL or the tag reference of an object that the caller is
/// allocating or freeing.
#[no_mangle]
unsafe extern "C" fn __alloc_tag_ref_tag(
    ref_: *mut bindings::codetag_ref,
) -> *mut bindings::alloc_tag {
    // SAFETY: the caller's contract: NULL or an object's reference.
    let r = unsafe { TagRef::from_nullable(ref_) };
    r.and_then(node::ref_tag)
        .map_or(null_mut(), AllocTag::as_raw)
}

// The page allocator's hooks (`include/linux/pgalloc_tag.h`). Their
// callers own the pages and folios they pass, for the call: a `HookPage` or
// `HookFolio` says so, and the tag, NULL or one in an `alloc_tags` section
// (`current->alloc_tag`), becomes an `Option<&AllocTag>`.

/// The page allocator charges pages (compressed page tags). See
/// [`page::add_compressed`].
///
/// # Safety
///
/// `page` is the head of `nr` pages being allocated; `tag` is NULL or a tag;
/// compressed mode is in effect (`mem_alloc_profiling_compressed_key`) or
/// the build is compressed-only.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_add_compressed(
    page: *mut bindings::page,
    tag: *mut bindings::alloc_tag,
    nr: u32,
) {
    // SAFETY: the caller's contract: an owned page, NULL or a tag, and
    // compressed mode.
    unsafe { page::add_compressed(HookPage::from_raw(page), AllocTag::from_nullable(tag), nr) }
}

/// The page allocator frees pages (compressed page tags). See
/// [`page::sub_compressed`].
///
/// # Safety
///
/// `page` is the head of `nr` pages being freed; compressed mode as for
/// `__pgalloc_tag_add_compressed()`.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_sub_compressed(page: *mut bindings::page, nr: u32) {
    // SAFETY: the caller's contract: an owned page, compressed mode.
    unsafe { page::sub_compressed(HookPage::from_raw(page), nr) }
}

/// The tag of a page being freed (compressed page tags), or NULL. See
/// [`page::get_compressed`].
///
/// # Safety
///
/// `page` is a valid page the caller holds; compressed mode as for
/// `__pgalloc_tag_add_compressed()`.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_get_compressed(
    page: *mut bindings::page,
) -> *mut bindings::alloc_tag {
    // SAFETY: the caller's contract: an owned page, compressed mode.
    unsafe { page::get_compressed(HookPage::from_raw(page)) }.map_or(null_mut(), AllocTag::as_raw)
}

/// The page allocator charges pages whose `page_ext` reference it did not
/// find. See [`page::add_no_ref`].
///
/// # Safety
///
/// `page` is NULL or the head of `nr` pages being allocated; `tag` is NULL
/// or a tag.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_add_no_ref(
    page: *mut bindings::page,
    tag: *mut bindings::alloc_tag,
    nr: u32,
) {
    // SAFETY: the caller's contract: NULL or an owned page, NULL or a tag.
    let (page, tag) = unsafe { (HookPage::from_nullable(page), AllocTag::from_nullable(tag)) };
    page::add_no_ref(page, tag, nr);
}

/// The free side of `__pgalloc_tag_add_no_ref()`. See [`page::sub_no_ref`].
///
/// # Safety
///
/// `page` is NULL or the head of `nr` pages being freed.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_sub_no_ref(page: *mut bindings::page, nr: u32) {
    // SAFETY: the caller's contract: NULL or an owned page.
    page::sub_no_ref(unsafe { HookPage::from_nullable(page) }, nr);
}

/// The tag of a page, or NULL. See [`page::tag_of`].
///
/// # Safety
///
/// `page` is NULL or a valid page the caller holds.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_get(page: *mut bindings::page) -> *mut bindings::alloc_tag {
    // SAFETY: the caller's contract: NULL or an owned page.
    page::tag_of(unsafe { HookPage::from_nullable(page) }).map_or(null_mut(), AllocTag::as_raw)
}

/// Uncharges `nr` pages freed apart from their head page. See
/// [`page::sub_pages`].
///
/// # Safety
///
/// `tag` is NULL or a tag.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_sub_pages(tag: *mut bindings::alloc_tag, nr: u32) {
    // SAFETY: the caller's contract: NULL or a tag.
    if let Some(tag) = unsafe { AllocTag::from_nullable(tag) } {
        page::sub_pages(tag, nr);
    }
}

/// Clears a page's tag without uncharging. See [`page::clear_ref`].
///
/// # Safety
///
/// `page` is NULL or a valid page that is not being allocated or freed
/// concurrently.
#[no_mangle]
unsafe extern "C" fn __clear_page_tag_ref(page: *mut bindings::page) {
    // SAFETY: the caller's contract: NULL or an owned page.
    page::clear_ref(unsafe { HookPage::from_nullable(page) });
}

/// A folio is split. See [`page::split`].
///
/// # Safety
///
/// `folio` is an allocated folio of order `old_order` being split.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_split(
    folio: *mut bindings::folio,
    old_order: i32,
    new_order: i32,
) -> u32 {
    // SAFETY: the caller's contract: an owned folio of order `old_order`.
    let folio = unsafe { HookFolio::from_raw(folio, old_order) };
    page::split(folio, old_order, new_order)
}

/// Migration swaps the tags of two folios. See [`page::swap`].
///
/// # Safety
///
/// `new` and `old` are valid folios of the same size, both locked for
/// migration.
#[no_mangle]
unsafe extern "C" fn __pgalloc_tag_swap(
    new: *mut bindings::folio,
    old: *mut bindings::folio,
) -> bool {
    // SAFETY: the caller's contract: two owned folios (their head pages
    // are all the swap reads).
    unsafe { page::swap(HookFolio::head_only(new), HookFolio::head_only(old)) }
}

/// `alloc_tag_add` while a site is armed for capture. See [`record::add`].
///
/// # Safety
///
/// As `__alloc_tag_add()`: `ref_` is the tag reference of the object being
/// allocated, never NULL, which no one else writes meanwhile; `tag` is NULL
/// or a tag in an `alloc_tags` section.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
#[no_mangle]
unsafe extern "C" fn __alloc_tag_add_capture(
    ref_: *mut bindings::codetag_ref,
    tag: *mut bindings::alloc_tag,
    bytes: usize,
) {
    // SAFETY: the caller's contract: an object's reference, NULL or a tag.
    let (r, tag) = unsafe { (TagRef::from_raw(ref_), AllocTag::from_nullable(tag)) };
    record::add(r, tag, bytes)
}

/// `alloc_tag_sub` while a site is armed for capture. See [`record::sub`].
///
/// # Safety
///
/// As `__alloc_tag_sub()`: `ref_` is the tag reference of the object being
/// freed, never NULL, which no one else writes meanwhile.
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
#[no_mangle]
unsafe extern "C" fn __alloc_tag_sub_capture(ref_: *mut bindings::codetag_ref, bytes: usize) {
    // SAFETY: the caller's contract: an object's reference.
    record::sub(unsafe { TagRef::from_raw(ref_) }, bytes)
}

/// The irq_work that refills capture's record pool. See [`record::refill`].
#[cfg(CONFIG_MEM_ALLOC_PROFILING_CAPTURE)]
#[no_mangle]
extern "C" fn alloc_tag_capture_refill() {
    record::refill()
}

/// `show_mem()` asks for the largest sites. See [`report::top_users_begin`].
///
/// # Safety
///
/// As [`report::top_users_begin`].
#[no_mangle]
unsafe extern "C" fn alloc_tag_top_users_begin(
    tags: *mut bindings::codetag_bytes,
    count: usize,
) -> usize {
    // SAFETY: the caller keeps the contract of `report::top_users_begin`.
    unsafe { report::top_users_begin(tags, count) }
}

/// `show_mem()` is done with them. See [`report::top_users_end`].
///
/// # Safety
///
/// As [`report::top_users_end`].
#[no_mangle]
unsafe extern "C" fn alloc_tag_top_users_end() {
    // SAFETY: the caller keeps the contract of `report::top_users_end`.
    unsafe { report::top_users_end() }
}

/// The work item that adds a block of Rust call-site tags. See [`rust_sites::grow_work`].
#[no_mangle]
extern "C" fn alloc_tag_rust_sites_grow() {
    rust_sites::grow_work()
}

// The slab, percpu and vmalloc hooks (`include/linux/alloc_tag.h`).

/// A slab, percpu or vmalloc allocation is charged: `bytes` and one call to
/// `tag`, recorded in the object's reference. See [`TagRef::charge_or_warn`].
///
/// # Safety
///
/// `ref_` is the tag reference of the object being allocated, never NULL,
/// which no one else writes meanwhile; `tag` is NULL or a tag in an
/// `alloc_tags` section.
#[no_mangle]
unsafe extern "C" fn __alloc_tag_add(
    ref_: *mut bindings::codetag_ref,
    tag: *mut bindings::alloc_tag,
    bytes: usize,
) {
    // SAFETY: the caller's contract: an object's reference, NULL or a tag.
    let (r, tag) = unsafe { (TagRef::from_raw(ref_), AllocTag::from_nullable(tag)) };
    r.charge_or_warn(tag, bytes);
}

/// A slab, percpu or vmalloc allocation is freed: `bytes` and one call come
/// off the tag its reference records. See [`TagRef::uncharge`].
///
/// # Safety
///
/// `ref_` is the tag reference of the object being freed, never NULL, which
/// no one else writes meanwhile.
#[no_mangle]
unsafe extern "C" fn __alloc_tag_sub(ref_: *mut bindings::codetag_ref, bytes: usize) {
    // SAFETY: the caller's contract: an object's reference.
    unsafe { TagRef::from_raw(ref_) }.uncharge(bytes);
}

/// An allocation could not be counted (a slab object without an extension
/// vector, say): `tag`'s row says `accurate:no`. NULL marks nothing.
///
/// # Safety
///
/// `tag` is NULL or a tag in an `alloc_tags` section.
#[no_mangle]
unsafe extern "C" fn alloc_tag_set_inaccurate(tag: *mut bindings::alloc_tag) {
    // SAFETY: the caller's contract: NULL or a tag.
    if let Some(tag) = unsafe { AllocTag::from_nullable(tag) } {
        tag.mark_inaccurate();
    }
}

/// `tag`'s counters summed over all possible CPUs, for C readers.
///
/// # Safety
///
/// `tag` is a tag in an `alloc_tags` section.
#[no_mangle]
unsafe extern "C" fn alloc_tag_read(tag: *mut bindings::alloc_tag) -> bindings::alloc_tag_counters {
    // SAFETY: the caller's contract: a tag.
    let c = unsafe { AllocTag::from_raw(tag) }.read();
    bindings::alloc_tag_counters {
        bytes: c.bytes as u64,
        calls: c.calls,
    }
}
