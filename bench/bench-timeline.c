/* SPDX-License-Identifier: Apache-2.0 */
/* bench-timeline: what the per-Pod timeline store costs per event.
 *
 * Feeds synthetic events (lifecycle kinds mixed with http.request) into
 * tl_timelines with a temporary state dir and prints: events/s appended
 * (the journal write(2) per event and the batched fsync included), journal
 * bytes per event, RSS growth per 10k events held by one timeline, the time
 * to close a timeline and write its document, and what the event cap
 * (aggregation past max_events) does to rate, memory and document size.
 * Figures only: nothing here asserts on timing. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "bench-util.h"
#include "clock.h"
#include "export-json.h"
#include "loop.h"
#include "metrics.h"
#include "timeline.h"
#include "macro.h"

#define NS_PER_MS 1000000LL
#define LOOP_EVERY 1024   /* run the loop's timers (fsync) every this many adds */
#define MAX_PODS 1000
#define MAX_EVENTS_OPT 10000000ull
#define CLOSE_WAIT_MS 10000
#define BATCH 32          /* events made, then added and timed together */

struct opts {
	uint64_t pods;
	uint64_t events;
	uint64_t max_events;
	uint64_t http_share;  /* percent */
	uint64_t step_us;     /* simulated time between two events of one Pod */
	uint64_t cap_factor;  /* the cap phase feeds cap_factor * max_events events */
	uint64_t fsync_ms;
	uint64_t peers;       /* distinct peer addresses of http.request (0: no peer fields) */
	const char *base;
	const char *findings_helper; /* NULL: the store looks for it */
	bool keep;
};

static volatile sig_atomic_t interrupted;

/* This thread's system CPU (kernel work done on its behalf). */
static uint64_t thread_sys_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return 0;
	return (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_signal(int sig _unused_)
{
	interrupted = 1;
}

/* ---- synthetic events ---- */

struct pod_gen {
	char uid[40];
	char name[32];
	char cid_app[65], cid_proxy[65];
	uint64_t seq;
	int64_t t0_ns;
};

static const char *const lifecycle[] = {
	"process.exec", "socket.listen", "process.signal", "pod.condition",
	"endpoint.condition", "tcp.reset_sent", "socket.listen_closed", "process.exit",
};
#define N_LIFECYCLE (sizeof(lifecycle) / sizeof(lifecycle[0]))

static void pod_gen_init(struct pod_gen *g, unsigned idx, int64_t t0_ns)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->uid, sizeof(g->uid), "b3c1d2e4-0000-4000-8000-%012x", idx);
	snprintf(g->name, sizeof(g->name), "bench-%u", idx);
	for (int i = 0; i < 64; i++) {
		g->cid_app[i] = "0123456789abcdef"[(idx * 7 + (unsigned)i) % 16];
		g->cid_proxy[i] = "0123456789abcdef"[(idx * 11 + (unsigned)i * 3) % 16];
	}
	g->t0_ns = t0_ns;
}

static int pod_gen_meta(struct tl_timelines *t, const struct pod_gen *g)
{
	char buf[1024];
	struct json_object *meta;
	struct tl_pod_meta *pm = NULL;
	int r, n;

	n = snprintf(buf, sizeof(buf),
		     "{\"pod\":{\"namespace\":\"bench\",\"name\":\"%s\",\"uid\":\"%s\","
		     "\"node\":\"bench-node\",\"ip\":\"10.1.0.7\","
		     "\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"bench-5d8f\"},"
		     "\"terminationGracePeriodSeconds\":30},"
		     "\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://%s\",\"role\":\"main\"},"
		     "{\"name\":\"istio-proxy\",\"containerID\":\"containerd://%s\",\"role\":\"sidecar\"}]}",
		     g->name, g->uid, g->cid_app, g->cid_proxy);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EINVAL;
	meta = json_tokener_parse(buf);
	if (!meta)
		return -EINVAL;
	/* the journal record's form, read by its decoder */
	r = tl_pod_meta_from_json(meta, g->uid, &pm);
	json_object_put(meta);
	if (r == 0)
		r = tl_timelines_set_pod_meta(t, g->uid, pm);
	tl_pod_meta_unref(pm);
	return r;
}

static int64_t pod_gen_time(const struct pod_gen *g, uint64_t seq, uint64_t step_us)
{
	return g->t0_ns + (int64_t)(seq * step_us * 1000);
}

/* The next event of the Pod: http_share percent http.request (inbound at
 * the proxy and at the app), the rest a rotation of lifecycle kinds. */
