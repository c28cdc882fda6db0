/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "scenario.h"
#include "macro.h"

int scn_event(struct tl_event *ev, const char *uid, const char *type, int64_t t)
{
	enum tl_source src = TL_SRC_KERNEL;
	int r = 0;

	if (strncmp(type, "pod.", 4) == 0 || strncmp(type, "endpoint.", 9) == 0 ||
	    strcmp(type, "container.terminated") == 0)
		src = TL_SRC_API;
	else if (strcmp(type, "http.request") == 0)
		src = TL_SRC_LOG;
	r = tl_event_init(ev, src, type, t);
	if (r < 0)
		return r;
	snprintf(ev->pod_uid, sizeof(ev->pod_uid), "%s", uid);
	if (src != TL_SRC_API || strcmp(type, "container.terminated") == 0) {
		snprintf(ev->container, sizeof(ev->container), "app");
		snprintf(ev->container_id, sizeof(ev->container_id), "%s", "0123abcd");
		ev->cgroup_id = src == TL_SRC_KERNEL ? 4242 : 0;
	}
	if (strcmp(type, "pod.deletion_requested") == 0) {
		r = tl_event_set_i(ev, TL_F_DELREQ_GRACE, 30);
	} else if (strcmp(type, "pod.condition") == 0) {
		r = tl_event_set_text(ev, TL_F_COND_CONDITION, "Ready");
		r = r ?: tl_event_set_text(ev, TL_F_COND_STATUS, "False");
	} else if (strcmp(type, "container.terminated") == 0) {
		r = tl_event_set_i(ev, TL_F_TERM_EXIT_CODE, 143);
		r = r ?: tl_event_set_text(ev, TL_F_TERM_REASON, "Error");
	} else if (strcmp(type, "endpoint.condition") == 0) {
		r = tl_event_set_text(ev, TL_F_EP_SERVICE, "web");
		r = r ?: tl_event_set_text(ev, TL_F_EP_SLICE, "web-abcde");
		r = r ?: tl_event_set_i(ev, TL_F_EP_READY, false);
		r = r ?: tl_event_set_i(ev, TL_F_EP_SERVING, true);
		r = r ?: tl_event_set_i(ev, TL_F_EP_TERMINATING, true);
	} else if (strcmp(type, "endpoint.removed") == 0) {
		r = tl_event_set_text(ev, TL_F_EP_SERVICE, "web");
		r = r ?: tl_event_set_text(ev, TL_F_EP_SLICE, "web-abcde");
	} else if (strcmp(type, "process.signal") == 0) {
		r = tl_event_set_text(ev, TL_F_SIG_SIGNAL, "SIGTERM");
		r = r ?: tl_event_set_i(ev, TL_F_SIG_SIGNO, 15);
		r = r ?: tl_event_set_i(ev, TL_F_SIG_PID, 4711);
		r = r ?: tl_event_set_text(ev, TL_F_SIG_COMM, "app");
		r = r ?: tl_event_set_i(ev, TL_F_SIG_SENDER_PID, 99);
		r = r ?: tl_event_set_text(ev, TL_F_SIG_SENDER_COMM, "containerd-shim");
		r = r ?: tl_event_set_text(ev, TL_F_SIG_RESULT, "ignored");
	} else if (strcmp(type, "process.exec") == 0) {
		r = tl_event_set_i(ev, TL_F_EXEC_PID, 4711);
		r = r ?: tl_event_set_text(ev, TL_F_EXEC_COMM, "app");
		r = r ?: tl_event_set_text(ev, TL_F_EXEC_FILENAME, "/usr/bin/app");
	} else if (strcmp(type, "process.exit") == 0) {
		r = tl_event_set_i(ev, TL_F_EXIT_PID, 4711);
		r = r ?: tl_event_set_text(ev, TL_F_EXIT_COMM, "app");
		r = r ?: tl_event_set_i(ev, TL_F_EXIT_CODE, 0);
		r = r ?: tl_event_set_i(ev, TL_F_EXIT_SIGNAL, 9);
	} else if (strcmp(type, "socket.listen") == 0 || strcmp(type, "socket.listen_closed") == 0) {
		r = tl_event_set_text(ev, TL_F_LISTEN_ADDRESS, "0.0.0.0");
		r = r ?: tl_event_set_i(ev, TL_F_LISTEN_PORT, 8080);
	} else if (strcmp(type, "tcp.reset_sent") == 0 || strcmp(type, "tcp.reset_received") == 0) {
		r = tl_event_set_text(ev, TL_F_RESET_LOCAL, "10.0.0.7:8080");
		r = r ?: tl_event_set_text(ev, TL_F_RESET_REMOTE, "10.0.0.9:51234");
	} else if (strcmp(type, "http.request") == 0) {
		char rid[64];

		snprintf(rid, sizeof(rid), "req-%lld", (long long)t);
		r = tl_event_set_text(ev, TL_F_HTTP_REQUEST_ID, rid);
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_METHOD, "GET");
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_PATH, "/api");
		r = r ?: tl_event_set_i(ev, TL_F_HTTP_STATUS, 503);
		r = r ?: tl_event_set_i(ev, TL_F_HTTP_START, t - 2000000);
		r = r ?: tl_event_set_i(ev, TL_F_HTTP_DURATION_MS, 2);
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_DIRECTION, "inbound");
		r = r ?: tl_event_set_text(ev, TL_F_HTTP_RESPONSE_FLAGS, "UF,URX");
	}
	if (r < 0)
		tl_event_clear(ev);
	return r;
}

