// SPDX-License-Identifier: GPL-2.0
/*
 * The sysctl.vm.mem_profiling= boot parameter, checked in the boot that got
 * it: the harness boots once per value, and this test reads the value from
 * /proc/cmdline and checks the state the documented rules give for it:
 *   (absent)  default: on (MEM_ALLOC_PROFILING_ENABLED_BY_DEFAULT=y), switchable
 *   0 / 1     off / on, switchable
 *   1,compressed  on, switchable, page tags compressed (Rust core)
 *   never     off, not switchable, no page_ext allocated, nothing counted
 *   other     malformed: boot goes on with the default, the log names it
 * With CONFIG_MEM_ALLOC_PROFILING_DEBUG the sysctl never switches.  Upstream
 * 6.12 makes the file 0444 where it does not switch; ours keeps it 0644 and
 * refuses writes there (-EINVAL after never, -EACCES with the debug
 * option), as upstream 7.0, so that the boot-time write of the generic
 * sysctl. parameter handler succeeds silently: on ours no boot logs a
 * "Failed to set sysctl parameter" line (or any other of that handler's)
 * for vm.mem_profiling, whatever the value.
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
	return ai_sysctl_switchable();
}

/* The file's mode: 0444 where upstream 6.12 refuses writes, else 0644. */
static void expect_mode(struct __test_metadata *_metadata, bool switches)
{
	struct stat st;

	ASSERT_EQ(0, stat(AI_SYSCTL, &st));
	/* Upstream's is read-only where it cannot switch; ours refuses the write. */
	EXPECT_EQ(ai_is_upstream() && !switches ? 0444 : 0644, st.st_mode & 07777);
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
	expect_mode(_metadata, writable());
	if (!ai_is_upstream() && !writable()) {
		/* Refused, by the handler, with the documented error. */
		int want = v && !strcmp(v, "never") ? -EINVAL : -EACCES;

		EXPECT_EQ(want, ai_sysctl_write("1", 1));
		EXPECT_EQ(want, ai_sysctl_write("0", 1));
	}
	if (ai_sysctl_read() == 1 && !access(ATT_DIR, F_OK)) {
		ASSERT_EQ(0, kmalloc_delta(&bytes, &calls));
		EXPECT_EQ(3 * ai_kmalloc_bytes(128), bytes);
		EXPECT_EQ(3, calls);
	}
}

/*
 * The generic boot-time writer of sysctl.* parameters logs one of its lines
 * ("Failed to set sysctl parameter ...", "Error ... to set sysctl parameter
 * ...") when the sysctl refuses the value.  Upstream 6.12 does for
 * 1,compressed, never and any debug boot; ours never does (7.0's rule).
 */
TEST(no_boot_time_sysctl_error)
{
	const char *v = boot_value();

	if (ai_is_upstream())
		SKIP(return, "upstream 6.12 logs the boot-time write's failure");
	if (!v)
		SKIP(return, "no " PARAM " on the command line");
	EXPECT_FALSE(ai_kmsg_has("to set sysctl parameter", "vm.mem_profiling", NULL))
		TH_LOG("the boot-time sysctl write of '%s' logged an error", v);
	EXPECT_FALSE(ai_kmsg_has("sysctl parameter", "vm.mem_profiling=", NULL))
		TH_LOG("the boot-time sysctl write of '%s' logged a line", v);
}

TEST_HARNESS_MAIN