static int pod_gen_next(struct pod_gen *g, const struct opts *o, struct tl_event *ev)
{
	uint64_t s = g->seq++;
	int64_t t = pod_gen_time(g, s, o->step_us);
	bool http = (s * 37) % 100 < o->http_share;
	const char *type = http ? "http.request" : lifecycle[(s / 7) % N_LIFECYCLE];
	bool api = strncmp(type, "pod.", 4) == 0 || strncmp(type, "endpoint.", 9) == 0;
	bool proxy = s % 2 == 0;
	char buf[80];
	int r;

	r = tl_event_init(ev, http ? TL_SRC_LOG : api ? TL_SRC_API : TL_SRC_KERNEL, type, t);
	if (r < 0)
		return r;
	snprintf(ev->pod_uid, sizeof(ev->pod_uid), "%s", g->uid);
	if (!api) {
		snprintf(ev->container, sizeof(ev->container), "%s", proxy ? "istio-proxy" : "app");
		snprintf(ev->container_id, sizeof(ev->container_id), "%s",
			 proxy ? g->cid_proxy : g->cid_app);
		if (!http)
			ev->cgroup_id = proxy ? 40001 : 40002;
	}
	if (http) {
		snprintf(buf, sizeof(buf), "%08llx-%04llx-4bd3-9a1e-5f0c2d7b%04x",
			 (unsigned long long)(s >> 16), (unsigned long long)(s & 0xffff),
			 (unsigned)(s % 65536));
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_REQUEST_ID, buf);
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_METHOD, s % 5 ? "GET" : "POST");
		snprintf(buf, sizeof(buf), "/api/v1/items/%llu", (unsigned long long)(s % 1000));
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_PATH, buf);
		r = r ?: tl_event_set_i(ev, TL_F_HTTP_STATUS, s % 50 ? 200 : 503);
		r = r ?: tl_event_set_i(ev, TL_F_HTTP_START, t - 3 * NS_PER_MS);
		r = r ?: tl_event_set_i(ev, TL_F_HTTP_DURATION_MS, 3);
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_DIRECTION, "inbound");
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_RESPONSE_FLAGS, s % 50 ? "-" : "UF,URX");
		if (o->peers) {
			/* a connection per 8 requests of one peer, the peers in turn */
			uint64_t c = s / 8, p = c % o->peers;
			uint8_t a[16] = { 10, (uint8_t)(p >> 16), (uint8_t)(p >> 8), (uint8_t)p };

			r = r ?: tl_event_set_addr(ev, TL_F_HTTP_PEER, AF_INET, a, (uint16_t)(32768 + c % 28000));
			r = r ?: tl_event_set_i(ev, TL_F_HTTP_CONN, (int64_t)c + 1);
			r = r ?: tl_event_set_i(ev, TL_F_HTTP_CONN_START, t - (int64_t)(s % 8 + 1) * 5 * NS_PER_MS);
		}
	} else if (strcmp(type, "process.exec") == 0) {
		r = r ?: tl_event_set_i(ev, TL_F_EXEC_PID, (int64_t)(1000 + s % 30000));
		r = r ?: tl_event_set_text(ev, TL_F_EXEC_COMM, "sh");
		r = r ?: tl_event_set_text(ev, TL_F_EXEC_FILENAME, "/bin/sh");
	} else if (strcmp(type, "process.exit") == 0) {
		r = r ?: tl_event_set_i(ev, TL_F_EXIT_PID, (int64_t)(1000 + s % 30000));
		r = r ?: tl_event_set_text(ev, TL_F_EXIT_COMM, "sh");
		r = r ?: tl_event_set_i(ev, TL_F_EXIT_CODE, 0);
		r = r ?: tl_event_set_i(ev, TL_F_EXIT_SIGNAL, 0);
	} else if (strcmp(type, "process.signal") == 0) {
		r = r ?: tl_event_set_text(ev, TL_F_SIG_SIGNAL, "SIGTERM");
		r = r ?: tl_event_set_i(ev, TL_F_SIG_SIGNO, 15);
		r = r ?: tl_event_set_i(ev, TL_F_SIG_PID, (int64_t)(1000 + s % 30000));
		r = r ?: tl_event_set_text(ev, TL_F_SIG_COMM, "app");
		r = r ?: tl_event_set_i(ev, TL_F_SIG_SENDER_PID, 812);
		r = r ?: tl_event_set_text(ev, TL_F_SIG_SENDER_COMM, "containerd-shim");
		r = r ?: tl_event_set_text(ev, TL_F_SIG_RESULT, "delivered");
	} else if (strcmp(type, "socket.listen") == 0 || strcmp(type, "socket.listen_closed") == 0) {
		r = r ?: tl_event_set_text(ev, TL_F_LISTEN_ADDRESS, "0.0.0.0");
		r = r ?: tl_event_set_i(ev, TL_F_LISTEN_PORT, (int64_t)(8000 + s % 1000));
	} else if (strcmp(type, "tcp.reset_sent") == 0) {
		snprintf(buf, sizeof(buf), "10.1.0.9:%llu", (unsigned long long)(30000 + s % 30000));
		r = r ?: tl_event_set_text(ev, TL_F_RESET_LOCAL, "10.1.0.7:8080");
		r = r ?: tl_event_set_text(ev, TL_F_RESET_REMOTE, buf);
	} else if (strcmp(type, "pod.condition") == 0) {
		r = r ?: tl_event_set_text(ev, TL_F_COND_CONDITION, "Ready");
		r = r ?: tl_event_set_text(ev, TL_F_COND_STATUS, s % 2 ? "False" : "True");
	} else if (strcmp(type, "endpoint.condition") == 0) {
		r = r ?: tl_event_set_text(ev, TL_F_EP_SERVICE, "bench");
		r = r ?: tl_event_set_text(ev, TL_F_EP_SLICE, "bench-x7k2p");
		r = r ?: tl_event_set_i(ev, TL_F_EP_READY, s % 2);
		r = r ?: tl_event_set_i(ev, TL_F_EP_SERVING, true);
		r = r ?: tl_event_set_i(ev, TL_F_EP_TERMINATING, s % 2 == 0);
	}
	if (r < 0)
		tl_event_clear(ev);
	return r;
}

