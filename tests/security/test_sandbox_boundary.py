"""The OS boundary of the code sandbox, attacked from inside, checked from the host.

Every attack first gets past the audit-hook guard (``_posixsubprocess.fork_exec``, the bypass
the audit found: see ``escape.py``), so what is tested is the namespaces, the read-only view,
the limits and the seccomp filter, on both backends (bwrap, and util-linux unshare where bwrap
is absent). After each run the test looks at the host: no marker file, no connection, no
surviving process. These tests run in CI (which installs bubblewrap); a machine without a
backend's tool fails them with the install hint, unless ``LIGHTRFT_SANDBOX_TESTS=skip-missing``
(then an absent tool skips that backend's tests; a present but broken one still fails).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lightrft.adapters.sandbox import BACKENDS, ProcessSandbox, open_sandbox
from lightrft.adapters.sandbox.view import HostView
from lightrft.domain.sandbox import SandboxLimits
from tests.security.escape import escaped, result, spawned

PROJECT = Path(__file__).resolve().parents[2]
FAST = SandboxLimits(wall_s=4.0, memory_mb=256)


@pytest.fixture(scope="module", params=["bwrap", "unshare"])
def sandbox(request: pytest.FixtureRequest) -> ProcessSandbox:
    name = request.param
    absent = BACKENDS.get(name)(HostView.for_interpreter(), None).missing()
    if absent and os.environ.get("LIGHTRFT_SANDBOX_TESTS") == "skip-missing":
        pytest.skip(f"{name}: {absent}")  # a tool that is absent; a broken one still fails
    return open_sandbox(name)


@pytest.fixture
def host_dir(tmp_path: Path) -> Path:
    """A host directory that exists (the sandbox must not see or write it)."""
    (tmp_path / "secret.txt").write_text("host secret")
    return tmp_path


def host_processes(token: str) -> list[int]:
    """Host pids whose command line contains ``token``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if token.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_legit_programs_run(sandbox: ProcessSandbox) -> None:
    passing = "def square(x):\n    return x * x\nassert square(3) == 9\n"
    assert sandbox.run(passing, limits=FAST).outcome == "passed"
    failing = sandbox.run("def square(x):\n    return 2 * x\nassert square(3) == 9\n", limits=FAST)
    assert failing.outcome == "failed" and "AssertionError" in failing.stderr
    echo = (
        "import sys\nn = int(input())\nprint(sum(int(x) for x in sys.stdin.read().split()) * n)\n"
    )
    run = sandbox.run(echo, stdin="2\n1 2 3\n", limits=FAST)
    assert (run.outcome, run.stdout) == ("passed", "12\n")  # 2 * (1 + 2 + 3)
    stdlib = (
        "import json, re, math, itertools, collections, functools, heapq, bisect, decimal\n"
        "import fractions, datetime, hashlib, random, statistics, string, dataclasses, typing\n"
        "import tempfile, pathlib\n"
        "pathlib.Path('notes.txt').write_text('x')\n"  # the working directory is writable
        "with tempfile.TemporaryFile() as f: f.write(b'y')\n"
        "print(hashlib.sha256(b'abc').hexdigest()[:8], math.comb(5, 2))\n"
    )
    run = sandbox.run(stdlib, limits=FAST)
    assert (run.outcome, run.stdout) == ("passed", "ba7816bf 10\n"), run.stderr


def test_fork_exec_and_posix_spawn_leave_no_file_on_the_host(
    sandbox: ProcessSandbox, host_dir: Path
) -> None:
    marks = [host_dir / "MARK", Path(f"/tmp/lightrft-mark-{uuid.uuid4().hex}")]
    touch = " ; ".join(f"touch {m}" for m in marks)
    run = sandbox.run(spawned(["/bin/sh", "-c", touch]), limits=FAST)
    assert run.outcome == "passed"  # the shell ran, inside: its files went nowhere
    attack = f"""
    import os
    pid = os.posix_spawn('/bin/sh', ['sh', '-c', {touch!r}], {{}})
    report(status=os.waitpid(pid, 0)[1])
    """
    assert sandbox.run(escaped(attack), limits=FAST).outcome == "passed"
    for mark in marks:
        assert not mark.exists(), f"the sandbox wrote {mark} on the host"


