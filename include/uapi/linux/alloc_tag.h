/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * Binary interface of /proc/allocinfo: ioctls that read allocation tags one
 * at a time, optionally filtered, without formatting or parsing text.
 *
 * The layout is that of the upstream interface (Linux 7.3), so programs
 * built against either header work with either kernel.  Every structure is
 * a multiple of 8 bytes with no hidden padding between fields, so 32-bit and
 * 64-bit programs share it; the size is part of each command number, so a
 * structure of another size is an unknown command (ENOTTY).
 *
 * Typical use: ALLOCINFO_IOC_CONTENT_ID, then ALLOCINFO_IOC_GET_AT with
 * pos 0 and a filter, then ALLOCINFO_IOC_GET_NEXT until it fails with
 * ENOENT, then ALLOCINFO_IOC_CONTENT_ID again: if the id changed, a module
 * was loaded or unloaded meanwhile and the walk may be retried.  On this
 * kernel, ALLOCINFO_IOC_GET_BATCH reads many records per call instead.
 */
#ifndef _UAPI_LINUX_ALLOC_TAG_H
#define _UAPI_LINUX_ALLOC_TAG_H

#include <linux/ioctl.h>
#include <linux/types.h>

/* Bytes of each name buffer, the terminating NUL included. */
#define ALLOCINFO_STR_SIZE	64

/*
 * Changes whenever a module with tags is loaded or unloaded, which moves
 * the positions of tags; not when counters change.  A tag that appears or
 * goes on its own (the tag of a Rust call site that allocates for the first
 * time, or that is freed for reuse) moves no other tag and does not change
 * it: a walk then returns every other tag once.
 */
struct allocinfo_content_id {
	__u64 id;
};

/*
 * A tag's identity.  Names are NUL-terminated and NUL-padded; a name longer
 * than ALLOCINFO_STR_SIZE - 1 bytes keeps its last ALLOCINFO_STR_SIZE - 1
 * bytes.  modname is empty for tags built into the kernel.
 */
struct allocinfo_tag {
	char modname[ALLOCINFO_STR_SIZE];
	char function[ALLOCINFO_STR_SIZE];
	char filename[ALLOCINFO_STR_SIZE];
	__u64 lineno;
};

/* A tag's counters, summed over all CPUs; accurate is 0 or 1. */
struct allocinfo_counter {
	__u64 bytes;
	__u64 calls;
	__u8 accurate;
} __attribute__((aligned(8)));

struct allocinfo_tag_data {
	struct allocinfo_tag tag;
	struct allocinfo_counter counter;
};

/* Bits of allocinfo_filter.mask: which criteria apply (all must hold). */
enum {
	ALLOCINFO_FILTER_MODNAME,	/* fields.modname equal; "" = built in */
	ALLOCINFO_FILTER_FUNCTION,	/* fields.function equal */
	ALLOCINFO_FILTER_FILENAME,	/* fields.filename equal */
	ALLOCINFO_FILTER_LINENO,	/* fields.lineno equal */
	ALLOCINFO_FILTER_INACCURATE,	/* inaccurate (0 or not) equals !accurate */
	ALLOCINFO_FILTER_MIN_SIZE,	/* bytes >= min_size */
	ALLOCINFO_FILTER_MAX_SIZE,	/* bytes <= max_size */
	__ALLOCINFO_FILTER_LAST = ALLOCINFO_FILTER_MAX_SIZE,
};

#define ALLOCINFO_FILTER_MASK_MODNAME		(1 << ALLOCINFO_FILTER_MODNAME)
#define ALLOCINFO_FILTER_MASK_FUNCTION		(1 << ALLOCINFO_FILTER_FUNCTION)
#define ALLOCINFO_FILTER_MASK_FILENAME		(1 << ALLOCINFO_FILTER_FILENAME)
#define ALLOCINFO_FILTER_MASK_LINENO		(1 << ALLOCINFO_FILTER_LINENO)
#define ALLOCINFO_FILTER_MASK_INACCURATE	(1 << ALLOCINFO_FILTER_INACCURATE)
#define ALLOCINFO_FILTER_MASK_MIN_SIZE		(1 << ALLOCINFO_FILTER_MIN_SIZE)
#define ALLOCINFO_FILTER_MASK_MAX_SIZE		(1 << ALLOCINFO_FILTER_MAX_SIZE)
#define ALLOCINFO_FILTER_MASKS			((1 << (__ALLOCINFO_FILTER_LAST + 1)) - 1)

struct allocinfo_filter {
	__u64 mask;
	struct allocinfo_tag fields;
	__u64 min_size;
	__u64 max_size;
	__u64 inaccurate;
};

/*
 * In: pos, the index among the tags that pass filter (0 = the first), and
 * the filter, which also applies to the GET_NEXT calls that follow on the
 * same open file.  Out: data.
 */
struct allocinfo_get_at {
	__u64 pos;
	struct allocinfo_filter filter;
	struct allocinfo_tag_data data;
};

