// SPDX-License-Identifier: GPL-2.0

//! Sequential files: writing the records of a `seq_file` from Rust.
//!
//! C header: [`include/linux/seq_file.h`](srctree/include/linux/seq_file.h)

use crate::{bindings, types::Opaque};
use core::fmt;

/// A `struct seq_file` while one of its `seq_operations` callbacks runs.
///
/// # Invariants
///
/// The wrapped `seq_file` is valid, and only the callback that was handed it
/// uses it, for as long as the reference exists.
#[repr(transparent)]
pub struct SeqFile(Opaque<bindings::seq_file>);

impl SeqFile {
    /// Borrows the `seq_file` a callback was given.
    ///
    /// # Safety
    ///
    /// `ptr` must be the `seq_file` passed to a running `seq_operations`
    /// callback, and the reference must not outlive that callback.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::seq_file) -> &'a SeqFile {
        // SAFETY: `SeqFile` is a transparent wrapper of `seq_file`; the caller
        // guarantees validity and exclusive use for the lifetime.
        unsafe { &*ptr.cast() }
    }

    /// The record index the seq_file core is at (`m->index`).
    #[inline]
    pub fn index(&self) -> i64 {
        // SAFETY: the seq_file is valid (type invariant) and its callbacks run
        // under `m->lock`, so `index` does not change under us.
        unsafe { (*self.0.get()).index }
    }

    /// The `private` pointer set up at open.
    #[inline]
    pub fn private(&self) -> *mut core::ffi::c_void {
        // SAFETY: as in `index`.
        unsafe { (*self.0.get()).private }
    }

    /// Appends `bytes` to the record being shown.
    ///
    /// If the buffer is too small the seq_file core notices, grows the buffer
    /// and calls `show()` for this record again, so nothing is lost.
    #[inline]
    pub fn write_bytes(&self, bytes: &[u8]) {
        // SAFETY: the seq_file is valid (type invariant); `bytes` is a valid
        // slice for its length. `seq_write()` copies at most that many bytes.
        unsafe { bindings::seq_write(self.0.get(), bytes.as_ptr().cast(), bytes.len()) };
    }
}

impl SeqFile {
    /// Appends a record part built in place: `f` is given the free space of
    /// the buffer and returns how many bytes it wrote, or `None` if the
    /// part does not fit. Then the buffer is marked overflowed (as
    /// `seq_write()` does), and the seq_file core grows it and calls
    /// `show()` again, so nothing is lost; no intermediate buffer, no copy.
    #[inline]
    pub fn write_with(&self, f: impl FnOnce(&mut [u8]) -> Option<usize>) {
        let m = self.0.get();
        // SAFETY: the seq_file is valid and only this callback uses it (type
        // invariant); `buf` holds `size` bytes of which the first `count`
        // are the records so far (seq_file core, `count <= size`), so the
        // rest is free for this record and no one else reads it meanwhile.
        unsafe {
            let (count, size) = ((*m).count, (*m).size);
            let free = size.saturating_sub(count);
            let space = core::slice::from_raw_parts_mut((*m).buf.cast::<u8>().add(count), free);
            match f(space) {
                Some(n) if n <= free => (*m).count = count + n,
                _ => (*m).count = size,
            }
        }
    }
}

impl fmt::Write for &SeqFile {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.write_bytes(s.as_bytes());
        Ok(())
    }
}

/// The callbacks of a `seq_operations` table, on a type that holds no data.
///
/// The seq_file core calls [`SeqOperations::start`], then
/// [`SeqOperations::show`] and [`SeqOperations::next`] while they give a
/// record, then [`SeqOperations::stop`] once, all under the file's lock.
/// [`SeqOpsTable`] builds the C table.
///
/// # Safety
///
/// A record [`SeqOperations::start`] or [`SeqOperations::next`] returns must
/// stay valid until the [`SeqOperations::stop`] that ends the same run:
/// [`SeqOperations::show`] is handed a reference to it.
pub unsafe trait SeqOperations {
    /// What a record is.
    type Record;

