/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "http-bpf.h"
#include "http.skel.h"
#include "macro.h"

_Static_assert(sizeof(struct tl_http_rec) == 72, "wire record size");
_Static_assert(sizeof(struct tl_http_conn) == 56, "conn state size");
_Static_assert(sizeof(struct tl_h2_side) == 24, "HTTP/2 side state size");
_Static_assert(sizeof(struct tl_h2_seg) == 8, "HTTP/2 segment size");

/* The ring is drained on a timer while the programs are attached, and
 * when they wake the agent: a record that takes the ring's producer
 * position across a multiple of half the ring does (bpf/http.bpf.c; asking
 * the ring how full it is, per record, costs more). Each wake-up of the
 * agent costs a context switch both ways, dear on a virtual machine, so the
 * timer is slow, DRAIN_MS, while the records of one period fill less than
 * DRAIN_SHARE of the ring; faster records shorten the next period so that
 * one fills about that share (down to DRAIN_MIN_MS: 1/DRAIN_SHARE of the
 * ring in a millisecond is more than the agent could parse), and the
 * wake-ups are for bursts the last period did not foresee. A quarter, not
 * less: drained sooner after they were written, the records cost the
 * server that writes them more (~0.2 µs a request under nginx with an
 * eighth, bench/README.md); drained later, the agent's longer bursts
 * delay what shares its CPU (p99 of wrk +1.3 ms with a half). Whoever
 * needs the records up to now (the proxy log's join, a timeline's close,
 * a preStop gate's verdict, a cgroup's removal) drains first
 * (docs/http-capture.md). */
#define DRAIN_MS 25
#define DRAIN_MIN_MS 1
#define DRAIN_SHARE 4
#define MAX_PROGS 4

/* The hooks, from the cheapest for the node to the most widely loadable
 * (docs/http-capture.md, "Hooks"): the kernel's socket send and receive
 * tracepoints (>= 6.3), else raw sys_exit with the fd walk through
 * bpf_rdonly_cast() (>= 6.2), else with a probe read per hop. */
static const char *const variants[] = { "sock", "rdonly_cast", "probe_read" };
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

struct tl_http_bpf {
	struct termline_http *skel;
	struct bpf_program *progs[MAX_PROGS]; /* the variant's, attached together */
	size_t n_progs;
	const char *variant;
	struct bpf_link *links[MAX_PROGS];
	bool attached;
	struct ring_buffer *rb;
	struct tl_loop *loop;
	int rb_fd;             /* epoll fd of the ring, in the loop; -1 before */
	struct tl_timer *timer;
	uint64_t ring_bytes;
	uint64_t slow_ms;      /* DRAIN_MS, or the configuration's */
	uint64_t period_ms;    /* the drain timer's, DRAIN_MIN_MS..slow_ms */
	uint64_t period_bytes; /* ring bytes drained since the timer last fired */
	tl_http_rec_cb cb;
	void *ud;
	uint64_t bad_records;
};

