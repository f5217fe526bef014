"""A teacher served over HTTP (on-policy distillation): the student's token ids go to an
SGLang or vLLM server, which returns the log-prob of every input token; the response
tokens' log-probs are the teacher's (:class:`~.teacher.RemoteTeacher`)."""

from lightrft.adapters.remote_teacher.dialects import DIALECTS, dialect_of
from lightrft.adapters.remote_teacher.teacher import RemoteTeacher, RemoteTeacherError

__all__ = ["DIALECTS", "RemoteTeacher", "RemoteTeacherError", "dialect_of"]
