/* SPDX-License-Identifier: Apache-2.0 */
/* termlined's flags and config file: the values a user gets and the one-line
 * errors a user reads. */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <openssl/evp.h>

#include "options.h"
#include "termline-config.h"
#include "../check-run.h"

#define ARGV(...) ((const char *const[]){"termlined", __VA_ARGS__, NULL})
#define ARGV0 ((const char *const[]){"termlined", NULL})
/* Same layout as the BPF filter (TL_SIG_BIT in bpf/include/termline-events.h): bit signo - 1. */
#define SIGBIT(s) (UINT64_C(1) << ((s) - 1))

static char tmpdir[256];
static char err[512];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/termline-config-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	setenv("NODE_NAME", "node-a", 1);
	memset(err, 0, sizeof(err));
}

static void teardown(void)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

/* Writes content to tmpdir/name and returns the path (static storage,
 * one per name slot). */
static const char *write_file(const char *name, const char *content)
{
	static char paths[4][300];
	static int slot;
	char *path = paths[slot++ % 4];
	FILE *f;

	snprintf(path, 300, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fwrite(content, 1, strlen(content), f), strlen(content));
	ck_assert_int_eq(fclose(f), 0);
	return path;
}

static int parse(struct tl_options *o, const char *const *args)
{
	int argc = 0;

	while (args[argc])
		argc++;
	return tl_options_parse(o, argc, (char **)args, err, sizeof(err));
}

static int parse_file(struct tl_options *o, const char *content)
{
	const char *path = write_file("config.yaml", content);

	return parse(o, ARGV("--config", path));
}

/* A failed parse must leave the caller's struct exactly as it was. */
static void expect_fail(const char *const *args)
{
	struct tl_options o, before;

	memset(&o, 0x5a, sizeof(o));
	before = o;
	ck_assert_int_eq(parse(&o, args), -EINVAL);
	ck_assert_mem_eq(&o, &before, sizeof(o));
	ck_assert_ptr_null(strchr(err, '\n'));
}

START_TEST(test_defaults)
{
	struct tl_options o = {0};

	ck_assert_int_eq(parse(&o, ARGV0), 0);
	ck_assert_str_eq(err, "");
	ck_assert_ptr_null(o.config_path);
	ck_assert_ptr_null(o.kubeconfig);
	ck_assert_str_eq(o.node, "node-a");
	ck_assert_str_eq(o.state_dir, "/var/lib/termline");
	ck_assert_str_eq(o.listen, "0.0.0.0:9440");
	ck_assert_ptr_null(o.cgroup_root);
	ck_assert_str_eq(o.pod_logs_dir, "/var/log/pods");
	ck_assert_int_eq(o.n_request_id_headers, 1);
	ck_assert_str_eq(o.request_id_headers[0], "x-request-id");
	ck_assert_int_eq(o.log_level, TL_LOG_INFO);
	ck_assert_uint_eq(o.linger_s, 30);
	ck_assert(!o.no_api);
	ck_assert_ptr_null(o.emit_events);
	ck_assert_uint_eq(o.ringbuf_kib, 4096);
	ck_assert_uint_eq(o.signal_mask, SIGBIT(SIGTERM) | SIGBIT(SIGKILL) | SIGBIT(SIGINT) |
					     SIGBIT(SIGQUIT) | SIGBIT(SIGHUP) | SIGBIT(SIGUSR1) |
					     SIGBIT(SIGUSR2));
	ck_assert_uint_eq(o.max_events_per_timeline, 20000);
	ck_assert_uint_eq(o.retention_bytes, 256ULL * 1024 * 1024);
	ck_assert_uint_eq(o.retention_hours, 168);
	ck_assert_uint_eq(o.journal_fsync_ms, 200);
	tl_options_free(&o);
}
END_TEST

START_TEST(test_all_flags)
{
	struct tl_options o = {0};

	ck_assert_int_eq(
	    parse(&o,
		  ARGV("--kubeconfig", "/k/config", "--node", "ip-10-0-0-1.ec2.internal",
		       "--state-dir", "/s", "--listen=[::1]:9441", "--cgroup-root",
		       "/sys/fs/cgroup/unified", "--pod-logs-dir", "/logs", "--request-id-header",
		       "X-Trace-Id", "--log-level", "debug", "--linger", "0", "--no-api",
		       "--emit-events", "-", "--ring-buffer-kib", "64", "--signals",
		       "SIGTERM,kill usr1", "--max-events-per-timeline", "5", "--retention-bytes",
		       "1Gi", "--retention-hours", "1", "--journal-fsync-ms", "0")),
	    0);
	ck_assert_str_eq(o.kubeconfig, "/k/config");
	ck_assert_str_eq(o.node, "ip-10-0-0-1.ec2.internal");
	ck_assert_str_eq(o.state_dir, "/s");
	ck_assert_str_eq(o.listen, "[::1]:9441");
	ck_assert_str_eq(o.cgroup_root, "/sys/fs/cgroup/unified");
	ck_assert_str_eq(o.pod_logs_dir, "/logs");
	ck_assert_int_eq(o.n_request_id_headers, 1);
	ck_assert_str_eq(o.request_id_headers[0], "x-trace-id");
	ck_assert_int_eq(o.log_level, TL_LOG_DEBUG);
	ck_assert_uint_eq(o.linger_s, 0);
	ck_assert(o.no_api);
	ck_assert_str_eq(o.emit_events, "-");
	ck_assert_uint_eq(o.ringbuf_kib, 64);
	ck_assert_uint_eq(o.signal_mask, SIGBIT(SIGTERM) | SIGBIT(SIGKILL) | SIGBIT(SIGUSR1));
	ck_assert_uint_eq(o.max_events_per_timeline, 5);
	ck_assert_uint_eq(o.retention_bytes, 1ULL << 30);
	ck_assert_uint_eq(o.retention_hours, 1);
	ck_assert_uint_eq(o.journal_fsync_ms, 0);
	tl_options_free(&o);
}
END_TEST

