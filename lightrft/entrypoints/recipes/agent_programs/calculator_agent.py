"""A black-box calculator agent: the built-in multiplication task over the OpenAI chat-
completions protocol, with httpx only (no LightRFT import), as any user's agent would be.

It reads the endpoint from ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` / ``OPENAI_MODEL`` and the
task from ``LIGHTRFT_TASK`` (JSON, ``prompt``: the question), offers a ``calculator`` tool,
runs the tool itself on each ``tool_calls`` answer (exact arithmetic parsed with ``ast``),
sends the result back as a ``tool`` message, and stops at the first answer without a call
or after ``MAX_CALLS`` calls. It reports no reward: the run's reward sources grade its final
answer. Run as a program: ``python calculator_agent.py``.
"""

from __future__ import annotations

import ast
import json
import operator
import os
import sys

SYSTEM_PROMPT = (
    "You can use a calculator. To use it, reply with only "
    '<tool_call>{"name": "calculator", "arguments": {"expression": "..."}}</tool_call> '
    "and wait for its result. Then reply: The answer is N."
)
CALCULATOR = {
    "type": "function",
    "function": {
        "name": "calculator",
        "description": "exact arithmetic: + - * / and parentheses",
        "parameters": {
            "type": "object",
            "properties": {"expression": {"type": "string"}},
            "required": ["expression"],
        },
    },
}
MAX_CALLS = 3
MAX_TOKENS = 40
OPERATORS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def calculate(expression: str) -> str:
    """The value of ``expression`` (numbers, + - * /, parentheses), or an error message."""

    def value(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in OPERATORS:
            return OPERATORS[type(node.op)](value(node.left), value(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -value(node.operand)
        raise ValueError("unsupported expression")

    if len(expression) > 200:
        return "error: expression too long"
    try:
        result = value(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError) as error:
        return f"error: {error}"
    return str(int(result)) if float(result).is_integer() else str(result)


def main() -> int:
    import httpx

    task = json.loads(os.environ["LIGHTRFT_TASK"])
    prompt = task["prompt"]
    question = prompt if isinstance(prompt, str) else prompt[-1]["content"]
    messages = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    with httpx.Client(
        base_url=os.environ["OPENAI_BASE_URL"],
        headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
        timeout=600,
    ) as client:
        for _ in range(MAX_CALLS):
            response = client.post(
                "/chat/completions",
                json={
                    "model": os.environ.get("OPENAI_MODEL", "policy"),
                    "messages": messages,
                    "tools": [CALCULATOR],
                    "max_tokens": MAX_TOKENS,
                },
            )
            response.raise_for_status()
            message = response.json()["choices"][0]["message"]
            messages.append(message)
            calls = message.get("tool_calls") or []
            if not calls:
                break
            for call in calls:
                try:
                    arguments = json.loads(call["function"]["arguments"])
                    result = calculate(str(arguments.get("expression", "")))
                except (ValueError, AttributeError):
                    result = "error: bad arguments"
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
