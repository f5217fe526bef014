"""Repeated SIGKILL trial: kill `lightrft train` again and again, resume after each kill, and
check that the run ends bitwise equal to an uninterrupted one.

    python scripts/sigkill_trial.py --kills 20 [--steps 30] [--seed 0] [--work DIR]

Runs from the repository root on a tiny random Llama (built from a config, nothing is
downloaded). Half of the kills are random (a random moment after the process has logged a
new step), half are aimed at checkpoint writes (the moment a ``.tmp-step_*`` directory shows
up in ``checkpoints/``). Every restart uses ``--resume=auto``. At the end the final weights
must equal the uninterrupted run's bit for bit, ``metrics.jsonl`` must hold every step once
with the same values, and ``lightrft checkpoints verify`` must pass. Prints one JSON object
with the counts; exits 1 if anything differs.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the tests' helpers (tiny model, command line)
RUN = [
    "rollout.max_new_tokens=6",
    "rollout.prompts_per_step=2",
    "rollout.n_samples_per_prompt=2",
    "data.train.num_builtin=64",
    "data.eval.num_builtin=4",
    "eval.max_prompts=4",
    "eval.every=10",
    "optim.lr=1e-3",
    "checkpoint.every=1",
    "checkpoint.keep_last=2",
    "logging.progress=false",
]
VOLATILE = ("time", "throughput/", "memory/")


@dataclass
class TrialResult:
    kills: int = 0
    kills_during_checkpoint_write: int = 0
    restarts: int = 0
    steps: int = 0
    weights_bitwise_equal: bool = False
    metrics_equal: bool = False
    metrics_steps_unique: bool = False
    checkpoints_verified: bool = False
    mismatches: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (
            self.weights_bitwise_equal
            and self.metrics_equal
            and self.metrics_steps_unique
            and self.checkpoints_verified
        )


def _command(model: Path, run_dir: Path, steps: int, *extra: str) -> list[str]:
    from tests.helpers.cli_runs import train_grpo_command

    return train_grpo_command(model, run_dir, f"train.total_steps={steps}", *RUN, *extra)


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}


def _logged_rows(run_dir: Path) -> int:
    path = run_dir / "metrics.jsonl"
    return path.read_text().count("\n") if path.exists() else 0


def _writing_checkpoint(run_dir: Path) -> bool:
    root = run_dir / "checkpoints"
    try:
        return any(e.name.startswith(".tmp-step_") for e in os.scandir(root))
    except FileNotFoundError:
        return False


def _wait_and_kill(
    proc: subprocess.Popen[bytes], run_dir: Path, aimed: bool, rng: random.Random
) -> tuple[bool, bool]:
    """Kills ``proc`` at a random moment after it logged a new step, or (``aimed``) while a
    checkpoint is being written. Returns (killed, during a checkpoint write)."""
    rows = _logged_rows(run_dir)
    deadline = time.monotonic() + 300
    while _logged_rows(run_dir) <= rows and not aimed:
        if proc.poll() is not None or time.monotonic() > deadline:
            return False, False
        time.sleep(0.005)
    if aimed:
        while not _writing_checkpoint(run_dir):
            if proc.poll() is not None or time.monotonic() > deadline:
                return False, False
        during = True
    else:
        time.sleep(rng.uniform(0.0, 0.6))
        during = _writing_checkpoint(run_dir)
    if proc.poll() is not None:
        return False, False
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    return True, during


def _metrics(run_dir: Path) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith(VOLATILE)} for r in rows]


def _compare(reference: Path, trial: Path, result: TrialResult) -> None:
    import torch
    from safetensors.torch import load_file

    want = load_file(str(reference / "final_model" / "model.safetensors"))
    got = load_file(str(trial / "final_model" / "model.safetensors"))
    result.weights_bitwise_equal = want.keys() == got.keys() and all(
        torch.equal(want[k], got[k]) for k in want
    )
    expected, seen = _metrics(reference), _metrics(trial)
    steps = [row["step"] for row in seen]
    result.metrics_steps_unique = steps == sorted(set(steps))
    result.metrics_equal = expected == seen
    if not result.metrics_equal:
        result.mismatches += [
            f"step {a.get('step')}: {a} != {b}"
            for a, b in zip(expected, seen, strict=False)
            if a != b
        ][:3]
    verify = subprocess.run(
        [sys.executable, "-m", "lightrft.entrypoints.cli", "checkpoints", "verify", str(trial)],
        env=_env(),
        capture_output=True,
        text=True,
    )
    result.checkpoints_verified = verify.returncode == 0


def run_trial(
    model: Path, work: Path, *, kills: int, steps: int, seed: int, extra: Sequence[str] = ()
) -> TrialResult:
    """The whole trial in ``work`` (reference run, killed run); see the module docstring.
    ``extra``: ``key=value`` overrides of both runs (e.g. a cost constraint)."""
    rng = random.Random(seed)
    reference, trial = work / "reference", work / "killed"
    subprocess.run(
        _command(model, reference, steps, *extra), env=_env(), check=True, capture_output=True
    )
    result = TrialResult()
    while result.kills < kills:
        command = _command(model, trial, steps, *extra, "--resume=auto")
        proc = subprocess.Popen(
            command, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        result.restarts += 1

        killed, during = _wait_and_kill(proc, trial, aimed=result.kills % 2 == 1, rng=rng)
        if not killed:  # the run ended before the kill: nothing left to interrupt
            break
        result.kills += 1
        result.kills_during_checkpoint_write += during
    final = subprocess.run(
        _command(model, trial, steps, *extra, "--resume=auto"), env=_env(), capture_output=True
    )
    result.restarts += 1
    if final.returncode != 0:
        result.mismatches.append(final.stderr.decode()[-2000:])
        return result
    result.steps = steps
    _compare(reference, trial, result)
    return result


def _tiny_model(path: Path) -> Path:
    from tests.unit.adapters.hf.hf_tiny import tiny_model, tiny_tokenizer

    tiny_model().save_pretrained(path)
    tiny_tokenizer().save_pretrained(path)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--kills", type=int, default=20)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=Path("runs/sigkill_trial"))
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    for name in ("reference", "killed", "model"):
        subprocess.run(["rm", "-rf", str(args.work / name)], check=True)
    model = _tiny_model(args.work / "model")
    result = run_trial(model, args.work, kills=args.kills, steps=args.steps, seed=args.seed)
    print(json.dumps({**asdict(result), "ok": result.ok}, indent=2))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