static const char full_config[] = "# termlined configuration\n"
				  "kubeconfig: /etc/kubernetes/kubelet.conf\n"
				  "node: worker-1\n"
				  "state-dir: /data/termline\n"
				  "listen: 127.0.0.1:9550\n"
				  "cgroup-root: /sys/fs/cgroup\n"
				  "pod-logs-dir: /var/log/pods2\n"
				  "request-id-header:\n"
				  "  - X-Request-Id\n"
				  "  - x-b3-traceid\n"
				  "log-level: warn\n"
				  "linger: 45\n"
				  "no-api: true\n"
				  "emit-events: /tmp/events.jsonl\n"
				  "ring-buffer-kib: 8192\n"
				  "signals: [SIGTERM, SIGKILL, TERM]\n"
				  "max-events-per-timeline: 1000\n"
				  "retention-bytes: 536870912\n"
				  "retention-hours: 24\n"
				  "journal-fsync-ms: 1000\n";

START_TEST(test_file_all_keys)
{
	struct tl_options o = {0};

	ck_assert_int_eq(parse_file(&o, full_config), 0);
	ck_assert_str_eq(err, "");
	ck_assert_str_eq(o.kubeconfig, "/etc/kubernetes/kubelet.conf");
	ck_assert_str_eq(o.node, "worker-1");
	ck_assert_str_eq(o.state_dir, "/data/termline");
	ck_assert_str_eq(o.listen, "127.0.0.1:9550");
	ck_assert_str_eq(o.cgroup_root, "/sys/fs/cgroup");
	ck_assert_str_eq(o.pod_logs_dir, "/var/log/pods2");
	ck_assert_int_eq(o.n_request_id_headers, 2);
	ck_assert_str_eq(o.request_id_headers[0], "x-request-id");
	ck_assert_str_eq(o.request_id_headers[1], "x-b3-traceid");
	ck_assert_int_eq(o.log_level, TL_LOG_WARN);
	ck_assert_uint_eq(o.linger_s, 45);
	ck_assert(o.no_api);
	ck_assert_str_eq(o.emit_events, "/tmp/events.jsonl");
	ck_assert_uint_eq(o.ringbuf_kib, 8192);
	ck_assert_uint_eq(o.signal_mask, SIGBIT(SIGTERM) | SIGBIT(SIGKILL));
	ck_assert_uint_eq(o.max_events_per_timeline, 1000);
	ck_assert_uint_eq(o.retention_bytes, 512ULL << 20);
	ck_assert_uint_eq(o.retention_hours, 24);
	ck_assert_uint_eq(o.journal_fsync_ms, 1000);
	ck_assert_ptr_nonnull(strstr(o.config_path, "config.yaml"));
	tl_options_free(&o);
}
END_TEST

START_TEST(test_file_scalars_and_nulls)
{
	struct tl_options o = {0};

	/* A single header as a string, quoted numbers, an empty document
	 * marker and comments are all ordinary YAML a user may write. */
	ck_assert_int_eq(parse_file(&o, "---\n# c\nrequest-id-header: X-Amzn-Trace-Id # tail\n"
					"linger: \"12\"\nno-api: False\nsignals: usr2\n...\n"),
			 0);
	ck_assert_int_eq(o.n_request_id_headers, 1);
	ck_assert_str_eq(o.request_id_headers[0], "x-amzn-trace-id");
	ck_assert_uint_eq(o.linger_s, 12);
	ck_assert(!o.no_api);
	ck_assert_uint_eq(o.signal_mask, SIGBIT(SIGUSR2));
	tl_options_free(&o);

	/* An empty file or a null document sets nothing. */
	ck_assert_int_eq(parse_file(&o, ""), 0);
	ck_assert_uint_eq(o.linger_s, 30);
	tl_options_free(&o);
	ck_assert_int_eq(parse_file(&o, "# only a comment\n~\n"), 0);
	ck_assert_str_eq(o.state_dir, "/var/lib/termline");
	tl_options_free(&o);
}
END_TEST

/* The flag wins wherever --config stands among the flags. */
static const char *const order_cases[][8] = {
    {"termlined", "--linger", "7", "--request-id-header", "x-cli", "--config", NULL, NULL},
    {"termlined", "--config", NULL, "--linger", "7", "--request-id-header", "x-cli", NULL},
    {"termlined", "--request-id-header", "x-cli", "--config", NULL, "--linger=7", NULL, NULL},
};

START_TEST(test_flag_beats_file)
{
	struct tl_options o = {0};
	const char *path =
	    write_file("c.yaml", "linger: 99\nstate-dir: /from-file\n"
				 "request-id-header: [x-file-a, x-file-b]\nsignals: [HUP]\n");
	const char *args[8];

	memcpy(args, order_cases[_i], sizeof(args));
	for (int i = 0; i < 8; i++)
		if (i > 0 && args[i - 1] && strcmp(args[i - 1], "--config") == 0 && !args[i])
			args[i] = path;
	ck_assert_int_eq(parse(&o, args), 0);
	ck_assert_uint_eq(o.linger_s, 7);
	ck_assert_str_eq(o.state_dir, "/from-file");
	ck_assert_int_eq(o.n_request_id_headers, 1);
	ck_assert_str_eq(o.request_id_headers[0], "x-cli");
	ck_assert_uint_eq(o.signal_mask, SIGBIT(SIGHUP));
	tl_options_free(&o);
}
END_TEST

