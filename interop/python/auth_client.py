"""A Python client of a conduit server over TCP with shared-secret authentication (§5.1).

    CONDUIT_SECRET=... python3 auth_client.py PORT

Connects to 127.0.0.1:PORT, calls add({"a": 2, "b": 3}), prints the result and closes. The
secret comes from $CONDUIT_SECRET (none when unset or empty). On a failed handshake it prints
`handshake failed: <code>` on stderr and exits 3.
"""

from __future__ import annotations

import asyncio
import os
import sys

from conduit_peer import HandshakeError, Peer, PeerOptions


async def main() -> int:
    port = int(sys.argv[1])
    secret = os.environ.get("CONDUIT_SECRET")
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    peer = Peer(reader, writer, {}, options=PeerOptions(secret=secret.encode() if secret else None))
    try:
        await peer.start()
    except HandshakeError as err:
        print(f"handshake failed: {err.code}", file=sys.stderr)
        return 3
    print(await peer.call("add", {"a": 2, "b": 3}))
    await peer.close()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
