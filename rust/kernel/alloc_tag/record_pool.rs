// SPDX-License-Identifier: GPL-2.0

//! Capture's record pool: the records of the armed sites' live allocations,
//! preallocated in chunks, each held by its object's tag reference and
//! listed in its site's list.
//!
//! Records are linked by hand (each site's live list, the pool's free list),
//! not with `kernel::list`: that list's items are `ListArc`s, each its own
//! reference-counted allocation, while records are slots of preallocated
//! chunks, taken and linked inside the allocator hooks, where nothing may
//! be allocated, and a record's owner is the object's tag reference, not a
//! count. All the pointer work on records is in this file; the pool lives
//! in capture's state ([`super::record`]), so every use holds the capture
//! spinlock, and what it hands out are plain values.

use super::tag_ref::{TagRef, REF_RECORD};
use crate::{
    bindings,
    error::{code::ENOMEM, Result},
};
use core::{mem::size_of, ptr::NonNull};

/// Records per chunk of the pool (one allocation each).
pub(super) const CHUNK_RECORDS: usize = 32;

/// What capture keeps of one live allocation of an armed site: where its
/// bytes are counted. Its stack is its bucket's (or, in the "other" bucket,
/// not kept): the report shows stacks, not single allocations.
struct Record {
    /// The neighbours in the site's live list, or (`next`) in the free list.
    prev: Option<NonNull<Record>>,
    next: Option<NonNull<Record>>,
    /// The object's tag reference, which holds this record's address.
    obj: Option<NonNull<TagRef>>,
    /// The site's slot (its live list's index) and its stack's bucket.
    site: usize,
    bucket: usize,
    bytes: usize,
}

const _: () = assert!(size_of::<Record>() == 6 * size_of::<usize>());
// A record's address leaves `REF_RECORD` clear for the flag.
const _: () = assert!(core::mem::align_of::<Record>() > REF_RECORD);

/// A chunk of the pool, zeroed when allocated (all-zero is a free record:
/// no neighbours, no object).
#[repr(C)]
struct Chunk {
    /// The pool's next chunk.
    next: Option<ChunkBox>,
    records: [Record; CHUNK_RECORDS],
}

/// One chunk of the record pool, owned, with the chunks after it.
///
/// # Invariants
///
/// `self.0` points at a [`Chunk`] that `alloc_tag_capture_alloc_chunk()`
/// allocated zeroed, which only this value frees; its `next` chain is this
/// value's too.
pub(super) struct ChunkBox(NonNull<Chunk>);

impl ChunkBox {
    /// Allocates a chunk of [`CHUNK_RECORDS`] free records. May sleep.
    ///
    /// The allocation is a tagged call site of its own (the records' memory
    /// has a row), which may be armed: its record comes from the pool, never
    /// from a new chunk.
    pub(super) fn new() -> Result<ChunkBox> {
        // SAFETY: no preconditions but process context, which may-sleep
        // callers have.
        let chunk = unsafe { bindings::alloc_tag_capture_alloc_chunk(size_of::<Chunk>()) };
        // INVARIANT: a new zeroed chunk, whose `next` (zero) is `None`.
        NonNull::new(chunk.cast()).map(ChunkBox).ok_or(ENOMEM)
    }

    /// The chunk's `i`th record.
    fn record(&self, i: usize) -> NonNull<Record> {
        // SAFETY: a projection inside the chunk, which is live (invariant);
        // no reference to it is made.
        unsafe { NonNull::new_unchecked(core::ptr::addr_of_mut!((*self.0.as_ptr()).records[i])) }
    }

    /// Unlinks and returns the chunks after this one.
    fn take_next(&mut self) -> Option<ChunkBox> {
        // SAFETY: the chunk is live and ours (invariant); its `next` is
        // only reached through its owner, here borrowed mutably.
        unsafe { (*self.0.as_ptr()).next.take() }
    }

    /// Links `next` after this chunk.
    fn set_next(&mut self, next: Option<ChunkBox>) {
        // SAFETY: as in `take_next()`.
        unsafe { (*self.0.as_ptr()).next = next };
    }
}

