// SPDX-License-Identifier: GPL-2.0

//! Per-node attribution: how much of each tag's memory is on each NUMA node.
//!
//! C side: [`lib/alloc_tag_node.c`](srctree/lib/alloc_tag_node.c) (the boot
//! parameter, vmlinux's corrections, the hooks' glue).
//!
//! A tag's per-CPU counters count every charge on the node of the CPU that
//! made it. With `CONFIG_MEM_ALLOC_PROFILING_NUMA` and `alloc_tag_node=1`,
//! each tag also has one correction pair per node (`struct
//! alloc_tag_node_counters`): a charge of memory on another node than the
//! CPU's moves its bytes and call from the CPU's node to the memory's there
//! (four atomic adds: bytes and calls on both nodes; none for node-local
//! memory). So
//!
//! ```text
//! node[n] = sum of the counters of n's possible CPUs + correction[n]
//! ```
//!
//! and the corrections add up to zero, the nodes to the row. Percpu memory
//! is on every CPU's node: its tags are marked on their first charge and
//! their row is split over the nodes by possible CPUs.
//!
//! Memory: `16 x nodes` bytes per tag, against today's `16 x CPUs` of
//! per-CPU counters, so `(CPUs + nodes) / CPUs` times the counter memory.
//!
//! Without the option, or on a machine with one node, the view is one node
//! holding the row (all memory is on node 0); on a multi-node machine with
//! the option off at boot there is no view ([`nodes`] is `None`).

use super::{tag::AllocTag, tag_ref::TagRef};
use crate::bindings;
use core::sync::atomic::{AtomicI64, Ordering};

/// `CODETAG_FLAG_PERCPU` of include/linux/codetag.h: the tag's memory is
/// percpu memory (per-node attribution splits its row by CPUs).
pub(crate) const CODETAG_FLAG_PERCPU: u32 = 1 << 2;

/// One node's share of a tag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct NodeCounters {
    /// Bytes of the tag's memory on the node.
    pub bytes: i64,
    /// Live allocations of the tag on the node.
    pub calls: i64,
}

use numa::corrections;
pub(super) use numa::enabled;

/// The correction pairs (`CONFIG_MEM_ALLOC_PROFILING_NUMA`).
#[cfg(CONFIG_MEM_ALLOC_PROFILING_NUMA)]
mod numa {
    use super::{node_ids, NodePair};
    use crate::alloc_tag::{keys::StaticKey, tag::AllocTag};
    use crate::bindings;

    const _: () = assert!(
        core::mem::size_of::<NodePair>()
            == core::mem::size_of::<bindings::alloc_tag_node_counters>()
    );

    /// Whether per-node attribution is counting in this boot.
    #[inline]
    pub(in crate::alloc_tag) fn enabled() -> bool {
        StaticKey::node().is_enabled()
    }

    /// A tag's correction pairs, if it has them.
    #[inline(always)]
    pub(super) fn corrections(tag: &AllocTag) -> Option<&[NodePair]> {
        // SAFETY: `nodes` of a valid tag is NULL or `nr_node_ids` pairs that
        // live as long as the tag's counters (registry), changed only by
        // atomic operations.
        let p = unsafe { (*tag.as_raw()).nodes };
        if p.is_null() {
            return None;
        }
        // SAFETY: as above; `NodePair` is `repr(C)` with the C pair's
        // layout (two aligned 64-bit fields, as the assertion above checks
        // by size), its fields atomic.
        Some(unsafe { core::slice::from_raw_parts(p.cast::<NodePair>(), node_ids()) })
    }

    /// See [`super::set_pairs`].
    ///
    /// # Safety
    ///
    /// As [`super::set_pairs`].
    #[inline]
    pub(super) unsafe fn set_pairs(tag: *mut bindings::alloc_tag, area: *mut u8, i: usize) {
        // SAFETY: inside the area (caller); the tag is not reachable yet.
        unsafe {
            (*tag).nodes = area
                .cast::<bindings::alloc_tag_node_counters>()
                .wrapping_add(i * node_ids());
        }
    }

    /// See [`super::free_pairs`].
    ///
    /// # Safety
    ///
    /// As [`super::free_pairs`].
    #[inline]
    pub(super) unsafe fn free_pairs(tag: *mut bindings::alloc_tag) {
        // SAFETY: the area's start (caller), freed once.
        unsafe {
            let p = (*tag).nodes;
            if !p.is_null() {
                (*tag).nodes = core::ptr::null_mut();
                bindings::kvfree(p.cast());
            }
        }
    }
}

