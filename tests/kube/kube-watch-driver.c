/* SPDX-License-Identifier: Apache-2.0 */
/* Runs the Kubernetes client on a tl_loop and prints every emitted event as
 * one JSON line (with ids), the way `termlined --emit-events -` does, plus:
 *   {"synced":true}                     once both initial LISTs are in;
 *   {"lookup":ID,"podUid":U,"container":N}  for every container.terminated
 *                                       (the id -> name join kernel events use);
 *   {"error":MSG}                       each time the last API error changes;
 *   {"metrics":{...}}                   on SIGTERM/SIGINT, before exiting 0.
 * Usage: kube-watch-driver --kubeconfig FILE --node NAME */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "event.h"
#include "kube.h"
#include "loop.h"
#include "metrics.h"
#include "macro.h"

struct driver {
	struct tl_loop *loop;
	struct tl_kube *kube;
	bool synced;
	char last_error[256];
};

static void print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
	fflush(stdout);
}

static void emit_cb(void *userdata, struct tl_event *ev)
{
	struct driver *d = userdata;
	struct json_object *o = tl_event_to_json(ev, true);

	if (o) {
		print_json(o);
		json_object_put(o);
	}
	if (d->kube && strcmp(ev->type, "container.terminated") == 0 && ev->container_id[0]) {
		const char *uid = NULL, *name = NULL;
		struct json_object *l = json_object_new_object();

		if (l && tl_kube_lookup_container(d->kube, ev->container_id, &uid, &name) == 0) {
			json_object_object_add(l, "lookup", json_object_new_string(ev->container_id));
			json_object_object_add(l, "podUid", json_object_new_string(uid));
			json_object_object_add(l, "container", json_object_new_string(name));
			print_json(l);
		}
		json_object_put(l);
	}
	tl_event_clear(ev);
}

static void tick(struct tl_loop *loop _unused_, struct tl_timer *t _unused_, void *userdata)
{
	struct driver *d = userdata;
	const char *e = tl_kube_last_error(d->kube);

	if (strncmp(e, d->last_error, sizeof(d->last_error) - 1) != 0) {
		struct json_object *o = json_object_new_object();

		snprintf(d->last_error, sizeof(d->last_error), "%s", e);
		if (o) {
			json_object_object_add(o, "error", json_object_new_string(d->last_error));
			print_json(o);
			json_object_put(o);
		}
	}

	if (!d->synced && tl_kube_synced(d->kube)) {
		d->synced = true;
		printf("{\"synced\":true}\n");
		fflush(stdout);
	}
}

static int sig_cb(struct tl_loop *loop, int fd, uint32_t events _unused_, void *userdata _unused_)
{
	struct signalfd_siginfo si;

	if (read(fd, &si, sizeof(si)) != sizeof(si))
		return 0;
	tl_loop_quit(loop, 0);
	return 0;
}

static void print_metrics(struct driver *d)
{
	static const char *const res[] = { "pods", "endpointslices" };
	static const char *const kinds[] = { "transport", "truncated", "expired", "http_401",
					     "http_410", "http_429", "http_5xx", "credentials" };
	struct json_object *m = json_object_new_object(), *o = json_object_new_object();
	char labels[128], key[160];

	for (size_t i = 0; i < 2; i++) {
		snprintf(labels, sizeof(labels), "resource=\"%s\"", res[i]);
		snprintf(key, sizeof(key), "restarts_%s", res[i]);
		json_object_object_add(m, key, json_object_new_int64(
			tl_metric_get("termline_watch_restarts_total", labels)));
		snprintf(key, sizeof(key), "relists_%s", res[i]);
		json_object_object_add(m, key, json_object_new_int64(
			tl_metric_get("termline_relists_total", labels)));
		for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			snprintf(labels, sizeof(labels), "resource=\"%s\",kind=\"%s\"", res[i], kinds[k]);
			snprintf(key, sizeof(key), "errors_%s_%s", res[i], kinds[k]);
			json_object_object_add(m, key, json_object_new_int64(
				tl_metric_get("termline_api_errors_total", labels)));
		}
	}
	json_object_object_add(m, "malformed", json_object_new_int64(
		tl_metric_get("termline_api_malformed_events_total", NULL)));
	json_object_object_add(m, "synced", json_object_new_boolean(tl_kube_synced(d->kube)));
	json_object_object_add(o, "metrics", m);
	print_json(o);
	json_object_put(o);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "kubeconfig", required_argument, NULL, 'k' },
		{ "node", required_argument, NULL, 'n' },
		{}
	};
	struct driver d = { 0 };
	struct tl_kube_config cfg = { 0 };
	struct tl_emitter emit = { .emit = emit_cb, .userdata = &d };
	struct tl_timer *t = NULL;
	char err[1024];
	sigset_t mask;
	int c, r, sfd = -1;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'k')
			cfg.kubeconfig = optarg;
		else if (c == 'n')
			cfg.node = optarg;
		else
			return 2;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = tl_loop_new(&d.loop);
	if (r < 0) {
		fprintf(stderr, "kube-watch-driver: loop: %s\n", strerror(-r));
		return 1;
	}
	r = tl_kube_new(&cfg, d.loop, &emit, &d.kube, err, sizeof(err));
	if (r < 0) {
		fprintf(stderr, "kube-watch-driver: %s\n", err);
		tl_loop_free(d.loop);
		return 2;
	}
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || tl_loop_add_io(d.loop, sfd, EPOLLIN, sig_cb, &d) < 0 ||
	    tl_loop_add_timer(d.loop, 50, 50, tick, &d, &t) < 0) {
		fprintf(stderr, "kube-watch-driver: setup failed\n");
		return 1;
	}
	r = tl_loop_run(d.loop);
	print_metrics(&d);
	tl_timer_free(t);
	tl_loop_del_io(d.loop, sfd);
	close(sfd);
	tl_kube_free(d.kube);
	tl_loop_free(d.loop);
	return r;
}