static struct tl_event batch[BATCH];

static int add_next(struct tl_timelines *t, struct pod_gen *g, const struct opts *o)
{
	struct tl_event ev;
	int r = pod_gen_next(g, o, &ev);

	if (r < 0)
		return r;
	r = tl_timelines_add(t, &ev);
	tl_event_clear(&ev);
	return r;
}

/* ---- store handling ---- */

static int store_new(const char *dir, uint64_t max_events, const struct opts *o,
		     struct tl_loop *loop, struct tl_timelines **ret)
{
	static const char *const probes[] = { "bench:none", NULL };
	struct tl_timelines_config cfg = {
		.state_dir = dir,
		.linger_s = 0,
		.max_events = (uint32_t)max_events,
		.fsync_ms = (uint32_t)o->fsync_ms,
		.findings_helper = o->findings_helper,
		.recorder = { .agent_version = "bench", .node = "bench-node", .kernel = "bench",
			      .config_digest = "sha256:bench", .probes = probes },
	};

	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return tl_timelines_new(&cfg, loop, ret);
}

static uint64_t rss_now(void)
{
	uint64_t v = 0;

	bench_rss_bytes(&v);
	return v;
}

/* Releases freed heap to the system so the next RSS growth is not hidden in
 * what an earlier phase left behind. */
static uint64_t rss_settled(void)
{
	malloc_trim(0);
	return rss_now();
}

struct doc_stats {
	uint64_t bytes, entries, aggregated_entries;
	int64_t loss_aggregated, loss_dropped;
	bool complete;
};

static int64_t loss_field(struct json_object *doc, const char *key)
{
	struct json_object *loss, *v;

	if (!json_object_object_get_ex(doc, "loss", &loss) ||
	    !json_object_object_get_ex(loss, key, &v))
		return -1;
	return json_object_get_int64(v);
}

static int read_doc(const char *state, const struct pod_gen *g, struct doc_stats *ret)
{
	char reldir[300], file[400], path[PATH_MAX];
	struct json_object *doc, *events, *v;
	struct doc_stats s = { 0 };
	struct stat st;
	int r;

	r = tl_export_doc_location("bench", g->name, g->uid, reldir, sizeof(reldir), file,
				   sizeof(file));
	if (r < 0)
		return r;
	r = bench_pathf(path, sizeof(path), "%s/timelines/%s/%s", state, reldir, file);
	if (r < 0)
		return r;
	if (stat(path, &st) < 0)
		return -errno;
	s.bytes = (uint64_t)st.st_size;
	doc = json_object_from_file(path);
	if (!doc)
		return -EINVAL;
	if (json_object_object_get_ex(doc, "events", &events) &&
	    json_object_is_type(events, json_type_array)) {
		s.entries = json_object_array_length(events);
		for (size_t i = 0; i < s.entries; i++) {
			struct json_object *e = json_object_array_get_idx(events, i), *type;

			if (json_object_object_get_ex(e, "type", &type) &&
			    strcmp(json_object_get_string(type), "events.aggregated") == 0)
				s.aggregated_entries++;
		}
	}
	s.loss_aggregated = loss_field(doc, "eventsAggregated");
	s.loss_dropped = loss_field(doc, "eventsDropped");
	s.complete = json_object_object_get_ex(doc, "complete", &v) && json_object_get_boolean(v);
	json_object_put(doc);
	/* The parse left ~100k small blocks in malloc's fast bins: merged
	 * now, not by the next large free() inside a timed loop step. */
	malloc_trim(0);
	*ret = s;
	return 0;
}

/* A close: the document is written by a forked writer process while the
 * loop goes on. total: from the close timer's expiry until the timeline is
 * gone (fork, serialize, write, fsync, rename, reap, free); step_max: the
 * longest single loop iteration meanwhile, i.e. the longest the loop was
 * blocked (the fork, or the final free of the timeline). */
struct close_time {
	uint64_t total_ns, step_max_ns, step_max_cpu_ns, step_max_sys_ns;
};

/* Adds pod.deleted (linger 0 arms a 1 ms close timer), lets the timer
 * expire, then times the loop iterations until the close completed. */
