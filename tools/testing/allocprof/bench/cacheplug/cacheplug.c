// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin that models a CPU core's caches and counts, between two
 * markers the guest executes, its instructions and the misses of each
 * level, so that make bench can give figures closer to cycles than
 * instruction counts.
 *
 * Model, per vCPU (every level private to its core, as L1 and L2 are on
 * x86): an L1 instruction cache, an L1 data cache and a unified L2 behind
 * both, set-associative with LRU replacement and 64-byte lines.  Sizes and
 * ways are arguments (defaults: a recent x86 server core):
 *   l1i=32768,l1iways=8,l1d=49152,l1dways=12,l2=2097152,l2ways=16
 * Every instruction fetch looks up L1I (by the host address of the guest
 * page, which maps guest physical memory one to one), every load and store
 * L1D (by guest physical address); an L1 miss looks up L2.  Stores allocate.
 * A cache line crossed by an access counts once, at its first byte.  No
 * prefetcher is modelled: streams of misses count in full.
 *
 * Markers: the guest executes "nopw DISP(%rax,%rax,1)" (66 0f 1f 84 00 and
 * a 32-bit displacement) with DISP's upper 16 bits 0x0a11.  Bits 0-14 are a
 * window id; bit 15 clear opens the window on that vCPU, set closes it and
 * prints, through qemu_plugin_outs() (QEMU's -d plugin log):
 *   cacheplug: id=ID insns=N l1i_miss=N l1d_access=N l1d_miss=N l2_access=N l2_miss=N
 * counting only that vCPU's events.  The caches stay warm across windows.
 *
 * With top=N (1 to 65536; default 0, off), the plugin also keeps, while a
 * window is open, the misses of each guest instruction address (an
 * instruction's data misses count at the instruction that loads or stores)
 * and prints after the window's line its N addresses with the most misses
 * (L1I + L1D + L2), most first:
 *   cacheplug-top: id=ID pc=0xADDR l1i_miss=N l1d_miss=N l2_miss=N
 * tools/testing/allocprof/bench/cacheplug/where.py sums them per function with the kernel's
 * System.map.  The counting itself is the same with or without it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <qemu-plugin.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define LINE_SHIFT	6
#define MARK_MAGIC	0x0a11u
#define MARK_STOP	0x8000u

struct cache {
	unsigned int sets, ways;
	uint64_t *tags;		/* sets * ways: line address + 1, 0 = empty */
	uint64_t *used;		/* sets * ways: last use, for LRU */
	uint64_t clock;
};

struct counts {
	uint64_t insns, l1i_miss, l1d_access, l1d_miss, l2_access, l2_miss;
};

/* A guest instruction's misses while a window is open (top=N). */
struct pc_misses {
	uint64_t pc;		/* guest virtual address + 1, 0 = empty slot */
	uint64_t l1i_miss, l1d_miss, l2_miss;
};

#define PC_SLOTS	(1u << 16)	/* per vCPU; a full table drops new addresses */

struct core {
	struct cache l1i, l1d, l2;
	struct counts now, start;
	int open_id;		/* -1: no window open */
	struct pc_misses *pcs;	/* PC_SLOTS entries when top > 0 */
	uint64_t pcs_dropped;
};

/* What the callbacks of one translated instruction get with top=N. */
struct insn_info {
	uint64_t haddr, vaddr;
};

static struct core *cores;
static int ncores;
static unsigned long l1i_size = 32768, l1i_ways = 8;
static unsigned long l1d_size = 49152, l1d_ways = 12;
static unsigned long l2_size = 2097152, l2_ways = 16;
static unsigned long top;

static int cache_init(struct cache *c, unsigned long size, unsigned long ways)
{
	unsigned long lines = size >> LINE_SHIFT;

	if (!ways || lines % ways || !lines)
		return -1;
	c->sets = lines / ways;
	/* Set indexes are taken with a mask. */
	if (c->sets & (c->sets - 1))
		return -1;
	c->ways = ways;
	c->tags = calloc(lines, sizeof(*c->tags));
	c->used = calloc(lines, sizeof(*c->used));
	c->clock = 0;
	return c->tags && c->used ? 0 : -1;
}

/* Looks up @addr's line; true on a hit.  A miss fills the LRU way. */
static bool cache_access(struct cache *c, uint64_t addr)
{
	uint64_t line = addr >> LINE_SHIFT;
	unsigned int set = line & (c->sets - 1), w, victim = 0;
	uint64_t *tags = c->tags + (size_t)set * c->ways;
	uint64_t *used = c->used + (size_t)set * c->ways;

	c->clock++;
	for (w = 0; w < c->ways; w++) {
		if (tags[w] == line + 1) {
			used[w] = c->clock;
			return true;
		}
		if (used[w] < used[victim])
			victim = w;
	}
	tags[victim] = line + 1;
	used[victim] = c->clock;
	return false;
}

static struct core *core_of(unsigned int vcpu)
{
	return (int)vcpu < ncores ? &cores[vcpu] : NULL;
}

/* The slot of guest address @pc in @c's table, NULL when it is full. */
static struct pc_misses *pc_slot(struct core *c, uint64_t pc)
{
	unsigned int i = (unsigned int)((pc * 0x9e3779b97f4a7c15ull) >> 48) & (PC_SLOTS - 1);

	for (unsigned int n = 0; n < PC_SLOTS; n++, i = (i + 1) & (PC_SLOTS - 1)) {
		if (c->pcs[i].pc == pc + 1)
			return &c->pcs[i];
		if (!c->pcs[i].pc) {
			c->pcs[i].pc = pc + 1;
			return &c->pcs[i];
		}
	}
	c->pcs_dropped++;
	return NULL;
}

/* An L1 miss at @addr looks up L2; true if that misses too. */
static bool l2_lookup(struct core *c, uint64_t addr)
{
	c->now.l2_access++;
	if (cache_access(&c->l2, addr))
		return false;
	c->now.l2_miss++;
	return true;
}

/*
 * One instruction fetch at host address @haddr; with @pc (top=N, a window
 * open) its misses are also charged to guest address @pc.
 */
static void fetch(struct core *c, uint64_t haddr, const uint64_t *pc)
{
	struct pc_misses *m;
	bool l2_miss;

	c->now.insns++;
	if (cache_access(&c->l1i, haddr))
		return;
	c->now.l1i_miss++;
	l2_miss = l2_lookup(c, haddr);
	if (pc && (m = pc_slot(c, *pc))) {
		m->l1i_miss++;
		m->l2_miss += l2_miss;
	}
}

static void insn_exec(unsigned int vcpu, void *udata)
{
	struct core *c = core_of(vcpu);

	if (c)
		fetch(c, (uint64_t)(uintptr_t)udata, NULL);
}

static void insn_exec_top(unsigned int vcpu, void *udata)
{
	const struct insn_info *ii = udata;
	struct core *c = core_of(vcpu);

	if (c)
		fetch(c, ii->haddr, c->open_id >= 0 ? &ii->vaddr : NULL);
}

static void mem_access(unsigned int vcpu, qemu_plugin_meminfo_t info, uint64_t vaddr,
		       void *udata)
{
	struct qemu_plugin_hwaddr *hw = qemu_plugin_get_hwaddr(info, vaddr);
	const struct insn_info *ii = udata;
	struct core *c = core_of(vcpu);
	struct pc_misses *m;
	uint64_t addr;
	bool l2_miss;

	if (!c || (hw && qemu_plugin_hwaddr_is_io(hw)))
		return;
	addr = hw ? qemu_plugin_hwaddr_phys_addr(hw) : vaddr;
	c->now.l1d_access++;
	if (cache_access(&c->l1d, addr))
		return;
	c->now.l1d_miss++;
	l2_miss = l2_lookup(c, addr);
	if (ii && c->open_id >= 0 && (m = pc_slot(c, ii->vaddr))) {
		m->l1d_miss++;
		m->l2_miss += l2_miss;
	}
}

static uint64_t pc_total(const struct pc_misses *m)
{
	return m->l1i_miss + m->l1d_miss + m->l2_miss;
}

static int pc_cmp(const void *a, const void *b)
{
	uint64_t x = pc_total(a), y = pc_total(b);

	return x < y ? 1 : x > y ? -1 : 0;
}

/*
 * Prints the @top addresses of @c's table with the most misses, then
 * empties it.  Sorting moves the entries, which the emptying makes harmless.
 */
static void print_top(struct core *c)
{
	unsigned int n = 0;
	char out[160];

	for (unsigned int i = 0; i < PC_SLOTS; i++)
		if (c->pcs[i].pc)
			c->pcs[n++] = c->pcs[i];
	qsort(c->pcs, n, sizeof(*c->pcs), pc_cmp);
	for (unsigned int i = 0; i < n && i < top; i++) {
		snprintf(out, sizeof(out),
			 "cacheplug-top: id=%d pc=0x%" PRIx64 " l1i_miss=%" PRIu64 " l1d_miss=%" PRIu64
			 " l2_miss=%" PRIu64 "\n", c->open_id, c->pcs[i].pc - 1, c->pcs[i].l1i_miss,
			 c->pcs[i].l1d_miss, c->pcs[i].l2_miss);
		qemu_plugin_outs(out);
	}
	if (c->pcs_dropped) {
		snprintf(out, sizeof(out), "cacheplug-top: id=%d dropped=%" PRIu64 "\n",
			 c->open_id, c->pcs_dropped);
		qemu_plugin_outs(out);
	}
	memset(c->pcs, 0, PC_SLOTS * sizeof(*c->pcs));
	c->pcs_dropped = 0;
}

static void marker_exec(unsigned int vcpu, void *udata)
{
	unsigned int mark = (unsigned int)(uintptr_t)udata;
	struct core *c = core_of(vcpu);
	char out[256];

	if (!c)
		return;
	if (!(mark & MARK_STOP)) {
		c->start = c->now;
		c->open_id = mark;
		if (c->pcs) {
			memset(c->pcs, 0, PC_SLOTS * sizeof(*c->pcs));
			c->pcs_dropped = 0;
		}
		return;
	}
	if (c->open_id != (int)(mark & ~MARK_STOP))
		return;		/* a stop without its start: ignored */
	snprintf(out, sizeof(out),
		 "cacheplug: id=%d insns=%" PRIu64 " l1i_miss=%" PRIu64 " l1d_access=%" PRIu64
		 " l1d_miss=%" PRIu64 " l2_access=%" PRIu64 " l2_miss=%" PRIu64 "\n",
		 c->open_id, c->now.insns - c->start.insns, c->now.l1i_miss - c->start.l1i_miss,
		 c->now.l1d_access - c->start.l1d_access, c->now.l1d_miss - c->start.l1d_miss,
		 c->now.l2_access - c->start.l2_access, c->now.l2_miss - c->start.l2_miss);
	qemu_plugin_outs(out);
	if (c->pcs)
		print_top(c);
	c->open_id = -1;
}

/* The marker's window bits if @insn is one, else -1. */
static long marker_of(const struct qemu_plugin_insn *insn)
{
	static const unsigned char op[] = { 0x66, 0x0f, 0x1f, 0x84, 0x00 };
	const unsigned char *b = qemu_plugin_insn_data(insn);
	uint32_t disp;

	if (qemu_plugin_insn_size(insn) != sizeof(op) + 4 || memcmp(b, op, sizeof(op)))
		return -1;
	disp = b[5] | b[6] << 8 | b[7] << 16 | (uint32_t)b[8] << 24;
	return disp >> 16 == MARK_MAGIC ? (long)(disp & 0xffff) : -1;
}

static void tb_trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		long mark = marker_of(insn);

		struct insn_info *ii = NULL;

		if (top) {
			/* Lives as long as QEMU may run the translation: never freed. */
			ii = malloc(sizeof(*ii));
			if (ii) {
				ii->haddr = (uint64_t)(uintptr_t)qemu_plugin_insn_haddr(insn);
				ii->vaddr = qemu_plugin_insn_vaddr(insn);
			}
		}
		if (ii)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec_top,
							       QEMU_PLUGIN_CB_NO_REGS, ii);
		else
			qemu_plugin_register_vcpu_insn_exec_cb(insn, insn_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       qemu_plugin_insn_haddr(insn));
		qemu_plugin_register_vcpu_mem_cb(insn, mem_access, QEMU_PLUGIN_CB_NO_REGS,
						 QEMU_PLUGIN_MEM_RW, ii);
		if (mark >= 0)
			qemu_plugin_register_vcpu_insn_exec_cb(insn, marker_exec,
							       QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)mark);
	}
}

