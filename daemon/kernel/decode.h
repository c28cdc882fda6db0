/* SPDX-License-Identifier: Apache-2.0 */
#pragma once
/* Ring-buffer records (bpf/include/termline-events.h) -> typed events. Pure
 * functions: no BPF, no privileges, so every kind is unit-tested on bytes
 * (tests/kernel). */
#include <stddef.h>
#include <stdint.h>

#include "event.h"

/* The event kind a wire kind (enum tl_ev_kind) records, TL_KIND_NONE when
 * unknown; and its record size (0 when unknown). */
enum tl_kind tl_kernel_wire_kind(uint32_t wire_kind);
size_t tl_kernel_wire_size(uint32_t wire_kind);
/* The wire kind of an event kind, 0 when none. */
uint32_t tl_kernel_wire_of(enum tl_kind kind);

/* Decodes one record into ev (source kernel, time converted to realtime
 * with boot_to_real_ns, cgroup_id set; pod and container left for
 * attribution). A record whose size and kind disagree (a mismatched
 * object) is refused, never read past its end: -EINVAL. */
int tl_kernel_decode(const void *data, size_t size, int64_t boot_to_real_ns, struct tl_event *ev);
