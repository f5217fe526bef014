"""The seccomp filter: its syscall tables against the kernel headers, and its decisions read
by a small classic-BPF interpreter written here (independent of the assembler)."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from lightrft.adapters.sandbox.seccomp import ARCHITECTURES, DENIED, SYSCALLS, filter_for_machine

ALLOW, EPERM, ENOSYS = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
X86 = 0xC000003E
HEADERS = {
    0: [
        Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
        Path("/usr/include/asm/unistd_64.h"),
    ],
    1: [Path("/usr/include/asm-generic/unistd.h")],
}


def run_bpf(program: bytes, nr: int, arch: int = X86, arg0: int = 0) -> int:
    """Classic BPF over ``struct seccomp_data`` (only the opcodes a filter of ours may use)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, arg0, 0, 0, 0, 0, 0)
    code = [struct.unpack_from("<HBBI", program, 8 * i) for i in range(len(program) // 8)]
    pc, acc = 0, 0
    while True:
        op, jt, jf, k = code[pc]
        if op == 0x20:  # ld [k]
            acc = struct.unpack_from("<I", data, k)[0]
        elif op == 0x06:  # ret k
            return k
        else:
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: acc & k != 0}[op]
            pc += jt if taken else jf
        pc += 1


@pytest.mark.parametrize("column", [0, 1], ids=["x86_64", "aarch64"])
def test_syscall_numbers_match_the_kernel_headers(column: int) -> None:
    header = next((p for p in HEADERS[column] if p.is_file()), None)
    if header is None:
        pytest.skip("kernel headers (linux-libc-dev) are not installed")
    text = header.read_text()
    for name, numbers in SYSCALLS.items():
        match = re.search(rf"#define __NR(?:3264)?_{name}\s+(\d+)", text)
        assert match is not None, f"{name} is not in {header}"
        assert int(match.group(1)) == numbers[column], name


def test_filter_decisions() -> None:
    program = filter_for_machine("x86_64")
    assert program is not None
    table = ARCHITECTURES["x86_64"][1]
    for name in DENIED:
        assert run_bpf(program, table[name]) == EPERM, name
    for nr in (0, 1, 2, 39, 57, 59, 231):  # read, write, open, getpid, fork, execve, exit_group
        assert run_bpf(program, nr) == ALLOW
    assert run_bpf(program, table["clone"], arg0=0x01200011) == ALLOW  # fork()'s flags
    assert run_bpf(program, table["clone"], arg0=0x10000000) == EPERM  # CLONE_NEWUSER
    assert run_bpf(program, table["clone"], arg0=0x40000000 | 0x11) == EPERM  # CLONE_NEWNET
    assert run_bpf(program, table["clone3"]) == ENOSYS
    assert run_bpf(program, 0x40000000 + 1) == EPERM  # an x32 system call
    assert run_bpf(program, 39, arch=0x40000003) == EPERM  # i386 convention (int 0x80)


def test_other_architectures_get_no_filter() -> None:
    assert filter_for_machine("riscv64") is None
    aarch64 = filter_for_machine("aarch64")
    assert aarch64 is not None and run_bpf(aarch64, 97, arch=0xC00000B7) == EPERM  # unshare
    assert run_bpf(aarch64, 97, arch=X86) == EPERM  # wrong architecture
    assert run_bpf(aarch64, 63, arch=0xC00000B7) == ALLOW  # read