/*
 * ALLOCINFO_IOC_GET_BATCH, an extension of this kernel (not in upstream's
 * interface; its number is outside upstream's range, 0x00-0x0F): up to @max
 * records of the open file's walk in one call, as that many GET_NEXT calls
 * would return them, with the filter of the last GET_AT (none before one).
 * Every record is a struct allocinfo_tag_data, @record_size bytes apart;
 * bytes of a record beyond the structure this header describes are zeroed.
 * @flags changes the records:
 * - ALLOCINFO_BATCH_TAG_ID: each struct allocinfo_tag_data is followed by
 *   the tag's id, a __u64 (@record_size at least
 *   sizeof(struct allocinfo_tag_record)).
 * - ALLOCINFO_BATCH_COUNTERS: the records are struct allocinfo_counter_record,
 *   a tag id and counters without names, for a reader that already has
 *   the names of the tags under this content id (@record_size at least
 *   sizeof(struct allocinfo_counter_record)).
 * - ALLOCINFO_BATCH_RESTART: the batch starts the walk again from its
 *   first tag (with the filter of the last GET_AT), wherever it was.
 * - ALLOCINFO_BATCH_NODES: each record (of the kind the other flags say) is
 *   followed by a struct allocinfo_nodes: the tag's bytes and calls on each
 *   NUMA node, which add up to the record's counter (read in the same
 *   pass).  @record_size must hold the record, the header and nr_nodes
 *   pairs, nr_nodes being every node id of the machine
 *   (/sys/devices/system/node/possible), or the call fails with EINVAL.
 *   EOPNOTSUPP when the kernel cannot say: several nodes and per-node
 *   attribution off (CONFIG_MEM_ALLOC_PROFILING_NUMA, alloc_tag_node=1).
 *   A kernel with one node reports node 0 holding everything.
 * A tag's id is the same in every walk for as long as the content id stays
 * the same, and no other tag has it meanwhile.
 * Out: @count records written; fewer than @max means the walk reached its
 * end and, as after GET_NEXT's ENOENT, starts again from the first tag.
 * @content_id is ALLOCINFO_IOC_CONTENT_ID as it was while the records were
 * read: a batch never spans a module load or unload, it ends early before
 * one (then @count < @max, and the next call goes on under the new id).
 * On an error the walk does not move (records may have been written).
 *
 * The structure is versioned by its size, which the command number carries:
 * the kernel accepts ALLOCINFO_BATCH_SIZE_VER0 bytes or more, provided the
 * bytes it does not know are zero (E2BIG otherwise), and fewer is EINVAL.
 * All fields are fixed-size and @records is a 64-bit address, so 32-bit
 * programs use the same layout.
 */
struct allocinfo_batch {
	__u64 records;		/* in: address of the caller's records */
	__u32 record_size;	/* in: at least sizeof(struct allocinfo_tag_data) */
	__u32 max;		/* in: records there is room for, 1 to ALLOCINFO_BATCH_MAX */
	__u32 flags;		/* in: ALLOCINFO_BATCH_* */
	__u32 count;		/* out */
	__u64 content_id;	/* out */
};

#define ALLOCINFO_BATCH_TAG_ID		(1 << 0)
#define ALLOCINFO_BATCH_COUNTERS	(1 << 1)
#define ALLOCINFO_BATCH_RESTART		(1 << 2)
#define ALLOCINFO_BATCH_NODES		(1 << 3)
#define ALLOCINFO_BATCH_FLAGS		(ALLOCINFO_BATCH_TAG_ID | ALLOCINFO_BATCH_COUNTERS | \
					 ALLOCINFO_BATCH_RESTART | ALLOCINFO_BATCH_NODES)

/* A record of GET_BATCH with ALLOCINFO_BATCH_TAG_ID. */
struct allocinfo_tag_record {
	struct allocinfo_tag_data data;
	__u64 tag_id;
};

/* A record of GET_BATCH with ALLOCINFO_BATCH_COUNTERS. */
struct allocinfo_counter_record {
	__u64 tag_id;
	struct allocinfo_counter counter;
};

/* One node's share of a tag (ALLOCINFO_BATCH_NODES). */
struct allocinfo_node_counter {
	__s64 bytes;
	__s64 calls;
};

/* Follows a record with ALLOCINFO_BATCH_NODES: node[i] is node i's. */
struct allocinfo_nodes {
	__u64 nr_nodes;
	struct allocinfo_node_counter node[];
};

#define ALLOCINFO_BATCH_SIZE_VER0	32
#define ALLOCINFO_BATCH_MAX		65536
#define ALLOCINFO_RECORD_SIZE_MAX	1024

#define ALLOCINFO_IOC_BASE		0xA6
#define _ALLOCINFO_IOC_CONTENT_ID	0
#define _ALLOCINFO_IOC_GET_AT		1
#define _ALLOCINFO_IOC_GET_NEXT		2
#define _ALLOCINFO_IOC_GET_BATCH	32

#define ALLOCINFO_IOC_CONTENT_ID \
	_IOR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_CONTENT_ID, struct allocinfo_content_id)
#define ALLOCINFO_IOC_GET_AT \
	_IOWR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_GET_AT, struct allocinfo_get_at)
/* The next tag that passes the filter of the last GET_AT; ENOENT at the end. */
#define ALLOCINFO_IOC_GET_NEXT \
	_IOR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_GET_NEXT, struct allocinfo_tag_data)
#define ALLOCINFO_IOC_GET_BATCH \
	_IOWR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_GET_BATCH, struct allocinfo_batch)

#endif /* _UAPI_LINUX_ALLOC_TAG_H */
