/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the alloc_tag selftests: a strict /proc/allocinfo row
 * parser, row lookup by site, the test module's control files, the
 * mem_profiling sysctl and the kernel log.
 */
#ifndef ALLOC_TAG_UTIL_H
#define ALLOC_TAG_UTIL_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

#define AI_PATH		"/proc/allocinfo"
#define AI_SYSCTL	"/proc/sys/vm/mem_profiling"
#define AI_COMPRESSED	"/proc/sys/vm/mem_profiling_compressed"
#define ATT_DIR		"/sys/kernel/debug/alloc_tag_test"
/* Line 1: format 1.0 on upstream 6.12, 2.0 (rows may say accurate:no) on ours. */
#define AI_HEADER1_V1	"allocinfo - version: 1.0\n"
#define AI_HEADER1_V2	"allocinfo - version: 2.0\n"
#define AI_HEADER1	(ai_is_upstream() ? AI_HEADER1_V1 : AI_HEADER1_V2)
#define AI_HEADER2	"#     <size>  <calls> <tag info>\n"
#define AI_MODDIR	"/modules"

struct ai_row;
typedef int (*ai_row_fn)(const struct ai_row *row, void *arg);

struct ai_row {
	long long bytes;
	unsigned long long calls;
	char file[256];
	unsigned int line;
	char module[64];
	char func[128];
	bool inaccurate;	/* v2.0: the row ends " accurate:no " */
};

static inline bool ai_is_upstream(void);