int scn_add(struct tl_timelines *t, const char *uid, const char *type, int64_t time)
{
	struct tl_event ev;
	int r = scn_event(&ev, uid, type, time);

	if (r < 0)
		return r;
	r = tl_timelines_add(t, &ev);
	tl_event_clear(&ev);
	return r;
}

struct json_object *scn_meta(const char *ns, const char *name, const char *uid)
{
	char buf[1024];

	snprintf(buf, sizeof(buf),
		 "{\"pod\":{\"namespace\":\"%s\",\"name\":\"%s\",\"uid\":\"%s\",\"node\":\"node-1\","
		 "\"ip\":\"10.0.0.7\",\"owner\":{\"kind\":\"ReplicaSet\",\"name\":\"web-5d8f\"},"
		 "\"terminationGracePeriodSeconds\":30},"
		 "\"containers\":[{\"name\":\"app\",\"containerID\":\"containerd://0123abcd\","
		 "\"role\":\"main\",\"cgroupId\":0},{\"name\":\"istio-proxy\","
		 "\"containerID\":\"containerd://fedc9876\",\"role\":\"sidecar\",\"cgroupId\":777}]}",
		 ns, name, uid);
	return json_tokener_parse(buf);
}

int scn_set_meta(struct tl_timelines *t, const char *uid, struct json_object *m)
{
	struct tl_pod_meta *pm = NULL;
	int r = tl_pod_meta_from_json(m, uid, &pm);

	if (r < 0)
		return r;
	r = tl_timelines_set_pod_meta(t, uid, pm);
	tl_pod_meta_unref(pm);
	return r;
}

int scn_termination(struct tl_timelines *t, const char *uid, int64_t t0, bool with_deleted)
{
	/* Deliberately not in time order: sources arrive with different delays. */
	static const struct {
		const char *type;
		int64_t offset_ms;
	} steps[] = {
		{ "process.exec", -5000 },
		{ "socket.listen", -4000 },
		{ "endpoint.condition", 150 },
		{ "pod.deletion_requested", 0 },
		{ "pod.condition", 900 },
		{ "process.signal", 100 },
		{ "http.request", 400 },
		{ "tcp.reset_received", 450 },
		{ "tcp.reset_sent", 420 },
		{ "socket.listen_closed", 30050 },
		{ "process.exit", 30100 },
		{ "container.terminated", 30200 },
		{ "endpoint.removed", 30300 },
	};
	int n = 0, r;

	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		r = scn_add(t, uid, steps[i].type, t0 + steps[i].offset_ms * 1000000LL);
		if (r < 0)
			return r;
		n++;
	}
	if (with_deleted) {
		r = scn_add(t, uid, "pod.deleted", t0 + 31000 * 1000000LL);
		if (r < 0)
			return r;
		n++;
	}
	return n;
}

bool scn_run_until(struct tl_loop *loop, bool (*pred)(void *ud), void *ud)
{
	/* A deadline in time, not a count of iterations: with a 10 ms timer
	 * armed, 600 iterations are 6 s, too short for a 50k-event document
	 * written a chunk per iteration under a sanitizer on a busy machine. */
	int64_t deadline = tl_now_boot_ns() + 60LL * 1000000000LL;

	while (tl_now_boot_ns() < deadline) {
		if (pred(ud))
			return true;
		tl_loop_run_once(loop, 100);
	}
	return pred(ud);
}

char *scn_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char buf[PATH_MAX];

	snprintf(buf, sizeof(buf), "%s/termline-tl-XXXXXX", base && *base ? base : "/tmp");
	if (!mkdtemp(buf))
		return NULL;
	return strdup(buf);
}

static int rm_one(const char *path, const struct stat *st _unused_, int flag _unused_,
		  struct FTW *ftw _unused_)
{
	return remove(path) < 0 ? 0 : 0;
}

void scn_rm_rf(const char *path)
{
	if (path)
		nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int scn_validate(const char *path)
{
	const char *src = getenv("TERMLINE_SOURCE_ROOT");
	char script[PATH_MAX], schema[PATH_MAX];
	pid_t pid;
	int status;

	if (!src)
		src = ".";
	snprintf(script, sizeof(script), "%s/tests/timeline/validate.py", src);
	snprintf(schema, sizeof(schema), "%s/schema/timeline.schema.json", src);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		execl("/usr/bin/python3", "python3", script, "--schema", schema, path, (char *)NULL);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int scn_write(const char *dir, const char *name, const char *data, size_t len)
{
	char path[PATH_MAX];
	FILE *f;
	int r = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	if (fwrite(data, 1, len, f) != len)
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	return r;
}
