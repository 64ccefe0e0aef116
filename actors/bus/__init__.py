"""The bus: the hub that routes frames (:mod:`.hub`), the clients (:mod:`.client` blocking,
:mod:`.async_client` asyncio, :mod:`.service` an actor process's serving thread), socket setup
(:mod:`.sockets`), CURVE keys and the remote bridge (:mod:`.curve_keys`, :mod:`.remote`).
The UI may import :mod:`.client` only."""
