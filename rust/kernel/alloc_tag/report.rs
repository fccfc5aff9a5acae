// SPDX-License-Identifier: GPL-2.0

//! Reports: `/proc/allocinfo` (format v2.0, byte for byte as upstream) and
//! the top users that `show_mem()` prints on OOM.
//!
//! `/proc/allocinfo` is root-only (0400). After the two header lines, one row
//! per tag, zero rows included, in registry order:
//!
//! ```text
//! allocinfo - version: 2.0
//! #     <size>  <calls> <tag info>
//!        4096        1 mm/percpu.c:1234 func:pcpu_alloc_chunk
//!         128        1 drivers/foo.c:56 [foo] func:foo_probe
//!        8192        2 drivers/foo.c:78 [foo] func:foo_grow accurate:no
//! ```
//!
//! Size is right-aligned in 12 (signed), calls in 8, then `file:line`, the
//! module in brackets if any, `func:name`, ` accurate:no` if some
//! allocation from the site could not be counted, and a trailing space. This
//! is v1.0 with a new header and the optional key. A `read()`
//! resumes at its position in O(number of modules), never by walking the
//! tags already returned. The same file answers the `ALLOCINFO_IOC_*`
//! ioctls ([`ioctl`]).

#[cfg(CONFIG_DEBUG_FS)]
use super::node;
use super::{ioctl, registry, tag::HeldTag, Counters};
use crate::{
    bindings,
    error::Result,
    seq_file::{ProcOpsTable, SeqFile, SeqOperations, SeqOpsTable, SeqProcFile},
};
use core::ptr::NonNull;

const HEADER: &[u8] = b"allocinfo - version: 2.0\n#     <size>  <calls> <tag info>\n";

/// Writes into a borrowed byte buffer; remembers whether anything did not
/// fit.
struct RowBuf<'a> {
    buf: &'a mut [u8],
    len: usize,
    overflow: bool,
}