static int close_timed(struct tl_timelines *t, struct tl_loop *loop, struct pod_gen *g,
		       const struct opts *o, struct close_time *ret)
{
	size_t before = tl_timelines_open_count(t);
	struct tl_event ev;
	uint64_t t0, deadline, step_max = 0, step_cpu_max = 0, step_sys = 0;
	int r;

	r = tl_event_init(&ev, TL_SRC_API, "pod.deleted", pod_gen_time(g, g->seq++, o->step_us));
	if (r < 0)
		return r;
	snprintf(ev.pod_uid, sizeof(ev.pod_uid), "%s", g->uid);
	r = tl_timelines_add(t, &ev);
	tl_event_clear(&ev);
	if (r < 0)
		return r;
	usleep(3000);
	t0 = bench_now_ns();
	deadline = t0 + CLOSE_WAIT_MS * (uint64_t)NS_PER_MS;
	while (tl_timelines_open_count(t) >= before) {
		uint64_t s0 = bench_now_ns(), s1, k0 = thread_cpu_ns(), k1, y0 = thread_sys_ns();

		if (s0 > deadline || interrupted)
			return -ETIMEDOUT;
		/* 0: an idle wait for the writer would count as blocked time */
		r = tl_loop_run_once(loop, 0);
		if (r < 0)
			return r;
		k1 = thread_cpu_ns();
		s1 = bench_now_ns();
		if (s1 - s0 > step_max)
			step_max = s1 - s0;
		if (k1 - k0 > step_cpu_max) {
			step_cpu_max = k1 - k0;
			step_sys = thread_sys_ns() - y0;
		}
		usleep(200);
	}
	ret->total_ns = bench_now_ns() - t0;
	ret->step_max_ns = step_max;
	ret->step_max_cpu_ns = step_cpu_max;
	ret->step_max_sys_ns = step_sys;
	return 0;
}

/* A GET of an open timeline as the HTTP server does it: a snapshot, then
 * 64 KiB chunks as the client reads. Each step runs on the loop: the
 * longest one is what a GET can block it. */
struct serve_time {
	uint64_t open_ns, chunk_max_ns, total_ns, bytes;
	uint64_t open_cpu_ns, chunk_max_cpu_ns; /* this thread's CPU: without preemption */
};


static int serve_timed(struct tl_timelines *t, const struct pod_gen *g, struct serve_time *ret)
{
	static char chunk[64 * 1024];
	struct tl_doc_reader *rd;
	uint64_t t0 = bench_now_ns(), c0 = thread_cpu_ns(), s0, s1, k0, k1;
	ssize_t n;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = tl_timelines_open_doc(t, "bench", g->name, NULL, &rd);
	if (r < 0)
		return r;
	ret->open_ns = bench_now_ns() - t0;
	ret->open_cpu_ns = thread_cpu_ns() - c0;
	for (;;) {
		s0 = bench_now_ns();
		k0 = thread_cpu_ns();
		n = tl_doc_read(rd, chunk, sizeof(chunk));
		k1 = thread_cpu_ns();
		s1 = bench_now_ns();
		if (n <= 0)
			break;
		ret->bytes += (uint64_t)n;
		if (s1 - s0 > ret->chunk_max_ns)
			ret->chunk_max_ns = s1 - s0;
		if (k1 - k0 > ret->chunk_max_cpu_ns)
			ret->chunk_max_cpu_ns = k1 - k0;
	}
	tl_doc_reader_free(rd);
	ret->total_ns = bench_now_ns() - t0;
	return n < 0 ? (int)n : 0;
}

static double per_10k(uint64_t grown, uint64_t rss_before, uint64_t events)
{
	if (!events || grown < rss_before)
		return 0;
	return (double)(grown - rss_before) * 10000.0 / (double)events / (1024.0 * 1024.0);
}

/* ---- phases ---- */