impl Drop for ChunkBox {
    fn drop(&mut self) {
        // The rest of the chain one by one, not by recursion.
        let mut next = self.take_next();
        while let Some(mut chunk) = next {
            next = chunk.take_next();
        }
        // SAFETY: ours alone (invariant), from `kvzalloc()`. The pool gives
        // its chunks away only with no record live and its free list
        // cleared, so nothing points into it any more.
        unsafe { bindings::kvfree(self.0.as_ptr().cast()) };
    }
}

// SAFETY: a chunk is plain memory owned by its `ChunkBox`; any CPU may use
// or free it.
unsafe impl Send for ChunkBox {}

/// A free record taken from the pool, to be given to an object with
/// [`Pool::hold`].
///
/// # Invariants
///
/// Points at a record of the pool's chunks, in no list.
#[must_use]
pub(super) struct FreeRecord(NonNull<Record>);

/// Where a live record counts its allocation.
#[derive(Clone, Copy)]
pub(super) struct Held {
    /// The site's slot.
    pub(super) site: usize,
    /// The bucket of the site's stack.
    pub(super) bucket: usize,
    /// The allocation's size.
    pub(super) bytes: usize,
}

/// The record pool and the live lists of `SITES` site slots.
///
/// # Invariants
///
/// - `chunks` chains the pool's chunks; `total` is [`CHUNK_RECORDS`] times
///   their number.
/// - Each record of the chunks is, but while a [`FreeRecord`] names it,
///   either free, linked through `next` in `free` (`nfree` of them), or
///   live: linked in exactly one of `live`, `live[r.site]`, through `prev`
///   and `next`, and held by its object's tag reference `r.obj`, which
///   holds its address with `REF_RECORD` set. That object is allocated; its
///   free takes the capture spinlock and gives the record back first.
/// - No other pointer to a record is kept.
///
/// There is one pool, in capture's state, so a tag reference that holds a
/// record (see [`TagRef`]) holds one of this pool's, live while the
/// reference holds it.
pub(super) struct Pool<const SITES: usize> {
    chunks: Option<ChunkBox>,
    free: Option<NonNull<Record>>,
    nfree: usize,
    total: usize,
    live: [Option<NonNull<Record>>; SITES],
}

// SAFETY: the records and chunks are the pool's own (invariant), only used
// through it.
unsafe impl<const SITES: usize> Send for Pool<SITES> {}

impl<const SITES: usize> Pool<SITES> {
    /// An empty pool.
    pub(super) const fn new() -> Self {
        // INVARIANT: no chunk, no record.
        Self {
            chunks: None,
            free: None,
            nfree: 0,
            total: 0,
            live: [None; SITES],
        }
    }

    /// Records in the chunks, free or live.
    pub(super) fn total(&self) -> usize {
        self.total
    }

    /// Free records.
    pub(super) fn nfree(&self) -> usize {
        self.nfree
    }

    /// Records taken from the pool and not given back.
    pub(super) fn live(&self) -> usize {
        self.total - self.nfree
    }

    /// Puts `rec`, a record of the chunks in no list, on the free list.
    #[inline(always)]
    fn push_free(&mut self, rec: NonNull<Record>) {
        // SAFETY: a record of the chunks, which are live (invariant), in no
        // list: only this pool, borrowed mutably, reaches it.
        unsafe { (*rec.as_ptr()).next = self.free };
        self.free = Some(rec);
        self.nfree += 1;
    }

    /// Takes a free record.
    #[inline(always)]
    pub(super) fn pop(&mut self) -> Option<FreeRecord> {
        let rec = self.free?;
        // SAFETY: a free record, in the live chunks (invariant).
        self.free = unsafe { (*rec.as_ptr()).next };
        self.nfree -= 1;
        // INVARIANT: off the free list, in no other.
        Some(FreeRecord(rec))
    }