/* Read a whole file into a NUL-terminated malloc'd buffer, @chunk bytes per read(). */
static inline char *ai_slurp(const char *path, size_t chunk, size_t *lenp)
{
	size_t len = 0, cap = 1 << 16;
	char *buf = malloc(cap + 1);
	ssize_t n;
	int fd;

	if (!buf)
		return NULL;
	fd = open(path, O_RDONLY);
	if (fd < 0) {
		free(buf);
		return NULL;
	}
	for (;;) {
		if (cap - len < chunk) {
			char *nb;

			cap = cap * 2 + chunk;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return NULL;
			}
			buf = nb;
		}
		n = read(fd, buf + len, chunk);
		if (n < 0) {
			free(buf);
			close(fd);
			return NULL;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}

/*
 * Parse one right-aligned decimal field of @width characters (printf "%Nlli"
 * semantics: a longer number takes more room and has no padding).  Returns
 * the number of characters consumed or -1.
 */
static inline int ai_field(const char *s, int width, bool is_signed, long long *sv,
			   unsigned long long *uv)
{
	int pad = 0, i, len;
	const char *num;
	char *end;

	while (s[pad] == ' ')
		pad++;
	num = s + pad;
	i = 0;
	if (is_signed && num[0] == '-')
		i++;
	if (!isdigit((unsigned char)num[i]))
		return -1;
	while (isdigit((unsigned char)num[i]))
		i++;
	len = i;
	/* No leading zeros: "0" alone, or a non-zero first digit. */
	if (num[is_signed && num[0] == '-'] == '0' && len > 1 + (num[0] == '-'))
		return -1;
	if (len < width ? pad + len != width : pad != 0)
		return -1;
	errno = 0;
	if (is_signed)
		*sv = strtoll(num, &end, 10);
	else
		*uv = strtoull(num, &end, 10);
	if (errno || end != num + len)
		return -1;
	return pad + len;
}

/*
 * Parse one row without its newline: "%12lli %8llu file:line", then
 * " [module]" if any, " func:name", in v2.0 " accurate:no" if so, and one
 * trailing space.  Returns 0, or -1 if the row breaks the grammar.
 */
static inline int ai_parse_row(const char *line, struct ai_row *r)
{
	const char *p = line, *colon, *sp, *end;
	long long sv;
	unsigned long long uv;
	size_t n;
	int k;

	memset(r, 0, sizeof(*r));
	k = ai_field(p, 12, true, &sv, NULL);
	if (k < 0 || p[k] != ' ')
		return -1;
	r->bytes = sv;
	p += k + 1;
	k = ai_field(p, 8, false, NULL, &uv);
	if (k < 0 || p[k] != ' ')
		return -1;
	r->calls = uv;
	p += k + 1;

	/* file:line */
	sp = strchr(p, ' ');
	if (!sp)
		return -1;
	colon = memrchr(p, ':', sp - p);
	if (!colon || colon == p || colon + 1 == sp)
		return -1;
	n = colon - p;
	if (n >= sizeof(r->file))
		return -1;
	memcpy(r->file, p, n);
	for (const char *d = colon + 1; d < sp; d++)
		if (!isdigit((unsigned char)*d))
			return -1;
	r->line = strtoul(colon + 1, NULL, 10);
	p = sp + 1;

	/* optional [module] */
	if (*p == '[') {
		end = strchr(p, ']');
		if (!end || end[1] != ' ' || end == p + 1)
			return -1;
		n = end - p - 1;
		if (n >= sizeof(r->module))
			return -1;
		memcpy(r->module, p + 1, n);
		for (size_t i = 0; i < n; i++)
			if (isspace((unsigned char)r->module[i]))
				return -1;
		p = end + 2;
	}

	/* func:name, then exactly one trailing space */
	if (strncmp(p, "func:", 5))
		return -1;
	p += 5;
	sp = strchr(p, ' ');
	if (!sp || sp == p)
		return -1;
	n = sp - p;
	if (n >= sizeof(r->func))
		return -1;
	memcpy(r->func, p, n);
	if (sp[1] == '\0')
		return 0;
	/* v2.0: one key, accurate:no, then the trailing space */
	if (ai_is_upstream() || strcmp(sp + 1, "accurate:no "))
		return -1;
	r->inaccurate = true;
	return 0;
}

/*
 * Call @fn for every row of a /proc/allocinfo image; stops early when @fn
 * returns non-zero.  Returns -1 on a malformed row (line number in *bad_line),
 * else @fn's last return value.
 */
static inline int ai_walk_rows(char *text, ai_row_fn fn, void *arg, int *bad_line)
{
	char *line = text, *nl;
	struct ai_row row;
	int lineno = 0, ret = 0;

	if (strncmp(text, AI_HEADER1, strlen(AI_HEADER1)) ||
	    strncmp(text + strlen(AI_HEADER1), AI_HEADER2, strlen(AI_HEADER2)))
		return -1;
	line += strlen(AI_HEADER1) + strlen(AI_HEADER2);
	lineno = 2;
	while (*line) {
		nl = strchr(line, '\n');
		lineno++;
		if (!nl) {
			if (bad_line)
				*bad_line = lineno;
			return -1;
		}
		*nl = '\0';
		if (ai_parse_row(line, &row)) {
			*nl = '\n';
			if (bad_line)
				*bad_line = lineno;
			return -1;
		}
		*nl = '\n';
		if (fn) {
			ret = fn(&row, arg);
			if (ret)
				return ret;
		}
		line = nl + 1;
	}
	return 0;
}

/*
 * Read /proc/allocinfo once and call @fn for every row, as ai_walk_rows().
 * Returns -errno (or -1) if it cannot be read, -1 on a malformed row, else
 * @fn's last return value.
 */
static inline int ai_walk(ai_row_fn fn, void *arg)
{
	char *text = ai_slurp(AI_PATH, 1 << 16, NULL);
	int ret;

	if (!text)
		return errno ? -errno : -1;
	ret = ai_walk_rows(text, fn, arg, NULL);
	free(text);
	return ret;
}

struct ai_find_arg {
	const char *file;
	unsigned int line;
	struct ai_row *out;
	int found;
};

static inline int ai_find_fn(const struct ai_row *r, void *arg)
{
	struct ai_find_arg *a = arg;

	if (r->line == a->line && !strcmp(r->file, a->file)) {
		*a->out = *r;
		a->found++;
	}
	return 0;
}

/* Look up the row of site file:line; 0 if exactly one such row exists. */
static inline int ai_get(const char *file, unsigned int line, struct ai_row *out)
{
	struct ai_find_arg a = { file, line, out, 0 };
	int ret = ai_walk(ai_find_fn, &a);

	if (ret)
		return ret == -1 ? -EBADMSG : ret;
	return a.found == 1 ? 0 : -ENOENT;
}

/* The test module's site of @kind: its file, line and function. */
struct att_site {
	char file[256];
	unsigned int line;
	char func[128];
};

static inline int att_site(const char *kind, struct att_site *s)
{
	char k[32], loc[256];
	FILE *f = fopen(ATT_DIR "/sites", "r");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (fscanf(f, "%31s %255s %127s", k, loc, s->func) == 3) {
		char *colon = strrchr(loc, ':');

		if (strcmp(k, kind) || !colon)
			continue;
		*colon = '\0';
		memcpy(s->file, loc, strlen(loc) + 1);
		s->line = strtoul(colon + 1, NULL, 10);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

/* Write @len bytes of @buf to @path in one write(); 0 or -errno. */
static inline int ai_write(const char *path, const char *buf, size_t len)
{
	int fd = open(path, O_WRONLY);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, buf, len) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

/* One command to the test module; 0 or -errno. */
static inline int att_ctl(const char *fmt, ...)
{
	char cmd[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return ai_write(ATT_DIR "/ctl", cmd, strlen(cmd));
}

static inline long att_info(const char *key)
{
	char k[64];
	long v;
	FILE *f = fopen(ATT_DIR "/info", "r");

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", k, &v) == 2) {
		if (!strcmp(k, key)) {
			fclose(f);
			return v;
		}
	}
	fclose(f);
	return -1;
}

/* Write @val (with @len bytes) to the sysctl; 0 or -errno. */
static inline int ai_sysctl_write(const char *val, size_t len)
{
	return ai_write(AI_SYSCTL, val, len);
}

/* The sysctl's value, or -errno. */
static inline int ai_sysctl_read(void)
{
	char buf[16] = "";
	int fd = open(AI_SYSCTL, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -EIO;
	if (!strcmp(buf, "0\n"))
		return 0;
	if (!strcmp(buf, "1\n"))
		return 1;
	return -EBADMSG;
}

/*
 * Whether the sysctl switches profiling in this boot: writing its own value
 * back is accepted (and changes nothing).  Upstream 6.12 makes the file
 * 0444 after never and with CONFIG_MEM_ALLOC_PROFILING_DEBUG; ours keeps it
 * 0644 and refuses the write (-EINVAL, -EACCES), as upstream 7.0 does.
 */
static inline bool ai_sysctl_switchable(void)
{
	int v = ai_sysctl_read();

	return v >= 0 && !ai_sysctl_write(v ? "1" : "0", 1);
}

/*
 * Calls @fn with each kernel log record read from @fd (/dev/kmsg, opened
 * O_NONBLOCK) until the log's end or until @fn returns true, and says
 * whether it did.  @fn gets the record's sequence number and its message
 * (the text after the header).  Records overwritten meanwhile are skipped.
 */
static inline bool ai_kmsg_each(int fd,
				bool (*fn)(unsigned long long seq, const char *msg,
					   void *arg),
				void *arg)
{
	char rec[8192];
	ssize_t n;

	while ((n = read(fd, rec, sizeof(rec) - 1)) != 0) {
		unsigned long long seq;
		const char *msg;

		if (n < 0) {
			if (errno == EPIPE)
				continue;	/* overwritten record */
			break;		/* EAGAIN: end of the log */
		}
		rec[n] = '\0';
		if (sscanf(rec, "%*u,%llu", &seq) != 1)
			continue;
		msg = strchr(rec, ';');
		if (fn(seq, msg ? msg + 1 : rec, arg))
			return true;
	}
	return false;
}

#define AI_KMSG_NEEDLES 8

static inline bool ai_kmsg_has_all(unsigned long long seq, const char *msg,
				   void *arg)
{
	const char *const *needle;

	for (needle = arg; *needle; needle++)
		if (!strstr(msg, *needle))
			return false;
	return true;
}

/*
 * Does one kernel log line contain every one of the NULL-terminated needles
 * (AI_KMSG_NEEDLES at most)?
 */
static inline bool ai_kmsg_has(const char *needle, ...)
{
	const char *needles[AI_KMSG_NEEDLES + 1];
	unsigned int i = 0;
	bool found;
	va_list ap;
	int fd;

	va_start(ap, needle);
	for (; needle && i < AI_KMSG_NEEDLES; needle = va_arg(ap, const char *))
		needles[i++] = needle;
	va_end(ap);
	if (needle)
		return false;	/* too many */
	needles[i] = NULL;
	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return false;
	found = ai_kmsg_each(fd, ai_kmsg_has_all, needles);
	close(fd);
	return found;
}

/* Loads module @name from AI_MODDIR with parameters @params; 0 or -errno. */
static inline int ai_load_module_params(const char *name, const char *params)
{
	char path[256];
	int fd, ret;

	snprintf(path, sizeof(path), "%s/%s.ko", AI_MODDIR, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ret = syscall(SYS_finit_module, fd, params, 0);
	ret = ret ? -errno : 0;
	close(fd);
	return ret;
}

/* Loads module @name without parameters; 0 if it is loaded already. */
static inline int ai_load_module(const char *name)
{
	int ret = ai_load_module_params(name, "");

	return ret == -EEXIST ? 0 : ret;
}

static inline int ai_unload_module(const char *name)
{
	return syscall(SYS_delete_module, name, O_NONBLOCK) ? -errno : 0;
}

/*
 * The bytes one object of slab cache @cache is charged: its slot size.  A
 * kernel with the full SLUB shows it as /sys/kernel/slab/<cache>/slab_size,
 * which KASAN and slab debugging make larger than the object (redzones,
 * metadata); without that file (SLUB_TINY) the slot is @nominal.
 */
static inline long ai_slab_bytes(const char *cache, long nominal)
{
	char path[160], buf[32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/kernel/slab/%s/slab_size", cache);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return nominal;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return nominal;
	buf[n] = '\0';
	return strtol(buf, NULL, 10);
}

/* The bytes one kmalloc() served by the kmalloc-@slot cache is charged. */
static inline long ai_kmalloc_bytes(long slot)
{
	char name[32];

	if (slot >= 1024)
		snprintf(name, sizeof(name), "kmalloc-%ldk", slot / 1024);
	else
		snprintf(name, sizeof(name), "kmalloc-%ld", slot);
	return ai_slab_bytes(name, slot);
}

/* Does the kernel command line carry @word (a whole word)? */
static inline bool ai_cmdline_has(const char *word)
{
	char *text = ai_slurp("/proc/cmdline", 4096, NULL);
	size_t len = strlen(word);
	bool found = false;
	char *p;

	for (p = text; p && (p = strstr(p, word)) != NULL; p += len) {
		if ((p == text || p[-1] == ' ') &&
		    (p[len] == ' ' || p[len] == '\n' || p[len] == '\0')) {
			found = true;
			break;
		}
	}
	free(text);
	return found;
}

/*
 * Whether the boot parameter asked for compressed page tags: the last
 * sysctl.vm.mem_profiling= on the command line (the one the kernel keeps)
 * ends in ",compressed".
 */
static inline bool ai_compressed_asked(void)
{
	static const char key[] = "sysctl.vm.mem_profiling=";
	char *text = ai_slurp("/proc/cmdline", 4096, NULL);
	char val[64] = "";
	bool asked;
	char *p;

	for (p = text; p && (p = strstr(p, key)) != NULL; p += sizeof(key) - 1)
		if (p == text || p[-1] == ' ')
			sscanf(p + sizeof(key) - 1, "%63s", val);
	free(text);
	asked = strlen(val) >= strlen(",compressed") &&
		!strcmp(val + strlen(val) - strlen(",compressed"), ",compressed");
	return asked;
}

/*
 * Where this boot keeps page tags, as the kernel says it, or NULL where
 * vm.mem_profiling_compressed does not exist (upstream 6.12, profiling
 * compiled out or "never"):
 *
 *   page_ext    it reads 0, and compressed tags were not asked for
 *   fallback    it reads 0 although the boot parameter asked for them
 *   compressed  it reads 1: tag indexes in page->flags
 *   overflow    it reads 1 and the boot log says some tags have no index
 *               (their pages are counted on the overflow row)
 *
 * Which store a boot must get is the harness's to judge: page_store prints
 * "page tag store: NAME", which make test compares with the boot's --store
 * in tools/testing/allocprof/matrix.
 */
static inline const char *ai_page_store(void)
{
	char *text = ai_slurp(AI_COMPRESSED, 64, NULL);
	const char *store = NULL;

	if (!text)
		return NULL;
	if (!strcmp(text, "1\n"))
		store = ai_kmsg_has("alloc_tag: ", "count their pages on the overflow row",
				    NULL) ? "overflow" : "compressed";
	else if (!strcmp(text, "0\n"))
		store = ai_compressed_asked() ? "fallback" : "page_ext";
	free(text);
	return store;
}

/* Whether this boot keeps page tags in page_ext: 1, 0, or -1 if none. */
static inline int ai_page_ext_store(void)
{
	const char *s = ai_page_store();

	if (!s)
		return -1;
	return !strcmp(s, "page_ext") || !strcmp(s, "fallback");
}

/*
 * A make test-debug boot (allocprof_debug on the command line): the kernel
 * has CONFIG_MEM_ALLOC_PROFILING_DEBUG, whose sysctl is read-only.
 */
static inline bool ai_debug_kernel(void)
{
	return ai_cmdline_has("allocprof_debug");
}

/* Which implementation the VM runs: "upstream" or "rust" (from the harness). */
static inline const char *ai_base(void)
{
	const char *b = getenv("ALLOC_TAG_BASE");

	return b ? b : "rust";
}

static inline bool ai_is_upstream(void)
{
	return !strcmp(ai_base(), "upstream");
}

#endif /* ALLOC_TAG_UTIL_H */
