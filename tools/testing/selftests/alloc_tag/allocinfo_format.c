// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/allocinfo as user space sees it: the v1.0 header byte for byte, the
 * row grammar, the same rows whatever the read() size, and root-only access.
 */
#include "alloc_tag_util.h"

#include <sys/wait.h>

#include "../kselftest_harness.h"

FIXTURE(allocinfo) {
	char *text;
	size_t len;
};

FIXTURE_SETUP(allocinfo)
{
	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing: kernel without CONFIG_MEM_ALLOC_PROFILING");
	self->text = ai_slurp(AI_PATH, 1 << 16, &self->len);
	ASSERT_NE(NULL, self->text);
}

FIXTURE_TEARDOWN(allocinfo)
{
	free(self->text);
}

TEST_F(allocinfo, header_exact)
{
	ASSERT_EQ(0, strncmp(self->text, AI_HEADER1, strlen(AI_HEADER1))) {
		TH_LOG("line 1 is not '%.24s'", AI_HEADER1);
	}
	ASSERT_EQ(0, strncmp(self->text + strlen(AI_HEADER1), AI_HEADER2,
			     strlen(AI_HEADER2))) {
		TH_LOG("line 2 is not '#     <size>  <calls> <tag info>'");
	}
}

static int count_row(const struct ai_row *r, void *arg)
{
	int *counts = arg;

	counts[0]++;
	if (r->bytes == 0 && r->calls == 0)
		counts[1]++;
	if (r->module[0])
		counts[2]++;
	return 0;
}

TEST_F(allocinfo, rows_match_grammar)
{
	int counts[3] = { 0 }, bad = 0;

	ASSERT_EQ(0, ai_walk_rows(self->text, count_row, counts, &bad)) {
		char *l = self->text;

		for (int i = 1; i < bad && l; i++) {
			l = strchr(l, '\n');
			l = l ? l + 1 : NULL;
		}
		TH_LOG("line %d breaks the row grammar: '%.*s'", bad,
		       l ? (int)strcspn(l, "\n") : 0, l ? l : "");
	}
	TH_LOG("%d rows, %d of them 0/0, %d with [module]", counts[0], counts[1], counts[2]);
	/* Hundreds of call sites in any kernel built with profiling. */
	ASSERT_GT(counts[0], 100);
	/* Rows with nothing allocated are printed too. */
	ASSERT_GT(counts[1], 0);
}

TEST_F(allocinfo, module_rows_tagged)
{
	int counts[3] = { 0 };

	if (access(ATT_DIR, F_OK))
		SKIP(return, "alloc_tag_test module not loaded");
	ASSERT_EQ(0, ai_walk_rows(self->text, count_row, counts, NULL));
	ASSERT_GT(counts[2], 0) TH_LOG("no row carries a [module] name");
}

static int collect_key(const struct ai_row *r, void *arg)
{
	FILE *f = arg;

	fprintf(f, "%s:%u %s %s\n", r->file, r->line, r->module, r->func);
	return 0;
}

static char *keys_of(char *text)
{
	char *keys = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&keys, &n);

	if (!f)
		return NULL;
	if (ai_walk_rows(text, collect_key, f, NULL)) {
		fclose(f);
		free(keys);
		return NULL;
	}
	fclose(f);
	return keys;
}

/* The seq_file iterator must hand out every row exactly once per read size. */
TEST_F(allocinfo, same_rows_any_read_size)
{
	static const size_t sizes[] = { 1, 7, 100, 4096, 1 << 20 };
	char *ref = keys_of(self->text);

	ASSERT_NE(NULL, ref);
	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		char *text = ai_slurp(AI_PATH, sizes[i], NULL);
		char *keys;

		ASSERT_NE(NULL, text);
		keys = keys_of(text);
		ASSERT_NE(NULL, keys) TH_LOG("read size %zu: malformed output", sizes[i]);
		EXPECT_STREQ(ref, keys) TH_LOG("read size %zu: other rows", sizes[i]);
		free(keys);
		free(text);
	}
	free(ref);
}

TEST(mode_0400_root)
{
	struct stat st;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	ASSERT_EQ(0, stat(AI_PATH, &st));
	ASSERT_EQ(0400, st.st_mode & 07777);
	ASSERT_EQ(0, st.st_uid);
}

TEST(unprivileged_eacces)
{
	int status;
	pid_t pid;

	if (access(AI_PATH, F_OK))
		SKIP(return, AI_PATH " missing");
	pid = fork();
	ASSERT_GE(pid, 0);
	if (pid == 0) {
		if (setgid(65534) || setuid(65534))
			_exit(2);
		if (open(AI_PATH, O_RDONLY) >= 0)
			_exit(3);
		_exit(errno == EACCES ? 0 : 4);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(0, WEXITSTATUS(status)) {
		TH_LOG("uid 65534: %s", WEXITSTATUS(status) == 3 ? "open succeeded" :
		       WEXITSTATUS(status) == 4 ? "open failed, but not with EACCES" :
		       "could not drop privileges");
	}
}

TEST_HARNESS_MAIN
