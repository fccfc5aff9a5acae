// SPDX-License-Identifier: GPL-2.0

//! Rust allocation sites at known lines for the alloc_tag selftests.
//!
//! Each site is an ordinary call (`KBox::new(x, GFP_KERNEL)?` and the like)
//! in a function of its own, so that its `/proc/allocinfo` row is
//! `<this file>:<line> [alloc_tag_rust_test] func:<function>`. The module
//! is driven through alloc_tag_test.ko, which it registers with
//! (`att_rust_register()`):
//!
//! - `echo "rust alloc" > /sys/kernel/debug/alloc_tag_test/ctl`: one
//!   `KBox<[u8; 200]>`, a `KVec<u64>` grown by 100 pushes from empty, a
//!   `VBox` of four pages, a `KVBox<[u8; 300]>`, a `Page` and, under a
//!   spinlock, a `GFP_ATOMIC` `KBox<[u8; 64]>`, held (each site's
//!   first allocation registers it, so the last one registers in atomic
//!   context);
//! - `rust free`: drops them;
//! - `rust adopt`: a `KBox<[u8; 100]>` handed to alloc_tag_test.ko, which
//!   frees it at its `release` command, after this module may be gone.
//!
//! `/sys/kernel/debug/alloc_tag_test/rust_sites` lists the sites as
//! `<kind> <line> <function>`, the lines taken by `line!()` on the line of
//! each call.

use core::cell::UnsafeCell;
use core::ffi::{c_char, c_int, c_void};
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicU32, Ordering};
use kernel::alloc::{KBox, KVBox, KVec, VBox};
use kernel::page::Page;
use kernel::prelude::*;
use kernel::{bindings, c_str, types::Opaque};

module! {
    type: AllocTagRustTest,
    name: "alloc_tag_rust_test",
    author: "allocprof developers",
    description: "Rust allocation sites at known lines for the alloc_tag selftests",
    license: "GPL",
}

type CmdFn = unsafe extern "C" fn(c_int) -> c_int;
type SitesFn = unsafe extern "C" fn(*mut c_char, usize) -> isize;

extern "C" {
    fn att_rust_register(cmd: Option<CmdFn>, sites: Option<SitesFn>) -> c_int;
    fn att_adopt(ptr: *mut c_void, order: c_int) -> c_int;
}

const VBOX_BYTES: usize = 4 * 4096;
const KVEC_PUSHES: u64 = 100;

/// What `alloc` holds until `free`.
struct Held {
    kbox: Option<KBox<[u8; 200]>>,
    kvec: KVec<u64>,
    vbox: Option<VBox<MaybeUninit<[u8; VBOX_BYTES]>>>,
    kvbox: Option<KVBox<[u8; 300]>>,
    page: Option<Page>,
    atomic: Option<KBox<[u8; 64]>>,
}

/// The held objects, touched only by the command callback, which
/// alloc_tag_test.ko runs under its lock, and by init and exit, which
/// register and unregister the callback under that lock.
struct State(UnsafeCell<Held>);

// SAFETY: every access is serialised as described above.
unsafe impl Sync for State {}

static STATE: State = State(UnsafeCell::new(Held {
    kbox: None,
    kvec: KVec::new(),
    vbox: None,
    kvbox: None,
    page: None,
    atomic: None,
}));

const KINDS: [&str; 7] = ["kbox", "kvec", "vbox", "kvbox", "adopt", "page", "atomic"];
const FUNCS: [&str; 7] = [
    "alloc_kbox",
    "grow_kvec",
    "alloc_vbox",
    "alloc_kvbox",
    "adopt_kbox",
    "alloc_one_page",
    "alloc_atomic",
];
static LINES: [AtomicU32; 7] = [const { AtomicU32::new(0) }; 7];

fn seen(kind: usize, line: u32) {
    LINES[kind].store(line, Ordering::Relaxed);
}

#[inline(never)]
fn alloc_kbox(h: &mut Held) -> Result {
    let (b, line) = (KBox::new([1u8; 200], GFP_KERNEL)?, line!());
    seen(0, line);
    h.kbox = Some(b);
    Ok(())
}

#[inline(never)]
fn grow_kvec(h: &mut Held) -> Result {
    for i in 0..KVEC_PUSHES {
        let (r, line) = (h.kvec.push(i, GFP_KERNEL), line!());
        seen(1, line);
        r?;
    }
    Ok(())
}

#[inline(never)]
fn alloc_vbox(h: &mut Held) -> Result {
    let (b, line) = (VBox::<[u8; VBOX_BYTES]>::new_uninit(GFP_KERNEL)?, line!());
    seen(2, line);
    h.vbox = Some(b);
    Ok(())
}

#[inline(never)]
fn alloc_kvbox(h: &mut Held) -> Result {
    let (b, line) = (KVBox::new([3u8; 300], GFP_KERNEL)?, line!());
    seen(3, line);
    h.kvbox = Some(b);
    Ok(())
}

#[inline(never)]
fn alloc_one_page(h: &mut Held) -> Result {
    let (p, line) = (Page::alloc_page(GFP_KERNEL)?, line!());
    seen(5, line);
    h.page = Some(p);
    Ok(())
}

/// A spinlock to allocate under, initialised at module init, and its
/// lockdep class.
struct AtomicLock(
    Opaque<bindings::spinlock_t>,
    Opaque<bindings::lock_class_key>,
);

// SAFETY: the kernel's spinlock serialises its users; lockdep its keys.
unsafe impl Sync for AtomicLock {}

