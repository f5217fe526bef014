"""Attack programs for the sandbox tests: each first gets past the audit-hook guard.

``escaped(code)`` is a program that starts a fresh interpreter with
``_posixsubprocess.fork_exec`` (a standard-library C call without an audit event, the bypass
the audit found) and runs ``code`` in it (``spawn`` and ``report`` defined): plain Python with no guard, so the only
thing between ``code`` and the host is the OS boundary. ``code`` prints ``RESULT <json>``
lines that the tests read back.
"""

from __future__ import annotations

import json
import textwrap

SPAWN = '''
import _posixsubprocess, os, sys

def spawn(argv, setsid=False):
    """fork + exec without any audit event; returns the pid."""
    args = [os.fsencode(a) for a in argv]
    err_r, err_w = os.pipe()
    common = (args, [args[0]], True, (), None, None, -1, -1, -1, -1, -1, -1,
              err_r, err_w, True, setsid, -1, None, None, None, -1, None)
    try:
        pid = _posixsubprocess.fork_exec(*common, False)
    except TypeError:
        pid = _posixsubprocess.fork_exec(*common)
    os.close(err_w)
    failure = os.read(err_r, 1000)
    os.close(err_r)
    if failure:
        raise OSError(failure.decode(errors="replace"))
    return pid
'''


def escaped(code: str) -> str:
    """A program that runs ``code`` in an unguarded interpreter and waits for it."""
    inner = (
        SPAWN + "import json\ndef report(**kw):\n    print('RESULT', json.dumps(kw), flush=True)\n"
    )
    inner += textwrap.dedent(code)
    return SPAWN + (
        f"pid = spawn([sys.executable, '-I', '-c', {inner!r}])\n"
        "_, status = os.waitpid(pid, 0)\n"
        "sys.exit(os.waitstatus_to_exitcode(status))\n"
    )


def spawned(argv: list[str], *, setsid: bool = False, wait: bool = True) -> str:
    """A program that starts ``argv`` directly with ``fork_exec``."""
    body = f"pid = spawn({argv!r}, setsid={setsid!r})\n"
    if wait:
        body += "_, status = os.waitpid(pid, 0)\nprint('RESULT', json.dumps({'status': status}))\n"
    return SPAWN + "import json\n" + body


def results(stdout: str) -> list[dict[str, object]]:
    """The ``RESULT`` objects printed by the attack, in order."""
    prefix = "RESULT "
    return [
        json.loads(line[len(prefix) :]) for line in stdout.splitlines() if line.startswith(prefix)
    ]


def result(stdout: str) -> dict[str, object]:
    """The one ``RESULT`` object (fails the test if there is not exactly one)."""
    found = results(stdout)
    assert len(found) == 1, f"expected one RESULT line, got {stdout!r}"
    return found[0]
