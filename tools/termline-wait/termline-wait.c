/* SPDX-License-Identifier: Apache-2.0 */
/* termline-wait: a preStop gate (docs/drain.md). Asks the termline agent on
 * this node (GET /v1/pods/{uid}/drained) to answer once nothing routes new
 * traffic to the Pod any more, and returns then: the app and its sidecar get
 * SIGTERM only after the last request reached them.
 *
 * Static (the C library and json-c linked in): it is copied into
 * application containers whose images we know nothing about. No name
 * resolution: HOST_IP is an address.
 *
 * --timeout bounds the whole run: the agent is asked to answer a little
 * before it, and nothing (connecting, reading, retrying, the fallback)
 * outlasts it. Only an answer saying "drained": true opens the gate before
 * the timeout; anything else is retried until then.
 *
 * Exit status: 0 drained, 1 not drained (the agent answered 504 at the
 * timeout; the deadline passed with the agent away, silent or answering no
 * verdict; or no agent ever answered and the fallback sleep was served),
 * 2 bad usage. One line on stderr says what it waited for and how long;
 * what it quotes of the agent's answer is escaped for the terminal. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "answer.h"

#define DEFAULT_PORT 9440
#define DEFAULT_QUIET_MS 1000
#define DEFAULT_TIMEOUT_MS 20000
#define DEFAULT_FALLBACK_MS 5000
#define MAX_DURATION_MS (3600LL * 1000)
#define CONNECT_TIMEOUT_MS 1000
/* The agent is asked to answer this long before the deadline (a quarter
 * of what is left, when that is less): it re-evaluates its waits every
 * 50 ms, so its 504 arrives before the deadline, which is hard. */
#define ANSWER_MARGIN_MS 500
/* A 504 that arrives this long before the end of the wait asked for is not
 * the agent's timeout answer: retried like any answer without a verdict. */
#define EARLY_504_MS 250
#define RETRY_FIRST_MS 200
#define RETRY_MAX_MS 1000
#define UID_MAX 64

struct opts {
	const char *uid;
	const char *host;
	unsigned port;
	int64_t quiet_ms, timeout_ms, fallback_ms;
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000 };

	while (ms > 0 && nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* "500ms", "1.5s", "2m", "3" (seconds). 0 or -EINVAL. */
static int parse_duration(const char *s, int64_t *ret_ms)
{
	char *end;
	double v, mult = 1000;

	if (!s || !*s)
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -EINVAL;
	if (strcmp(end, "ms") == 0)
		mult = 1;
	else if (strcmp(end, "s") == 0 || *end == '\0')
		mult = 1000;
	else if (strcmp(end, "m") == 0)
		mult = 60000;
	else
		return -EINVAL;
	v *= mult;
	if (v > (double)MAX_DURATION_MS)
		return -EINVAL;
	*ret_ms = (int64_t)(v + 0.5);
	return 0;
}

static bool uid_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= UID_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') ||
		      (s[i] >= 'A' && s[i] <= 'F') || s[i] == '-'))
			return false;
	return true;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: termline-wait [--uid UID] [--host IP] [--port N] [--quiet D]\n"
		"                     [--timeout D] [--fallback D]\n"
		"A preStop gate: returns once the termline agent on this node saw the Pod's\n"
		"endpoint leave every EndpointSlice and no new connection for --quiet.\n"
		"  --uid UID       the Pod's UID (default $POD_UID, downward API metadata.uid)\n"
		"  --host IP       the agent's address (default $HOST_IP, status.hostIP)\n"
		"  --port N        the agent's port (default $TERMLINE_PORT or %u)\n"
		"  --quiet D       traffic-free time required (default 1s)\n"
		"  --timeout D     return by D whatever happens, fallback included (default 20s;\n"
		"                  grace period = this + the app's stop time)\n"
		"  --fallback D    with no agent reachable, sleep D instead (default 5s, at most\n"
		"                  --timeout)\n"
		"Only an answer saying \"drained\": true opens the gate early; a silent agent,\n"
		"an error or an answer that is no verdict is retried until --timeout.\n"
		"Durations: 500ms, 1.5s, 2m, or seconds. Exit: 0 drained, 1 not drained\n"
		"(timeout or fallback), 2 bad usage.\n",
		DEFAULT_PORT);
}