static int phase_append_close(const char *root, const struct opts *o, struct tl_loop *loop)
{
	char dir[PATH_MAX], jdir[PATH_MAX + 16];
	struct tl_timelines *t = NULL;
	struct pod_gen *pods;
	uint64_t n = 0, rss0, rss1, rss2, jbytes, t0, t1, cpu0, cpu1, f0, f1;
	uint64_t close_sum = 0, close_max = 0, step_sum = 0, step_max = 0, doc_bytes = 0, doc_entries = 0;
	uint64_t open_max = 0, chunk_max = 0, serve_sum = 0, served = 0, heap = 0;
	uint64_t open_cpu_max = 0, chunk_cpu_max = 0, step_cpu_max = 0, step_sys_max = 0;
	uint64_t store_cpu = 0, store_sys = 0;
	int64_t base = tl_now_real_ns();
	int r;

	pods = calloc(o->pods, sizeof(*pods));
	if (!pods)
		return -ENOMEM;
	r = bench_pathf(dir, sizeof(dir), "%s/append", root);
	r = r ?: bench_pathf(jdir, sizeof(jdir), "%s/journal", dir);
	r = r ?: store_new(dir, o->max_events, o, loop, &t);
	if (r < 0)
		goto out;
	for (unsigned p = 0; p < o->pods; p++) {
		pod_gen_init(&pods[p], p, base + p * 1000);
		r = pod_gen_meta(t, &pods[p]);
		if (r < 0)
			goto out;
	}

	rss0 = rss_settled();
	cpu0 = bench_cpu_ns();
	t0 = bench_now_ns();
	/* Round robin over the Pods, as on a node where they all talk at once.
	 * Events are made BATCH at a time, then added: the thread CPU of the
	 * adds and of the loop's runs (journal writes and fsyncs) is the
	 * store's, apart from what making the synthetic events costs. */
	{
		uint64_t total = o->events * o->pods, k0, y0;
		unsigned p = 0;

		while (n < total && !interrupted) {
			size_t nb = 0;

			for (; nb < BATCH && n + nb < total; nb++) {
				r = pod_gen_next(&pods[p], o, &batch[nb]);
				if (r < 0)
					goto out;
				p = (p + 1) % (unsigned)o->pods;
			}
			k0 = thread_cpu_ns();
			y0 = thread_sys_ns();
			for (size_t k = 0; k < nb; k++) {
				if (r == 0)
					r = tl_timelines_add(t, &batch[k]);
				tl_event_clear(&batch[k]);
				if (++n % LOOP_EVERY == 0)
					tl_loop_run_once(loop, 0);
			}
			store_cpu += thread_cpu_ns() - k0;
			store_sys += thread_sys_ns() - y0;
			if (r < 0)
				goto out;
		}
	}
	t1 = bench_now_ns();
	cpu1 = bench_cpu_ns();
	f0 = bench_now_ns();
	r = tl_timelines_flush(t);
	f1 = bench_now_ns();
	if (r < 0)
		goto out;
	rss1 = rss_now();
	jbytes = bench_dir_bytes(jdir);
	if (interrupted) {
		r = -EINTR;
		goto out;
	}

	printf("\nappend: %llu timelines x %llu events (%llu%% http.request), cap %llu, fsync every %llu ms\n",
	       (unsigned long long)o->pods, (unsigned long long)o->events,
	       (unsigned long long)o->http_share, (unsigned long long)o->max_events,
	       (unsigned long long)o->fsync_ms);
	printf("  %-34s %12llu\n", "events appended", (unsigned long long)n);
	printf("  %-34s %12.3f\n", "wall seconds", (double)(t1 - t0) / 1e9);
	printf("  %-34s %12.0f\n", "events/s", (double)n * 1e9 / (double)(t1 - t0));
	printf("  %-34s %12.2f\n", "us per event (wall)", (double)(t1 - t0) / 1e3 / (double)n);
	printf("  %-34s %12.2f\n", "us per event (cpu, events made too)",
	       (double)(cpu1 - cpu0) / 1e3 / (double)n);
	printf("  %-34s %12.3f\n", "us per event, store (thread cpu)",
	       (double)store_cpu / 1e3 / (double)n);
	printf("  %-34s %12.3f\n", "  of which system (kernel)", (double)store_sys / 1e3 / (double)n);
	printf("  %-34s %12.1f\n", "journal bytes per event", (double)jbytes / (double)n);
	printf("  %-34s %12.2f\n", "RSS MiB per 10k events/timeline", per_10k(rss1, rss0, n));
	printf("  %-34s %12.2f\n", "final flush (fsync all) ms", (double)(f1 - f0) / 1e6);
	printf("  %-34s %12.1f\n", "RSS MiB before the appends", (double)rss0 / (1024.0 * 1024.0));
	printf("  %-34s %12.1f\n", "RSS MiB after (process total)", (double)rss1 / (1024.0 * 1024.0));
	{
		struct mallinfo2 mi = mallinfo2();

		printf("  %-34s %12.1f\n", "  malloc: in use MiB",
		       (double)mi.uordblks / (1024.0 * 1024.0) + (double)mi.hblkhd / (1024.0 * 1024.0));
		printf("  %-34s %12.1f\n", "  malloc: free in heap MiB",
		       (double)mi.fordblks / (1024.0 * 1024.0));
	}
	heap = tl_timelines_memory(t);
	printf("  %-34s %12.1f\n", "store heap bytes per event held", (double)heap / (double)n);

	for (unsigned p = 0; p < o->pods && !interrupted; p++) {
		struct serve_time st;

		r = serve_timed(t, &pods[p], &st);
		if (r < 0)
			goto out;
		if (st.open_ns > open_max)
			open_max = st.open_ns;
		if (st.chunk_max_ns > chunk_max)
			chunk_max = st.chunk_max_ns;
		if (st.open_cpu_ns > open_cpu_max)
			open_cpu_max = st.open_cpu_ns;
		if (st.chunk_max_cpu_ns > chunk_cpu_max)
			chunk_cpu_max = st.chunk_max_cpu_ns;
		serve_sum += st.total_ns;
		served += st.bytes;
	}
	printf("\nserve an open timeline (GET: snapshot, then 64 KiB chunks; each step on the loop)\n");
	printf("  %-34s %12.0f\n", "document bytes", (double)served / (double)o->pods);
	printf("  %-34s %12.2f\n", "ms snapshot, longest (wall)", (double)open_max / 1e6);
	printf("  %-34s %12.2f\n", "ms snapshot, longest (thread cpu)", (double)open_cpu_max / 1e6);
	printf("  %-34s %12.2f\n", "ms per chunk, longest (wall)", (double)chunk_max / 1e6);
	printf("  %-34s %12.2f\n", "ms per chunk, longest (thread cpu)", (double)chunk_cpu_max / 1e6);
	printf("  %-34s %12.2f\n", "ms per document, all chunks (mean)",
	       (double)serve_sum / 1e6 / (double)o->pods);

	for (unsigned p = 0; p < o->pods && !interrupted; p++) {
		struct doc_stats ds;
		struct close_time ct;

		r = close_timed(t, loop, &pods[p], o, &ct);
		if (r < 0)
			goto out;
		r = read_doc(dir, &pods[p], &ds);
		if (r < 0)
			goto out;
		close_sum += ct.total_ns;
		if (ct.total_ns > close_max)
			close_max = ct.total_ns;
		step_sum += ct.step_max_ns;
		if (ct.step_max_ns > step_max)
			step_max = ct.step_max_ns;
		if (ct.step_max_cpu_ns > step_cpu_max) {
			step_cpu_max = ct.step_max_cpu_ns;
			step_sys_max = ct.step_max_sys_ns;
		}
		doc_bytes += ds.bytes;
		doc_entries += ds.entries;
	}
	if (interrupted) {
		r = -EINTR;
		goto out;
	}
	/* Closed timelines' events are freed in slices on the loop. */
	for (uint64_t end = bench_now_ns() + 1000 * (uint64_t)NS_PER_MS; bench_now_ns() < end;)
		tl_loop_run_once(loop, 10);
	rss2 = rss_settled();
	printf("\nclose + write document (from a snapshot, 64 KiB per loop iteration, fsync, rename; then drop journal)\n");
	printf("  %-34s %12.0f\n", "events per document", (double)doc_entries / (double)o->pods);
	printf("  %-34s %12.0f\n", "document bytes", (double)doc_bytes / (double)o->pods);
	printf("  %-34s %12.1f\n", "RSS MiB at the first close", (double)rss1 / (1024.0 * 1024.0));
	printf("  %-34s %12.1f\n", "ms per document, total (mean)",
	       (double)close_sum / 1e6 / (double)o->pods);
	printf("  %-34s %12.1f\n", "ms per document, total (max)", (double)close_max / 1e6);
	printf("  %-34s %12.2f\n", "ms loop blocked, longest (mean)",
	       (double)step_sum / 1e6 / (double)o->pods);
	printf("  %-34s %12.2f\n", "ms loop blocked, longest (max)", (double)step_max / 1e6);
	printf("  %-34s %12.2f\n", "ms loop step, longest (thread cpu)", (double)step_cpu_max / 1e6);
	printf("  %-34s %12.2f\n", "  of which system (kernel) ms", (double)step_sys_max / 1e6);
	printf("  %-34s %12.1f\n", "RSS MiB given back after closing",
	       rss1 > rss2 ? (double)(rss1 - rss2) / (1024.0 * 1024.0) : 0.0);
	r = 0;
out:
	tl_timelines_free(t);
	free(pods);
	return r;
}