/// Without `CONFIG_MEM_ALLOC_PROFILING_NUMA`: no tag has correction pairs.
#[cfg(not(CONFIG_MEM_ALLOC_PROFILING_NUMA))]
mod numa {
    use super::NodePair;
    use crate::alloc_tag::tag::AllocTag;
    use crate::bindings;

    #[inline(always)]
    pub(in crate::alloc_tag) fn enabled() -> bool {
        false
    }

    #[inline(always)]
    pub(super) fn corrections(_tag: &AllocTag) -> Option<&[NodePair]> {
        None
    }

    /// # Safety
    ///
    /// None needed; the signature is the per-node build's.
    #[inline(always)]
    pub(super) unsafe fn set_pairs(_tag: *mut bindings::alloc_tag, _area: *mut u8, _i: usize) {}

    /// # Safety
    ///
    /// None needed; the signature is the per-node build's.
    #[inline(always)]
    pub(super) unsafe fn free_pairs(_tag: *mut bindings::alloc_tag) {}
}

/// `nr_node_ids`.
#[inline]
fn node_ids() -> usize {
    // SAFETY: reads a variable set up before any allocation.
    (unsafe { bindings::alloc_tag_nr_node_ids() }) as usize
}

/// The number of nodes a per-node view has: every node id when attribution
/// is on, one when the machine has one node, `None` when it has more and
/// attribution is off (the per-CPU counters alone cannot say).
pub(super) fn nodes() -> Option<usize> {
    let n = node_ids();
    if enabled() {
        Some(n)
    } else if n == 1 {
        Some(1)
    } else {
        None
    }
}

/// `struct alloc_tag_node_counters`, with atomic fields.
#[repr(C)]
struct NodePair {
    bytes: AtomicI64,
    calls: AtomicI64,
}

impl NodePair {
    #[inline(always)]
    fn add(&self, bytes: i64, calls: i64) {
        if bytes != 0 {
            self.bytes.fetch_add(bytes, Ordering::Relaxed);
        }
        if calls != 0 {
            self.calls.fetch_add(calls, Ordering::Relaxed);
        }
    }
}

/// Moves `bytes` and `calls` of `tag` from node `from` to node `to`
/// (lib/alloc_tag_node.c calls it after a charge, before an uncharge and
/// when migration moves a charge). A tag without corrections, or a node
/// out of range, moves nothing.
#[inline(always)]
pub(super) fn move_charge(tag: &AllocTag, from: i32, to: i32, bytes: i64, calls: i64) {
    if from == to {
        return;
    }
    let Some(c) = corrections(tag) else {
        return;
    };
    let (Ok(from), Ok(to)) = (usize::try_from(from), usize::try_from(to)) else {
        return;
    };
    let (Some(f), Some(t)) = (c.get(from), c.get(to)) else {
        return;
    };
    t.add(bytes, calls);
    f.add(bytes.wrapping_neg(), calls.wrapping_neg());
}

/// Marks `tag` as a tag of percpu memory (its first charge with per-node
/// attribution on).
#[inline(always)]
pub(super) fn charge_percpu(tag: &AllocTag) {
    tag.set_flag(CODETAG_FLAG_PERCPU);
}

/// The tag a reference holds (through a capture record if it holds one).
#[inline(always)]
pub(super) fn ref_tag(r: &TagRef) -> Option<&'static AllocTag> {
    if r.holds_record() {
        super::record::record_tag(r)
    } else {
        r.tag()
    }
}

/// The node of a possible CPU, within `0..nodes`.
#[inline]
fn cpu_node(cpu: u32, nodes: usize) -> usize {
    // SAFETY: a possible CPU's node, set up at boot.
    let n = unsafe { bindings::alloc_tag_cpu_to_node(cpu as i32) };
    (n.max(0) as usize).min(nodes.saturating_sub(1))
}

/// `v * part / total` rounded towards zero, without a 128-bit division
/// (none in the kernel): `part <= total`, both CPU counts.
fn share(v: i64, part: u64, total: u64) -> i64 {
    if total == 0 {
        return 0;
    }
    let m = v.unsigned_abs();
    // `(m % total) * part < total * part`, far below 2^64 for CPU counts.
    let s = (m / total) * part + (m % total) * part / total;
    if v < 0 {
        (s as i64).wrapping_neg()
    } else {
        s as i64
    }
}

