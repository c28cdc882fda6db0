/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#pragma once
/* Wire structs shared by the BPF programs and termlined. Only __u8..__u64
 * and fixed arrays; explicit padding; sizes asserted in user space. */