static ATOMIC_LOCK: AtomicLock = AtomicLock(Opaque::uninit(), Opaque::uninit());

#[inline(never)]
fn alloc_atomic(h: &mut Held) -> Result {
    // SAFETY: initialised at module init; unlocked below, and nothing in
    // between sleeps.
    unsafe { bindings::spin_lock(ATOMIC_LOCK.0.get()) };
    let (b, line) = (KBox::new([6u8; 64], GFP_ATOMIC), line!());
    // SAFETY: locked above.
    unsafe { bindings::spin_unlock(ATOMIC_LOCK.0.get()) };
    seen(6, line);
    h.atomic = Some(b?);
    Ok(())
}

#[inline(never)]
fn adopt_kbox() -> Result {
    let (b, line) = (KBox::new([4u8; 100], GFP_KERNEL)?, line!());
    seen(4, line);
    let p = KBox::into_raw(b);
    // SAFETY: `p` is a kmalloc() object; on success alloc_tag_test.ko owns
    // and frees it.
    if unsafe { att_adopt(p.cast(), -1) } != 0 {
        // SAFETY: not adopted: still ours, from `KBox::into_raw`.
        drop(unsafe { KBox::from_raw(p) });
        return Err(ENOSPC);
    }
    Ok(())
}

fn free_all(h: &mut Held) {
    h.kbox = None;
    h.kvec = KVec::new();
    h.vbox = None;
    h.kvbox = None;
    h.page = None;
    h.atomic = None;
}

fn alloc_all(h: &mut Held) -> Result {
    free_all(h);
    alloc_kbox(h)?;
    grow_kvec(h)?;
    alloc_vbox(h)?;
    alloc_kvbox(h)?;
    alloc_one_page(h)?;
    alloc_atomic(h)
}

/// The command callback: 1 alloc, 2 free, 3 adopt, 4 grow (with
/// `CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS`: every block of Rust site tags in
/// place now; `EINVAL` without it).
///
/// # Safety
///
/// Called by alloc_tag_test.ko under its lock, while registered.
unsafe extern "C" fn cmd(op: c_int) -> c_int {
    // SAFETY: serialised with every other access (see `State`).
    let h = unsafe { &mut *STATE.0.get() };
    let r = match op {
        1 => alloc_all(h),
        2 => {
            free_all(h);
            Ok(())
        }
        3 => adopt_kbox(),
        #[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
        4 => {
            kernel::alloc_tag::testing::grow_all_rust_sites();
            Ok(())
        }
        _ => Err(EINVAL),
    };
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// Formats into a fixed buffer, without allocating (an allocation here
/// would be a site of its own).
struct Buf<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl core::fmt::Write for Buf<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let end = self.len + s.len();
        if end >= self.buf.len() {
            return Err(core::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// The sites callback: `<kind> <line> <function>` lines, then with
/// `CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS` `lock_hold <most reads under one
/// hold> <bound>` and `page_ids <module indexes used> <Rust site indexes
/// used>`, NUL-terminated.
///
/// # Safety
///
/// `out` has `len` writable bytes.
unsafe extern "C" fn sites(out: *mut c_char, len: usize) -> isize {
    use core::fmt::Write;
    // SAFETY: `len` writable bytes (caller).
    let buf = unsafe { core::slice::from_raw_parts_mut(out.cast::<u8>(), len) };
    let mut w = Buf { buf, len: 0 };
    for k in 0..KINDS.len() {
        let line = LINES[k].load(Ordering::Relaxed);
        if writeln!(w, "{} {} {}", KINDS[k], line, FUNCS[k]).is_err() {
            return ENOSPC.to_errno() as isize;
        }
    }
    // How long the core held its sites lock at most, in slot and site
    // reads, and the bound it promises.
    #[cfg(CONFIG_MEM_ALLOC_PROFILING_TEST_HOOKS)]
    {
        let hold = kernel::alloc_tag::testing::max_lock_hold();
        let bound = kernel::alloc_tag::testing::LOCK_HOLD_BOUND;
        if writeln!(w, "lock_hold {} {}", hold, bound).is_err() {
            return ENOSPC.to_errno() as isize;
        }
        // Compressed page-tag indexes in use by module tags and by Rust
        // site blocks (0 0 when page tags are not compressed).
        let (modules, rust) = kernel::alloc_tag::testing::page_ids_used();
        if writeln!(w, "page_ids {} {}", modules, rust).is_err() {
            return ENOSPC.to_errno() as isize;
        }
    }
    let n = w.len;
    w.buf[n] = 0;
    n as isize
}

struct AllocTagRustTest;

impl kernel::Module for AllocTagRustTest {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        // SAFETY: a static lock, initialised once before any use; the name
        // and class key are static.
        unsafe {
            bindings::__spin_lock_init(
                ATOMIC_LOCK.0.get(),
                c_str!("alloc_tag_rust_test").as_char_ptr(),
                ATOMIC_LOCK.1.get(),
            )
        };
        // SAFETY: the callbacks stay valid until unregistered in `drop`.
        let r = unsafe { att_rust_register(Some(cmd), Some(sites)) };
        if r != 0 {
            return Err(Error::from_errno(r));
        }
        Ok(AllocTagRustTest)
    }
}

impl Drop for AllocTagRustTest {
    fn drop(&mut self) {
        // SAFETY: unregistering waits for a running callback (same lock).
        unsafe { att_rust_register(None, None) };
        // SAFETY: no callback runs any more.
        free_all(unsafe { &mut *STATE.0.get() });
    }
}