START_TEST(test_overridden_file_key_still_validated)
{
	const char *path = write_file("c.yaml", "linger: soon\n");

	char expect[600];

	expect_fail(ARGV("--linger", "5", "--config", path));
	snprintf(expect, sizeof(expect), "config %s:1: linger: 'soon' is not a number of seconds",
		 path);
	ck_assert_str_eq(err, expect);
}
END_TEST

START_TEST(test_repeated_headers)
{
	struct tl_options o = {0};

	ck_assert_int_eq(parse(&o, ARGV("--request-id-header", "X-A", "--request-id-header", "x-b",
					"--request-id-header", "X-a")),
			 0);
	ck_assert_int_eq(o.n_request_id_headers, 2);
	ck_assert_str_eq(o.request_id_headers[0], "x-a");
	ck_assert_str_eq(o.request_id_headers[1], "x-b");
	tl_options_free(&o);
}
END_TEST

/* --access-log-format is a list: given twice, both stay, in order (the
 * first format that reads a line wins), a repeat once; the file's list is
 * replaced by the flags. Kuma's HTTP and TCP formats (as
 * tests/capture/corpus/access-real/lines.json has them). */
#define KUMA_HTTP "[%START_TIME%] %KUMA_MESH% \"%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%\" " \
		  "%RESPONSE_CODE% %RESPONSE_FLAGS% %BYTES_RECEIVED% %BYTES_SENT% %DURATION%"
#define KUMA_TCP "[%START_TIME%] %RESPONSE_FLAGS% %KUMA_MESH% took %DURATION%ms"

START_TEST(test_repeated_formats)
{
	struct tl_options o = {0};
	char content[512];

	ck_assert_int_eq(parse(&o, ARGV("--access-log-format", KUMA_HTTP, "--access-log-format", KUMA_TCP,
					"--access-log-format", KUMA_HTTP)),
			 0);
	ck_assert_int_eq(o.n_access_log_formats, 2);
	ck_assert_str_eq(o.access_log_formats[0], KUMA_HTTP);
	ck_assert_str_eq(o.access_log_formats[1], KUMA_TCP);
	tl_options_free(&o);
	ck_assert_int_eq(o.n_access_log_formats, 0);

	/* A config key too: a list, or one format. */
	snprintf(content, sizeof(content), "access-log-format:\n  - '%s'\n  - '{\"code\": \"%%RESPONSE_CODE%%\"}'\n",
		 KUMA_HTTP);
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(parse_file(&o, content), 0);
	ck_assert_int_eq(o.n_access_log_formats, 2);
	ck_assert_str_eq(o.access_log_formats[0], KUMA_HTTP);
	ck_assert_str_eq(o.access_log_formats[1], "{\"code\": \"%RESPONSE_CODE%\"}");
	tl_options_free(&o);
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(parse_file(&o, "access-log-format: '" KUMA_TCP "'\n"), 0);
	ck_assert_int_eq(o.n_access_log_formats, 1);
	ck_assert_str_eq(o.access_log_formats[0], KUMA_TCP);
	tl_options_free(&o);

	/* The flags replace the file's list. */
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(parse(&o, ARGV("--config", write_file("f.yaml", content), "--access-log-format",
					KUMA_TCP)),
			 0);
	ck_assert_int_eq(o.n_access_log_formats, 1);
	ck_assert_str_eq(o.access_log_formats[0], KUMA_TCP);
	tl_options_free(&o);

	/* Nothing given: none (formats recognised by shape). */
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(parse(&o, ARGV0), 0);
	ck_assert_int_eq(o.n_access_log_formats, 0);
	tl_options_free(&o);
}
END_TEST

/* A bad format among good ones: one line naming it; nothing kept. */
START_TEST(test_bad_format_among_good)
{
	expect_fail(ARGV("--access-log-format", KUMA_HTTP, "--access-log-format", "RESPONSE_CODE only"));
	ck_assert_str_eq(err, "termlined: --access-log-format: 'RESPONSE_CODE only' has no command operator "
			      "(e.g. %RESPONSE_CODE%)");
}
END_TEST

START_TEST(test_too_many_headers)
{
	const char *args[2 * TL_MAX_HEADERS + 4] = {"termlined"};
	char names[TL_MAX_HEADERS + 1][16];
	int n = 1;

	for (int i = 0; i <= TL_MAX_HEADERS; i++) {
		snprintf(names[i], sizeof(names[i]), "x-h%d", i);
		args[n++] = "--request-id-header";
		args[n++] = names[i];
	}
	expect_fail(args);
	ck_assert_str_eq(err, "termlined: --request-id-header: more than 16 header names");
}
END_TEST

struct bad_value {
	const char *key;
	const char *value;
	const char *why; /* what follows "KEY: " */
};