static int on_record(void *ctx, void *data, size_t size)
{
	struct tl_http_bpf *b = ctx;
	const struct tl_http_rec *r = data;

	b->period_bytes += TL_HTTP_RING_TAKEN(size);
	/* The kernel wrote it, but a record whose size and length disagree
	 * is not passed on. */
	if (size < sizeof(*r) || r->len > size - sizeof(*r) || r->len > TL_HTTP_PREFIX_MAX ||
	    r->kind == 0 || r->kind >= TL_HTTP_REC_KIND_MAX) {
		b->bad_records++;
		return 0;
	}
	b->cb(b->ud, r, (const uint8_t *)data + sizeof(*r));
	return 0;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 4096;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

/* Opens and loads the object with the programs of one variant. */
static int open_load(struct tl_http_bpf *b, const struct tl_http_bpf_config *cfg, const char *variant,
		     char *err, size_t errlen)
{
	struct bpf_program *prog;
	int r;

	b->skel = termline_http__open();
	if (!b->skel) {
		r = -errno;
		snprintf(err, errlen, "HTTP capture: cannot open its BPF object: %s", strerror(-r));
		return r;
	}
	b->variant = variant;
	b->n_progs = 0;
	if (strcmp(variant, "sock") == 0) {
		b->progs[b->n_progs++] = b->skel->progs.http_sock_recv;
		b->progs[b->n_progs++] = b->skel->progs.http_sock_send;
		b->progs[b->n_progs++] = b->skel->progs.http_tcp_destroy;
		b->progs[b->n_progs++] = b->skel->progs.http_open;
	} else if (strcmp(variant, "rdonly_cast") == 0) {
		b->progs[b->n_progs++] = b->skel->progs.http_sys_exit;
		b->progs[b->n_progs++] = b->skel->progs.http_open_by_sk;
	} else {
		b->progs[b->n_progs++] = b->skel->progs.http_sys_exit_probed;
		b->progs[b->n_progs++] = b->skel->progs.http_open_by_sk;
	}
	/* One variant; the classic twins and the floor are for
	 * bench/bench-http-capture only. */
	bpf_object__for_each_program(prog, b->skel->obj) {
		bool mine = false;

		for (size_t i = 0; i < b->n_progs; i++)
			mine |= prog == b->progs[i];
		bpf_program__set_autoload(prog, mine);
	}
	b->skel->rodata->prefix_len = cfg->prefix_bytes && cfg->prefix_bytes <= TL_HTTP_PREFIX_MAX
					      ? cfg->prefix_bytes
					      : TL_HTTP_PREFIX_DEFAULT;
	b->ring_bytes = pow2_at_least(cfg->ringbuf_bytes ? cfg->ringbuf_bytes : 4u << 20);
	b->skel->rodata->wake_bytes = b->ring_bytes / 2;
	r = bpf_map__set_max_entries(b->skel->maps.http_events, (uint32_t)b->ring_bytes);
	if (r < 0) {
		snprintf(err, errlen, "HTTP capture: ring buffer size: %s", strerror(-r));
		return r;
	}
	/* The sock variant keeps its state in the sockets' storage: the
	 * sys_exit variants' preallocated hashes (~10 MiB of kernel memory)
	 * shrink to one entry. */
	if (strcmp(variant, "sock") == 0 &&
	    ((r = bpf_map__set_max_entries(b->skel->maps.http_conns, 1)) < 0 ||
	     (r = bpf_map__set_max_entries(b->skel->maps.http_fds, 1)) < 0)) {
		snprintf(err, errlen, "HTTP capture: map size: %s", strerror(-r));
		return r;
	}
	r = termline_http__load(b->skel);
	if (r < 0) {
		snprintf(err, errlen, "HTTP capture: cannot load the %s variant of its BPF programs: %s",
			 variant, strerror(-r));
		return r;
	}
	return 0;
}

/* The variant's own name (static), or NULL when there is none. */
static const char *variant_name(const char *variant)
{
	for (size_t i = 0; i < N_VARIANTS; i++)
		if (strcmp(variant, variants[i]) == 0)
			return variants[i];
	return NULL;
}

int tl_http_bpf_new(const struct tl_http_bpf_config *cfg, tl_http_rec_cb cb, void *userdata,
		    struct tl_http_bpf **ret, char *err, size_t errlen)
{
	struct tl_http_bpf *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->rb_fd = -1;
	b->slow_ms = cfg->drain_ms ? cfg->drain_ms : DRAIN_MS;
	b->cb = cb;
	b->ud = userdata;
	if (cfg->variant && strcmp(cfg->variant, "auto") != 0) {
		const char *v = variant_name(cfg->variant);

		if (!v) {
			snprintf(err, errlen, "HTTP capture: no variant %s (sock, rdonly_cast, probe_read)",
				 cfg->variant);
			r = -EINVAL;
			goto fail;
		}
		r = open_load(b, cfg, v, err, errlen);
	} else {
		/* The first that loads: older kernels lack the tracepoints
		 * of the first and the kfunc of the second. */
		r = -ENOENT;
		for (size_t i = 0; i < N_VARIANTS && r < 0; i++) {
			termline_http__destroy(b->skel);
			b->skel = NULL;
			r = open_load(b, cfg, variants[i], err, errlen);
		}
	}
	if (r < 0)
		goto fail;
	b->rb = ring_buffer__new(bpf_map__fd(b->skel->maps.http_events), on_record, b, NULL);
	if (!b->rb) {
		r = -errno;
		snprintf(err, errlen, "HTTP capture: ring buffer: %s", strerror(-r));
		goto fail;
	}
	*ret = b;
	return 0;
fail:
	tl_http_bpf_free(b);
	return r;
}

const char *tl_http_bpf_variant(const struct tl_http_bpf *b)
{
	return b->variant;
}

void tl_http_bpf_free(struct tl_http_bpf *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < MAX_PROGS; i++)
		bpf_link__destroy(b->links[i]);
	tl_timer_free(b->timer);
	if (b->loop && b->rb_fd >= 0)
		tl_loop_del_io(b->loop, b->rb_fd);
	ring_buffer__free(b->rb);
	termline_http__destroy(b->skel);
	free(b);
}

