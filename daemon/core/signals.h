/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Signal names and the default set of recorded signals, defined once for
 * the options (--signals and its --help default), the event encoder and the
 * BPF signal filter. Numbers come from <signal.h>, never written out: they
 * differ between architectures (SIGUSR1 is 10 on x86 and arm64, 16 on mips,
 * 30 on alpha and sparc). */
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Bit of signo in a signal mask: bit (signo - 1), the layout of the BPF
 * filter (TL_SIG_BIT in bpf/include/termline-events.h, which cannot include
 * <signal.h>; bpf-loader.c asserts that both agree). */
#define TL_SIGNAL_BIT(s) (UINT64_C(1) << ((s) - 1))

/* Signals recorded when the configuration names none: the stop signals a
 * kubelet or runtime sends and the ones applications commonly handle. One
 * list, from which both the mask and the text --help shows are made. */
#define TL_SIGNALS_DEFAULT_LIST(X) X(TERM) X(KILL) X(INT) X(QUIT) X(HUP) X(USR1) X(USR2)
#define TL_SIGNAL_MASK_ITEM_(n) | TL_SIGNAL_BIT(SIG##n)
#define TL_SIGNAL_TEXT_ITEM_(n) "," #n
/* The mask, for the options and the BPF filter. */
#define TL_SIGNALS_DEFAULT ((uint64_t)0 TL_SIGNALS_DEFAULT_LIST(TL_SIGNAL_MASK_ITEM_))
/* "TERM,KILL,INT,QUIT,HUP,USR1,USR2", as --signals takes it. */
#define TL_SIGNALS_DEFAULT_TEXT (TL_SIGNALS_DEFAULT_LIST(TL_SIGNAL_TEXT_ITEM_) + 1)

/* "SIGTERM" for SIGTERM, "SIGRTMIN+3" for real-time signals, NULL out of
 * range (buf is used for the real-time names). Numbers are this
 * architecture's (<signal.h>). */
const char *tl_signal_name(int signo, char *buf, size_t len);

/* The number of the signal called name[0..len) ("TERM", "SIGTERM", any
 * case; the aliases IOT and POLL too), among the signals a configuration
 * may name. 0, or -EINVAL for an unknown name. */
int tl_signal_lookup(const char *name, size_t len, int *ret);
