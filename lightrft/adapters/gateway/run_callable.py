"""Runs an agent given as a Python callable: ``python -m lightrft.adapters.gateway.run_callable
package.module:function``.

The function is called with the task (the ``LIGHTRFT_TASK`` JSON object) and reads the
endpoint from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` like any agent program; a number it
returns is written to ``LIGHTRFT_REWARD_FILE`` (its reward). It runs in this process of its
own so that the episode's deadline can kill it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys


def main(argv: list[str]) -> int:
    """Imports and calls the function named by ``argv[0]``; the exit status."""
    if len(argv) != 1 or ":" not in argv[0]:
        print("usage: run_callable package.module:function", file=sys.stderr)
        return 2
    module_name, _, name = argv[0].partition(":")
    function = getattr(importlib.import_module(module_name), name)
    result = function(json.loads(os.environ.get("LIGHTRFT_TASK", "{}")))
    if isinstance(result, int | float) and not isinstance(result, bool):
        with open(os.environ["LIGHTRFT_REWARD_FILE"], "w") as out:
            out.write(repr(float(result)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