int tl_http_bpf_attach(struct tl_http_bpf *b)
{
	if (b->attached)
		return 0;
	for (size_t i = 0; i < b->n_progs; i++) {
		b->links[i] = bpf_program__attach(b->progs[i]);
		if (!b->links[i]) {
			int r = -errno;

			while (i-- > 0) {
				bpf_link__destroy(b->links[i]);
				b->links[i] = NULL;
			}
			return r;
		}
	}
	b->attached = true;
	/* The ring is drained only while the programs are attached. */
	b->period_ms = b->slow_ms;
	b->period_bytes = 0;
	if (b->timer)
		tl_timer_arm(b->timer, b->slow_ms, b->slow_ms);
	return 0;
}

void tl_http_bpf_detach(struct tl_http_bpf *b)
{
	if (!b->attached)
		return;
	for (size_t i = 0; i < b->n_progs; i++) {
		bpf_link__destroy(b->links[i]);
		b->links[i] = NULL;
	}
	b->attached = false;
	if (b->timer)
		tl_timer_disarm(b->timer);
	tl_http_bpf_drain(b);
}

bool tl_http_bpf_attached(const struct tl_http_bpf *b)
{
	return b->attached;
}

int tl_http_bpf_drain(struct tl_http_bpf *b)
{
	return ring_buffer__consume(b->rb);
}

uint64_t tl_http_drain_period_ms(uint64_t period_ms, uint64_t drained, uint64_t ring_bytes, uint64_t slow_ms)
{
	uint64_t want = ring_bytes / DRAIN_SHARE, next;

	/* (the period that drains about that share at the last one's rate,
	 * not only once it was exceeded: a rate just under it would swing
	 * between that period and the slow one) */
	if (drained == 0 || period_ms * want / drained >= slow_ms)
		return slow_ms;
	next = period_ms * want / drained;
	if (next < DRAIN_MIN_MS)
		next = DRAIN_MIN_MS;
	/* Kept while the rate stays near what set it: a steady rate measured
	 * over a timer's jitter swung the period between neighbouring
	 * milliseconds, a timerfd_settime() each (332 in 4.9 s under nginx,
	 * bench/README.md). Shortened when the share a period fills grows by
	 * a third (the wake-ups at each half of the ring cover a burst
	 * sooner), lengthened when it falls under two thirds. */
	if (next * 4 >= period_ms * 3 && next * 2 <= period_ms * 3)
		return period_ms;
	return next;
}

static void on_drain_timer(struct tl_loop *loop _unused_, struct tl_timer *t, void *ud)
{
	struct tl_http_bpf *b = ud;
	uint64_t next;

	if (!b->attached)
		return;
	tl_http_bpf_drain(b);
	next = tl_http_drain_period_ms(b->period_ms, b->period_bytes, b->ring_bytes, b->slow_ms);
	b->period_bytes = 0;
	if (next != b->period_ms && tl_timer_arm(t, next, next) == 0)
		b->period_ms = next;
}

/* Woken by the programs: a burst has filled half the ring since the last
 * multiple of that. */
static int on_ring(struct tl_loop *loop _unused_, int fd _unused_, uint32_t ev _unused_, void *ud)
{
	tl_http_bpf_drain(ud);
	return 0;
}

int tl_http_bpf_attach_loop(struct tl_http_bpf *b, struct tl_loop *loop)
{
	int r;

	b->rb_fd = ring_buffer__epoll_fd(b->rb);
	r = tl_loop_add_io(loop, b->rb_fd, EPOLLIN, on_ring, b);
	if (r < 0)
		return r;
	b->loop = loop;
	return tl_loop_add_timer(loop, b->attached ? b->slow_ms : 0, b->attached ? b->slow_ms : 0, on_drain_timer, b,
				 &b->timer);
}

int tl_http_bpf_track_cgroup(struct tl_http_bpf *b, uint64_t cgroup_id)
{
	return tl_cg_track(bpf_map__fd(b->skel->maps.http_cgroups), &b->skel->bss->http_cg, cgroup_id);
}

int tl_http_bpf_untrack_cgroup(struct tl_http_bpf *b, uint64_t cgroup_id)
{
	return tl_cg_untrack(bpf_map__fd(b->skel->maps.http_cgroups), &b->skel->bss->http_cg, cgroup_id);
}

uint32_t tl_http_bpf_sock_states(const struct tl_http_bpf *b)
{
	return __atomic_load_n(&b->skel->bss->http_marked, __ATOMIC_ACQUIRE);
}

uint64_t tl_http_bpf_dropped(struct tl_http_bpf *b)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t total = 0;
	uint64_t *v;

	if (ncpu <= 0)
		return 0;
	v = calloc((size_t)ncpu, sizeof(*v));
	if (!v)
		return 0;
	for (uint32_t k = 0; k < TL_HTTP_REC_KIND_MAX; k++) {
		if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.http_drops), &k, v) < 0)
			continue;
		for (int i = 0; i < ncpu; i++)
			total += v[i];
	}
	free(v);
	return total;
}