/* Connects with a timeout. Returns fd or -errno. */
static int connect_to(const struct sockaddr_storage *ss, socklen_t len, int timeout_ms)
{
	struct pollfd p;
	int fd, err = 0, r;
	socklen_t el = sizeof(err);

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)ss, len) == 0)
		return fd;
	if (errno != EINPROGRESS) {
		r = -errno;
		close(fd);
		return r;
	}
	p.fd = fd;
	p.events = POLLOUT;
	do
		r = poll(&p, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r == 0) {
		close(fd);
		return -ETIMEDOUT;
	}
	if (r < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	if (err) {
		close(fd);
		return -err;
	}
	return fd;
}

static int write_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len > 0) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int64_t left = deadline - now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
				return -errno;
			continue;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Reads the answer within its bounds (answer.h) and the deadline. 0 when
 * it is complete, or -ETIMEDOUT, -EMSGSIZE, -EPROTO, -errno. */
static int read_answer(int fd, struct tw_reader *rd, int64_t deadline)
{
	tw_reader_init(rd);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
		size_t cap;
		char *dst;
		ssize_t n;
		int r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&p, 1, left > 60000 ? 60000 : (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			continue;
		dst = tw_reader_space(rd, &cap);
		if (cap == 0)
			return -EMSGSIZE;
		n = recv(fd, dst, cap, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		r = n == 0 ? tw_reader_eof(rd) : tw_reader_wrote(rd, (size_t)n);
		if (r < 0)
			return r;
		if (r > 0)
			return 0;
	}
}

/* One request, asking the agent to answer within what is left before the
 * deadline less its margin (*agent_ms). 0 with the answer in rd, or -errno
 * (*reached says whether the TCP connection was made). */
static int ask(const struct opts *o, const struct sockaddr_storage *ss, socklen_t sl,
	       int64_t deadline, struct tw_reader *rd, int64_t *agent_ms, bool *reached)
{
	static unsigned attempt;
	char req[640], host[INET6_ADDRSTRLEN + 2];
	int64_t left = deadline - now_ms(), margin = left / 4;
	int fd, r, len;

	if (margin > ANSWER_MARGIN_MS)
		margin = ANSWER_MARGIN_MS;
	*agent_ms = left - margin;
	if (*agent_ms < 1)
		return -ETIMEDOUT;
	if (ss->ss_family == AF_INET6)
		snprintf(host, sizeof(host), "[%s]", o->host);
	else
		snprintf(host, sizeof(host), "%s", o->host);
	len = snprintf(req, sizeof(req),
		       "GET /v1/pods/%s/drained?quiet=%lldms&timeout=%lldms HTTP/1.1\r\n"
		       "Host: %s:%u\r\nUser-Agent: termline-wait\r\nAccept: application/json\r\n"
		       /* the gate's own request, named in the Pod's timeline
			* when request capture sees it */
		       "X-Request-Id: termline-wait-%s-%d-%u\r\n"
		       "Connection: close\r\n\r\n",
		       o->uid, (long long)o->quiet_ms, (long long)*agent_ms, host, o->port, o->uid,
		       (int)getpid(), ++attempt);
	if (len < 0 || (size_t)len >= sizeof(req))
		return -EINVAL;
	fd = connect_to(ss, sl, left < CONNECT_TIMEOUT_MS ? (int)left : CONNECT_TIMEOUT_MS);
	if (fd < 0)
		return fd;
	*reached = true;
	r = write_all(fd, req, (size_t)len, deadline);
	if (r == 0)
		r = read_answer(fd, rd, deadline);
	close(fd);
	return r;
}

/* Why an answer or an attempt gave no verdict, for the last line. */
static void describe_failure(int r, const struct tw_reader *rd, int vr, char *why, size_t cap)
{
	switch (r) {
	case 0:
		if (rd->status == 429 || rd->status == 503)
			snprintf(why, cap, "kept refusing (%d: %s)", rd->status,
				 rd->status == 429 ? "busy" : "not synced");
		else if (rd->status == 504)
			snprintf(why, cap, "answered 504 before the timeout it was given");
		else if (vr == 0 || vr == -ENOMSG)
			snprintf(why, cap, "answered %d without a drained verdict", rd->status);
		else
			snprintf(why, cap, "answered %d with a body that is no verdict object", rd->status);
		break;
	case -ETIMEDOUT:
		snprintf(why, cap, "did not answer within the timeout");
		break;
	case -EMSGSIZE:
		snprintf(why, cap, "sent an answer past the bounds (%d KiB of header, %d KiB of body)",
			 TW_HEAD_MAX / 1024, TW_BODY_MAX / 1024);
		break;
	case -EPROTO:
		snprintf(why, cap, "sent an answer that is not HTTP/1.1 or was cut off");
		break;
	default:
		snprintf(why, cap, "went away and did not come back (%s)", strerror(-r));
		break;
	}
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "uid", required_argument, NULL, 'u' },
		{ "host", required_argument, NULL, 'H' },
		{ "port", required_argument, NULL, 'p' },
		{ "quiet", required_argument, NULL, 'q' },
		{ "timeout", required_argument, NULL, 't' },
		{ "fallback", required_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env_port = getenv("TERMLINE_PORT");
	int c;

	o->uid = getenv("POD_UID");
	o->host = getenv("HOST_IP");
	o->port = DEFAULT_PORT;
	o->quiet_ms = DEFAULT_QUIET_MS;
	o->timeout_ms = DEFAULT_TIMEOUT_MS;
	o->fallback_ms = DEFAULT_FALLBACK_MS;
	if (env_port && *env_port) {
		char *end;
		unsigned long v = strtoul(env_port, &end, 10);

		if (*end || v == 0 || v > 65535) {
			fprintf(stderr, "termline-wait: TERMLINE_PORT=%s is not a port\n", env_port);
			return 2;
		}
		o->port = (unsigned)v;
	}
	opterr = 0;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'u':
			o->uid = optarg;
			break;
		case 'H':
			o->host = optarg;
			break;
		case 'p': {
			char *end;
			unsigned long v = strtoul(optarg, &end, 10);

			if (!*optarg || *end || v == 0 || v > 65535) {
				fprintf(stderr, "termline-wait: --port %s is not a port\n", optarg);
				return 2;
			}
			o->port = (unsigned)v;
			break;
		}
		case 'q':
		case 't':
		case 'f': {
			int64_t *dst = c == 'q' ? &o->quiet_ms : c == 't' ? &o->timeout_ms : &o->fallback_ms;

			if (parse_duration(optarg, dst) < 0) {
				fprintf(stderr, "termline-wait: %s %s is not a duration (500ms, 1.5s, 2m; at most 1h)\n",
					c == 'q' ? "--quiet" : c == 't' ? "--timeout" : "--fallback", optarg);
				return 2;
			}
			break;
		}
		case 'h':
			usage(stdout);
			return 1;
		default:
			fprintf(stderr, "termline-wait: unknown option %s (see --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "termline-wait: unexpected argument %s (see --help)\n", argv[optind]);
		return 2;
	}
	if (!o->uid || !*o->uid) {
		fprintf(stderr, "termline-wait: no Pod UID: set POD_UID (downward API metadata.uid) or --uid\n");
		return 2;
	}
	if (!uid_ok(o->uid)) {
		fprintf(stderr, "termline-wait: \"%s\" is not a Pod UID\n", o->uid);
		return 2;
	}
	if (!o->host || !*o->host) {
		fprintf(stderr, "termline-wait: no agent address: set HOST_IP (downward API status.hostIP) or --host\n");
		return 2;
	}
	if (o->timeout_ms < 1000) {
		fprintf(stderr, "termline-wait: --timeout must be at least 1s\n");
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct tw_reader rd;
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	struct opts o;
	struct tw_verdict v;
	int64_t start = now_ms(), deadline, backoff = RETRY_FIRST_MS;
	bool reached = false, unknown = false;
	int r, last_err = 0;
	char why[160] = "went away and did not come back";

	r = parse_args(argc, argv, &o);
	if (r)
		return r == 1 ? 0 : r;
	if (inet_pton(AF_INET, o.host, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)o.port);
		sl = sizeof(*a);
	} else if (inet_pton(AF_INET6, o.host, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)o.port);
		sl = sizeof(*a);
	} else {
		fprintf(stderr, "termline-wait: \"%s\" is not an IP address (HOST_IP or --host)\n", o.host);
		return 2;
	}
	deadline = start + o.timeout_ms;
	/* The timeout bounds the fallback too. */
	if (o.fallback_ms > o.timeout_ms)
		o.fallback_ms = o.timeout_ms;

	for (;;) {
		int64_t now = now_ms(), left = deadline - now, agent_ms = 0, sent, wait;
		int vr = -EPROTO;
		double took;

		/* Never reached an agent: wait no less, and no more, than the
		 * plain sleep this gate replaces. */
		if (!reached && now - start >= o.fallback_ms) {
			fprintf(stderr, "termline-wait: %s at %s:%u (%s); slept the fallback %.1fs\n",
				unknown ? "the agent does not know this Pod" : "no agent", o.host, o.port,
				last_err ? strerror(last_err) : unknown ? "404" : "no answer",
				(double)(now - start) / 1000.0);
			return 1;
		}
		if (left <= 0) {
			fprintf(stderr, "termline-wait: not drained after %.1fs: the agent at %s:%u %s\n",
				(double)(now - start) / 1000.0, o.host, o.port, why);
			return 1;
		}
		if (left < 20) {
			sleep_ms(left); /* no time for another request */
			continue;
		}
		sent = now;
		r = ask(&o, &ss, sl, deadline, &rd, &agent_ms, &reached);
		now = now_ms();
		took = (double)(now - start) / 1000.0;
		if (r == 0)
			vr = tw_verdict_parse(rd.body, rd.body_len, o.uid, &v);
		if (r == 0 && rd.status == 200 && vr == 0 && v.drained) {
			fprintf(stderr, "termline-wait: drained after %.1fs (pod %s, quiet %.1fs)%s%s\n", took,
				o.uid, (double)o.quiet_ms / 1000.0, v.summary[0] ? ": " : "", v.summary);
			return 0;
		}
		if (r == 0 && rd.status == 504 && vr == 0 && !v.drained &&
		    now >= sent + agent_ms - EARLY_504_MS) {
			fprintf(stderr, "termline-wait: not drained after %.1fs (timeout), still waiting for %s%s%s\n",
				took, v.unmet[0] ? v.unmet : "?", v.summary[0] ? ": " : "", v.summary);
			return 1;
		}
		if (r == 0 && rd.status == 400 && vr == -ENOMSG) {
			fprintf(stderr, "termline-wait: the agent refused the request%s%s\n",
				v.summary[0] ? ": " : "", v.summary);
			return 2;
		}
		if (r == 0 && rd.status == 404) {
			/* An agent that does not know this Pod (no API access, or a
			 * Pod of another node) cannot judge: serve the fallback. */
			reached = false;
			unknown = true;
			last_err = 0;
		} else if (reached) {
			describe_failure(r, &rd, vr, why, sizeof(why));
		} else {
			last_err = -r;
		}
		/* Retry, within the deadline and the fallback. */
		now = now_ms();
		wait = backoff;
		if (!reached && start + o.fallback_ms - now < wait)
			wait = start + o.fallback_ms - now;
		if (deadline - now < wait)
			wait = deadline - now;
		sleep_ms(wait);
		backoff = backoff * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : backoff * 2;
	}
}