    /// Makes `rec` the live record of `obj`, an allocated object's tag
    /// reference: counted in `bucket` of the site in slot `site`, for
    /// `bytes`. `obj` then holds the record. A slot past `SITES` (there is
    /// none: the slots are those of an array of `SITES` sites) gives the
    /// record back and leaves `obj` as it is.
    #[inline(always)]
    pub(super) fn hold(
        &mut self,
        rec: FreeRecord,
        site: usize,
        bucket: usize,
        bytes: usize,
        obj: &TagRef,
    ) {
        let p = rec.0;
        let Some(list) = self.live.get_mut(site) else {
            self.push_free(p);
            return;
        };
        let head = *list;
        // SAFETY: `p` and the list's head are records of the live chunks
        // (invariants), `p` in no list; only this pool, borrowed mutably,
        // reaches them.
        unsafe {
            p.as_ptr().write(Record {
                prev: None,
                next: head,
                obj: Some(NonNull::from(obj)),
                site,
                bucket,
                bytes,
            });
            if let Some(h) = head {
                (*h.as_ptr()).prev = Some(p);
            }
        }
        *list = Some(p);
        // INVARIANT: linked in its site's list, held by `obj`.
        obj.set_raw((p.as_ptr() as usize | REF_RECORD) as *mut bindings::codetag);
    }

    /// The record `obj` holds, if it holds one.
    #[inline(always)]
    fn record_of(obj: &TagRef) -> Option<NonNull<Record>> {
        if !obj.holds_record() {
            return None;
        }
        NonNull::new((obj.raw() as usize & !REF_RECORD) as *mut Record)
    }

    /// Where the record `obj` holds counts its allocation, if it holds one.
    #[inline(always)]
    pub(super) fn held_by(&self, obj: &TagRef) -> Option<Held> {
        let rec = Self::record_of(obj)?;
        // SAFETY: a reference holding a record holds a live record of this
        // pool (invariant), which the pool, borrowed, keeps.
        let r = unsafe { &*rec.as_ptr() };
        Some(Held {
            site: r.site,
            bucket: r.bucket,
            bytes: r.bytes,
        })
    }

    /// Gives the record `obj` holds back to the pool, if it holds one, and
    /// makes `obj` hold `now` instead (its site's code tag).
    #[inline(always)]
    pub(super) fn release(&mut self, obj: &TagRef, now: *mut bindings::codetag) {
        let Some(rec) = Self::record_of(obj) else {
            return;
        };
        // SAFETY: a live record of this pool and its neighbours in its live
        // list (invariant); only this pool, borrowed mutably, reaches them.
        unsafe {
            let r = &mut *rec.as_ptr();
            match r.prev {
                None => {
                    if let Some(head) = self.live.get_mut(r.site) {
                        *head = r.next;
                    }
                }
                Some(prev) => (*prev.as_ptr()).next = r.next,
            }
            if let Some(next) = r.next {
                (*next.as_ptr()).prev = r.prev;
            }
        }
        // INVARIANT: unlinked; `obj` no longer holds it.
        obj.set_raw(now);
        self.push_free(rec);
    }

    /// Gives every live record of the site in slot `site` back to the pool;
    /// each object's reference holds `now` (the site's code tag) instead.
    pub(super) fn release_site(&mut self, site: usize, now: *mut bindings::codetag) {
        let Some(head) = self.live.get_mut(site) else {
            return;
        };
        let mut next = head.take();
        while let Some(rec) = next {
            // SAFETY: a live record of this pool, whose object is allocated
            // and holds it (invariant): its free waits for the capture
            // spinlock, held as long as the pool is borrowed.
            unsafe {
                next = (*rec.as_ptr()).next;
                if let Some(obj) = (*rec.as_ptr()).obj {
                    obj.as_ref().set_raw(now);
                }
            }
            // INVARIANT: off its list (its head is cleared), its object's
            // reference holds the site's tag.
            self.push_free(rec);
        }
    }

    /// Adds the free records of `chunk` to the pool.
    pub(super) fn add_chunk(&mut self, mut chunk: ChunkBox) {
        for i in 0..CHUNK_RECORDS {
            // INVARIANT: zeroed records, now free.
            self.push_free(chunk.record(i));
        }
        chunk.set_next(self.chunks.take());
        self.chunks = Some(chunk);
        self.total += CHUNK_RECORDS;
    }

    /// Empties the pool if no record is live, and returns its chunks (to
    /// be dropped, which frees them, outside the capture spinlock).
    pub(super) fn take_chunks(&mut self) -> Option<ChunkBox> {
        if self.live() != 0 {
            return None;
        }
        // INVARIANT: every record was free; none is listed any more.
        self.free = None;
        self.nfree = 0;
        self.total = 0;
        self.chunks.take()
    }
}