impl RowBuf<'_> {
    #[inline(always)]
    fn push(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if end > self.buf.len() {
            self.overflow = true;
            return;
        }
        self.buf[self.len..end].copy_from_slice(bytes);
        self.len = end;
    }

    #[inline(always)]
    fn push_byte(&mut self, b: u8) {
        if self.len < self.buf.len() {
            self.buf[self.len] = b;
            self.len += 1;
        } else {
            self.overflow = true;
        }
    }

    /// `v` in decimal (with a `-` if `neg`), right-aligned in `WIDTH`
    /// (printf `%*lli`/`%*llu`); `WIDTH` 0 is `%llu`.
    ///
    /// The digits go into a space-filled scratch field, which is copied with
    /// a constant length whenever it can be (a couple of stores, not a
    /// `memcpy()` call and a padding loop: this runs twice or three times
    /// for every row of a read).
    #[inline(always)]
    fn push_num<const WIDTH: usize>(&mut self, neg: bool, mut v: u64) {
        // 20 digits and a sign fit before `END`; up to `SPARE` bytes after
        // it are copied along by the fixed-length copy of a short number.
        const END: usize = 24;
        const SPARE: usize = 8;
        let mut field = [b' '; END + SPARE];
        let mut i = END;
        loop {
            i -= 1;
            field[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        if neg {
            i -= 1;
            field[i] = b'-';
        }
        let n = END - i;
        if WIDTH > 0 && n <= WIDTH {
            self.push(&field[END - WIDTH..END]);
        } else if n <= SPARE && self.buf.len() - self.len >= SPARE {
            // The bytes after the number are overwritten by what follows
            // it, or lie past the end of the row.
            self.buf[self.len..self.len + SPARE].copy_from_slice(&field[i..i + SPARE]);
            self.len += n;
        } else {
            self.push(&field[i..END]);
        }
    }
}

/// Writes one v2.0 row for `tag`: `"%12lli %8llu file:line[ [mod]] func:f[ accurate:no] \n"`.
///
/// Formatted by hand straight into the seq_file's buffer (if the row does
/// not fit, the seq_file core grows the buffer and asks again): this is the
/// whole cost of reading `/proc/allocinfo`, so it avoids `core::fmt`, an
/// intermediate buffer and per-byte string escaping.
fn write_row(m: &SeqFile, tag: &HeldTag) {
    write_node_row(m, tag, tag.read(), None);
}

/// Writes one row: the `/proc/allocinfo` row of `tag` with counters `c`,
/// or with `node` the row of its share on that node (`N<node>` after the
/// calls).
fn write_node_row(m: &SeqFile, tag: &HeldTag, c: Counters, node: Option<(usize, i64)>) {
    let module = tag
        .module_name()
        .map(|m| m.as_bytes())
        .filter(|m| !m.is_empty());
    let file = tag.file().as_bytes();
    let function = tag.function().as_bytes();
    let accurate = tag.is_accurate();
    m.write_with(|space| {
        let mut r = RowBuf {
            buf: space,
            len: 0,
            overflow: false,
        };
        r.push_num::<12>(c.bytes < 0, c.bytes.unsigned_abs());
        r.push_byte(b' ');
        match node {
            None => r.push_num::<8>(false, c.calls),
            Some((n, calls)) => {
                r.push_num::<8>(calls < 0, calls.unsigned_abs());
                r.push(b" N");
                r.push_num::<0>(false, n as u64);
            }
        }
        r.push_byte(b' ');
        r.push(file);
        r.push_byte(b':');
        r.push_num::<0>(false, u64::from(tag.line()));
        r.push_byte(b' ');
        if let Some(module) = module {
            r.push_byte(b'[');
            r.push(module);
            r.push(b"] ");
        }
        r.push(b"func:");
        r.push(function);
        if !accurate {
            r.push(b" accurate:no");
        }
        r.push(b" \n");
        (!r.overflow).then_some(r.len)
    });
}

/// The `seq_operations` of `/proc/allocinfo`: one record per reported tag,
/// the header before the first; the registry is held for reading from
/// `start` to `stop`.
struct Allocinfo;

// SAFETY: the records are tags of the registry, which `start` takes for
// reading and only `stop` releases: no segment leaves it meanwhile.
unsafe impl SeqOperations for Allocinfo {
    type Record = HeldTag;

    fn start(_m: &SeqFile, pos: &mut i64) -> Option<NonNull<HeldTag>> {
        let guard = registry::read()?;
        // The lock stays held until `stop`, which the seq_file core always
        // calls after `start`.
        core::mem::forget(guard);
        tag_from(pos)
    }

    fn next(_m: &SeqFile, _prev: &HeldTag, pos: &mut i64) -> Option<NonNull<HeldTag>> {
        *pos += 1;
        tag_from(pos)
    }

    fn stop(_m: &SeqFile) {
        // SAFETY: `start` took the registry for reading; this releases it.
        drop(unsafe { registry::ReadGuard::assume_held() });
    }

    fn show(m: &SeqFile, tag: &HeldTag) {
        if m.index() == 0 {
            m.write_bytes(HEADER);
        }
        write_row(m, tag);
    }
}

/// The first tag at position `*pos` or after it; moves `*pos` to it (past
/// the end if none). Positions are the registry's, which a Rust call site
/// registering meanwhile does not move ([`registry::ReadGuard::next_from`]).
fn tag_from(pos: &mut i64) -> Option<NonNull<HeldTag>> {
    let from = usize::try_from(*pos).ok()?;
    // SAFETY: the registry is held for reading by this reader since `start`.
    let guard = unsafe { registry::ReadGuard::assume_held() };
    // The tag stays valid after this guard is forgotten: the hold it stands
    // for lasts until `stop`, and the seq_file core uses the tag only
    // before that.
    let found = guard
        .next_from(from)
        .map(|(idx, tag)| (idx, NonNull::from(tag)));
    core::mem::forget(guard);
    let (idx, tag) = found?;
    *pos = idx as i64;
    Some(tag)
}

static ALLOCINFO_OPS: SeqOpsTable<Allocinfo> = SeqOpsTable::new();

// SAFETY: `ioctl::state_init()` makes the zeroed state valid, and the state
// (a mutex and plain data) needs no drop.
unsafe impl SeqProcFile for Allocinfo {
    type State = ioctl::State;

    fn seq_ops() -> &'static SeqOpsTable<Self> {
        &ALLOCINFO_OPS
    }

    fn before_open() {
        // Free what unloaded modules left once it is drained, outside any
        // hold.
        registry::reclaim();
    }

    unsafe fn init(state: *mut ioctl::State) {
        // SAFETY: zeroed, of a `State`'s size and alignment, unused (the
        // caller's).
        unsafe { ioctl::state_init(state) };
    }

    fn ioctl(state: &ioctl::State, cmd: u32, arg: usize) -> Result {
        ioctl::dispatch(state, cmd, arg)
    }
}

/// `/proc/allocinfo`: the text of the tags, and the ioctls.
static ALLOCINFO_PROC_OPS: ProcOpsTable<Allocinfo> = ProcOpsTable::new();

pub(super) fn procfs_init() {
    // SAFETY: the ops are static; the name is a static string.
    let entry = unsafe {
        bindings::proc_create(
            c"allocinfo".as_ptr().cast(),
            0o400,
            core::ptr::null_mut(),
            ALLOCINFO_PROC_OPS.as_ptr(),
        )
    };
    if entry.is_null() {
        crate::pr_err!("alloc_tag: cannot create /proc/allocinfo\n");
    }
}

