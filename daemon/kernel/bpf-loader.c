/* SPDX-License-Identifier: Apache-2.0 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "bpf-loader.h"
#include "decode.h"
#include "clock.h"
#include "errmsg.h"
#include "metrics.h"
#include "termline-events.h"
#include "termline-cgtab.h"
#include "signals.h"
#include "options.h"
#include "process.skel.h"
#include "net.skel.h"
#include "macro.h"

_Static_assert(TL_SIGNAL_BIT(SIGTERM) == TL_SIG_BIT(SIGTERM) && TL_SIGNAL_BIT(64) == TL_SIG_BIT(64),
	       "signals.h and the BPF filter share one mask layout");

/* The ring is consumed every 10 ms while records come; after a second
 * without any, every 50 ms (an idle agent wakes 20 times a second, not
 * 100), and at 10 ms again from the first record. The programs wake the
 * loop themselves once a quarter of the ring is used. */
#define DRAIN_INTERVAL_MS 10
#define DRAIN_IDLE_MS 50
#define DRAIN_IDLE_AFTER 100 /* empty drains */
#define METRICS_INTERVAL_MS 1000
#define RINGBUF_DEFAULT (TL_DEFAULT_RINGBUF_KIB * 1024u)
#define RINGBUF_MAX (1u << 30)
#define TRACEFS "/sys/kernel/tracing"
#define DEBUGFS_TRACING "/sys/kernel/debug/tracing"
#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"

#define DROPPED_METRIC "termline_ringbuf_dropped_total"
#define CLOSED_METRIC "termline_tcp_closed_total"

enum hook_obj { OBJ_PROCESS, OBJ_NET };

/* One per tracepoint; programs are named <name>_btf and <name>_tp. */
static const struct hook {
	const char *name;
	const char *category; /* tracefs events/<category>/<name> */
	enum hook_obj obj;
} hooks[] = {
	{ "signal_generate", "signal", OBJ_PROCESS },
	{ "signal_deliver", "signal", OBJ_PROCESS },
	{ "sched_process_exec", "sched", OBJ_PROCESS },
	{ "sched_process_exit", "sched", OBJ_PROCESS },
	{ "inet_sock_set_state", "sock", OBJ_NET },
	{ "tcp_send_reset", "tcp", OBJ_NET },
	{ "tcp_receive_reset", "tcp", OBJ_NET },
};
#define N_HOOKS (sizeof(hooks) / sizeof(hooks[0]))

struct tl_bpf {
	struct termline_process *proc;
	struct termline_net *net;
	struct ring_buffer *rb;
	struct tl_loop *loop;
	struct tl_timer *timer;
	int rb_fd;
	bool have_emitter;
	struct tl_emitter emit;
	const struct tl_clock *clock;
	int ncpus;
	uint64_t *percpu;                   /* scratch, ncpus values */
	uint64_t published_drops[TL_EV_KIND_MAX];
	uint64_t published_closed;
	uint64_t last_publish_ms;
	unsigned empty_drains;
	bool drain_idle;
	/* The tracked cgroups' table the programs search (termline-cgtab.h),
	 * mmapped. */
	struct tl_cg_table *cgtab;
	char probe_buf[N_HOOKS][48];
	const char *probes[N_HOOKS + 1];
};

/* libbpf reports why a load failed only through its print callback: keep its
 * first warning naming a program or map for the caller's one-line error. */
static char *capture_buf;
static size_t capture_len;

/* libbpf's print callback: fmt comes from libbpf, hence no literal. */
__attribute__((format(printf, 2, 0)))
static int capture_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];
	const char *p;
	size_t n;

	if (level != LIBBPF_WARN || !capture_buf || capture_buf[0])
		return 0;
	if (vsnprintf(line, sizeof(line), fmt, ap) < 0)
		return 0;
	if (!strstr(line, "prog '") && !strstr(line, "map '"))
		return 0;
	p = strncmp(line, "libbpf: ", 8) == 0 ? line + 8 : line;
	n = strcspn(p, "\n");
	snprintf(capture_buf, capture_len, "%.*s", (int)n, p);
	return 0;
}