/// Splits a percpu tag's row over the nodes by their share of the possible
/// CPUs: each node its rounded-down share, the remainder to the first node
/// with CPUs, so that the shares add up to the row.
fn split_percpu(row: super::Counters, out: &mut [NodeCounters]) {
    let k = out.len();
    let per_node = |n: usize| -> u32 {
        crate::percpu::possible_cpus()
            .filter(|c| cpu_node(c.id(), k) == n)
            .count() as u32
    };
    let total = crate::percpu::possible_cpus().count() as u64;
    let (b, c) = (row.bytes, row.calls as i64);
    let (mut rest_b, mut rest_c) = (b, c);
    let mut first = None;
    for (n, o) in out.iter_mut().enumerate() {
        let cpus = per_node(n);
        if cpus != 0 && first.is_none() {
            first = Some(n);
        }
        o.bytes = share(b, u64::from(cpus), total);
        o.calls = share(c, u64::from(cpus), total);
        rest_b = rest_b.wrapping_sub(o.bytes);
        rest_c = rest_c.wrapping_sub(o.calls);
    }
    if let Some(o) = out.get_mut(first.unwrap_or(0)) {
        o.bytes = o.bytes.wrapping_add(rest_b);
        o.calls = o.calls.wrapping_add(rest_c);
    }
}

/// Reads `tag` per node into `out` (one entry per node of the view,
/// [`nodes`]); returns the row's counters from the same pass, which the
/// entries add up to (but for charges in flight, as for any row).
pub(super) fn read(tag: &AllocTag, out: &mut [NodeCounters]) -> super::Counters {
    for o in out.iter_mut() {
        *o = NodeCounters::default();
    }
    let k = out.len();
    let (mut bytes, mut calls) = (0i64, 0u64);
    tag.for_each_cpu(|cpu, b, c| {
        if let Some(o) = out.get_mut(cpu_node(cpu, k)) {
            o.bytes = o.bytes.wrapping_add(b as i64);
            o.calls = o.calls.wrapping_add(c as i64);
        }
        bytes = bytes.wrapping_add(b as i64);
        calls = calls.wrapping_add(c);
    });
    let row = super::Counters { bytes, calls };
    if tag.has_flag(CODETAG_FLAG_PERCPU) {
        split_percpu(row, out);
    } else if let Some(c) = corrections(tag) {
        for (o, p) in out.iter_mut().zip(c) {
            o.bytes = o.bytes.wrapping_add(p.bytes.load(Ordering::Relaxed));
            o.calls = o.calls.wrapping_add(p.calls.load(Ordering::Relaxed));
        }
    }
    row
}

/// Zeroed correction pairs for `n` tags, `None` if attribution is off;
/// `Err(ENOMEM)` without memory. The caller gives tag `i` the pairs from
/// `i * nodes()` on and frees them with [`free_pairs`].
pub(crate) fn alloc_pairs(n: usize) -> crate::error::Result<Option<*mut u8>> {
    if !enabled() {
        return Ok(None);
    }
    let size = n
        .checked_mul(node_ids())
        .and_then(|x| x.checked_mul(core::mem::size_of::<NodePair>()))
        .ok_or(crate::error::code::ENOMEM)?;
    // SAFETY: a zeroed allocation from a context that may sleep (module
    // load, adding a block of Rust call-site tags), charged to the helper's
    // own row.
    let p = unsafe { bindings::alloc_tag_alloc_nodes(size) };
    if p.is_null() {
        return Err(crate::error::code::ENOMEM);
    }
    Ok(Some(p.cast()))
}

/// Points tag `tag` at its pairs: entry `i` of the area from
/// [`alloc_pairs`].
///
/// # Safety
///
/// `tag` is valid and not yet reachable; `area` is from [`alloc_pairs`] for
/// more than `i` tags.
pub(crate) unsafe fn set_pairs(tag: *mut bindings::alloc_tag, area: *mut u8, i: usize) {
    // SAFETY: the caller's contract is this function's.
    unsafe { numa::set_pairs(tag, area, i) }
}

/// Frees the pairs of a chunk of tags whose first tag is `tag`, and clears
/// that tag's pointer.
///
/// # Safety
///
/// `tag` is the first tag of a chunk whose pairs came from [`alloc_pairs`]
/// (or has none), and nothing charges the chunk's tags any more.
pub(crate) unsafe fn free_pairs(tag: *mut bindings::alloc_tag) {
    // SAFETY: the caller's contract is this function's.
    unsafe { numa::free_pairs(tag) }
}