static const struct bad_value bad_values[] = {
    {"linger", "abc", "'abc' is not a number of seconds"},
    {"linger", "-1", "'-1' is not a number of seconds"},
    {"linger", "1.5", "'1.5' is not a number of seconds"},
    {"linger", "86401", "'86401' is out of range (0..86400 seconds)"},
    {"linger", "99999999999999999999999",
     "'99999999999999999999999' is out of range (0..86400 seconds)"},
    {"ring-buffer-kib", "3000", "'3000' is not a power of two"},
    {"ring-buffer-kib", "32", "'32' is out of range (64..1048576 KiB)"},
    {"max-events-per-timeline", "0", "'0' is out of range (1..10000000 events)"},
    {"retention-hours", "0", "'0' is out of range (1..87600 hours)"},
    {"journal-fsync-ms", "60001", "'60001' is out of range (0..60000 milliseconds)"},
    {"retention-bytes", "1000", "'1000' is out of range (1Mi..1024Ti)"},
    {"retention-bytes", "10 MiB", "'10 MiB' is not a size in bytes (e.g. 268435456 or 256Mi)"},
    {"retention-bytes", "2Pi", "'2Pi' is not a size in bytes (e.g. 268435456 or 256Mi)"},
    {"log-level", "verbose", "'verbose' is not a log level (debug, info, warn or error)"},
    {"log-level", "INFO", "'INFO' is not a log level (debug, info, warn or error)"},
    {"http-capture", "sometimes", "'sometimes' is not a capture mode (windows, always or off)"},
    {"http-prefix-bytes", "8192", "'8192' is out of range (64..4096 bytes)"},
    {"access-log-container", "istio.proxy",
     "'istio.proxy' is not a container name (lower-case DNS label)"},
    {"access-log-container", "Envoy", "'Envoy' is not a container name (lower-case DNS label)"},
    {"access-log-format", "", "'' is not an access-log format (1 to 8192 bytes)"},
    {"access-log-format", "[START_TIME] RESPONSE_CODE",
     "'[START_TIME] RESPONSE_CODE' has no command operator (e.g. %RESPONSE_CODE%)"},
    {"listen", "::1:9440", "'::1:9440' needs brackets around an IPv6 address (e.g. [::1]:9440)"},
    {"listen", "0.0.0.0", "'0.0.0.0' is not ADDR:PORT (e.g. 0.0.0.0:9440)"},
    {"listen", "localhost:9440",
     "'localhost:9440' does not hold an IPv4 address (e.g. 0.0.0.0:9440)"},
    {"listen", "1.2.3.4:65536", "'1.2.3.4:65536' does not end in a port 0..65535"},
    {"listen", "1.2.3.4:", "'1.2.3.4:' does not end in a port 0..65535"},
    {"listen", "[::1]9440", "'[::1]9440' is not [IPv6]:PORT"},
    {"listen", "[::g]:9440", "'[::g]:9440' does not hold an IPv6 address"},
    {"node", "Node_1", "'Node_1' is not a node name (lower-case DNS subdomain)"},
    {"node", "-a", "'-a' is not a node name (lower-case DNS subdomain)"},
    {"node", "a..b", "'a..b' is not a node name (lower-case DNS subdomain)"},
    {"request-id-header", "x request",
     "'x request' is not a header name (letters, digits and !#$%&'*+-.^_`|~)"},
    {"request-id-header", "x:id",
     "'x:id' is not a header name (letters, digits and !#$%&'*+-.^_`|~)"},
    {"signals", "SIGFOO", "'SIGFOO' is not a signal name (e.g. SIGTERM or TERM)"},
    {"signals", "TERM,9", "'9' is not a signal name (e.g. SIGTERM or TERM)"},
    {"pod-logs-dir", "", "'' is empty"},
    {"no-api", "yes", "'yes' is not a boolean (true or false)"},
};

/* The same bad value, in a file (line 3) and as a flag. */
START_TEST(test_bad_value_in_file)
{
	const struct bad_value *b = &bad_values[_i];
	char content[256], expect[600];
	const char *path;

	/* Quoted, so that YAML hands the text over as it is; the plain form
	 * of the same values is covered by the documents below. */
	snprintf(content, sizeof(content), "# c\nstate-dir: /x\n%s: \"%s\"\n", b->key, b->value);
	path = write_file("bad.yaml", content);
	expect_fail(ARGV("--config", path));
	snprintf(expect, sizeof(expect), "config %s:3: %s: %s", path, b->key, b->why);
	ck_assert_str_eq(err, expect);
}
END_TEST

START_TEST(test_bad_value_as_flag)
{
	const struct bad_value *b = &bad_values[_i];
	char flag[64], expect[600];
	snprintf(flag, sizeof(flag), "--%s", b->key);
	if (strcmp(b->key, "no-api") == 0) {
		/* A bare flag: the value is left over as an operand. */
		expect_fail(ARGV(flag, b->value));
		snprintf(expect, sizeof(expect), "termlined: unexpected argument '%s' (see --help)",
			 b->value);
		ck_assert_str_eq(err, expect);
		return;
	}
	expect_fail(ARGV(flag, b->value));
	snprintf(expect, sizeof(expect), "termlined: --%s: %s", b->key, b->why);
	ck_assert_str_eq(err, expect);
}
END_TEST

static const char *const good_listen[] = {
    "0.0.0.0:9440", "[::1]:9440", "[::]:80", "127.0.0.1:0", "off", "",
};

START_TEST(test_good_listen)
{
	struct tl_options o = {0};

	ck_assert_int_eq(parse(&o, ARGV("--listen", good_listen[_i])), 0);
	ck_assert_str_eq(o.listen, good_listen[_i]);
	tl_options_free(&o);
}
END_TEST

START_TEST(test_range_edges)
{
	struct tl_options o = {0};

	ck_assert_int_eq(
	    parse(&o, ARGV("--linger", "86400", "--ring-buffer-kib", "1048576", "--retention-bytes",
			   "1Mi", "--journal-fsync-ms", "60000", "--retention-hours", "87600",
			   "--max-events-per-timeline", "10000000")),
	    0);
	ck_assert_uint_eq(o.linger_s, 86400);
	ck_assert_uint_eq(o.ringbuf_kib, 1048576);
	ck_assert_uint_eq(o.retention_bytes, 1048576);
	ck_assert_uint_eq(o.journal_fsync_ms, 60000);
	ck_assert_uint_eq(o.retention_hours, 87600);
	ck_assert_uint_eq(o.max_events_per_timeline, 10000000);
	tl_options_free(&o);
}
END_TEST

/* The bounds on timelines that never close (docs/hostile-peers.md): their
 * defaults, as flags and as config keys, and their ranges. */
