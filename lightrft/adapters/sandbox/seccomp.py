"""A seccomp-BPF filter (classic BPF, ``SECCOMP_MODE_FILTER``) assembled here, no libseccomp.

It is a deny list of system calls that a test program never needs and that widen the
kernel's attack surface from inside a sandbox: namespaces and mounts (``unshare``,
``setns``, ``clone`` with a ``CLONE_NEW*`` flag, ``mount`` and the new mount API,
``pivot_root``, ``chroot``), other processes' memory (``ptrace``, ``process_vm_*``), kernel
keyrings, eBPF, perf events, ``userfaultfd``, ``io_uring``, file handles
(``open_by_handle_at``), modules, kexec, reboot, swap, accounting, the kernel log. Denied
calls fail with ``EPERM``; ``clone3`` fails with ``ENOSYS`` (its flags sit in memory a filter
cannot read, and the C library falls back to ``clone``, which is checked). A call made with
another architecture's convention (e.g. ``int 0x80`` on x86-64) or an x32 number fails with
``EPERM`` too. Everything else is allowed: the namespaces, not this filter, are the boundary.

System call numbers: x86-64 from ``asm/unistd_64.h``, aarch64 from ``asm-generic/unistd.h``
(a test compares both tables with the kernel headers where they are installed). Other
architectures get no filter (:func:`filter_for_machine` returns ``None``).
"""

from __future__ import annotations

import errno
import platform
import struct

# name: (x86-64 number, aarch64 number); the denied ones, then clone and clone3
SYSCALLS: dict[str, tuple[int, int]] = {
    "ptrace": (101, 117),
    "process_vm_readv": (310, 270),
    "process_vm_writev": (311, 271),
    "kexec_load": (246, 104),
    "kexec_file_load": (320, 294),
    "init_module": (175, 105),
    "finit_module": (313, 273),
    "delete_module": (176, 106),
    "reboot": (169, 142),
    "swapon": (167, 224),
    "swapoff": (168, 225),
    "acct": (163, 89),
    "mount": (165, 40),
    "umount2": (166, 39),
    "pivot_root": (155, 41),
    "chroot": (161, 51),
    "unshare": (272, 97),
    "setns": (308, 268),
    "keyctl": (250, 219),
    "add_key": (248, 217),
    "request_key": (249, 218),
    "bpf": (321, 280),
    "perf_event_open": (298, 241),
    "userfaultfd": (323, 282),
    "open_by_handle_at": (304, 265),
    "name_to_handle_at": (303, 264),
    "io_uring_setup": (425, 425),
    "io_uring_enter": (426, 426),
    "io_uring_register": (427, 427),
    "open_tree": (428, 428),
    "move_mount": (429, 429),
    "fsopen": (430, 430),
    "fsconfig": (431, 431),
    "fsmount": (432, 432),
    "fspick": (433, 433),
    "mount_setattr": (442, 442),
    "syslog": (103, 116),
    "quotactl": (179, 60),
    "lookup_dcookie": (212, 18),
    "clone": (56, 220),
    "clone3": (435, 435),
}
DENIED = tuple(SYSCALLS)[:-2]

# machine (platform.machine()) -> (AUDIT_ARCH_*, syscall table, first x32 number or None)
ARCHITECTURES: dict[str, tuple[int, dict[str, int], int | None]] = {
    "x86_64": (0xC000003E, {name: nr[0] for name, nr in SYSCALLS.items()}, 0x40000000),
    "aarch64": (0xC00000B7, {name: nr[1] for name, nr in SYSCALLS.items()}, None),
}
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET | NEWTIME
CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
CLONE_NAMESPACES |= 0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

# classic BPF opcodes and seccomp return values (linux/filter.h, linux/seccomp.h)
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
_RET_ALLOW, _RET_ERRNO = 0x7FFF0000, 0x00050000
# offsets in struct seccomp_data: nr, arch, instruction pointer, args[6] (u64, little-endian)
_NR, _ARCH, _ARG0_LOW = 0, 4, 16


def _deny(err: int) -> tuple[str, int]:
    return ("ret", _RET_ERRNO | err)


def _assemble(program: list[tuple]) -> bytes:  # type: ignore[type-arg]
    """Instructions ``(op, k)`` / ``(op, k, "label_true", "label_false")`` / ``("label", name)``
    to ``struct sock_filter`` bytes (jump targets resolved to relative offsets)."""
    labels: dict[str, int] = {}
    code: list[tuple] = []  # type: ignore[type-arg]
    for item in program:
        if item[0] == "label":
            labels[item[1]] = len(code)
        else:
            code.append(item)
    ops = {"ld": _LD_W_ABS, "jeq": _JEQ_K, "jge": _JGE_K, "jset": _JSET_K, "ret": _RET_K}
    out = bytearray()
    for index, (op, k, *targets) in enumerate(code):
        offsets = [0, 0]
        for slot, target in enumerate(targets):
            if target is not None:
                offsets[slot] = labels[target] - index - 1
                if not 0 <= offsets[slot] <= 255:
                    raise ValueError(f"seccomp jump to {target} out of range")
        out += struct.pack("<HBBI", ops[op], offsets[0], offsets[1], k)
    return bytes(out)


def build_filter(arch: int, table: dict[str, int], x32_from: int | None) -> bytes:
    """The filter for one architecture (see the module docstring)."""
    program: list[tuple] = [  # type: ignore[type-arg]
        ("ld", _ARCH),
        ("jeq", arch, None, "deny"),
        ("ld", _NR),
    ]
    if x32_from is not None:
        program.append(("jge", x32_from, "deny", None))
    program += [("jeq", table[name], "deny", None) for name in DENIED]
    program += [
        ("jeq", table["clone3"], "enosys", None),
        ("jeq", table["clone"], "clone", None),
        ("ret", _RET_ALLOW),
        ("label", "clone"),
        ("ld", _ARG0_LOW),
        ("jset", CLONE_NAMESPACES, "deny", None),
        ("ret", _RET_ALLOW),
        ("label", "deny"),
        _deny(errno.EPERM),
        ("label", "enosys"),
        _deny(errno.ENOSYS),
    ]
    return _assemble(program)


def filter_for_machine(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture, or ``None`` where there is none."""
    entry = ARCHITECTURES.get(machine or platform.machine())
    return build_filter(*entry) if entry is not None else None
