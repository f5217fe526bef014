"""Three reward sources scored one after another vs concurrently.

Run: ``.venv/bin/python bench/bench_reward_concurrency.py`` (about 20 s); prints a markdown
table. The sources, on the same 64 arithmetic answers:

- ``remote_a``: ``RemoteRewardSource`` against a local HTTP reward service (127.0.0.1, bearer
  token) that answers after ``--latency-a`` seconds (a reward model served elsewhere);
- ``remote_b``: the same against a second service answering after ``--latency-b`` seconds
  (a judge served elsewhere);
- ``math``: ``MathAnswerReward``, the rule verifier (off the main thread it checks in its
  worker process, see ``adapters/rewards/math_answer.py``).

Each mode (``sequential``: ``reward.max_concurrent_sources=1``; ``concurrent``: 3) scores
once to warm up, then ``--rounds`` times; the table gives the median wall time of one
``score_sources`` call, each source's median seconds, and the speed-up. The services only
sleep, so the gain is the waiting that overlaps; CPU-bound rules on threads share the GIL.
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import threading
import time
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from lightrft.adapters.reward_service.client import RemoteRewardSource
from lightrft.adapters.rewards import MathAnswerReward
from lightrft.application.source_scoring import SourceConcurrency, score_sources
from lightrft.domain.ports import RewardSource
from lightrft.domain.types import Completion, PromptRecord, RewardSample


def _service(latency_s: float, token: str) -> ThreadingHTTPServer:
    """A reward service on 127.0.0.1 that scores 1 per response with an even length."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            if self.headers.get("Authorization") != f"Bearer {token}":
                self.send_response(401)
                self.end_headers()
                return
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            time.sleep(latency_s)
            scores = [float(len(s["response"]) % 2 == 0) for s in body["samples"]]
            payload = json.dumps({"scores": scores, "metrics": {}}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _samples(n: int) -> list[RewardSample]:
    samples = []
    for i in range(n):
        prompt = PromptRecord(f"p{i}", f"What is {i} + {i}?", (1,), reference=str(2 * i))
        answer = str(2 * i if i % 3 else 2 * i + 1)  # a third wrong
        samples.append(RewardSample(prompt, Completion(0, (2,), f"The answer is {answer}", "stop")))
    return samples


def _run(
    sources: Sequence[RewardSource], samples: list[RewardSample], workers: int, rounds: int
) -> tuple[float, list[float]]:
    concurrency = SourceConcurrency(max_workers=workers, deadline_s=60.0)
    score_sources(sources, samples, concurrency)  # warm-up (the math worker process starts)
    walls, per_source = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        scored = score_sources(sources, samples, concurrency)
        walls.append(time.perf_counter() - start)
        per_source.append([seconds for _, seconds in scored])
    columns = list(zip(*per_source, strict=True))
    return statistics.median(walls), [statistics.median(c) for c in columns]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency-a", type=float, default=0.4, help="seconds, service A")
    parser.add_argument("--latency-b", type=float, default=0.25, help="seconds, service B")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    token = secrets.token_hex(16)
    servers = [_service(args.latency_a, token), _service(args.latency_b, token)]
    urls = [f"http://127.0.0.1:{s.server_address[1]}" for s in servers]
    sources: list[RewardSource] = [
        RemoteRewardSource(urls[0], name="remote_a", token=token),
        RemoteRewardSource(urls[1], name="remote_b", token=token),
        MathAnswerReward(name="math"),
    ]
    samples = _samples(args.samples)
    rows = [("sequential", *_run(sources, samples, 1, args.rounds))]
    rows.append(("concurrent", *_run(sources, samples, 3, args.rounds)))
    base = rows[0][1]
    names = [s.name for s in sources]
    print(f"{args.samples} samples, median of {args.rounds} rounds, seconds")
    print("| mode | " + " | ".join(names) + " | wall | speed-up |")
    print("|---" * (len(names) + 3) + "|")
    for mode, wall, seconds in rows:
        cells = " | ".join(f"{s:.3f}" for s in seconds)
        print(f"| {mode} | {cells} | {wall:.3f} | {base / wall:.2f}x |")
    for source in sources:
        source.close()
    for server in servers:
        server.shutdown()


if __name__ == "__main__":
    main()
