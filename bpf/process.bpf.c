// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Process hooks: signals (generated and delivered to a handler), exec, exit.
 * Each hook has a tp_btf program and a classic tracepoint twin; user space
 * keeps one of each pair (bpf_program__set_autoload) after probing. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "termline-events.h"
#include "termline-common.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Always set by the loader (TL_SIGNALS_DEFAULT unless configured). */
const volatile __u64 signal_mask;
/* Set by the loader only when the classic signal_generate runs: the pid ->
 * cgroup map below exists for it alone, and its upkeep (an LRU update at
 * every tracked exec, a delete at every exit and untracked exec on the
 * node) is most of what those hooks cost otherwise. */
const volatile __u8 track_pids = 0;

/* Classic signal_generate carries only the target's pid, not its task: the
 * fallback attributes it through this pid -> cgroup map, filled at fork and
 * exec of tracked tasks. Processes that entered a tracked cgroup without a
 * later fork or exec are missed there; tp_btf has no such gap. */
struct pid_info {
	__u64 cgroup_id;
	__u32 tgid;
	__u32 _pad0;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct pid_info);
} known_pids SEC(".maps");

static __always_inline int signal_wanted(int sig)
{
	return sig > 0 && sig <= 64 && (signal_mask & TL_SIG_BIT(sig));
}

static __always_inline struct tl_ev_signal *signal_reserve(__u16 kind, __u32 flags, __u64 cgid)
{
	struct tl_ev_signal *e = tl_reserve(sizeof(*e), kind);

	if (!e)
		return NULL;
	tl_header(&e->h, kind, sizeof(*e), flags, cgid);
	return e;
}

/* current is the sender. */
static __always_inline void signal_fill_sender(struct tl_ev_signal *e, int sig, int result)
{
	__u64 id = bpf_get_current_pid_tgid();

	e->signo = sig;
	e->result = result;
	e->sender_pid = (__u32)id;
	e->sender_tgid = id >> 32;
	bpf_get_current_comm(e->sender_comm, sizeof(e->sender_comm));
}

SEC("tp_btf/signal_generate")
int BPF_PROG(signal_generate_btf, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	struct tl_ev_signal *e;
	__u64 cgid;

	if (!signal_wanted(sig))
		return 0;
	cgid = tl_task_cgroup(task);
	if (!tl_cgroup_tracked(cgid))
		return 0;
	e = signal_reserve(TL_EV_SIGNAL_GENERATE, group ? TL_EVF_GROUP : 0, cgid);
	if (!e)
		return 0;
	tl_header_task(&e->h, task);
	signal_fill_sender(e, sig, result);
	tl_submit(e);
	return 0;
}

SEC("tracepoint/signal/signal_generate")
int signal_generate_tp(struct trace_event_raw_signal_generate *ctx)
{
	struct tl_ev_signal *e;
	struct pid_info *pi;
	__u32 pid = ctx->pid;
	int sig = ctx->sig;

	if (!signal_wanted(sig))
		return 0;
	pi = bpf_map_lookup_elem(&known_pids, &pid);
	if (!pi || !tl_cgroup_tracked(pi->cgroup_id))
		return 0;
	e = signal_reserve(TL_EV_SIGNAL_GENERATE, ctx->group ? TL_EVF_GROUP : 0, pi->cgroup_id);
	if (!e)
		return 0;
	e->h.pid = pid;
	e->h.tgid = pi->tgid;
	bpf_probe_read_kernel(e->h.comm, sizeof(e->h.comm), ctx->comm);
	signal_fill_sender(e, sig, ctx->result);
	tl_submit(e);
	return 0;
}

/* Only deliveries to a handler: a default-fatal signal is reported here as
 * SIGKILL (group exit), which process.exit already tells. */
static __always_inline int handle_signal_deliver(int sig, unsigned long handler)
{
	struct tl_ev_signal *e;
	__u64 cgid;

	if (handler == 0 /* SIG_DFL */ || handler == 1 /* SIG_IGN */ || !signal_wanted(sig))
		return 0;
	cgid = bpf_get_current_cgroup_id();
	if (!tl_cgroup_tracked(cgid))
		return 0;
	e = signal_reserve(TL_EV_SIGNAL_DELIVER, 0, cgid);
	if (!e)
		return 0;
	tl_header_current(&e->h);
	e->signo = sig;
	e->result = 0;
	e->sender_pid = 0;
	e->sender_tgid = 0;
	__builtin_memset(e->sender_comm, 0, sizeof(e->sender_comm));
	tl_submit(e);
	return 0;
}