START_TEST(test_timeline_close_options)
{
	struct tl_options o = {0};

	ck_assert_int_eq(parse(&o, ARGV0), 0);
	ck_assert_uint_eq(o.max_open_timelines, 1024);
	ck_assert_uint_eq(o.timeline_idle_close_s, 900);
	tl_options_free(&o);
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(parse(&o, ARGV("--max-open-timelines", "64", "--timeline-idle-close", "0")), 0);
	ck_assert_uint_eq(o.max_open_timelines, 64);
	ck_assert_uint_eq(o.timeline_idle_close_s, 0);
	tl_options_free(&o);
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(parse_file(&o, "max-open-timelines: 2048\ntimeline-idle-close: 3600\n"), 0);
	ck_assert_str_eq(err, "");
	ck_assert_uint_eq(o.max_open_timelines, 2048);
	ck_assert_uint_eq(o.timeline_idle_close_s, 3600);
	tl_options_free(&o);
	expect_fail(ARGV("--max-open-timelines", "0"));
	ck_assert_ptr_nonnull(strstr(err, "'0' is out of range (1..1000000 timelines)"));
	expect_fail(ARGV("--timeline-idle-close", "604801"));
	ck_assert_ptr_nonnull(strstr(err, "'604801' is out of range (0..604800 seconds)"));
}
END_TEST

START_TEST(test_unknown_key_line)
{
	const char *path =
	    write_file("u.yaml", "# termlined\n\nstate-dir: /x\nlinger: 5\n"
				 "log-level: info\n# linger in seconds\nlinger_s: 10\n");
	char expect[600];

	expect_fail(ARGV("--config", path));
	snprintf(expect, sizeof(expect),
		 "config %s:7: unknown key 'linger_s' (did you mean 'linger'?)", path);
	ck_assert_str_eq(err, expect);

	path = write_file("u2.yaml", "state-dir: /x\ncolour: blue\n");
	expect_fail(ARGV("--config", path));
	snprintf(expect, sizeof(expect), "config %s:2: unknown key 'colour'", path);
	ck_assert_str_eq(err, expect);
}
END_TEST

START_TEST(test_missing_file)
{
	char path[300], expect[600];

	snprintf(path, sizeof(path), "%s/absent.yaml", tmpdir);
	expect_fail(ARGV("--config", path));
	snprintf(expect, sizeof(expect), "config %s: cannot read: No such file or directory", path);
	ck_assert_str_eq(err, expect);

	expect_fail(ARGV("--config", tmpdir));
	snprintf(expect, sizeof(expect), "config %s: cannot read: Is a directory", tmpdir);
	ck_assert_str_eq(err, expect);
}
END_TEST

START_TEST(test_file_too_big)
{
	char *big = malloc(70000);
	const char *path;
	char expect[600];

	ck_assert_ptr_nonnull(big);
	memset(big, '#', 69999);
	big[69999] = '\0';
	path = write_file("big.yaml", big);
	free(big);
	expect_fail(ARGV("--config", path));
	snprintf(expect, sizeof(expect), "config %s: larger than 64 KiB", path);
	ck_assert_str_eq(err, expect);
}
END_TEST

struct bad_doc {
	const char *content;
	unsigned line;
	const char *why; /* what follows "config FILE:LINE: " */
};

static const struct bad_doc bad_docs[] = {
    {"linger: 1\nstate-dir: /x\n  bad: indent\n", 3,
     "malformed YAML: mapping values are not allowed in this context"},
    {"linger: 1\n\nlisten: \"0.0.0.0:1\n", 4,
     "malformed YAML: found unexpected end of stream while scanning a quoted scalar started on "
     "line 3"},
    {"linger: 1\n\tstate-dir: /x\n", 2, NULL},
    {"linger: 1\nsignals: [TERM, KILL\n", 3,
     "malformed YAML: did not find expected ',' or ']' while parsing a flow sequence started on "
     "line 2"},
    {"- linger\n", 1, "the top level must be a mapping of settings"},
    {"just text\n", 1, "the top level must be a mapping of settings"},
    {"linger: 1\n---\nlinger: 2\n", 2, "only one YAML document is allowed"},
    {"linger: 1\nlinger: 2\n", 2, "linger: appears twice"},
    {"a: &x 5\n", 1, "unknown key 'a'"},
    {"linger: *x\n", 1, NULL},
    {"state-dir: /x\nlinger:\n  value: 5\n", 2,
     "linger: expected a single value, not a list or mapping"},
    {"linger: [1, 2]\n", 1, "linger: expected a single value, not a list or mapping"},
    {"request-id-header: []\n", 1, "request-id-header: the list is empty"},
    {"request-id-header: [[x]]\n", 1, "request-id-header: expected a single value"},
    {"signals: {TERM: 1}\n", 1, "signals: expected a name or a list of names"},
    {"kubeconfig:\n", 1, "kubeconfig: has no value"},
    {"linger: ~\n", 1, "linger: has no value"},
    {"config: /etc/other.yaml\n", 1, "config: cannot be set inside a config file"},
    {"help: true\n", 1, "unknown key 'help'"},
    {"? [a]\n: b\n", 1, "keys must be setting names"},
    {"state-dir: /x\nlinger: \"1\\0\"\n", 2, "linger: contains a NUL byte"},
    {"signals:\n  - TERM\n  - SIGNOPE\n", 3,
     "signals: 'SIGNOPE' is not a signal name (e.g. SIGTERM or TERM)"},
};

START_TEST(test_bad_document)
{
	const struct bad_doc *b = &bad_docs[_i];
	const char *path = write_file("doc.yaml", b->content);
	char expect[600];

	expect_fail(ARGV("--config", path));
	snprintf(expect, sizeof(expect), "config %s:%u: %s", path, b->line, b->why ? b->why : "");
	if (b->why)
		ck_assert_str_eq(err, expect);
	else
		ck_assert_msg(strncmp(err, expect, strlen(expect)) == 0,
			      "'%s' does not start with '%s'", err, expect);
}
END_TEST

