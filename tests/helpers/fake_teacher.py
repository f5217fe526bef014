"""A fake served teacher for the remote-teacher tests: a FastAPI app answering SGLang's native
``/generate`` and vLLM's ``/v1/completions`` (token ids in, the log-prob of every input token
out, the first without one) and their model-info routes, computed by a real HF causal LM in
float32. ``failures``: how many ``/generate`` or ``/v1/completions`` requests answer 503
first (retries); ``requests`` counts them all, ``sizes`` the sequences of each."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from fastapi import FastAPI, HTTPException
from transformers import AutoModelForCausalLM


class FakeTeacher:
    def __init__(self, model_dir: Path, *, failures: int = 0, report_dir: str | None = None):
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, torch_dtype=torch.float32)
        self.model.eval()
        self.report_dir = str(model_dir) if report_dir is None else report_dir
        self.failures, self.requests, self.sizes = failures, 0, []

    def logprobs(self, ids: list[int]) -> list[float | None]:
        """The model's log-prob of every token of ``ids`` given the ones before (first: None)."""
        with torch.no_grad():
            logits = self.model(torch.tensor([ids])).logits[0].float()
        picked = logits[:-1].log_softmax(-1).gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
        return [None, *picked.tolist()]

    def _count(self, size: int) -> None:
        self.requests += 1
        self.sizes.append(size)
        if self.failures > 0:
            self.failures -= 1
            raise HTTPException(503, "warming up")

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/generate")
        def generate(body: dict[str, Any]) -> Any:
            ids = body["input_ids"]
            batched = bool(ids) and isinstance(ids[0], list)
            rows = ids if batched else [ids]
            self._count(len(rows))
            assert body["return_logprob"] is True and body["logprob_start_len"] == 0
            assert body["sampling_params"]["max_new_tokens"] == 0
            results = [
                {
                    "text": "",
                    "meta_info": {
                        "input_token_logprobs": [
                            [lp, token, None]
                            for lp, token in zip(self.logprobs(row), row, strict=True)
                        ]
                    },
                }
                for row in rows
            ]
            return results if batched else results[0]

        @app.post("/v1/completions")
        def completions(body: dict[str, Any]) -> Any:
            rows = body["prompt"]
            self._count(len(rows))
            assert body["prompt_logprobs"] == 0
            choices = []
            for index, row in enumerate(rows):
                entries: list[Any] = [None]
                for lp, token in zip(self.logprobs(row)[1:], row[1:], strict=True):
                    entries.append({str(token): {"logprob": lp, "rank": 1, "decoded_token": "x"}})
                choices.append({"index": index, "text": "", "prompt_logprobs": entries})
            return {"choices": list(reversed(choices))}  # read by index, not order

        @app.get("/get_model_info")
        def model_info() -> Any:
            return {"model_path": self.report_dir, "is_generation": True}

        @app.get("/v1/models")
        def models() -> Any:
            return {"data": [{"id": "teacher", "root": self.report_dir}]}

        return app
