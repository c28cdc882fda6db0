/* SPDX-License-Identifier: Apache-2.0 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "decode.h"
#include "termline-events.h"

_Static_assert(sizeof(struct tl_ev_header) == 48, "tl_ev_header layout");
_Static_assert(sizeof(struct tl_ev_signal) == 80, "tl_ev_signal layout");
_Static_assert(sizeof(struct tl_ev_exec) == 56 + TL_FILENAME_LEN, "tl_ev_exec layout");
_Static_assert(sizeof(struct tl_ev_exit) == 56, "tl_ev_exit layout");
_Static_assert(sizeof(struct tl_ev_sock) == 88, "tl_ev_sock layout");
_Static_assert(sizeof(struct tl_ip_key) == 16, "tl_ip_key layout");

/* Indexed by enum tl_ev_kind. */
static const struct {
	enum tl_kind kind;
	size_t size;
} wire[TL_EV_KIND_MAX] = {
	[TL_EV_SIGNAL_GENERATE] = { TL_KIND_PROCESS_SIGNAL, sizeof(struct tl_ev_signal) },
	[TL_EV_SIGNAL_DELIVER] = { TL_KIND_PROCESS_SIGNAL_DELIVERED, sizeof(struct tl_ev_signal) },
	[TL_EV_EXEC] = { TL_KIND_PROCESS_EXEC, sizeof(struct tl_ev_exec) },
	[TL_EV_EXIT] = { TL_KIND_PROCESS_EXIT, sizeof(struct tl_ev_exit) },
	[TL_EV_LISTEN] = { TL_KIND_SOCKET_LISTEN, sizeof(struct tl_ev_sock) },
	[TL_EV_LISTEN_CLOSED] = { TL_KIND_SOCKET_LISTEN_CLOSED, sizeof(struct tl_ev_sock) },
	[TL_EV_RESET_SENT] = { TL_KIND_TCP_RESET_SENT, sizeof(struct tl_ev_sock) },
	[TL_EV_RESET_RECEIVED] = { TL_KIND_TCP_RESET_RECEIVED, sizeof(struct tl_ev_sock) },
};

enum tl_kind tl_kernel_wire_kind(uint32_t wire_kind)
{
	return wire_kind < TL_EV_KIND_MAX ? wire[wire_kind].kind : TL_KIND_NONE;
}

size_t tl_kernel_wire_size(uint32_t wire_kind)
{
	return wire_kind < TL_EV_KIND_MAX ? wire[wire_kind].size : 0;
}

uint32_t tl_kernel_wire_of(enum tl_kind kind)
{
	for (uint32_t w = 1; w < TL_EV_KIND_MAX; w++)
		if (wire[w].kind == kind && kind != TL_KIND_NONE)
			return w;
	return 0;
}

static int decode_sock(struct tl_event *ev, const struct tl_ev_sock *e, bool listen)
{
	uint16_t family = e->family == AF_INET6 ? AF_INET6 : AF_INET;
	int r;

	if (listen) {
		r = tl_event_set_addr(ev, TL_F_LISTEN_ADDRESS, family, e->laddr, 0);
		return r ?: tl_event_set_i(ev, TL_F_LISTEN_PORT, e->lport);
	}
	r = tl_event_set_addr(ev, TL_F_RESET_LOCAL, family, e->laddr, e->lport);
	return r ?: tl_event_set_addr(ev, TL_F_RESET_REMOTE, family, e->raddr, e->rport);
}

int tl_kernel_decode(const void *data, size_t size, int64_t boot_to_real_ns, struct tl_event *ev)
{
	const struct tl_ev_header *h = data;
	enum tl_kind kind;
	int r;

	if (size < sizeof(*h) || h->size != size || h->kind == 0 || h->kind >= TL_EV_KIND_MAX ||
	    wire[h->kind].size != size)
		return -EINVAL;
	kind = wire[h->kind].kind;
	r = tl_event_init_kind(ev, kind, TL_SRC_KERNEL, (int64_t)h->ktime_ns + boot_to_real_ns);
	if (r < 0)
		return r;
	ev->cgroup_id = h->cgroup_id;
	switch (h->kind) {
	case TL_EV_SIGNAL_GENERATE:
	case TL_EV_SIGNAL_DELIVER: {
		const struct tl_ev_signal *e = data;

		r = tl_event_set_i(ev, TL_F_SIG_SIGNAL, e->signo);
		r = r ?: tl_event_set_i(ev, TL_F_SIG_SIGNO, e->signo);
		r = r ?: tl_event_set_i(ev, TL_F_SIG_PID, h->tgid);
		r = r ?: tl_event_set_bytes_utf8(ev, TL_F_SIG_COMM, h->comm, TL_COMM_LEN);
		if (h->kind == TL_EV_SIGNAL_DELIVER)
			break;
		r = r ?: tl_event_set_i(ev, TL_F_SIG_SENDER_PID, e->sender_tgid);
		r = r ?: tl_event_set_bytes_utf8(ev, TL_F_SIG_SENDER_COMM, e->sender_comm, TL_COMM_LEN);
		r = r ?: tl_event_set_i(ev, TL_F_SIG_RESULT, e->result);
		break;
	}
	case TL_EV_EXEC: {
		const struct tl_ev_exec *e = data;

		r = tl_event_set_i(ev, TL_F_EXEC_PID, h->tgid);
		r = r ?: tl_event_set_bytes_utf8(ev, TL_F_EXEC_COMM, h->comm, TL_COMM_LEN);
		r = r ?: tl_event_set_bytes_utf8(ev, TL_F_EXEC_FILENAME, e->filename, TL_FILENAME_LEN);
		break;
	}
	case TL_EV_EXIT: {
		const struct tl_ev_exit *e = data;

		r = tl_event_set_i(ev, TL_F_EXIT_PID, h->tgid);
		r = r ?: tl_event_set_bytes_utf8(ev, TL_F_EXIT_COMM, h->comm, TL_COMM_LEN);
		r = r ?: tl_event_set_i(ev, TL_F_EXIT_CODE, (e->exit_code >> 8) & 0xff);
		r = r ?: tl_event_set_i(ev, TL_F_EXIT_SIGNAL, e->exit_code & 0x7f);
		break;
	}
	case TL_EV_LISTEN:
	case TL_EV_LISTEN_CLOSED:
		r = decode_sock(ev, data, true);
		break;
	case TL_EV_RESET_SENT:
	case TL_EV_RESET_RECEIVED:
		r = decode_sock(ev, data, false);
		break;
	default:
		r = -EINVAL;
	}
	if (r < 0) {
		tl_event_clear(ev);
		return -EINVAL;
	}
	return 0;
}