struct cap_row {
	double events_per_s, rss_per_10k, journal_per_event;
};

/* One timeline fed cap_factor * max_events events with the given cap;
 * a row per max_events-sized window, then the document. */
static int cap_run(const char *root, const char *label, uint64_t cap, const struct opts *o,
		   struct tl_loop *loop, struct cap_row *rows, struct doc_stats *ret_doc,
		   struct close_time *ret_close, uint64_t *ret_rss)
{
	char dir[PATH_MAX], jdir[PATH_MAX + 16];
	struct tl_timelines *t = NULL;
	struct pod_gen g;
	uint64_t rss_start, n = 0;
	int r;

	r = bench_pathf(dir, sizeof(dir), "%s/%s", root, label);
	r = r ?: bench_pathf(jdir, sizeof(jdir), "%s/journal", dir);
	r = r ?: store_new(dir, cap, o, loop, &t);
	if (r < 0)
		return r;
	pod_gen_init(&g, 900, tl_now_real_ns());
	r = pod_gen_meta(t, &g);
	if (r < 0)
		goto out;
	rss_start = rss_settled();
	for (uint64_t w = 0; w < o->cap_factor && !interrupted; w++) {
		uint64_t rss0 = rss_now(), j0 = bench_dir_bytes(jdir), t0 = bench_now_ns(), t1;

		for (uint64_t i = 0; i < o->max_events; i++) {
			r = add_next(t, &g, o);
			if (r < 0)
				goto out;
			if (++n % LOOP_EVERY == 0)
				tl_loop_run_once(loop, 0);
		}
		t1 = bench_now_ns();
		rows[w].events_per_s = (double)o->max_events * 1e9 / (double)(t1 - t0);
		rows[w].rss_per_10k = per_10k(rss_now(), rss0, o->max_events);
		/* negative: compaction rewrote the journal smaller */
		rows[w].journal_per_event =
			((double)bench_dir_bytes(jdir) - (double)j0) / (double)o->max_events;
	}
	if (interrupted) {
		r = -EINTR;
		goto out;
	}
	*ret_rss = rss_now() - rss_start;
	r = close_timed(t, loop, &g, o, ret_close);
	if (r < 0)
		goto out;
	r = read_doc(dir, &g, ret_doc);
out:
	tl_timelines_free(t);
	return r;
}