static int parse_arg(const char *arg)
{
	static const struct {
		const char *name;
		unsigned long *val;
	} args[] = {
		{ "l1i", &l1i_size }, { "l1iways", &l1i_ways },
		{ "l1d", &l1d_size }, { "l1dways", &l1d_ways },
		{ "l2", &l2_size }, { "l2ways", &l2_ways }, { "top", &top },
	};
	const char *eq = strchr(arg, '=');
	char *end;

	if (!eq)
		return -1;
	for (size_t i = 0; i < sizeof(args) / sizeof(args[0]); i++) {
		if (strlen(args[i].name) == (size_t)(eq - arg) &&
		    !strncmp(arg, args[i].name, eq - arg)) {
			*args[i].val = strtoul(eq + 1, &end, 0);
			if (args[i].val == &top)
				return *end || top > PC_SLOTS ? -1 : 0;
			return *end || !*args[i].val ? -1 : 0;
		}
	}
	return -1;
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
					   int argc, char **argv)
{
	char msg[160];

	for (int i = 0; i < argc; i++) {
		if (parse_arg(argv[i])) {
			fprintf(stderr, "cacheplug: bad argument '%s' (top=N takes 0 to 65536)\n", argv[i]);
			return -1;
		}
	}
	ncores = info->system_emulation ? info->system.max_vcpus : 1;
	cores = calloc(ncores, sizeof(*cores));
	if (!cores)
		return -1;
	for (int i = 0; i < ncores; i++) {
		cores[i].open_id = -1;
		if (cache_init(&cores[i].l1i, l1i_size, l1i_ways) ||
		    cache_init(&cores[i].l1d, l1d_size, l1d_ways) ||
		    cache_init(&cores[i].l2, l2_size, l2_ways)) {
			fprintf(stderr, "cacheplug: a cache needs a power-of-two number of sets of 64-byte lines\n");
			return -1;
		}
		if (top && !(cores[i].pcs = calloc(PC_SLOTS, sizeof(*cores[i].pcs))))
			return -1;
	}
	snprintf(msg, sizeof(msg),
		 "cacheplug: l1i=%lu/%lu l1d=%lu/%lu l2=%lu/%lu (bytes/ways), %d vCPUs\n",
		 l1i_size, l1i_ways, l1d_size, l1d_ways, l2_size, l2_ways, ncores);
	qemu_plugin_outs(msg);
	qemu_plugin_register_vcpu_tb_trans_cb(id, tb_trans);
	return 0;
}