/// Fills `tags[..count]` with the tags holding the most bytes, largest
/// first, for `show_mem()`, and returns how many it filled. Never sleeps:
/// gives up (returns 0) if the registry is being changed.
///
/// When it returns more than 0, the registry stays held for reading until
/// `alloc_tag_top_users_end()`, so that the tags, their strings and their
/// counters stay valid while the caller prints them: a module unloaded
/// meanwhile waits, instead of freeing its strings under the printer.
///
/// # Safety
///
/// `tags` points to `count` writable `codetag_bytes`. After a non-zero
/// return the caller calls `alloc_tag_top_users_end()` once, from the same
/// task.
pub(super) unsafe fn top_users_begin(tags: *mut bindings::codetag_bytes, count: usize) -> usize {
    if tags.is_null() || count == 0 {
        return 0;
    }
    let Some(guard) = registry::try_read() else {
        return 0;
    };
    // SAFETY: `count` writable entries (caller), used only here.
    let out = unsafe { core::slice::from_raw_parts_mut(tags, count) };
    let mut nr = 0;
    for tag in guard.tags() {
        let bytes = tag.read().bytes;
        // Insertion into the sorted prefix `out[..nr]`, largest first.
        let Some(i) = (0..nr)
            .find(|&i| bytes > out[i].bytes)
            .or((nr < count).then_some(nr))
        else {
            continue;
        };
        let last = nr.min(count - 1);
        out.copy_within(i..last, i + 1);
        out[i] = bindings::codetag_bytes {
            ct: tag.codetag(),
            bytes,
        };
        nr = (nr + 1).min(count);
    }
    if nr > 0 {
        // Held until `alloc_tag_top_users_end()` (caller).
        core::mem::forget(guard);
    }
    nr
}

/// Releases the registry that `alloc_tag_top_users_begin()` left held.
///
/// # Safety
///
/// Called once after each non-zero return of
/// `alloc_tag_top_users_begin()`, by the same task.
pub(super) unsafe fn top_users_end() {
    // SAFETY: `alloc_tag_top_users_begin` left the registry held for
    // reading (caller); this releases that hold.
    drop(unsafe { registry::ReadGuard::assume_held() });
}

/// The per-node view (`CONFIG_DEBUG_FS`).
#[cfg(CONFIG_DEBUG_FS)]
pub(super) mod nodes_view {
    use super::{node, registry, write_node_row, Counters, RowBuf};
    use crate::{
        alloc::{flags::GFP_KERNEL, KVec},
        bindings,
        error::{code::*, Result},
        seq_file::{SeqFile, SingleFile, SingleFileOps, SingleShow},
        uaccess::UserSliceReader,
    };

    /// `/sys/kernel/debug/allocinfo_nodes` (0400, with `CONFIG_DEBUG_FS`): per-node attribution as
    /// text. After two header lines, for every tag with a non-zero row, one row
    /// per node holding some of it, in registry and node order:
    ///
    /// ```text
    /// allocinfo nodes - version: 1.0, nodes: 2
    /// #     <size>  <calls> <node> <tag info>
    ///        16384        4 N0 mm/slub.c:2443 func:alloc_slab_page
    ///         8192        2 N1 mm/slub.c:2443 func:alloc_slab_page
    /// ```
    ///
    /// The rows of one tag add up to its `/proc/allocinfo` row read in the same
    /// pass. `ENODEV` when this boot has no per-node view (several nodes and
    /// `alloc_tag_node=1` not given).
    struct NodesView;

    impl SingleShow for NodesView {
        fn show(m: &SeqFile) -> Result {
            let nodes = node::nodes().ok_or(ENODEV)?;
            let mut per = KVec::with_capacity(nodes, GFP_KERNEL)?;
            for _ in 0..nodes {
                per.push(node::NodeCounters::default(), GFP_KERNEL)?;
            }
            let guard = registry::read().ok_or(ENODEV)?;
            m.write_bytes(b"allocinfo nodes - version: 1.0, nodes: ");
            m.write_with(|space| {
                let mut r = RowBuf {
                    buf: space,
                    len: 0,
                    overflow: false,
                };
                r.push_num::<0>(false, nodes as u64);
                r.push(b"\n#     <size>  <calls> <node> <tag info>\n");
                (!r.overflow).then_some(r.len)
            });
            let mut from = 0;
            while let Some((idx, tag)) = guard.next_from(from) {
                from = idx + 1;
                let row = node::read(tag, &mut per);
                if row.bytes == 0 && row.calls == 0 {
                    continue;
                }
                for (n, c) in per.iter().enumerate() {
                    if c.bytes != 0 || c.calls != 0 {
                        let shown = Counters {
                            bytes: c.bytes,
                            calls: 0,
                        };
                        write_node_row(m, tag, shown, Some((n, c.calls)));
                    }
                }
            }
            Ok(())
        }
    }

    impl SingleFile for NodesView {
        /// Read-only (0400): a write is refused.
        fn write(_data: UserSliceReader, _len: usize) -> Result {
            Err(EPERM)
        }
    }

    static NODES_FOPS: SingleFileOps<NodesView> = SingleFileOps::new();

    /// Creates `/sys/kernel/debug/allocinfo_nodes` (the profiler's initcall).
    pub(in crate::alloc_tag) fn init() {
        // SAFETY: a static name and static operations; debugfs is up at subsys
        // initcalls. Its result is not checked (the debugfs convention).
        unsafe {
            bindings::debugfs_create_file(
                c"allocinfo_nodes".as_ptr().cast(),
                0o400,
                core::ptr::null_mut(),
                core::ptr::null_mut(),
                NODES_FOPS.as_ptr(),
            )
        };
    }
}
