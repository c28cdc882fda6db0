/* SPDX-License-Identifier: Apache-2.0 */
/* termline-wait: a preStop gate (docs/drain.md). Asks the termline agent on
 * this node (GET /v1/pods/{uid}/drained) to answer once nothing routes new
 * traffic to the Pod any more, and returns then: the app and its sidecar get
 * SIGTERM only after the last request reached them.
 *
 * Static, libc only: it is copied into application containers whose images
 * we know nothing about. No name resolution: HOST_IP is an address.
 *
 * Exit status: 0 drained, 1 not drained (the agent answered 504 at the
 * timeout, the deadline passed while the agent was away, or no agent ever
 * answered and the fallback sleep was served), 2 bad usage. One line on
 * stderr says what it waited for and how long. */
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

#define DEFAULT_PORT 9440
#define DEFAULT_QUIET_MS 1000
#define DEFAULT_TIMEOUT_MS 20000
#define DEFAULT_FALLBACK_MS 5000
#define MAX_DURATION_MS (3600LL * 1000)
#define CONNECT_TIMEOUT_MS 1000
/* The agent answers 504 at the timeout it was given; allow it this much
 * more before calling the connection dead. */
#define ANSWER_MARGIN_MS 3000
#define RETRY_FIRST_MS 200
#define RETRY_MAX_MS 1000
#define RESPONSE_MAX 8192
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
		"  --timeout D     give up after D (default 20s; grace period = this + app stop time)\n"
		"  --fallback D    with no agent reachable, sleep D instead (default 5s)\n"
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

/* Reads until EOF (Connection: close) or the buffer is full. Bytes or -errno. */
static ssize_t read_all(int fd, char *buf, size_t cap, int64_t deadline)
{
	size_t len = 0;

	while (len + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int64_t left = deadline - now_ms();
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
		n = recv(fd, buf + len, cap - 1 - len, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

/* The agent's "summary" string, unescaped enough for one line of stderr. */
static void extract_summary(const char *body, char *out, size_t cap)
{
	const char *p = body ? strstr(body, "\"summary\":\"") : NULL;
	size_t n = 0;

	out[0] = '\0';
	if (!p)
		return;
	for (p += 11; *p && *p != '"' && n + 1 < cap; p++) {
		if (*p == '\\' && p[1])
			p++;
		out[n++] = (*p == '\n' || *p == '\r') ? ' ' : *p;
	}
	out[n] = '\0';
}

struct answer {
	int status;              /* HTTP status, 0 when none */
	char summary[512];
	char unmet[32];
};

/* One request. 0 with ans filled, or -errno when the agent could not be
 * reached (*reached says whether the TCP connection was made). */
static int ask(const struct opts *o, const struct sockaddr_storage *ss, socklen_t sl,
	       int64_t timeout_ms, struct answer *ans, bool *reached)
{
	static unsigned attempt;
	char req[640], host[INET6_ADDRSTRLEN + 2];
	static char resp[RESPONSE_MAX];
	const char *body, *u;
	int64_t deadline = now_ms() + timeout_ms + ANSWER_MARGIN_MS;
	ssize_t n;
	int fd, r, len;

	memset(ans, 0, sizeof(*ans));
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
		       o->uid, (long long)o->quiet_ms, (long long)timeout_ms, host, o->port, o->uid,
		       (int)getpid(), ++attempt);
	if (len < 0 || (size_t)len >= sizeof(req))
		return -EINVAL;
	fd = connect_to(ss, sl, CONNECT_TIMEOUT_MS);
	if (fd < 0)
		return fd;
	*reached = true;
	r = write_all(fd, req, (size_t)len, deadline);
	if (r < 0) {
		close(fd);
		return r;
	}
	n = read_all(fd, resp, sizeof(resp), deadline);
	close(fd);
	if (n < 0)
		return (int)n;
	if (n < 12 || strncmp(resp, "HTTP/1.", 7) != 0 || resp[8] != ' ')
		return -EPROTO; /* cut off: an agent that went away mid-answer */
	ans->status = atoi(resp + 9);
	body = strstr(resp, "\r\n\r\n");
	extract_summary(body, ans->summary, sizeof(ans->summary));
	u = body ? strstr(body, "\"unmet\":\"") : NULL;
	if (u)
		sscanf(u + 9, "%31[a-z]", ans->unmet);
	return 0;
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
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	struct opts o;
	struct answer ans;
	int64_t start = now_ms(), deadline, backoff = RETRY_FIRST_MS;
	bool reached = false, unknown = false;
	int r, last_err = 0, last_status = 0;

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

	for (;;) {
		int64_t now = now_ms(), left = deadline - now;
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
				(double)(now - start) / 1000.0, o.host, o.port,
				last_status ? "kept refusing (busy or not synced)" : "went away and did not come back");
			return 1;
		}
		if (left < 1000)
			left = 1000; /* the agent's smallest timeout; the margin covers it */
		r = ask(&o, &ss, sl, left, &ans, &reached);
		took = (double)(now_ms() - start) / 1000.0;
		if (r == 0 && ans.status == 200) {
			fprintf(stderr, "termline-wait: drained after %.1fs (pod %s, quiet %.1fs)%s%s\n", took,
				o.uid, (double)o.quiet_ms / 1000.0, ans.summary[0] ? ": " : "", ans.summary);
			return 0;
		}
		if (r == 0 && ans.status == 504) {
			fprintf(stderr, "termline-wait: not drained after %.1fs (timeout), still waiting for %s%s%s\n",
				took, ans.unmet[0] ? ans.unmet : "?", ans.summary[0] ? ": " : "", ans.summary);
			return 1;
		}
		if (r == 0 && ans.status == 400) {
			fprintf(stderr, "termline-wait: the agent refused the request%s%s\n",
				ans.summary[0] ? ": " : "", ans.summary);
			return 2;
		}
		if (r == 0 && ans.status == 404) {
			/* An agent that does not know this Pod (no API access, or a
			 * Pod of another node) cannot judge: serve the fallback. */
			reached = false;
			unknown = true;
			last_err = 0;
		} else if (r == 0) {
			last_status = ans.status; /* 429 past the cap, 503 not synced: retry */
		} else {
			last_err = -r;
			last_status = 0;
		}
		now = now_ms();
		{
			int64_t wait = backoff;

			if (!reached && start + o.fallback_ms - now < wait)
				wait = start + o.fallback_ms - now;
			if (deadline - now < wait)
				wait = deadline - now;
			sleep_ms(wait);
		}
		backoff = backoff * 2 > RETRY_MAX_MS ? RETRY_MAX_MS : backoff * 2;
	}
}
