"""Run code in a kernel of a learner's JupyterLab through the hub, as a notebook tab does: a
websocket to /user/NAME/api/kernels/ID/channels carrying Jupyter's messages."""
from __future__ import annotations

import asyncio
import json
import uuid

from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect


def message(code: str) -> dict:
    return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": "execute_request",
                       "username": "test", "session": uuid.uuid4().hex, "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False,
                        "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}


async def _execute(url: str, token: str, code: str, seconds: float, wait: bool) -> str:
    request = HTTPRequest(url.replace("http", "ws", 1),
                          headers={"Authorization": f"token {token}"}, request_timeout=seconds)
    socket = await websocket_connect(request)
    sent = message(code)
    socket.write_message(json.dumps(sent))
    output = []
    try:
        while wait:
            reply = json.loads(await asyncio.wait_for(socket.read_message(), seconds))
            if reply.get("parent_header", {}).get("msg_id") != sent["header"]["msg_id"]:
                continue
            if reply["msg_type"] == "stream":
                output.append(reply["content"]["text"])
            if reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
                break
    finally:
        socket.close()
    return "".join(output)


def execute(hub, user: str, kernel_id: str, code: str, seconds: float = 120,
            wait: bool = True) -> str:
    """Run `code` in the kernel; what it printed (nothing, at once, when not `wait`)."""
    url = f"{hub.url}/user/{user}/api/kernels/{kernel_id}/channels"
    return asyncio.run(_execute(url, hub.token, code, seconds, wait))


def start_kernel(hub, user: str) -> str:
    reply = hub.request("POST", f"/user/{user}/api/kernels", {"name": "python3"})
    return json.loads(reply)["id"]


def kernels(hub, user: str) -> dict[str, str]:
    """The user's kernels: {id: execution state}."""
    return {k["id"]: k["execution_state"]
            for k in json.loads(hub.request("GET", f"/user/{user}/api/kernels"))}