/* CapEff from /proc/self/status; 0 when unreadable. */
static uint64_t effective_caps(void)
{
	char line[256];
	uint64_t caps = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "CapEff:", 7) == 0) {
			caps = strtoull(line + 7, NULL, 16);
			break;
		}
	}
	fclose(f);
	return caps;
}

static bool may_load_bpf(void)
{
	uint64_t caps;

	if (geteuid() == 0)
		return true;
	caps = effective_caps();
	/* CAP_SYS_ADMIN (21), or CAP_BPF (39) with CAP_PERFMON (38) for tracing. */
	return (caps & (1ULL << 21)) || ((caps & (1ULL << 39)) && (caps & (1ULL << 38)));
}

static bool have_btf_tracepoint(const struct btf *vmlinux, const char *name)
{
	char type[80];

	snprintf(type, sizeof(type), "btf_trace_%s", name);
	return btf__find_by_name_kind(vmlinux, type, BTF_KIND_TYPEDEF) >= 0;
}

/* Classic tracepoints need tracefs; a container often lacks the mount. */
static int ensure_tracefs(void)
{
	if (access(TRACEFS "/events", F_OK) == 0 || access(DEBUGFS_TRACING "/events", F_OK) == 0)
		return 0;
	if (mount("tracefs", TRACEFS, "tracefs", 0, NULL) < 0)
		return -errno;
	return 0;
}

static struct bpf_object *hook_obj(struct tl_bpf *b, const struct hook *h)
{
	return h->obj == OBJ_PROCESS ? b->proc->obj : b->net->obj;
}

static int set_variant(struct tl_bpf *b, const struct hook *h, bool classic)
{
	char name[64];
	struct bpf_program *btf_prog, *tp_prog;
	int r;

	snprintf(name, sizeof(name), "%s_btf", h->name);
	btf_prog = bpf_object__find_program_by_name(hook_obj(b, h), name);
	snprintf(name, sizeof(name), "%s_tp", h->name);
	tp_prog = bpf_object__find_program_by_name(hook_obj(b, h), name);
	if (!btf_prog || !tp_prog)
		return -ENOENT;
	r = bpf_program__set_autoload(btf_prog, !classic);
	if (r < 0)
		return r;
	return bpf_program__set_autoload(tp_prog, classic);
}

static uint32_t ring_size(uint32_t want)
{
	uint32_t size = (uint32_t)sysconf(_SC_PAGESIZE);

	if (!want)
		want = RINGBUF_DEFAULT;
	if (want > RINGBUF_MAX)
		want = RINGBUF_MAX;
	while (size < want)
		size <<= 1;
	return size;
}

/* One attempt with the given variant choice; b->proc/net are left open on
 * failure for the caller to destroy. */
