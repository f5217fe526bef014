"""Whether two Hugging Face tokenizers give the same token ids: a teacher scores the
student's token ids, so both must map every token, and the special tokens, alike."""

from __future__ import annotations

from typing import Any

SPECIAL_IDS = ("bos_token_id", "eos_token_id", "pad_token_id", "unk_token_id")


def tokenizer_difference(student: Any, teacher: Any) -> str | None:
    """What differs between the two tokenizers' ids (the first difference found), or None."""
    for attribute in SPECIAL_IDS:
        mine, theirs = getattr(student, attribute, None), getattr(teacher, attribute, None)
        if mine != theirs:
            return f"{attribute} {mine} vs {theirs}"
    mine_vocab, their_vocab = student.get_vocab(), teacher.get_vocab()
    if len(mine_vocab) != len(their_vocab):
        return f"vocabulary size {len(mine_vocab)} vs {len(their_vocab)}"
    for token, index in mine_vocab.items():
        if their_vocab.get(token) != index:
            return f"token {token!r} has id {index} vs {their_vocab.get(token)}"
    return None


def check_same_tokenizer(student: Any, teacher: Any, student_path: str, teacher_path: str) -> None:
    """Raises ValueError naming both paths when the tokenizers' ids differ."""
    difference = tokenizer_difference(student, teacher)
    if difference is not None:
        raise ValueError(
            f"teacher {teacher_path} uses another tokenizer than the student {student_path} "
            f"({difference}; student vs teacher): a teacher scores the student's token ids, "
            "so both need the same tokenizer"
        )
