"""A config field whose value is a name of a :class:`~lightrft.domain.registry.Registry`
(``algorithm.advantage_estimator``, ``algorithm.policy_loss``, ...).

The choices are read from the registry when a config is validated and when its JSON schema
is drawn, not listed again here, so a plugin module that registers an estimator or a loss
(imported before validation, see ``plugins``) makes its name a valid choice. An unknown name
is refused in pydantic's words for a choice, listing every registered spelling in
registration order: ``Input should be 'ppo', 'dapo', ... or 'reinforce'``.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import GetCoreSchemaHandler, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from lightrft.domain.registry import Registry


def _one_of(names: tuple[str, ...]) -> str:
    quoted = [repr(name) for name in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


class _RegisteredName:
    """The pydantic schema of a name of ``registry`` (see the module docstring)."""

    def __init__(self, registry: Registry[Any]) -> None:
        self.registry = registry

    def _validate(self, value: Any) -> str:
        if not isinstance(value, str) or value not in self.registry:
            raise PydanticCustomError(
                "registered_name",
                "Input should be {expected}",
                {"expected": _one_of(self.registry.in_order())},
            )
        return value

    def __get_pydantic_core_schema__(
        self, _source: Any, _handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        return core_schema.no_info_plain_validator_function(
            self._validate, serialization=core_schema.to_string_ser_schema()
        )

    def __get_pydantic_json_schema__(
        self, _schema: CoreSchema, _handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return {"type": "string", "enum": list(self.registry.in_order())}


def registered_name(registry: Registry[Any]) -> Any:
    """The annotation of a field holding one name (or alias) registered in ``registry``."""
    return Annotated[str, _RegisteredName(registry)]
