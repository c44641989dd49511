"""A dashboard user without a browser: one Streamlit session over the websocket protocol a browser tab speaks.

For load benchmarks whose other users' browsers would be on other machines: the server does all it does
for a browser tab (session, reruns, every element serialised and sent), but nothing is drawn here, so
the only CPU those users take on this machine is the server's. Written against the `websockets` package
(a dependency of Streamlit) and Streamlit's own protobuf messages, because neither Streamlit nor
Playwright offers a client without a browser.

    async with Session.open(base, "playground", {"question": "Why ...?"}) as tab:
        await tab.run()                                  # the page as first loaded
        await tab.run({tab.widget("text_area", "Question"): "Why ...?", tab.widget("button", "Ask"): True})
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from urllib.parse import urlencode, urlsplit

import websockets
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg


class PageFailed(RuntimeError):
    """The rerun drew an error or an exception box."""


class Session:
    def __init__(self, socket, page: str, params: dict[str, str]):
        self._socket, self._page, self.query_string = socket, page, urlencode(params)
        self.elements: list = []  # the last rerun's elements (Element protos), in the order sent

    @classmethod
    @asynccontextmanager
    async def open(cls, base: str, page: str, params: dict[str, str] | None = None) -> AsyncIterator[Session]:
        """A session on `page` (its URL path, e.g. "playground") of the server at `base` (http://host:port)."""
        host = urlsplit(base).netloc
        async with websockets.connect(
            f"ws://{host}/_stcore/stream", subprotocols=["streamlit"], origin=base, max_size=None
        ) as socket:
            yield cls(socket, page, params or {})

    async def run(self, widgets: dict[str, object] | None = None, timeout: float = 600) -> list:
        """Rerun the page with these widget values ({widget id: value}; True for a button's click), as a
        browser does when a widget changes, and wait until the script has finished (TimeoutError after
        `timeout` seconds). Returns the elements.
        Widgets not named keep their values, as in the browser."""
        message = BackMsg()
        state = message.rerun_script
        state.query_string, state.page_name = self.query_string, self._page
        for widget_id, value in (widgets or {}).items():
            one = state.widget_states.widgets.add(id=widget_id)
            if value is True:
                one.trigger_value = True
            elif isinstance(value, str):
                one.string_value = value
            else:
                raise TypeError(f"{widget_id}: a click (True) or text, not {value!r}")
        await self._socket.send(message.SerializeToString())
        self.elements = []
        async with asyncio.timeout(timeout):
            while True:
                reply = ForwardMsg()
                reply.ParseFromString(await self._socket.recv(decode=False))
                kind = reply.WhichOneof("type")
                if kind == "delta" and reply.delta.WhichOneof("type") == "new_element":
                    self.elements.append(reply.delta.new_element)
                elif kind == "page_info_changed":  # a widget bound to the URL changed it
                    self.query_string = reply.page_info_changed.query_string
                elif kind == "script_finished":
                    break
        for element in self.elements:
            if element.WhichOneof("type") == "exception":
                raise PageFailed(f"{self._page}: {element.exception.message}")
            if element.WhichOneof("type") == "alert" and element.alert.format == element.alert.ERROR:
                raise PageFailed(f"{self._page}: {element.alert.body}")
        return self.elements

    def widget(self, kind: str, label: str) -> str:
        """The id of the last rerun's `kind` widget (the Element field: "button", "text_area", ...) labelled `label`."""
        for element in self.elements:
            if element.WhichOneof("type") == kind and getattr(element, kind).label == label:
                return getattr(element, kind).id
        raise LookupError(f"{self._page}: no {kind} labelled {label!r} in the last rerun")

    def texts(self) -> list[str]:
        """The Markdown text of the last rerun (st.markdown, st.caption, st.write)."""
        return [e.markdown.body for e in self.elements if e.WhichOneof("type") == "markdown"]
