"""Typed extension messages: declare a ``_vendor/method`` request or notification in one line.

ACP reserves method names that start with an underscore for extensions. Declare one as a class
and it is used like any schema message: the engine validates its params for handlers that take
it, and ``await cx.send_request(...)`` gives its response type::

    class BufferList(ExtensionResponse):
        buffers: list[str]

    class ListBuffers(ExtensionRequest, method="_zed.dev/workspace/buffers", response=BufferList):
        language: str | None = None

    class FileOpened(ExtensionNotification, method="_zed.dev/file_opened"):
        path: str

    buffers = await cx.send_request(ListBuffers(language="rust"))   # a BufferList

    @app.on_request
    async def list_buffers(request: ListBuffers, responder, cx) -> BufferList: ...

Fields follow the schema models' rules: snake_case attributes, camelCase on the wire, unknown
fields kept. Use ``pydantic.Field(alias=...)`` for a wire name that is not the camelCase of
the attribute.
"""

from __future__ import annotations

from typing import Any, ClassVar

from acpio.schema.base import AcpJson, AcpModel, AcpNotification, AcpRequest, AcpResponse

__all__ = ["ExtensionNotification", "ExtensionRequest", "ExtensionResponse", "check_extension_method"]


def check_extension_method(method: str) -> str:
    """Return ``method`` if it is an extension method name, else raise ``ValueError`` saying why.

    Extension methods start with ``_`` and name a vendor (``_zed.dev/workspace/buffers``); the rest
    of the namespace belongs to the protocol.
    """
    if not isinstance(method, str) or not method.startswith("_") or len(method) < 2:
        raise ValueError(
            f"{method!r} is not an extension method: extension methods start with an underscore "
            "and name their vendor, for example '_example.com/do_something'"
        )
    return method


class ExtensionResponse(AcpResponse):
    """Base of an extension request's result. Subclass it and add fields."""


class ExtensionRequest(AcpRequest[Any]):
    """Base of an extension request: ``class Do(ExtensionRequest, method="_v/do", response=Done)``.

    ``response`` defaults to :class:`acpio.schema.AcpJson` (any JSON result, kept as it is).
    """

    def __init_subclass__(
        cls,
        *,
        method: str | None = None,
        response: type[AcpModel] | type[AcpJson] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if method is not None:
            cls.METHOD = check_extension_method(method)
        if response is not None:
            cls.RESPONSE = response
        elif not hasattr(cls, "RESPONSE"):
            cls.RESPONSE = AcpJson
        answer = cls.RESPONSE
        if method is not None and issubclass(answer, AcpResponse) and "METHOD" not in answer.__dict__:
            answer.METHOD = cls.METHOD


class ExtensionNotification(AcpNotification):
    """Base of an extension notification: ``class Ping(ExtensionNotification, method="_v/ping")``."""

    METHOD: ClassVar[str]

    def __init_subclass__(cls, *, method: str | None = None, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if method is not None:
            cls.METHOD = check_extension_method(method)