def test_no_write_outside_the_sandbox(sandbox: ProcessSandbox, host_dir: Path) -> None:
    targets = [host_dir / "planted.py", PROJECT / "planted.py", Path("/root/planted")]
    targets += [Path("/usr/lib/planted"), Path(sys.base_prefix) / "planted", Path("/planted")]
    attack = f"""
    errors = {{}}
    for path in {[str(t) for t in targets]!r}:
        try:
            with open(path, 'w') as handle:
                handle.write('pwned')
            errors[path] = None
        except OSError as error:
            errors[path] = type(error).__name__
    report(errors=errors)
    """
    run = sandbox.run(escaped(attack), limits=FAST)
    assert run.outcome == "passed", run.stderr
    assert all(result(run.stdout)["errors"].values())  # type: ignore[union-attr]
    for target in targets:
        assert not target.exists(), f"the sandbox wrote {target}"


def test_host_files_and_processes_are_invisible(sandbox: ProcessSandbox, host_dir: Path) -> None:
    secret = f"s3cret-{uuid.uuid4().hex}"
    holder = subprocess.Popen(
        ["sleep", "30"], env={**os.environ, "LIGHTRFT_SECRET": secret}, stdin=subprocess.DEVNULL
    )
    try:
        attack = f"""
        import os
        seen, pids = [], [p for p in os.listdir('/proc') if p.isdigit()]
        for pid in pids:
            try:
                if {secret!r}.encode() in open(f'/proc/{{pid}}/environ', 'rb').read():
                    seen.append(pid)
            except OSError:
                pass
        readable = {{}}
        for path in ['{host_dir}/secret.txt', '{PROJECT}/pyproject.toml', '/etc/passwd',
                     '/etc/shadow', '/root/.bashrc', '/proc/{holder.pid}/environ']:
            try:
                readable[path] = open(path).read()[:20]
            except OSError as error:
                readable[path] = None
        report(seen=seen, pids=len(pids), readable=readable, root=sorted(os.listdir('/root')),
               top=sorted(os.listdir('/')), env=dict(os.environ))
        """
        run = sandbox.run(escaped(attack), limits=FAST)
    finally:
        holder.kill()
        holder.wait()
    assert run.outcome == "passed", run.stderr
    found = result(run.stdout)
    assert found["seen"] == [] and secret not in run.stdout
    assert found["pids"] <= 5  # its own PID namespace: init, runner, interpreter
    assert all(value is None for value in found["readable"].values()), found["readable"]
    assert set(found["root"]) <= {".pyenv"}  # only the way to the interpreter, if it is there
    view = {"bin", "dev", "lib", "lib32", "lib64", "libx32", "proc", "root", "sandbox", "sbin"}
    assert set(found["top"]) <= view | {"tmp", "usr"}
    assert set(found["env"]) <= {"PATH", "HOME", "LANG", "TMPDIR", "PWD", "LC_CTYPE"}


def test_no_network(sandbox: ProcessSandbox) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        listener.settimeout(0.5)
        port = listener.getsockname()[1]
        attack = f"""
        import errno, socket
        outcome = {{}}
        for name, make in [('tcp', lambda: socket.create_connection(('127.0.0.1', {port}), 2)),
                           ('raw', lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)),
                           ('packet', lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW)),
                           ('dns', lambda: socket.getaddrinfo('example.com', 80))]:
            try:
                make()
                outcome[name] = 'connected'
            except OSError as error:
                outcome[name] = errno.errorcode.get(error.errno, str(error))
        outcome['interfaces'] = [name for _, name in socket.if_nameindex()]
        report(**outcome)
        """
        run = sandbox.run(escaped(attack), limits=FAST)
        with pytest.raises(TimeoutError):
            listener.accept()  # nobody came
    assert run.outcome == "passed", run.stderr
    found = result(run.stdout)
    # an empty network namespace: loopback only (up with bwrap, down with unshare)
    assert found["tcp"] in ("ECONNREFUSED", "ENETUNREACH")
    assert found["raw"] == found["packet"] == "EPERM"
    assert found["dns"] != "connected" and found["interfaces"] == ["lo"]