static int open_load_attach(struct tl_bpf *b, const struct tl_bpf_config *cfg,
			    const bool classic[N_HOOKS], char *err, size_t errlen)
{
	struct bpf_program *fork_prog;
	bool any_classic = false;
	size_t i;
	int r;

	b->proc = termline_process__open();
	b->net = termline_net__open();
	if (!b->proc || !b->net) {
		r = -errno ?: -ENOMEM;
		tl_err(err, errlen, "cannot open BPF objects: %s", strerror(-r));
		return r;
	}
	b->proc->rodata->signal_mask = cfg->signal_mask ?: TL_SIGNALS_DEFAULT;
	b->proc->rodata->track_pids = classic[0]; /* only the classic signal_generate needs it */
	b->net->rodata->resets_without_socket = cfg->resets_without_socket;
	r = bpf_map__set_max_entries(b->proc->maps.events, ring_size(cfg->ringbuf_bytes));
	if (r < 0) {
		tl_err(err, errlen, "cannot size the ring buffer: %s", strerror(-r));
		return r;
	}
	for (i = 0; i < N_HOOKS; i++) {
		r = set_variant(b, &hooks[i], classic[i]);
		if (r < 0) {
			tl_err(err, errlen, "BPF program for %s missing: %s", hooks[i].name,
				strerror(-r));
			return r;
		}
		any_classic |= classic[i];
	}
	/* Only the classic signal_generate needs the pid -> cgroup map fed. */
	fork_prog = bpf_object__find_program_by_name(b->proc->obj, "sched_process_fork_tp");
	if (!fork_prog) {
		tl_err(err, errlen, "BPF program sched_process_fork_tp missing");
		return -ENOENT;
	}
	r = bpf_program__set_autoload(fork_prog, classic[0]);
	if (r < 0)
		return r;
	if (any_classic) {
		r = ensure_tracefs();
		if (r < 0) {
			tl_err(err, errlen, "classic tracepoints need tracefs, mounting %s failed: %s",
				TRACEFS, strerror(-r));
			return r;
		}
	}

	capture_buf = err;
	capture_len = errlen;
	if (err && errlen)
		err[0] = '\0';
	r = termline_process__load(b->proc);
	if (r < 0)
		goto load_failed;
	/* One ring, one tracked set, one drop array for both objects. */
	r = bpf_map__reuse_fd(b->net->maps.events, bpf_map__fd(b->proc->maps.events));
	if (r >= 0)
		r = bpf_map__reuse_fd(b->net->maps.tracked_cgroups,
				      bpf_map__fd(b->proc->maps.tracked_cgroups));
	if (r >= 0)
		r = bpf_map__reuse_fd(b->net->maps.tracked_table, bpf_map__fd(b->proc->maps.tracked_table));
	if (r >= 0)
		r = bpf_map__reuse_fd(b->net->maps.drops, bpf_map__fd(b->proc->maps.drops));
	if (r < 0) {
		capture_buf = NULL;
		tl_err(err, errlen, "cannot share BPF maps: %s", strerror(-r));
		return r;
	}
	r = termline_net__load(b->net);
	if (r < 0)
		goto load_failed;
	b->cgtab = mmap(NULL, sizeof(*b->cgtab), PROT_READ | PROT_WRITE, MAP_SHARED,
			bpf_map__fd(b->proc->maps.tracked_table), 0);
	if (b->cgtab == MAP_FAILED) {
		r = -errno;
		b->cgtab = NULL;
		capture_buf = NULL;
		tl_err(err, errlen, "cannot map the tracked cgroups' table: %s", strerror(-r));
		return r;
	}
	r = termline_process__attach(b->proc);
	if (r >= 0)
		r = termline_net__attach(b->net);
	if (r < 0) {
		char captured[256];

		snprintf(captured, sizeof(captured), "%s", err && errlen ? err : "");
		capture_buf = NULL;
		tl_err(err, errlen, "cannot attach BPF programs: %s%s%s", strerror(-r),
			captured[0] ? ": " : "", captured);
		return r;
	}
	capture_buf = NULL;
	return 0;

load_failed:
	capture_buf = NULL;
	{
		char captured[256];

		/* EACCES is the verifier's refusal; EPERM is missing privilege
		 * (or a memlock limit on kernels before memcg accounting). */
		snprintf(captured, sizeof(captured), "%s", err && errlen ? err : "");
		tl_err(err, errlen, "BPF load failed: %s%s", captured[0] ? captured : strerror(-r),
			r == -EPERM ? " (needs root or CAP_BPF and CAP_PERFMON)" : "");
	}
	return r;
}

static void close_objects(struct tl_bpf *b)
{
	termline_net__destroy(b->net);
	termline_process__destroy(b->proc);
	b->net = NULL;
	b->proc = NULL;
}

static int handle_record(void *ctx, void *data, size_t size);

