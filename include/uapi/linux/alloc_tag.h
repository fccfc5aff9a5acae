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
 * was loaded or unloaded meanwhile and the walk may be retried.
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

#define ALLOCINFO_IOC_BASE		0xA6
#define _ALLOCINFO_IOC_CONTENT_ID	0
#define _ALLOCINFO_IOC_GET_AT		1
#define _ALLOCINFO_IOC_GET_NEXT		2

#define ALLOCINFO_IOC_CONTENT_ID \
	_IOR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_CONTENT_ID, struct allocinfo_content_id)
#define ALLOCINFO_IOC_GET_AT \
	_IOWR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_GET_AT, struct allocinfo_get_at)
/* The next tag that passes the filter of the last GET_AT; ENOENT at the end. */
#define ALLOCINFO_IOC_GET_NEXT \
	_IOR(ALLOCINFO_IOC_BASE, _ALLOCINFO_IOC_GET_NEXT, struct allocinfo_tag_data)

#endif /* _UAPI_LINUX_ALLOC_TAG_H */