static int phase_cap(const char *root, const struct opts *o, struct tl_loop *loop)
{
	uint64_t total = o->cap_factor * o->max_events;
	uint64_t uncapped = 2 * total + 16;
	struct cap_row *rows[2];
	struct doc_stats doc[2];
	struct close_time close_t[2];
	uint64_t rss[2];
	static const char *const labels[2] = { "capped", "uncapped" };
	int r = 0;

	rows[0] = calloc(o->cap_factor, sizeof(struct cap_row));
	rows[1] = calloc(o->cap_factor, sizeof(struct cap_row));
	if (!rows[0] || !rows[1]) {
		r = -ENOMEM;
		goto out;
	}
	r = cap_run(root, labels[0], o->max_events, o, loop, rows[0], &doc[0], &close_t[0], &rss[0]);
	if (r < 0)
		goto out;
	rss_settled();
	r = cap_run(root, labels[1], uncapped, o, loop, rows[1], &doc[1], &close_t[1], &rss[1]);
	if (r < 0)
		goto out;

	printf("\nevent cap: one timeline fed %llu events; cap %llu vs. %llu (never reached)\n",
	       (unsigned long long)total, (unsigned long long)o->max_events,
	       (unsigned long long)uncapped);
	printf("  %-18s %10s %10s %12s %12s\n", "events fed", "run", "events/s",
	       "RSS MiB/10k", "journal B/ev");
	for (unsigned k = 0; k < 2; k++) {
		for (uint64_t w = 0; w < o->cap_factor; w++) {
			char range[40];

			snprintf(range, sizeof(range), "%llu-%llu",
				 (unsigned long long)(w * o->max_events),
				 (unsigned long long)((w + 1) * o->max_events));
			printf("  %-18s %10s %10.0f %12.2f %12.1f\n", range, labels[k],
			       rows[k][w].events_per_s, rows[k][w].rss_per_10k,
			       rows[k][w].journal_per_event);
		}
	}
	printf("  %-34s %14s %14s\n", "document", labels[0], labels[1]);
	printf("  %-34s %14llu %14llu\n", "events in document",
	       (unsigned long long)doc[0].entries, (unsigned long long)doc[1].entries);
	printf("  %-34s %14llu %14llu\n", "  of which events.aggregated",
	       (unsigned long long)doc[0].aggregated_entries,
	       (unsigned long long)doc[1].aggregated_entries);
	printf("  %-34s %14lld %14lld\n", "loss.eventsAggregated", (long long)doc[0].loss_aggregated,
	       (long long)doc[1].loss_aggregated);
	printf("  %-34s %14lld %14lld\n", "loss.eventsDropped", (long long)doc[0].loss_dropped,
	       (long long)doc[1].loss_dropped);
	printf("  %-34s %14s %14s\n", "complete", doc[0].complete ? "true" : "false",
	       doc[1].complete ? "true" : "false");
	printf("  %-34s %14llu %14llu\n", "document bytes", (unsigned long long)doc[0].bytes,
	       (unsigned long long)doc[1].bytes);
	printf("  %-34s %14.1f %14.1f\n", "close + write ms, total", (double)close_t[0].total_ns / 1e6,
	       (double)close_t[1].total_ns / 1e6);
	printf("  %-34s %14.2f %14.2f\n", "ms loop blocked, longest",
	       (double)close_t[0].step_max_ns / 1e6, (double)close_t[1].step_max_ns / 1e6);
	printf("  %-34s %14.1f %14.1f\n", "RSS MiB held before close",
	       (double)rss[0] / (1024.0 * 1024.0), (double)rss[1] / (1024.0 * 1024.0));
out:
	free(rows[0]);
	free(rows[1]);
	return r;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: bench-timeline [--pods N] [--events N] [--max-events N] [--http-share PCT]\n"
		"                      [--step-us US] [--cap-factor N] [--fsync-ms MS] [--peers N]\n"
		"                      [--state-base DIR] [--keep] [--help]\n"
		"\n"
		"Feeds synthetic events into the per-Pod timeline store (tl_timelines) in a\n"
		"temporary state dir and prints what it costs. Figures, not a test.\n"
		"\n"
		"  --pods N         timelines fed round robin in the append phase (default 4)\n"
		"  --events N       events per timeline in the append phase (default 20000)\n"
		"  --max-events N   per-timeline cap (tl_timelines_config.max_events, default 20000)\n"
		"  --http-share PCT share of http.request among the events (default 90)\n"
		"  --step-us US     simulated time between two events of one Pod (default 1000)\n"
		"  --cap-factor N   the cap phase feeds N x max-events events (default 3)\n"
		"  --fsync-ms MS    journal fsync batching (default 200)\n"
		"  --peers N        http.request carries peer, conn and connStart, from N distinct\n"
		"                   addresses, a connection per 8 requests (default 0: none)\n"
		"  --state-base DIR where the temporary state dir is made (default $TMPDIR or /tmp)\n"
		"  --keep           keep the state dir and print its path\n"
		"  --findings-helper PATH  termline-findings, which writes a closed document's\n"
		"                   findings and syncs it off the loop (\"\": none, the document\n"
		"                   is synced on the loop; default: looked for next to the program)\n");
}