def test_setsid_child_dies_with_the_sandbox(sandbox: ProcessSandbox) -> None:
    token = f"{time.time_ns() % 10**6}.{uuid.uuid4().int % 10**6}"  # a unique sleep length
    attack = spawned(["/bin/sh", "-c", f"sleep {token}; echo LATE"], setsid=True, wait=False)
    attack += "import time\ntime.sleep(60)\n"
    run = sandbox.run(attack, limits=SandboxLimits(wall_s=1.5))
    assert run.outcome == "timeout" and run.wall_s < 10
    deadline = time.monotonic() + 3
    while host_processes(f"sleep\0{token}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert host_processes(f"sleep\0{token}") == []  # killed with the PID namespace
    assert "LATE" not in run.stdout


def test_fork_bomb_is_contained(sandbox: ProcessSandbox) -> None:
    token = f"{uuid.uuid4().int % 10**6}.5"
    bounded = f"""
    started = 0
    for _ in range(300):
        try:
            spawn(['/bin/sleep', '{token}'])
            started += 1
        except OSError:
            break
    report(started=started)
    """
    run = sandbox.run(escaped(bounded), limits=SandboxLimits(wall_s=10, processes=16))
    assert run.outcome == "passed", run.stderr
    assert 0 < result(run.stdout)["started"] < 16  # RLIMIT_NPROC of the sandbox's user
    assert host_processes(token) == []
    bomb = (
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n"
    )
    before = time.monotonic()
    run = sandbox.run(escaped(bomb), limits=SandboxLimits(wall_s=2, processes=16))
    assert run.outcome == "timeout" and time.monotonic() - before < 15


def test_seccomp_filter_denies_kernel_surface(sandbox: ProcessSandbox) -> None:
    attack = """
    import ctypes, os
    libc = ctypes.CDLL(None, use_errno=True)
    def errno_of(*call):
        ctypes.set_errno(0)
        value = libc.syscall(*call)
        return 0 if value >= 0 else ctypes.get_errno()
    status = open('/proc/self/status').read()
    report(seccomp=status.split('Seccomp:')[1].split()[0],
           unshare_user=errno_of(272, 0x10000000),          # unshare(CLONE_NEWUSER)
           keyctl=errno_of(250, 0, -3, 0),                  # keyctl(GET_KEYRING_ID, session)
           bpf=errno_of(321, 0, 0, 0), ptrace=errno_of(101, 16, 1, 0, 0),
           getpid=errno_of(39))
    """
    run = sandbox.run(escaped(attack), limits=FAST)
    assert run.outcome == "passed", run.stderr
    found = result(run.stdout)
    assert found["seccomp"] == "2"  # filter mode
    eperm = 1
    assert found["unshare_user"] == found["keyctl"] == found["bpf"] == found["ptrace"] == eperm
    assert found["getpid"] == 0  # ordinary calls are untouched


def test_limits(sandbox: ProcessSandbox) -> None:
    assert sandbox.run("while True:\n    pass\n", limits=SandboxLimits(wall_s=1)).outcome == (
        "timeout"
    )
    memory = sandbox.run("x = bytearray(1024**3)\n", limits=FAST)
    assert memory.outcome == "memory"
    big = "open('big', 'wb').write(b'x' * (8 * 2**20))\n"
    assert sandbox.run(big, limits=SandboxLimits(file_mb=1)).outcome == "failed"  # EFBIG
    spam = sandbox.run("print('x' * 10**7)\n", limits=SandboxLimits(output_bytes=1000))
    assert spam.outcome == "passed" and spam.truncated and len(spam.stdout) <= 1000


def test_guard_stays_an_extra_layer(sandbox: ProcessSandbox) -> None:
    blocked = sandbox.run("import os\nos.system('true')\n", limits=FAST)
    assert blocked.outcome == "blocked"


@pytest.fixture
def user_mode_sandboxes() -> Iterator[list[ProcessSandbox]]:
    """Both namespace backends with the caller's own id mapped (their non-root command
    lines; as root here the program then runs as namespace root without capabilities)."""
    from lightrft.adapters.sandbox.bwrap import BwrapBackend
    from lightrft.adapters.sandbox.unshare import UnshareBackend

    view = HostView.for_interpreter()
    backends = [BwrapBackend(view, sandbox_id=None), UnshareBackend(view, sandbox_id=None)]
    yield [ProcessSandbox.with_filter(b, view) for b in backends if b.missing() is None]


def test_user_mode_command_lines(user_mode_sandboxes: list[ProcessSandbox], host_dir: Path) -> None:
    assert user_mode_sandboxes
    for sandbox in user_mode_sandboxes:
        assert sandbox.run("print(6 * 7)\n", limits=FAST).stdout == "42\n"
        attack = f"""
        import os
        try:
            open('{host_dir}/planted', 'w').write('x')
            wrote = True
        except OSError:
            wrote = False
        report(wrote=wrote, caps=open('/proc/self/status').read().split('CapEff:')[1].split()[0])
        """
        found = result(sandbox.run(escaped(attack), limits=FAST).stdout)
        assert found == {"wrote": False, "caps": "0000000000000000"}
        assert not (host_dir / "planted").exists()
