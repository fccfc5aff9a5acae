// SPDX-License-Identifier: GPL-2.0
/*
 * The sysctl.vm.mem_profiling= boot parameter, checked in the boot that got
 * it: the harness boots once per value, and this test reads the value from
 * /proc/cmdline and checks the state the documented rules give for it:
 *   (absent)  default: on (MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=y), writable
 *   0 / 1     off / on, writable
 *   1,compressed  on, writable, page tags compressed (Rust core)
 *   never     off, read-only, no page_ext allocated, nothing counted
 *   other     malformed: boot goes on with the default, the log names it
 */
#include "alloc_tag_util.h"

#include "../kselftest_harness.h"

#define PARAM "sysctl.vm.mem_profiling="

/* The value given on the command line, or NULL when absent. */
static char *boot_value(void)
{
	static char val[256];
	char *cmdline = ai_slurp("/proc/cmdline", 4096, NULL);
	char *p, *q;

	if (!cmdline)
		return NULL;
	p = strstr(cmdline, PARAM);
	if (!p || (p != cmdline && p[-1] != ' ')) {
		free(cmdline);
		return NULL;
	}
	p += strlen(PARAM);
	q = p + strcspn(p, "\t\n ");
	snprintf(val, sizeof(val), "%.*s", (int)(q - p), p);
	free(cmdline);
	return val;
}

static bool writable(void)
{
	struct stat st;

	return !stat(AI_SYSCTL, &st) && (st.st_mode & 0200);
}

static bool page_ext_allocated(void)
{
	return ai_kmsg_has("bytes of page_ext", NULL);
}

static bool compressed_tags(void)
{
	return ai_kmsg_has("alloc_tag: ", "page tags compressed in page->flags", NULL);
}

/* Page tags have somewhere to live: page_ext, or compressed in page->flags. */
static bool page_tags_ready(void)
{
	return page_ext_allocated() || (!ai_is_upstream() && compressed_tags());
}

/* Does a module kmalloc of 3 x 100 bytes change its row by (bytes, calls)? */
static int kmalloc_delta(long long *bytes, long long *calls)
{
	struct att_site s;
	struct ai_row a = { 0 }, b = { 0 };

	if (att_site("kmalloc", &s) || ai_get(s.file, s.line, &a) ||
	    att_ctl("kmalloc 100 3") || ai_get(s.file, s.line, &b) ||
	    att_ctl("free kmalloc"))
		return -1;
	*bytes = b.bytes - a.bytes;
	*calls = (long long)(b.calls - a.calls);
	return 0;
}

TEST(state_matches_boot_value)
{
	const char *v = boot_value();
	long long bytes, calls;

	if (access(AI_SYSCTL, F_OK))
		SKIP(return, AI_SYSCTL " missing");
	TH_LOG("boot value: %s", v ? v : "(none)");

	if (!v || !strcmp(v, "1")) {
		EXPECT_EQ(1, ai_sysctl_read());
		EXPECT_EQ(!ai_debug_kernel(), writable());
		EXPECT_TRUE(page_tags_ready());
	} else if (!strcmp(v, "1,compressed") && !ai_is_upstream()) {
		EXPECT_EQ(1, ai_sysctl_read());
		EXPECT_EQ(!ai_debug_kernel(), writable());
		EXPECT_TRUE(compressed_tags() ||
			    ai_kmsg_has("compressed page tags do not fit", NULL));
	} else if (!strcmp(v, "0")) {
		EXPECT_EQ(0, ai_sysctl_read());
		EXPECT_EQ(!ai_debug_kernel(), writable());
		EXPECT_TRUE(page_tags_ready()) TH_LOG("0 must keep runtime enabling possible");
		/* and enabling at run time works (the debug option forbids it) */
		if (!ai_debug_kernel()) {
			ASSERT_EQ(0, ai_sysctl_write("1", 1));
			EXPECT_EQ(1, ai_sysctl_read());
			ASSERT_EQ(0, ai_sysctl_write("0", 1));
		}
	} else if (!strcmp(v, "never")) {
		EXPECT_EQ(0, ai_sysctl_read());
		EXPECT_FALSE(writable()) TH_LOG("never must make the sysctl read-only");
		EXPECT_NE(0, ai_sysctl_write("1", 1));
		EXPECT_EQ(0, ai_sysctl_read());
		EXPECT_FALSE(page_ext_allocated()) TH_LOG("never must not allocate page_ext");
		if (!access(ATT_DIR, F_OK)) {
			ASSERT_EQ(0, kmalloc_delta(&bytes, &calls));
			EXPECT_EQ(0, bytes);
			EXPECT_EQ(0, calls);
		}
	} else {
		/* Malformed: the default stays and the log says why. */
		EXPECT_EQ(1, ai_sysctl_read());
		EXPECT_EQ(!ai_debug_kernel(), writable());
		EXPECT_TRUE(ai_kmsg_has("vm.mem_profiling", v, NULL)) {
			TH_LOG("no kernel log line names vm.mem_profiling and '%s'", v);
		}
	}
	if (ai_sysctl_read() == 1 && !access(ATT_DIR, F_OK)) {
		ASSERT_EQ(0, kmalloc_delta(&bytes, &calls));
		EXPECT_EQ(3 * ai_kmalloc_bytes(128), bytes);
		EXPECT_EQ(3, calls);
	}
}

TEST_HARNESS_MAIN
