/* SPDX-License-Identifier: GPL-2.0 */
/* What alloc_tag_test.ko exports to the other test modules. */
#ifndef ALLOC_TAG_TEST_H
#define ALLOC_TAG_TEST_H

int att_adopt(void *ptr, int order);

#endif /* ALLOC_TAG_TEST_H */
