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