struct bad_cli {
	const char *const *args;
	const char *err;
};

START_TEST(test_bad_command_line)
{
	const struct bad_cli cases[] = {
	    {ARGV("--bogus"), "termlined: unknown option '--bogus' (see --help)"},
	    {ARGV("-x"), "termlined: unknown option '-x' (see --help)"},
	    {ARGV("--linger"), "termlined: --linger needs a value"},
	    {ARGV("--no-api=1"), "termlined: --no-api takes no value"},
	    {ARGV("--no-api", "extra"), "termlined: unexpected argument 'extra' (see --help)"},
	    {ARGV("--config", ""), "termlined: --config: the file name is empty"},
	    {ARGV("--emit-events", ""), "termlined: --emit-events: '' is empty"},
	    {ARGV("--signals", ",,"), "termlined: --signals: ',,' is not a list of signal names"},
	    {ARGV("--log-level", "loud\nsecond line"),
	     "termlined: --log-level: 'loud?second line' is not a log level (debug, info, warn or "
	     "error)"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		expect_fail(cases[i].args);
		ck_assert_str_eq(err, cases[i].err);
	}
}
END_TEST

static char *capture_stdout(int (*fn)(struct tl_options *, const char *const *),
			    struct tl_options *o, const char *const *args, int *ret)
{
	char path[300];
	static char buf[16384];
	int saved, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stdout", tmpdir);
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_ge(dup2(fd, STDOUT_FILENO), 0);
	*ret = fn(o, args);
	fflush(stdout);
	ck_assert_int_ge(dup2(saved, STDOUT_FILENO), 0);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	return buf;
}

START_TEST(test_help)
{
	static const char *const flags[] = {
	    "--config FILE",
	    "--kubeconfig FILE",
	    "--node NAME",
	    "--state-dir DIR",
	    "--listen ADDR:PORT",
	    "--cgroup-root DIR",
	    "--pod-logs-dir DIR",
	    "--request-id-header NAME",
	    "--log-level",
	    "--linger SECONDS",
	    "--no-api",
	    "--emit-events FILE|-",
	    "--version",
	    "--help",
	    "--ring-buffer-kib",
	    "--signals",
	    "--max-events-per-timeline",
	    "--retention-bytes",
	    "--retention-hours",
	    "--journal-fsync-ms",
	    "--otlp-endpoint URL",
	    "--otlp-protocol",
	    "--otlp-headers",
	    "--otlp-logs",
	};
	static const char *const defaults[] = {
	    "default: $NODE_NAME",
	    "default: /var/lib/termline",
	    "default: 0.0.0.0:9440",
	    "default: /var/log/pods",
	    "default: x-request-id",
	    "default: info",
	    "default: 30\n",
	    "default: 4096\n",
	    "default: TERM,KILL,INT,QUIT,HUP,USR1,USR2",
	    "default: 20000\n",
	    "default: 256Mi",
	    "default: 168\n",
	    "default: 200\n",
	    "debug, info, warn or error",
	};
	struct tl_options o, before;
	const char *out;
	int r;

	memset(&o, 0x5a, sizeof(o));
	before = o;
	/* --help wins even over a broken flag after it. */
	out = capture_stdout(parse, &o, ARGV("--no-api", "--help", "--linger", "x"), &r);
	ck_assert_int_eq(r, 1);
	ck_assert_mem_eq(&o, &before, sizeof(o));
	ck_assert_str_eq(err, "");
	ck_assert(strncmp(out, "Usage: termlined ", 17) == 0);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
		ck_assert_msg(strstr(out, flags[i]), "help lacks %s", flags[i]);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		ck_assert_msg(strstr(out, defaults[i]), "help lacks '%s'", defaults[i]);
	for (const char *line = out; *line;) {
		const char *nl = strchr(line, '\n');

		ck_assert_ptr_nonnull(nl);
		ck_assert_msg(nl - line <= 100, "help line too long: %.*s", (int)(nl - line), line);
		line = nl + 1;
	}
}
END_TEST

START_TEST(test_version)
{
	struct tl_options o = {0};
	const char *out;
	int r;

	out = capture_stdout(parse, &o, ARGV("--version"), &r);
	ck_assert_int_eq(r, 1);
	ck_assert_str_eq(out, "termlined " TERMLINE_VERSION "\n");
	ck_assert_ptr_null(o.state_dir);
}
END_TEST

static void sha256_hex(const char *text, char out[72])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;

	ck_assert(EVP_Digest(text, strlen(text), md, &n, EVP_sha256(), NULL));
	ck_assert_uint_eq(n, 32);
	strcpy(out, "sha256:");
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 7 + 2 * i, "%02x", md[i]);
}

START_TEST(test_digest)
{
	struct tl_options a = {0}, b = {0}, c = {0}, d = {0};
	char *text = NULL;
	char expect[72];

	ck_assert_int_eq(
	    parse_file(&a, "linger: 7\nrequest-id-header: [x-a, x-b]\nsignals: [TERM]\n"), 0);
	setenv("NODE_NAME", "node-b", 1);
	ck_assert_int_eq(parse(&b, ARGV("--request-id-header", "X-A", "--linger", "7",
					"--request-id-header", "x-b", "--signals", "SIGTERM")),
			 0);
	ck_assert_int_eq(parse(&c, ARGV("--linger", "8")), 0);
	ck_assert_int_eq(parse(&d, ARGV0), 0);

	ck_assert_uint_eq(strlen(a.config_digest), 7 + 64);
	ck_assert(strncmp(a.config_digest, "sha256:", 7) == 0);
	/* The same settings from a file or from flags, on another node. */
	ck_assert_str_eq(a.config_digest, b.config_digest);
	ck_assert_str_ne(a.config_digest, c.config_digest);
	ck_assert_str_ne(c.config_digest, d.config_digest);

	ck_assert_int_eq(tl_options_render(&c, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "\nlinger=8\n"));
	ck_assert_ptr_null(strstr(text, "node"));
	sha256_hex(text, expect);
	ck_assert_str_eq(c.config_digest, expect);
	free(text);
	tl_options_free(&a);
	tl_options_free(&b);
	tl_options_free(&c);
	tl_options_free(&d);
}
END_TEST

