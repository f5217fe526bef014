"""Chat templates of the model families LightRFT ships tests for, as jinja strings (no
download), and a small BPE tokenizer trained in the test with each family's special tokens.

``SMOLLM2`` is the embedded model's template verbatim; ``QWEN25`` follows Qwen2.5-Instruct's
(default system prompt, tools in the system prompt, tool results merged into one ``user``
turn of ``<tool_response>`` blocks); ``LLAMA3`` is the Llama-3 header format with tool
results in an ``ipython`` turn (Llama-3.1's own template also writes today's date into the
system prompt, left out here so renderings do not depend on the day). ``QWEN25_VL`` is the
template Qwen2-VL and Qwen2.5-VL publish (``chat_template.json``; "You are a helpful
assistant." system prompt, content parts, one ``<|vision_start|><|image_pad|><|vision_end|>``
per image part, ``Picture N:`` labels with ``add_vision_id``), written out from the published
format since tests have no network.
"""

from __future__ import annotations

from dataclasses import dataclass

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

SMOLLM2 = (
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}"
)

QWEN25 = (
    "{%- if tools %}{{- '<|im_start|>system\n' }}"
    "{%- if messages[0]['role'] == 'system' %}{{- messages[0]['content'] }}"
    "{%- else %}{{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}"
    "{%- endif %}"
    '{{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.'
    '\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}'
    '{%- for tool in tools %}{{- "\n" }}{{- tool | tojson }}{%- endfor %}'
    '{{- "\n</tools>\n\nFor each function call, return a json object with function name and '
    'arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\\"name\\": '
    '<function-name>, \\"arguments\\": <args-json-object>}\n</tool_call><|im_end|>\n" }}'
    "{%- else %}{%- if messages[0]['role'] == 'system' %}"
    "{{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}"
    "{%- else %}{{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a "
    "helpful assistant.<|im_end|>\n' }}{%- endif %}{%- endif %}"
    "{%- for message in messages %}"
    '{%- if (message.role == "user") or (message.role == "system" and not loop.first) or '
    '(message.role == "assistant" and not message.tool_calls) %}'
    "{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}"
    "{%- elif message.role == \"assistant\" %}{{- '<|im_start|>' + message.role }}"
    "{%- if message.content %}{{- '\n' + message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    '{{- \'\n<tool_call>\n{"name": "\' }}{{- tool_call.name }}{{- \'", "arguments": \' }}'
    "{{- tool_call.arguments | tojson }}{{- '}\n</tool_call>' }}{%- endfor %}"
    "{{- '<|im_end|>\n' }}"
    '{%- elif message.role == "tool" %}'
    '{%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}'
    "{{- '<|im_start|>user' }}{%- endif %}"
    "{{- '\n<tool_response>\n' }}{{- message.content }}{{- '\n</tool_response>' }}"
    '{%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}'
    "{{- '<|im_end|>\n' }}{%- endif %}{%- endif %}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}"
)

LLAMA3 = (
    "{{- '<|begin_of_text|>' }}"
    "{%- for message in messages %}"
    "{%- set role = 'ipython' if message['role'] == 'tool' else message['role'] %}"
    "{{- '<|start_header_id|>' + role + '<|end_header_id|>\n\n' + message['content'] | trim "
    "+ '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    "{%- endif %}"
)

QWEN25_VL = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n{% if message['content'] is string %}"
    "{{ message['content'] }}<|im_end|>\n{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class Family:
    name: str
    template: str
    specials: tuple[str, ...]
    end_of_turn: str
    added: tuple[str, ...] = ()  # non-special added tokens (Qwen's <tool_call> tags)


CHATML_SPECIALS = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")
FAMILIES = (
    Family("smollm2", SMOLLM2, CHATML_SPECIALS, "<|im_end|>"),
    Family("qwen2.5", QWEN25, CHATML_SPECIALS, "<|im_end|>", ("<tool_call>", "</tool_call>")),
    Family(
        "llama3",
        LLAMA3,
        ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"),
        "<|eot_id|>",
    ),
    Family(
        "qwen2.5-vl",
        QWEN25_VL,
        (*CHATML_SPECIALS, "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"),
        "<|im_end|>",
    ),
)

_CORPUS = [
    "You are a helpful AI assistant. What is 1234 * 5678? The answer is 7006652.",
    'Call the calculator: {"name": "calculator", "arguments": {"expression": "12 * 34"}}',
    "the tool says 408, so the answer is 408. Let me compute that with python first.",
    "print(sum(range(10)))\n\n45\n error: division by zero",
] * 4


def family_tokenizer(family: Family) -> PreTrainedTokenizerFast:
    """A byte-level BPE (GPT-2 pre-tokenizer) trained on a small corpus, with the family's
    special tokens, end-of-turn token as EOS, and chat template."""
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=list(family.specials),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(_CORPUS, trainer)
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token=family.end_of_turn, pad_token=family.end_of_turn
    )
    tok.add_special_tokens({"additional_special_tokens": list(family.specials)})
    if family.added:
        tok.add_tokens(list(family.added))
    tok.chat_template = family.template
    return tok