int tl_bpf_new(const struct tl_bpf_config *cfg, struct tl_bpf **ret, char *err, size_t errlen)
{
	struct tl_bpf_config defaults = { 0 };
	bool classic[N_HOOKS];
	struct btf *vmlinux;
	libbpf_print_fn_t old_print;
	struct tl_bpf *b;
	size_t i;
	int r;

	if (!cfg)
		cfg = &defaults;
	if (!may_load_bpf()) {
		tl_err(err, errlen, "loading BPF programs needs root or CAP_BPF and CAP_PERFMON");
		return -EPERM;
	}
	vmlinux = btf__load_vmlinux_btf();
	if (!vmlinux) {
		r = -errno ?: -ENOENT;
		tl_err(err, errlen, "no kernel BTF (%s: %s): the kernel needs "
			"CONFIG_DEBUG_INFO_BTF", VMLINUX_BTF, strerror(-r));
		return r;
	}
	for (i = 0; i < N_HOOKS; i++)
		classic[i] = cfg->force_classic || !have_btf_tracepoint(vmlinux, hooks[i].name);
	btf__free(vmlinux);

	b = calloc(1, sizeof(*b));
	if (!b) {
		tl_err(err, errlen, "out of memory");
		return -ENOMEM;
	}
	b->rb_fd = -1;
	b->clock = cfg->clock;
	b->ncpus = libbpf_num_possible_cpus();
	if (b->ncpus <= 0) {
		r = b->ncpus < 0 ? b->ncpus : -EINVAL;
		tl_err(err, errlen, "cannot count possible CPUs: %s", strerror(-r));
		goto fail;
	}
	b->percpu = calloc(b->ncpus, sizeof(uint64_t));
	if (!b->percpu) {
		r = -ENOMEM;
		tl_err(err, errlen, "out of memory");
		goto fail;
	}

	old_print = libbpf_set_print(capture_print);
	r = open_load_attach(b, cfg, classic, err, errlen);
	if (r < 0 && r != -EPERM && !cfg->force_classic) {
		bool all_classic[N_HOOKS];
		bool tried_btf = false;

		/* BTF may name a tracepoint the kernel cannot attach tp_btf to:
		 * fall back to classic tracepoints for all of them once. */
		for (i = 0; i < N_HOOKS; i++) {
			tried_btf |= !classic[i];
			all_classic[i] = true;
		}
		if (tried_btf) {
			close_objects(b);
			r = open_load_attach(b, cfg, all_classic, err, errlen);
			if (r >= 0)
				memcpy(classic, all_classic, sizeof(classic));
		}
	}
	libbpf_set_print(old_print);
	if (r < 0)
		goto fail;

	for (i = 0; i < N_HOOKS; i++) {
		snprintf(b->probe_buf[i], sizeof(b->probe_buf[i]), "%s:%s", hooks[i].name,
			 classic[i] ? "tracepoint" : "tp_btf");
		b->probes[i] = b->probe_buf[i];
	}
	b->probes[N_HOOKS] = NULL;

	b->rb = ring_buffer__new(bpf_map__fd(b->proc->maps.events), handle_record, b, NULL);
	if (!b->rb) {
		r = -errno ?: -ENOMEM;
		tl_err(err, errlen, "cannot set up the ring buffer: %s", strerror(-r));
		goto fail;
	}
	tl_metric_describe(DROPPED_METRIC, TL_METRIC_COUNTER,
			   "Kernel events lost because the ring buffer was full, by event type.");
	tl_metric_describe(CLOSED_METRIC, TL_METRIC_COUNTER,
			   "Established TCP connections closed in tracked containers.");
	*ret = b;
	return 0;

fail:
	tl_bpf_free(b);
	return r;
}

void tl_bpf_free(struct tl_bpf *b)
{
	if (!b)
		return;
	tl_timer_free(b->timer);
	if (b->loop && b->rb_fd >= 0)
		tl_loop_del_io(b->loop, b->rb_fd);
	ring_buffer__free(b->rb);
	if (b->cgtab)
		munmap(b->cgtab, sizeof(*b->cgtab));
	close_objects(b);
	free(b->percpu);
	free(b);
}

static int handle_record(void *ctx, void *data, size_t size)
{
	struct tl_bpf *b = ctx;
	struct tl_event ev;

	if (!b->have_emitter)
		return 0;
	/* A record whose kind and size disagree is skipped (decode.c). */
	if (tl_kernel_decode(data, size, b->clock ? b->clock->offset_ns : 0, &ev) < 0)
		return 0;
	tl_emit(&b->emit, &ev);
	tl_event_clear(&ev);
	return 0;
}