SEC("tp_btf/signal_deliver")
int BPF_PROG(signal_deliver_btf, int sig, struct kernel_siginfo *info, struct k_sigaction *ka)
{
	return handle_signal_deliver(sig, (unsigned long)BPF_CORE_READ(ka, sa.sa_handler));
}

SEC("tracepoint/signal/signal_deliver")
int signal_deliver_tp(struct trace_event_raw_signal_deliver *ctx)
{
	return handle_signal_deliver(ctx->sig, ctx->sa_handler);
}

static __always_inline void remember_pid(__u32 pid, __u32 tgid, __u64 cgid)
{
	struct pid_info pi = { .cgroup_id = cgid, .tgid = tgid };

	if (track_pids)
		bpf_map_update_elem(&known_pids, &pid, &pi, BPF_ANY);
}

static __always_inline void forget_pid(__u32 pid)
{
	if (track_pids)
		bpf_map_delete_elem(&known_pids, &pid);
}

/* current runs the new image; filename is a kernel pointer (tp_btf) or a
 * pointer into the tracepoint record (classic). */
static __always_inline int handle_exec(__u32 old_pid, const char *filename)
{
	struct tl_ev_exec *e;
	__u64 cgid = bpf_get_current_cgroup_id();

	if (!tl_cgroup_tracked(cgid)) {
		forget_pid((__u32)bpf_get_current_pid_tgid());
		return 0;
	}
	e = tl_reserve(sizeof(*e), TL_EV_EXEC);
	if (!e)
		return 0;
	/* Zero the whole record: the filename's tail must not carry older ring
	 * contents to user space. */
	__builtin_memset(e, 0, sizeof(*e));
	tl_header(&e->h, TL_EV_EXEC, sizeof(*e), 0, cgid);
	tl_header_current(&e->h);
	e->old_pid = old_pid;
	bpf_probe_read_kernel_str(e->filename, sizeof(e->filename), filename);
	remember_pid(e->h.pid, e->h.tgid, cgid);
	tl_submit(e);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(sched_process_exec_btf, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return handle_exec(old_pid, BPF_CORE_READ(bprm, filename));
}

SEC("tracepoint/sched/sched_process_exec")
int sched_process_exec_tp(struct trace_event_raw_sched_process_exec *ctx)
{
	unsigned int off = ctx->__data_loc_filename & 0xFFFF;

	return handle_exec(ctx->old_pid, (const char *)ctx + off);
}

/* Feeds known_pids for the classic signal_generate only; the loader enables
 * it together with that program. */
SEC("tracepoint/sched/sched_process_fork")
int sched_process_fork_tp(struct trace_event_raw_sched_process_fork *ctx)
{
	__u64 cgid = bpf_get_current_cgroup_id();

	if (!tl_cgroup_tracked(cgid))
		return 0;
	/* The record does not say whether the child is a thread; a process is
	 * assumed (its own tgid), which is what group signals target anyway. */
	remember_pid(ctx->child_pid, ctx->child_pid, cgid);
	return 0;
}

/* Process exit (pid == tgid), not each thread's. current is the exiting task
 * and exit_code is already set: (code << 8) | terminating signal. */
static __always_inline int handle_exit(struct task_struct *p)
{
	struct tl_ev_exit *e;
	__u32 pid = BPF_CORE_READ(p, pid);
	__u64 cgid;

	if (pid != (__u32)BPF_CORE_READ(p, tgid))
		goto forget;
	cgid = bpf_get_current_cgroup_id();
	if (!tl_cgroup_tracked(cgid))
		goto forget;
	e = tl_reserve(sizeof(*e), TL_EV_EXIT);
	if (!e)
		goto forget;
	tl_header(&e->h, TL_EV_EXIT, sizeof(*e), 0, cgid);
	tl_header_current(&e->h);
	e->exit_code = BPF_CORE_READ(p, exit_code);
	e->_pad0 = 0;
	tl_submit(e);
forget:
	forget_pid(pid);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(sched_process_exit_btf, struct task_struct *p)
{
	return handle_exit(p);
}

SEC("tracepoint/sched/sched_process_exit")
int sched_process_exit_tp(void *ctx)
{
	return handle_exit((struct task_struct *)bpf_get_current_task());
}