static int parse_opts(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "pods", required_argument, NULL, 'p' },
		{ "events", required_argument, NULL, 'e' },
		{ "max-events", required_argument, NULL, 'm' },
		{ "http-share", required_argument, NULL, 's' },
		{ "step-us", required_argument, NULL, 'u' },
		{ "cap-factor", required_argument, NULL, 'c' },
		{ "fsync-ms", required_argument, NULL, 'f' },
		{ "peers", required_argument, NULL, 'P' },
		{ "state-base", required_argument, NULL, 'b' },
		{ "keep", no_argument, NULL, 'k' },
		{ "findings-helper", required_argument, NULL, 'F' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, idx = 0;

	while ((c = getopt_long(argc, argv, "h", longopts, &idx)) != -1) {
		int r = 0;

		switch (c) {
		case 'p': r = bench_parse_u64(optarg, 1, MAX_PODS, &o->pods); break;
		case 'e': r = bench_parse_u64(optarg, 1, MAX_EVENTS_OPT, &o->events); break;
		case 'm': r = bench_parse_u64(optarg, 1, 100000000, &o->max_events); break;
		case 's': r = bench_parse_u64(optarg, 0, 100, &o->http_share); break;
		case 'u': r = bench_parse_u64(optarg, 1, 1000000000, &o->step_us); break;
		case 'c': r = bench_parse_u64(optarg, 1, 20, &o->cap_factor); break;
		case 'f': r = bench_parse_u64(optarg, 1, 600000, &o->fsync_ms); break;
		case 'P': r = bench_parse_u64(optarg, 0, 1u << 24, &o->peers); break;
		case 'b': o->base = optarg; break;
		case 'k': o->keep = true; break;
		case 'F': o->findings_helper = optarg; break;
		case 'h': usage(stdout); exit(0);
		default: usage(stderr); return -EINVAL;
		}
		if (r < 0) {
			fprintf(stderr, "bench-timeline: bad value for --%s: %s\n",
				longopts[idx].name, optarg);
			return r;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bench-timeline: unexpected argument %s\n", argv[optind]);
		return -EINVAL;
	}
	/* tl_timelines_config.max_events is 32 bits, and the uncapped run
	 * needs twice the feed. */
	if (o->cap_factor * o->max_events * 2 + 16 > UINT32_MAX) {
		fprintf(stderr, "bench-timeline: --max-events x --cap-factor too large\n");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .pods = 4, .events = 20000, .max_events = 20000, .http_share = 90,
			  .step_us = 1000, .cap_factor = 3, .fsync_ms = 200 };
	struct sigaction sa = { .sa_handler = on_signal };
	char root[PATH_MAX];
	struct tl_loop *loop = NULL;
	const char *base;
	int r, status = 1;

	if (parse_opts(argc, argv, &o) < 0)
		return 2;
	base = o.base ? o.base : getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (bench_pathf(root, sizeof(root), "%s/termline-bench-timeline-XXXXXX", base) < 0) {
		fprintf(stderr, "bench-timeline: state base path too long\n");
		return 2;
	}
	if (!mkdtemp(root)) {
		fprintf(stderr, "bench-timeline: mkdtemp %s: %s\n", root, strerror(errno));
		return 1;
	}
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGINT, &sa, NULL) < 0 || sigaction(SIGTERM, &sa, NULL) < 0) {
		fprintf(stderr, "bench-timeline: sigaction: %s\n", strerror(errno));
		goto cleanup;
	}
	r = tl_loop_new(&loop);
	if (r < 0) {
		fprintf(stderr, "bench-timeline: setup: %s\n", strerror(-r));
		goto cleanup;
	}
	printf("bench-timeline: state dir %s, %ld CPUs\n", root, sysconf(_SC_NPROCESSORS_ONLN));

	r = phase_append_close(root, &o, loop);
	if (r >= 0)
		r = phase_cap(root, &o, loop);
	if (r < 0) {
		fprintf(stderr, "bench-timeline: %s\n",
			r == -EINTR ? "interrupted" : strerror(-r));
		goto cleanup;
	}
	status = 0;
cleanup:
	tl_loop_free(loop);
	if (o.keep) {
		printf("state kept in %s\n", root);
	} else {
		r = bench_remove_tree(root);
		if (r < 0)
			fprintf(stderr, "bench-timeline: could not remove %s: %s\n", root,
				strerror(-r));
	}
	return status;
}