START_TEST(test_render_escapes)
{
	struct tl_options o = {0};
	char *text = NULL;
	int lines = 0;

	ck_assert_int_eq(parse(&o, ARGV("--state-dir", "/a\nlinger=1")), 0);
	ck_assert_int_eq(tl_options_render(&o, &text), 0);
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	/* one line per setting but --config and --node: 33 with
	 * --access-log-format, --metrics-max-workloads, --max-open-timelines
	 * and --timeline-idle-close */
	ck_assert_int_eq(lines, 33);
	ck_assert_ptr_nonnull(strstr(text, "state-dir=/a\\x0alinger=1\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nmax-open-timelines=1024\n"));
	ck_assert_ptr_nonnull(strstr(text, "\ntimeline-idle-close=900\n"));
	/* their defaults: no format of the operator's, 500 workloads */
	ck_assert_ptr_nonnull(strstr(text, "\naccess-log-format=\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nmetrics-max-workloads=500\n"));
	free(text);
	tl_options_free(&o);

	/* the formats on one line, each escaped, joined by a bar; still 33 lines */
	lines = 0;
	ck_assert_int_eq(parse(&o, ARGV("--access-log-format", "%RESPONSE_CODE%\nlinger=1",
					"--access-log-format", "%REQ(X-REQUEST-ID)% %DURATION%",
					"--metrics-max-workloads", "7")),
			 0);
	ck_assert_int_eq(tl_options_render(&o, &text), 0);
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	ck_assert_int_eq(lines, 33);
	ck_assert_ptr_nonnull(strstr(
	    text, "\naccess-log-format=%RESPONSE_CODE%\\x0alinger=1|%REQ(X-REQUEST-ID)% %DURATION%\n"));
	ck_assert_ptr_nonnull(strstr(text, "\nmetrics-max-workloads=7\n"));
	ck_assert_ptr_null(strstr(text, "\nlinger=1\n"));
	free(text);
	tl_options_free(&o);

	/* one format with a bar in it is not the two formats around it */
	ck_assert_int_eq(parse(&o, ARGV("--access-log-format", "%PROTOCOL%|%RESPONSE_CODE%")), 0);
	ck_assert_int_eq(tl_options_render(&o, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "\naccess-log-format=%PROTOCOL%\\x7c%RESPONSE_CODE%\n"));
	free(text);
	tl_options_free(&o);
	ck_assert_int_eq(parse(&o, ARGV("--access-log-format", "%PROTOCOL%", "--access-log-format",
					"%RESPONSE_CODE%")),
			 0);
	ck_assert_int_eq(tl_options_render(&o, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "\naccess-log-format=%PROTOCOL%|%RESPONSE_CODE%\n"));
	free(text);
	tl_options_free(&o);
}
END_TEST

/* OTLP export: flag > file > OTEL_EXPORTER_OTLP_* > default (docs/export.md). */
START_TEST(test_otlp)
{
	struct tl_options o = {0};
	const char *path;
	char *text = NULL;

	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROTOCOL");
	/* off by default */
	ck_assert_int_eq(parse(&o, ARGV("--no-api")), 0);
	ck_assert(!o.otlp.enabled);
	tl_options_free(&o);

	setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://env:4318", 1);
	setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", 1);
	ck_assert_int_eq(parse(&o, ARGV("--no-api", "--otlp-logs")), 0);
	ck_assert(o.otlp.enabled && o.otlp.logs);
	ck_assert_str_eq(o.otlp.traces_url, "http://env:4318/v1/traces");
	ck_assert_str_eq(o.otlp.logs_url, "http://env:4318/v1/logs");
	ck_assert_int_eq(o.otlp.protocol, TL_OTLP_HTTP_JSON);
	tl_options_free(&o);

	/* the file wins over the environment, the flag over the file */
	path = write_file("otlp.yaml", "otlp-endpoint: https://file:4318\notlp-protocol: http/protobuf\n"
				       "otlp-headers: authorization=Bearer%20x\notlp-timeout: 2s\n"
				       "otlp-queue-bytes: 2Mi\n");
	ck_assert_int_eq(parse(&o, ARGV("--config", path)), 0);
	ck_assert_str_eq(o.otlp.traces_url, "https://file:4318/v1/traces");
	ck_assert_int_eq(o.otlp.protocol, TL_OTLP_HTTP_PROTOBUF);
	ck_assert_uint_eq(o.otlp.n_headers, 1);
	ck_assert_str_eq(o.otlp.headers[0].value, "Bearer x");
	ck_assert_uint_eq(o.otlp.timeout_ms, 2000);
	ck_assert_uint_eq(o.otlp.queue_bytes, 2ULL << 20);
	/* a header's value is no part of the rendered settings */
	ck_assert_int_eq(tl_options_render(&o, &text), 0);
	ck_assert_ptr_nonnull(strstr(text, "otlp-headers=authorization\n"));
	ck_assert_ptr_null(strstr(text, "Bearer"));
	free(text);
	tl_options_free(&o);
	ck_assert_int_eq(parse(&o, ARGV("--config", path, "--otlp-endpoint", "http://flag:4318/x/")), 0);
	ck_assert_str_eq(o.otlp.traces_url, "http://flag:4318/x/v1/traces");
	tl_options_free(&o);

	/* bad values: one line naming the flag, key or variable */
	ck_assert_int_eq(parse(&o, ARGV("--otlp-protocol", "grpc")), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--otlp-protocol: 'grpc' is not supported"));
	ck_assert_int_eq(parse(&o, ARGV("--otlp-timeout", "soon")), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "--otlp-timeout: 'soon'"));
	path = write_file("otlp-bad.yaml", "otlp-endpoint: collector:4318\n");
	ck_assert_int_eq(parse(&o, ARGV("--config", path)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "otlp-bad.yaml:1: otlp-endpoint: 'collector:4318' is not an"));
	ck_assert_int_eq(parse(&o, ARGV("--otlp-queue-bytes", "2Gi")), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "out of range (1Mi..1Gi)"));
	setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc", 1);
	ck_assert_int_eq(parse(&o, ARGV("--no-api")), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' is not supported"));
	ck_assert_ptr_null(strchr(err, '\n'));
	unsetenv("OTEL_EXPORTER_OTLP_ENDPOINT");
	unsetenv("OTEL_EXPORTER_OTLP_PROTOCOL");
}
END_TEST

