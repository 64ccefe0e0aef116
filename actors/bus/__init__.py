"""The bus: the hub that routes frames (:mod:`.hub`), the clients (:mod:`.client` blocking,
:mod:`.async_client` asyncio, :mod:`.service` an actor process's serving thread), socket setup
(:mod:`.sockets`), CURVE keys and the remote bridge (:mod:`.curve_keys`, :mod:`.remote`), and
what the layers above need from beneath them (:mod:`.memory_trim`, :mod:`.parent_watch`): the
bus imports nothing of the actors above it. The UI may import :mod:`.client` only."""
