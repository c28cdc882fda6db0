/* SPDX-License-Identifier: Apache-2.0 */
/* Ring-buffer record decoding on bytes: no BPF, no root. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "decode.h"
#include "event.h"
#include "termline-events.h"
#include "../check-run.h"

static struct tl_event ev;

static void header(struct tl_ev_header *h, uint16_t kind, uint16_t size)
{
	memset(h, 0, sizeof(*h));
	h->kind = kind;
	h->size = size;
	h->ktime_ns = 1000;
	h->cgroup_id = 77;
	h->pid = 11;
	h->tgid = 10;
	memcpy(h->comm, "worker", 6);
}

static const char *json_field(const char *key)
{
	static struct json_object *o;
	struct json_object *v;

	json_object_put(o);
	o = tl_event_to_json(&ev, false);
	ck_assert_ptr_nonnull(o);
	if (!json_object_object_get_ex(o, key, &v) || !v)
		return NULL;
	return json_object_get_string(v);
}

START_TEST(signal_record)
{
	struct tl_ev_signal r;

	memset(&r, 0, sizeof(r));
	header(&r.h, TL_EV_SIGNAL_GENERATE, sizeof(r));
	r.signo = SIGTERM;
	r.result = 1;
	r.sender_tgid = 1;
	memcpy(r.sender_comm, "kubelet", 7);
	ck_assert_int_eq(tl_kernel_decode(&r, sizeof(r), 5000, &ev), 0);
	ck_assert_int_eq(ev.kind, TL_KIND_PROCESS_SIGNAL);
	ck_assert_int_eq(ev.source, TL_SRC_KERNEL);
	ck_assert_int_eq(ev.time_ns, 6000);
	ck_assert_uint_eq(ev.cgroup_id, 77);
	ck_assert_str_eq(json_field("signal"), "SIGTERM");
	ck_assert_str_eq(json_field("result"), "ignored");
	ck_assert_str_eq(json_field("comm"), "worker");
	ck_assert_str_eq(json_field("senderComm"), "kubelet");
	ck_assert_str_eq(json_field("pid"), "10");
	ck_assert_str_eq(json_field("senderPid"), "1");
	tl_event_clear(&ev);
	/* delivered: no sender fields */
	r.h.kind = TL_EV_SIGNAL_DELIVER;
	ck_assert_int_eq(tl_kernel_decode(&r, sizeof(r), 0, &ev), 0);
	ck_assert_int_eq(ev.kind, TL_KIND_PROCESS_SIGNAL_DELIVERED);
	ck_assert_ptr_null(json_field("senderPid"));
	tl_event_clear(&ev);
}
END_TEST

START_TEST(exec_exit_records)
{
	struct tl_ev_exec x;
	struct tl_ev_exit e;

	memset(&x, 0, sizeof(x));
	header(&x.h, TL_EV_EXEC, sizeof(x));
	memcpy(x.filename, "/bin/\xff" "sh", 8);
	ck_assert_int_eq(tl_kernel_decode(&x, sizeof(x), 0, &ev), 0);
	ck_assert_str_eq(json_field("filename"), "/bin/\xef\xbf\xbdsh");
	tl_event_clear(&ev);
	memset(&e, 0, sizeof(e));
	header(&e.h, TL_EV_EXIT, sizeof(e));
	e.exit_code = (3 << 8) | 9;
	ck_assert_int_eq(tl_kernel_decode(&e, sizeof(e), 0, &ev), 0);
	ck_assert_str_eq(json_field("exitCode"), "3");
	ck_assert_str_eq(json_field("exitSignal"), "9");
	tl_event_clear(&ev);
}
END_TEST

START_TEST(socket_records)
{
	struct tl_ev_sock s;

	memset(&s, 0, sizeof(s));
	header(&s.h, TL_EV_RESET_SENT, sizeof(s));
	s.family = AF_INET;
	inet_pton(AF_INET, "10.1.2.3", s.laddr);
	inet_pton(AF_INET, "10.9.9.9", s.raddr);
	s.lport = 8080;
	s.rport = 40000;
	ck_assert_int_eq(tl_kernel_decode(&s, sizeof(s), 0, &ev), 0);
	ck_assert_str_eq(json_field("local"), "10.1.2.3:8080");
	ck_assert_str_eq(json_field("remote"), "10.9.9.9:40000");
	/* addresses stay bytes in the event */
	ck_assert_int_eq(ev.v[TL_F_RESET_LOCAL].family, AF_INET);
	tl_event_clear(&ev);
	/* IPv4-mapped IPv6 shows as IPv4; plain IPv6 in brackets */
	s.family = AF_INET6;
	memset(s.laddr, 0, 16);
	s.laddr[10] = s.laddr[11] = 0xff;
	inet_pton(AF_INET, "10.1.2.3", s.laddr + 12);
	inet_pton(AF_INET6, "fd00::6", s.raddr);
	ck_assert_int_eq(tl_kernel_decode(&s, sizeof(s), 0, &ev), 0);
	ck_assert_str_eq(json_field("local"), "10.1.2.3:8080");
	ck_assert_str_eq(json_field("remote"), "[fd00::6]:40000");
	tl_event_clear(&ev);
	s.h.kind = TL_EV_LISTEN;
	ck_assert_int_eq(tl_kernel_decode(&s, sizeof(s), 0, &ev), 0);
	ck_assert_str_eq(json_field("address"), "10.1.2.3");
	ck_assert_str_eq(json_field("port"), "8080");
	tl_event_clear(&ev);
}
END_TEST

START_TEST(mismatched_records_refused)
{
	struct tl_ev_sock s;
	uint8_t big[512] = { 0 };

	memset(&s, 0, sizeof(s));
	header(&s.h, TL_EV_RESET_SENT, sizeof(s));
	ck_assert_int_eq(tl_kernel_decode(&s, sizeof(s) - 1, 0, &ev), -EINVAL); /* size != h.size */
	s.h.size = sizeof(s) - 8;
	ck_assert_int_eq(tl_kernel_decode(&s, sizeof(s) - 8, 0, &ev), -EINVAL); /* kind's size */
	header(&s.h, 0, sizeof(s));
	ck_assert_int_eq(tl_kernel_decode(&s, sizeof(s), 0, &ev), -EINVAL);
	header(&s.h, TL_EV_KIND_MAX, sizeof(s));
	ck_assert_int_eq(tl_kernel_decode(&s, sizeof(s), 0, &ev), -EINVAL);
	ck_assert_int_eq(tl_kernel_decode(big, 4, 0, &ev), -EINVAL);
	/* the wire <-> kind map */
	ck_assert_int_eq(tl_kernel_wire_kind(TL_EV_EXEC), TL_KIND_PROCESS_EXEC);
	ck_assert_uint_eq(tl_kernel_wire_of(TL_KIND_TCP_RESET_RECEIVED), TL_EV_RESET_RECEIVED);
	ck_assert_uint_eq(tl_kernel_wire_of(TL_KIND_POD_DELETED), 0);
	ck_assert_uint_eq(tl_kernel_wire_size(TL_EV_EXIT), sizeof(struct tl_ev_exit));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kernel-decode");
	TCase *tc = tcase_create("decode");

	tcase_add_test(tc, signal_record);
	tcase_add_test(tc, exec_exit_records);
	tcase_add_test(tc, socket_records);
	tcase_add_test(tc, mismatched_records_refused);
	suite_add_tcase(s, tc);
	return tl_check_run(s) ? EXIT_FAILURE : EXIT_SUCCESS;
}
