"""The Python side of the interop test: a conduit peer with handlers the TypeScript test calls.

    python3 demo_server.py --stdio [--codec json|msgpack]
    python3 demo_server.py --unix /path/to/socket [--codec json|msgpack]
    python3 demo_server.py --worker [--codec json|msgpack]
    python3 demo_server.py --stdio --bad-headers

`--bad-headers`: after its greeting, the demo calls `ts.echo` with a meta of 33 headers, one
over §6's limit, bypassing its own check; conduit must close with GOODBYE protocol_error. The
demo prints `demo_server: bad headers: ` and the error its call failed with to stderr, and exits
0 when that error is the GOODBYE protocol_error, 1 otherwise.

`--worker` follows the worker contract of docs/protocol.md §13, as spawnWorker starts it: the
Unix socket named by CONDUIT_WORKER_SOCKET when it is set (stdin then only tells when the
parent is gone), else stdin/stdout.

On start it calls `ts.echo` on the other side and sends the notification `py.started` with
what came back. It then serves until the other side says GOODBYE, and exits 0 only if every
check it made on its own side passed (1 otherwise, 2 when the handshake failed; the reason
goes to stderr).

Handlers:
  add({a, b})          -> a + b
  fail()               -> an error with name, code, data and a cause
  count({n, size?})    -> server stream of {i, pad} for i in 0..n-1 (pad: `size` spaces)
  sum(stream)          -> client stream: the sum of the numbers sent
  measure(stream)      -> client stream of strings: {count, chars}
  slow()               -> notifies py.slowStarted, waits until cancelled (CANCEL or deadline),
                          then notifies py.cancelled {method, reason}
  ticks()              -> endless server stream; on cancel notifies py.cancelled {method, sent}
  callBack({x})        -> calls ts.double(x) while serving this call; returns its result
  notifications()      -> the notifications received so far, as [[method, param], ...]
  wasCancelled()       -> {method: reason} of the handlers that saw a CANCEL
  stats()              -> frames sent and received so far, by kind and R flag
  goodbye()            -> "bye", then Python closes the connection (GOODBYE from this side)
  reverse({n, size})   -> the other direction: consumes ts.range({n, size}) (a result stream
                          from TS), sends ts.total a param stream of 0..n-1, catches ts.fail's
                          error, cancels a running ts.wait; returns what it saw
  headers()            -> the headers of this call (§6 call meta), as {name: value}
  headersBack({headers}) -> calls ts.headers with these headers and returns
                          {seen: what ts.headers returned, refused: [the CallMetaError messages
                          of calls Python refused to send: 33 headers, a bad name, a bad value]}
On a notification `ts.poke` it answers with the notification `py.poked` carrying the param.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any, AsyncIterator

from conduit_peer import (CallContext, CallMetaError, ConnectionClosedError, HandshakeError, Peer,
                          PeerOptions, RemoteError, error_to_wire, stdio_streams, unix_streams)


class DemoState:
    """What the demo saw, for the handlers that report it back."""

    def __init__(self) -> None:
        self.notifications: list[list[Any]] = []
        self.cancelled: dict[str, Any] = {}
        self.problems: list[str] = []
        self.peer: Peer | None = None
        self.closing: asyncio.Future[None] | None = None
        self._expected: dict[str, asyncio.Future[Any]] = {}

    def expect(self, method: str) -> asyncio.Future[Any]:
        """A future of the next notification named `method`."""
        future = asyncio.get_running_loop().create_future()
        self._expected[method] = future
        return future

    def received(self, method: str, param: Any) -> None:
        self.notifications.append([method, param])
        future = self._expected.pop(method, None)
        if future is not None and not future.done():
            future.set_result(param)


def build_handlers(state: DemoState) -> dict[str, Any]:
    async def add(param: Any, ctx: CallContext) -> Any:
        return param["a"] + param["b"]

    async def fail(param: Any, ctx: CallContext) -> Any:
        cause = RemoteError("disk on fire", name="IOError", code="EIO")
        raise RemoteError("python handler failed", name="DemoError", code="demo_failure",
                          data={"answer": 42, "list": [1, "two"]}, cause=cause)

    async def count(param: Any, ctx: CallContext) -> AsyncIterator[Any]:
        pad = " " * int(param.get("size", 0))
        for i in range(int(param["n"])):
            yield {"i": i, "pad": pad}

    async def sum_(stream: Any, ctx: CallContext) -> Any:
        total = 0
        async for item in stream:
            total += item
        return total

    async def measure(stream: Any, ctx: CallContext) -> Any:
        count = chars = 0
        async for item in stream:
            count += 1
            chars += len(item)
        return {"count": count, "chars": chars}

    async def slow(param: Any, ctx: CallContext) -> Any:
        await _notify(state, "py.slowStarted", {"id": ctx.id})
        try:
            await asyncio.Event().wait()  # only a CANCEL (or deadline) ends this
        except asyncio.CancelledError:
            state.cancelled["slow"] = ctx.cancel_reason
            await _notify(state, "py.cancelled", {"method": "slow", "reason": ctx.cancel_reason})
            raise

    async def ticks(param: Any, ctx: CallContext) -> AsyncIterator[Any]:
        sent = 0
        try:
            while True:
                yield sent
                sent += 1
                await asyncio.sleep(0.001)
        except (asyncio.CancelledError, GeneratorExit):
            state.cancelled["ticks"] = sent
            await _notify(state, "py.cancelled", {"method": "ticks", "sent": sent})
            raise

    async def call_back(param: Any, ctx: CallContext) -> Any:
        return await ctx.peer.call("ts.double", param["x"])

    async def notifications(param: Any, ctx: CallContext) -> Any:
        return state.notifications

    async def was_cancelled(param: Any, ctx: CallContext) -> Any:
        return state.cancelled

    async def stats(param: Any, ctx: CallContext) -> Any:
        return dict(ctx.peer.stats)

    async def goodbye(param: Any, ctx: CallContext) -> Any:
        # In flight calls finish after GOODBYE (§10), so this call still gets its RESULT.
        state.closing = asyncio.ensure_future(ctx.peer.close("python is done"))
        return "bye"

    async def reverse(param: Any, ctx: CallContext) -> Any:
        peer, n, size = ctx.peer, param["n"], param["size"]
        items = [item async for item in peer.call_stream("ts.range", {"n": n, "size": size})]
        report: dict[str, Any] = {
            "range": {"count": len(items), "inOrder": [i["i"] for i in items] == list(range(n)),
                      "sizes": sorted({len(i["pad"]) for i in items})},
            "total": await peer.call("ts.total", param_stream=_numbers(n)),
        }
        try:
            await peer.call("ts.fail")
        except RemoteError as err:
            report["error"] = error_to_wire(err)
        waiting = state.expect("ts.waiting")
        pending = asyncio.create_task(peer.call("ts.wait"))
        await waiting  # the TS handler is running: now cancel it
        pending.cancel()
        try:
            await pending
        except asyncio.CancelledError:
            report["cancelled"] = True
        return report

    async def attempt(param: Any, ctx: CallContext) -> Any:
        return {"key": ctx.key, "attempt": ctx.attempt}  # §6 call meta

    async def headers(param: Any, ctx: CallContext) -> Any:
        return dict(ctx.headers)  # §6 call meta

    async def headers_back(param: Any, ctx: CallContext) -> Any:
        refused = []
        too_many = {f"h{i}": "v" for i in range(33)}
        for bad in (too_many, {"Bad": "x"}, {"x-ok": "caf\u00e9"}):
            try:
                await ctx.peer.call("ts.headers", headers=bad)
                refused.append(None)
            except CallMetaError as err:
                refused.append(str(err))
        seen = await ctx.peer.call("ts.headers", headers=param["headers"])
        return {"seen": seen, "refused": refused}

    return {
        "headers": headers, "headersBack": headers_back,
        "attempt": attempt, "add": add, "fail": fail, "count": count, "sum": sum_, "measure": measure, "slow": slow,
        "ticks": ticks, "callBack": call_back, "notifications": notifications,
        "wasCancelled": was_cancelled, "stats": stats, "reverse": reverse,
        "goodbye": goodbye,
    }


async def _numbers(n: int) -> AsyncIterator[int]:
    for i in range(n):
        yield i


async def _notify(state: DemoState, method: str, param: Any) -> None:
    """Notifies from a cancelled handler; the connection may be closing by then."""
    if state.peer is not None:
        try:
            await state.peer.notify(method, param)
        except Exception as err:  # closing: the report is best effort
            print(f"demo: could not notify {method}: {err}", file=sys.stderr)


def build_on_notify(state: DemoState):
    async def on_notify(method: str, param: Any) -> None:
        state.received(method, param)
        if method == "ts.poke" and state.peer is not None:
            await state.peer.notify("py.poked", param)
    return on_notify


async def greet(peer: Peer, state: DemoState) -> None:
    """The calls the Python side starts on its own: ts.echo, then a notification."""
    sent = {"from": "python", "n": 7, "nested": {"ok": True, "text": "héllo ✓"}}
    echoed = await peer.call("ts.echo", sent, timeout=10)
    if echoed != sent:
        state.problems.append(f"ts.echo returned {echoed!r}, expected {sent!r}")
    await peer.notify("py.started", {"echoed": echoed})


async def _abort_when_stdin_ends(peer: Peer) -> None:
    """§13: over a socket, the end of stdin means the parent is gone."""
    stdin = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stdin), sys.stdin.buffer)
    while await stdin.read(256):
        pass  # the parent writes nothing here
    await peer._abort(ConnectionClosedError("the parent closed the worker's stdin"))


async def send_bad_headers(peer: Peer) -> int:
    """§6: a meta with 33 headers is a protocol error for the receiver: GOODBYE
    protocol_error, then the connection closes. Returns the exit code."""
    headers = {f"h{i}": "v" for i in range(33)}
    meta = json.dumps({"headers": headers}, separators=(",", ":")).encode()
    try:
        answer = await peer.call("ts.echo", 1, _raw_meta=meta, timeout=10)
        print(f"demo_server: bad headers: answered {answer!r}", file=sys.stderr)
        return 1
    except ConnectionClosedError as err:
        print(f"demo_server: bad headers: {type(err).__name__}: {err}", file=sys.stderr)
        await peer.wait_closed()
        return 0 if "GOODBYE: protocol_error" in str(err) else 1


def _secret_from_env() -> bytes | None:
    """§5.1's shared secret, from $CONDUIT_SECRET (an environment variable, not an argument,
    so it does not show in the process list)."""
    secret = os.environ.get("CONDUIT_SECRET")
    return secret.encode("utf-8") if secret else None


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", action="store_true", help="talk over stdin/stdout")
    where.add_argument("--unix", metavar="PATH", help="connect to this Unix socket")
    where.add_argument("--worker", action="store_true",
                       help="the worker contract (§13): $CONDUIT_WORKER_SOCKET, else stdio")
    parser.add_argument("--codec", default="json", choices=["json", "msgpack"])
    parser.add_argument("--window", type=int, default=PeerOptions.stream_window_bytes,
                        help="streamWindowBytes to announce (default %(default)s)")
    parser.add_argument("--bad-headers", action="store_true",
                        help="send a CALL whose meta has 33 headers (§6: at most 32)")
    args = parser.parse_args()

    socket_path = os.environ.get("CONDUIT_WORKER_SOCKET") if args.worker else args.unix
    reader, writer = await (unix_streams(socket_path) if socket_path else stdio_streams())
    state = DemoState()
    peer = Peer(reader, writer, build_handlers(state), build_on_notify(state),
                PeerOptions(codec=args.codec, stream_window_bytes=args.window,
                            secret=_secret_from_env()), name="py-demo")
    state.peer = peer
    # Held here: the event loop keeps only weak references to tasks.
    stdin_watch = (asyncio.ensure_future(_abort_when_stdin_ends(peer))
                   if args.worker and socket_path else None)
    try:
        await peer.start()
    except HandshakeError as err:
        print(f"demo_server: handshake failed ({err.code}): {err}", file=sys.stderr)
        return 2
    try:
        await greet(peer, state)
    except Exception as err:
        state.problems.append(f"greeting failed: {err!r}")
    if args.bad_headers:
        return await send_bad_headers(peer)
    await peer.serve_until_goodbye()
    if state.closing is not None:
        await state.closing
    if stdin_watch is not None:
        stdin_watch.cancel()
    for problem in state.problems:
        print(f"demo_server: {problem}", file=sys.stderr)
    return 1 if state.problems else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