static uint64_t percpu_sum(struct tl_bpf *b, int fd, const void *key)
{
	uint64_t sum = 0;
	int i;

	if (bpf_map_lookup_elem(fd, key, b->percpu) < 0)
		return 0;
	for (i = 0; i < b->ncpus; i++)
		sum += b->percpu[i];
	return sum;
}

static uint64_t dropped_kind(struct tl_bpf *b, uint32_t kind)
{
	return percpu_sum(b, bpf_map__fd(b->proc->maps.drops), &kind);
}

uint64_t tl_bpf_dropped_total(struct tl_bpf *b)
{
	uint64_t sum = 0;
	uint32_t k;

	for (k = 1; k < TL_EV_KIND_MAX; k++)
		sum += dropped_kind(b, k);
	return sum;
}

uint64_t tl_bpf_dropped(struct tl_bpf *b, const char *type)
{
	uint32_t k = tl_kernel_wire_of(tl_kind_parse(type));

	return k ? dropped_kind(b, k) : 0;
}

uint64_t tl_bpf_tcp_closed(struct tl_bpf *b, uint64_t cgroup_id)
{
	uint32_t zero = 0;

	if (!cgroup_id)
		return percpu_sum(b, bpf_map__fd(b->net->maps.tcp_closed_total), &zero);
	return percpu_sum(b, bpf_map__fd(b->net->maps.tcp_closed), &cgroup_id);
}

int tl_bpf_accepted_map_fd(struct tl_bpf *b)
{
	return bpf_map__fd(b->net->maps.accepted);
}

const char *tl_bpf_probe_of(struct tl_bpf *b, const char *hook)
{
	size_t n = strlen(hook);

	for (const char *const *p = tl_bpf_probe_names(b); *p; p++)
		if (strncmp(*p, hook, n) == 0 && (*p)[n] == ':')
			return *p;
	return NULL;
}

static void publish_metrics(struct tl_bpf *b)
{
	char labels[64];
	uint64_t v;
	uint32_t k;

	for (k = 1; k < TL_EV_KIND_MAX; k++) {
		v = dropped_kind(b, k);
		if (tl_kernel_wire_kind(k) == TL_KIND_NONE)
			continue; /* a reserved number (HTTP capture's records) */
		snprintf(labels, sizeof(labels), "kind=\"%s\"", tl_kind_name(tl_kernel_wire_kind(k)));
		/* Touch every label so /metrics lists each kind from the start. */
		tl_metric_add(DROPPED_METRIC, labels, v > b->published_drops[k] ?
			      v - b->published_drops[k] : 0);
		b->published_drops[k] = v;
	}
	v = tl_bpf_tcp_closed(b, 0);
	tl_metric_add(CLOSED_METRIC, NULL, v > b->published_closed ? v - b->published_closed : 0);
	b->published_closed = v;
	b->last_publish_ms = tl_now_mono_ms();
}

int tl_bpf_drain(struct tl_bpf *b)
{
	int r = ring_buffer__consume(b->rb);

	publish_metrics(b);
	return r;
}

/* After a drain that consumed n records: back to the fast interval from
 * the first record, to the idle one after DRAIN_IDLE_AFTER empty drains. */
static void drain_pace(struct tl_bpf *b, int n)
{
	if (!b->timer)
		return;
	if (n > 0) {
		b->empty_drains = 0;
		if (b->drain_idle && tl_timer_arm(b->timer, DRAIN_INTERVAL_MS, DRAIN_INTERVAL_MS) == 0)
			b->drain_idle = false;
	} else if (!b->drain_idle && ++b->empty_drains >= DRAIN_IDLE_AFTER &&
		   tl_timer_arm(b->timer, DRAIN_IDLE_MS, DRAIN_IDLE_MS) == 0) {
		b->drain_idle = true;
	}
}

static int on_ring_readable(struct tl_loop *loop _unused_, int fd _unused_,
			    uint32_t events _unused_, void *userdata)
{
	struct tl_bpf *b = userdata;
	int n = ring_buffer__consume(b->rb);

	drain_pace(b, n);
	return n;
}