START_TEST(test_node_default)
{
	struct tl_options o = {0};
	struct utsname u;

	setenv("NODE_NAME", "Bad_Name", 1);
	expect_fail(ARGV0);
	ck_assert_str_eq(
	    err, "termlined: $NODE_NAME: 'Bad_Name' is not a node name (lower-case DNS subdomain)");
	/* A flag makes the environment irrelevant. */
	ck_assert_int_eq(parse(&o, ARGV("--node", "n1")), 0);
	ck_assert_str_eq(o.node, "n1");
	tl_options_free(&o);

	unsetenv("NODE_NAME");
	ck_assert_int_eq(uname(&u), 0);
	for (char *c = u.nodename; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	ck_assert_int_eq(parse(&o, ARGV0), 0);
	/* A host name that is no valid node name (an underscore) is not
	 * used: the agent then needs --node to talk to the API server. */
	if (strspn(u.nodename, "abcdefghijklmnopqrstuvwxyz0123456789-.") == strlen(u.nodename))
		ck_assert_str_eq(o.node, u.nodename);
	else
		ck_assert_ptr_null(o.node);
	tl_options_free(&o);
}
END_TEST

START_TEST(test_free)
{
	struct tl_options o = {0};

	tl_options_free(NULL);
	tl_options_free(&o);
	ck_assert_int_eq(parse(&o, ARGV("--kubeconfig", "/k")), 0);
	tl_options_free(&o);
	ck_assert_ptr_null(o.kubeconfig);
	ck_assert_ptr_null(o.state_dir);
	ck_assert_int_eq(o.n_request_id_headers, 0);
	tl_options_free(&o);
}
END_TEST

/* Every prefix of a valid file is either valid or one clean error line. */
START_TEST(test_truncated_config)
{
	size_t n = strlen(full_config);
	char *buf = malloc(n + 1);

	ck_assert_ptr_nonnull(buf);
	for (size_t len = 0; len <= n; len++) {
		struct tl_options o = {0};
		int r;

		memcpy(buf, full_config, len);
		buf[len] = '\0';
		err[0] = '\0';
		r = parse_file(&o, buf);
		ck_assert_msg(r == 0 || r == -EINVAL, "prefix %zu: %d", len, r);
		if (r < 0) {
			ck_assert_msg(strncmp(err, "config ", 7) == 0, "prefix %zu: %s", len, err);
			ck_assert_ptr_null(strchr(err, '\n'));
		}
		tl_options_free(&o);
	}
	free(buf);
}
END_TEST

static Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("options");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_all_flags);
	tcase_add_test(tc, test_file_all_keys);
	tcase_add_test(tc, test_file_scalars_and_nulls);
	tcase_add_loop_test(tc, test_flag_beats_file, 0,
			    sizeof(order_cases) / sizeof(order_cases[0]));
	tcase_add_test(tc, test_overridden_file_key_still_validated);
	tcase_add_test(tc, test_repeated_headers);
	tcase_add_test(tc, test_repeated_formats);
	tcase_add_test(tc, test_bad_format_among_good);
	tcase_add_test(tc, test_too_many_headers);
	tcase_add_loop_test(tc, test_bad_value_in_file, 0,
			    sizeof(bad_values) / sizeof(bad_values[0]));
	tcase_add_loop_test(tc, test_bad_value_as_flag, 0,
			    sizeof(bad_values) / sizeof(bad_values[0]));
	tcase_add_loop_test(tc, test_good_listen, 0, sizeof(good_listen) / sizeof(good_listen[0]));
	tcase_add_test(tc, test_range_edges);
	tcase_add_test(tc, test_timeline_close_options);
	tcase_add_test(tc, test_unknown_key_line);
	tcase_add_test(tc, test_missing_file);
	tcase_add_test(tc, test_file_too_big);
	tcase_add_loop_test(tc, test_bad_document, 0, sizeof(bad_docs) / sizeof(bad_docs[0]));
	tcase_add_test(tc, test_bad_command_line);
	tcase_add_test(tc, test_help);
	tcase_add_test(tc, test_version);
	tcase_add_test(tc, test_digest);
	tcase_add_test(tc, test_render_escapes);
	tcase_add_test(tc, test_node_default);
	tcase_add_test(tc, test_otlp);
	tcase_add_test(tc, test_free);
	tcase_add_test(tc, test_truncated_config);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	int failed = tl_check_run(options_suite());

	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