    /// The record at position `*pos` or after it (`*pos` set to it), or
    /// `None` at the end. Whatever it returns, `stop` follows.
    fn start(m: &SeqFile, pos: &mut i64) -> Option<core::ptr::NonNull<Self::Record>>;

    /// The record after `prev`, as `start` finds it from `*pos + 1`.
    fn next(
        m: &SeqFile,
        prev: &Self::Record,
        pos: &mut i64,
    ) -> Option<core::ptr::NonNull<Self::Record>>;

    /// Ends the run `start` began.
    fn stop(m: &SeqFile);

    /// Writes `record` to `m`.
    fn show(m: &SeqFile, record: &Self::Record);
}

/// A C operations table (`C`: `seq_operations`, `proc_ops`,
/// `file_operations`) whose callbacks call `T`'s, built at compile time.
///
/// # Invariants
///
/// Never written after it is built.
#[repr(transparent)]
pub struct OpsTable<C, T>(Opaque<C>, core::marker::PhantomData<T>);

// SAFETY: never written after it is built (invariant); `T` holds no data.
unsafe impl<C, T> Sync for OpsTable<C, T> {}

impl<C, T> OpsTable<C, T> {
    const fn from_table(table: C) -> Self {
        Self(Opaque::new(table), core::marker::PhantomData)
    }

    /// The C table, for `seq_open()`, `proc_create()`, `debugfs_create_file()`
    /// and friends.
    #[inline]
    pub fn as_ptr(&self) -> *const C {
        self.0.get()
    }
}

/// The `seq_operations` of `T`.
pub type SeqOpsTable<T> = OpsTable<bindings::seq_operations, T>;

impl<T: SeqOperations> Default for SeqOpsTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: SeqOperations> SeqOpsTable<T> {
    /// The table.
    pub const fn new() -> Self {
        Self::from_table(bindings::seq_operations {
            start: Some(Self::start),
            stop: Some(Self::stop),
            next: Some(Self::next),
            show: Some(Self::show),
        })
    }

    /// # Safety
    ///
    /// Called by the seq_file core: `m` is its file, `pos` is valid.
    unsafe extern "C" fn start(
        m: *mut bindings::seq_file,
        pos: *mut bindings::loff_t,
    ) -> *mut core::ffi::c_void {
        // SAFETY: the file a callback is given, not kept past it; `pos` is
        // valid and only this callback uses it (seq_file core).
        let (m, pos) = unsafe { (SeqFile::from_raw(m), &mut *pos) };
        T::start(m, pos).map_or(core::ptr::null_mut(), |r| r.as_ptr().cast())
    }

    /// # Safety
    ///
    /// Called by the seq_file core after `start` with a record `start` or
    /// `next` returned.
    unsafe extern "C" fn next(
        m: *mut bindings::seq_file,
        v: *mut core::ffi::c_void,
        pos: *mut bindings::loff_t,
    ) -> *mut core::ffi::c_void {
        // SAFETY: as in `start`; `v` is a record of this run, valid until
        // `stop` (the trait's contract).
        let (m, prev, pos) = unsafe { (SeqFile::from_raw(m), &*v.cast::<T::Record>(), &mut *pos) };
        T::next(m, prev, pos).map_or(core::ptr::null_mut(), |r| r.as_ptr().cast())
    }

    /// # Safety
    ///
    /// Called by the seq_file core once after each `start`.
    unsafe extern "C" fn stop(m: *mut bindings::seq_file, _v: *mut core::ffi::c_void) {
        // SAFETY: as in `start`.
        T::stop(unsafe { SeqFile::from_raw(m) });
    }

    /// # Safety
    ///
    /// Called by the seq_file core with a record `start` or `next` returned.
    unsafe extern "C" fn show(
        m: *mut bindings::seq_file,
        v: *mut core::ffi::c_void,
    ) -> crate::ffi::c_int {
        // SAFETY: as in `next`.
        let (m, record) = unsafe { (SeqFile::from_raw(m), &*v.cast::<T::Record>()) };
        T::show(m, record);
        0
    }
}