static void on_drain_timer(struct tl_loop *loop _unused_, struct tl_timer *timer _unused_,
			   void *userdata)
{
	struct tl_bpf *b = userdata;

	drain_pace(b, ring_buffer__consume(b->rb));
	if (tl_now_mono_ms() - b->last_publish_ms >= METRICS_INTERVAL_MS)
		publish_metrics(b);
}

int tl_bpf_attach_loop(struct tl_bpf *b, struct tl_loop *loop, const struct tl_emitter *emit)
{
	int fd, r;

	if (!b || !loop || !emit || !emit->emit)
		return -EINVAL;
	if (b->loop)
		return -EBUSY;
	fd = ring_buffer__epoll_fd(b->rb);
	if (fd < 0)
		return fd;
	b->emit = *emit;
	b->have_emitter = true;
	r = tl_loop_add_io(loop, fd, EPOLLIN, on_ring_readable, b);
	if (r < 0)
		return r;
	r = tl_loop_add_timer(loop, DRAIN_INTERVAL_MS, DRAIN_INTERVAL_MS, on_drain_timer, b,
			      &b->timer);
	if (r < 0) {
		tl_loop_del_io(loop, fd);
		return r;
	}
	b->loop = loop;
	b->rb_fd = fd;
	publish_metrics(b);
	return 0;
}

int tl_bpf_track_cgroup(struct tl_bpf *b, uint64_t cgroup_id)
{
	return tl_cg_track(bpf_map__fd(b->proc->maps.tracked_cgroups), b->cgtab, cgroup_id);
}

int tl_bpf_untrack_cgroup(struct tl_bpf *b, uint64_t cgroup_id)
{
	int r = tl_cg_untrack(bpf_map__fd(b->proc->maps.tracked_cgroups), b->cgtab, cgroup_id);

	/* Its per-cgroup close count goes with it (the total keeps it). */
	bpf_map_delete_elem(bpf_map__fd(b->net->maps.tcp_closed), &cgroup_id);
	return r;
}

static int ip_key(const char *ip, struct tl_ip_key *k)
{
	memset(k, 0, sizeof(*k));
	if (!ip)
		return -EINVAL;
	if (inet_pton(AF_INET6, ip, k->addr) == 1)
		return 0;
	if (inet_pton(AF_INET, ip, &k->addr[12]) == 1) {
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		return 0;
	}
	return -EINVAL;
}

int tl_bpf_track_ip(struct tl_bpf *b, const char *ip)
{
	struct tl_ip_key k;
	uint8_t one = 1;
	int r = ip_key(ip, &k);

	if (r < 0)
		return r;
	if (bpf_map_update_elem(bpf_map__fd(b->net->maps.pod_ips), &k, &one, BPF_ANY) < 0)
		return -errno;
	return 0;
}

int tl_bpf_untrack_ip(struct tl_bpf *b, const char *ip)
{
	struct tl_ip_key k;
	int r = ip_key(ip, &k);

	if (r < 0)
		return r;
	if (bpf_map_delete_elem(bpf_map__fd(b->net->maps.pod_ips), &k) < 0)
		return -errno;
	return 0;
}

static size_t obj_prog_stats(struct bpf_object *obj, struct tl_bpf_prog_stat *out, size_t n,
			     size_t max)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj) {
		struct bpf_prog_info info;
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || n >= max)
			continue;
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(fd, &info, &len) < 0)
			continue;
		snprintf(out[n].name, sizeof(out[n].name), "%s", bpf_program__name(prog));
		out[n].run_ns = info.run_time_ns;
		out[n].run_cnt = info.run_cnt;
		n++;
	}
	return n;
}

int tl_bpf_prog_stats(struct tl_bpf *b, struct tl_bpf_prog_stat *out, size_t max)
{
	size_t n = 0;

	if (!b || !b->proc || !b->net)
		return -EINVAL;
	n = obj_prog_stats(b->proc->obj, out, n, max);
	n = obj_prog_stats(b->net->obj, out, n, max);
	return (int)n;
}

const char *const *tl_bpf_probe_names(struct tl_bpf *b)
{
	return b->probes;
}
