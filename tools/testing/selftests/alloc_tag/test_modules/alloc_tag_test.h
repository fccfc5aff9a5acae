/* SPDX-License-Identifier: GPL-2.0 */
/* What alloc_tag_test.ko exports to the other test modules. */
#ifndef ALLOC_TAG_TEST_H
#define ALLOC_TAG_TEST_H

int att_adopt(void *ptr, int order);

/*
 * The Rust test module (alloc_tag_rust_test.ko) registers its command
 * callback (1 alloc, 2 free, 3 adopt) and its sites callback (fills a
 * buffer with "<kind> <line> <function>" lines); NULL unregisters, waiting
 * for a callback that is running.
 */
typedef int (*att_rust_cmd_fn)(int op);
typedef ssize_t (*att_rust_sites_fn)(char *buf, size_t len);

int att_rust_register(att_rust_cmd_fn cmd, att_rust_sites_fn sites);

#endif /* ALLOC_TAG_TEST_H */