/// A whole file written by one `show` call (`single_open()`).
pub trait SingleShow {
    /// Writes the file's text to `m`.
    fn show(m: &SeqFile) -> crate::error::Result;
}

/// `T::show` as the callback `single_open()` takes.
pub const fn single_show<T: SingleShow>(
) -> unsafe extern "C" fn(*mut bindings::seq_file, *mut core::ffi::c_void) -> crate::ffi::c_int {
    single_show_callback::<T>
}

/// # Safety
///
/// Called by the seq_file core with its file.
unsafe extern "C" fn single_show_callback<T: SingleShow>(
    m: *mut bindings::seq_file,
    _v: *mut core::ffi::c_void,
) -> crate::ffi::c_int {
    // SAFETY: the file a callback is given, not kept past it.
    match T::show(unsafe { SeqFile::from_raw(m) }) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

impl SeqFile {
    /// The C `struct seq_file`, for C helpers that write to it.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::seq_file {
        self.0.get()
    }
}

/// A `/proc` file read as the seq_file of `Self` ([`SeqOperations`]), with
/// per-open state in the seq_file's private area and ioctls on that state.
/// [`ProcOpsTable`] builds its `proc_ops`.
///
/// # Safety
///
/// After [`SeqProcFile::init`], the state is a valid `State`, and it needs
/// no drop: `seq_release_private()` frees its memory at the last close.
pub unsafe trait SeqProcFile: SeqOperations + Sized + 'static {
    /// Per-open state: zeroed memory, then [`SeqProcFile::init`].
    type State: Sync;

    /// The file's seq_file operations, a `static` of the implementer's (a
    /// function, not an associated `const`: rustc 1.85, Debian 13's, refuses
    /// a `const` that refers to a `static` with interior mutability, and
    /// the table is an `Opaque`).
    fn seq_ops() -> &'static SeqOpsTable<Self>;

    /// Runs before every open, in a context that may sleep.
    fn before_open() {}

    /// Makes the state of a new open file valid.
    ///
    /// # Safety
    ///
    /// `state` points to zeroed memory of the size and alignment of a
    /// `State` that no one else uses yet.
    unsafe fn init(state: *mut Self::State);

    /// One ioctl on an open file; calls on one file may run concurrently.
    /// 32-bit callers come here too, with the argument zero-extended (as
    /// `compat_ptr()` does): the file's structures must have one layout.
    fn ioctl(state: &Self::State, cmd: u32, arg: usize) -> crate::error::Result;
}

/// The `proc_ops` of the [`SeqProcFile`] `T`.
pub type ProcOpsTable<T> = OpsTable<bindings::proc_ops, T>;

impl<T: SeqProcFile> Default for ProcOpsTable<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: SeqProcFile> ProcOpsTable<T> {
    /// The table.
    pub const fn new() -> Self {
        // `__seq_open_private()` allocates the state with kmalloc().
        assert!(core::mem::align_of::<T::State>() <= bindings::ARCH_SLAB_MINALIGN);
        Self::from_table(bindings::proc_ops {
            proc_open: Some(Self::open),
            proc_read_iter: Some(bindings::seq_read_iter),
            proc_lseek: Some(bindings::seq_lseek),
            proc_release: Some(bindings::seq_release_private),
            proc_ioctl: Some(Self::ioctl),
            #[cfg(CONFIG_COMPAT)]
            proc_compat_ioctl: Some(Self::compat_ioctl),
            // SAFETY: all-zero is a valid `proc_ops`: no flags, no other
            // callbacks.
            ..unsafe { core::mem::zeroed() }
        })
    }

    /// # Safety
    ///
    /// Called by procfs to open the file.
    unsafe extern "C" fn open(
        _inode: *mut bindings::inode,
        file: *mut bindings::file,
    ) -> crate::ffi::c_int {
        T::before_open();
        // SAFETY: `file` is being opened (caller); the operations are
        // static; the size is a `State`'s, whose alignment kmalloc meets
        // (`new()`).
        let state = unsafe {
            bindings::__seq_open_private(
                file,
                T::seq_ops().as_ptr(),
                core::mem::size_of::<T::State>() as crate::ffi::c_int,
            )
        };
        if state.is_null() {
            return crate::error::code::ENOMEM.to_errno();
        }
        // SAFETY: `__seq_open_private()` returns zeroed memory of the size
        // asked for, kmalloc-aligned, used by no one yet.
        unsafe { T::init(state.cast()) };
        0
    }

    /// # Safety
    ///
    /// Called by procfs for a file `open` opened.
    unsafe extern "C" fn ioctl(
        file: *mut bindings::file,
        cmd: crate::ffi::c_uint,
        arg: crate::ffi::c_ulong,
    ) -> crate::ffi::c_long {
        // SAFETY: opened by `open` (caller): `private_data` is its seq_file,
        // whose `private` is the state `T::init` made valid, alive until
        // the file is released, which cannot happen during this call.
        let state = unsafe {
            &*(*(*file).private_data.cast::<bindings::seq_file>())
                .private
                .cast::<T::State>()
        };
        match T::ioctl(state, cmd, arg) {
            Ok(()) => 0,
            Err(e) => e.to_errno() as crate::ffi::c_long,
        }
    }

    /// # Safety
    ///
    /// As for `ioctl`: a compat pointer is the zero-extended value.
    #[cfg(CONFIG_COMPAT)]
    unsafe extern "C" fn compat_ioctl(
        file: *mut bindings::file,
        cmd: crate::ffi::c_uint,
        arg: crate::ffi::c_ulong,
    ) -> crate::ffi::c_long {
        // SAFETY: the caller's.
        unsafe { Self::ioctl(file, cmd, arg & 0xffff_ffff) }
    }
}

/// A file whose reads are one [`SingleShow`] and whose writes are commands:
/// each `write(2)` is handed over whole. [`SingleFileOps`] builds its
/// `file_operations`.
pub trait SingleFile: SingleShow + 'static {
    /// One write of `len` bytes from `data`, taken whole or refused.
    fn write(data: crate::uaccess::UserSliceReader, len: usize) -> crate::error::Result;
}

/// The `file_operations` of the [`SingleFile`] `T`, for a built-in file
/// (no owner).
pub type SingleFileOps<T> = OpsTable<bindings::file_operations, T>;

impl<T: SingleFile> Default for SingleFileOps<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: SingleFile> SingleFileOps<T> {
    /// The table.
    pub const fn new() -> Self {
        Self::from_table(bindings::file_operations {
            open: Some(Self::open),
            read: Some(bindings::seq_read),
            llseek: Some(bindings::seq_lseek),
            release: Some(bindings::single_release),
            write: Some(Self::write),
            // SAFETY: all-zero is valid for the other members (no
            // callbacks, no owner).
            ..unsafe { core::mem::zeroed() }
        })
    }

    /// # Safety
    ///
    /// Called by the VFS to open the file.
    unsafe extern "C" fn open(
        _inode: *mut bindings::inode,
        file: *mut bindings::file,
    ) -> crate::ffi::c_int {
        // SAFETY: `file` is being opened (caller); the show callback is
        // `T`'s, with no private data.
        unsafe { bindings::single_open(file, Some(single_show::<T>()), core::ptr::null_mut()) }
    }

    /// # Safety
    ///
    /// Called by the VFS with a user buffer of `len` bytes.
    unsafe extern "C" fn write(
        _file: *mut bindings::file,
        buf: *const crate::ffi::c_char,
        len: usize,
        _pos: *mut bindings::loff_t,
    ) -> isize {
        let Ok(n) = isize::try_from(len) else {
            return crate::error::code::EINVAL.to_errno() as isize;
        };
        let data = crate::uaccess::UserSlice::new(buf as usize, len).reader();
        match T::write(data, len) {
            Ok(()) => n,
            Err(e) => e.to_errno() as isize,
        }
    }
}
