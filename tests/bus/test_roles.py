"""Remote keys have roles (observer < editor < owner), checked by the hub for every request.

The CURVE tests run the real bridge on 127.0.0.1 in front of a real hub, one key per role."""

import msgpack
import pytest
import zmq

from actors.bus import curve_keys
from actors.bus.client import Endpoints, connect
from actors.bus.hub import Hub
from actors.bus.remote import RemoteListener, hub_identity
from actors.bus.service import BusThread
from rio.protocol import ops, roles
from rio.protocol.errors import AuthError, RioError
from rio.protocol.frames import Reply, decode
from tests.bus.test_remote import free_port_pair
from tests.support import wait_for

pytestmark = pytest.mark.timeout(60)

EDIT = ("buffer.replace", {"buffer": "b1", "start": 0, "end": 0, "text": "x"})
READ = ("fs.read", {"path": "a.txt"})
RUN = ("run.start", {"command": "true"})
GATE = ("gate.mode", {"mode": "allow_all"})
SPAWN = ("system.spawn", {"kind": "agent", "key": "k1"})


# --- the table --------------------------------------------------------------------------------

def test_every_op_of_the_catalogue_has_a_role():
    missing = sorted(op for op in ops.REGISTRY if op not in roles.OP_ROLES)
    assert missing == [], f"add these to rio/protocol/roles.py OP_ROLES: {missing}"
    stale = sorted(op for op in roles.OP_ROLES if op not in ops.REGISTRY)
    assert stale == [], f"no longer in the catalogue: {stale}"


def test_an_op_missing_from_the_table_is_owner_only():
    assert roles.required("brand.new_op") == "owner"
    assert roles.refusal(b"remote:editor:c", "brand.new_op").kind == "auth.forbidden"
    assert roles.refusal(b"cli-1234", "brand.new_op") is None    # local clients are owners


def test_the_grants_the_brief_promises():
    for op in ("buffer.list", "buffer.text", "fs.list", "fs.read"):
        assert roles.required(op) == "observer", op
    for op in ("buffer.replace", "buffer.save", "buffer.open", "buffer.undo"):
        assert roles.required(op) == "editor", op
    for op in ("run.start", "gate.mode", "agent.mode", "agent.new", "agent.send",
               "system.spawn", "system.stop", "system.restart", "system.fault", "ui.screenshot"):
        assert roles.required(op) == "owner", op


@pytest.mark.parametrize("identity, role", [
    (b"cli", "owner"), (b"remote:owner:c", "owner"), (b"remote:editor:c", "editor"),
    (b"remote:observer:remote:owner:c", "observer"), (b"remote:king:c", "observer"),
    (b"remote:", "observer"), (b"remote:owner", "owner")])
def test_the_role_is_read_from_the_identity_prefix_only(identity, role):
    assert roles.role_of_identity(identity) == role


def test_the_refusal_names_the_role_needed_and_the_next_action():
    err = roles.refusal(b"remote:observer:c", "buffer.save")
    assert isinstance(err, AuthError) and err.kind == "auth.forbidden"
    assert "editor" in err.message and "observer" in err.message
    assert "rio keys --set-role" in err.next and err.details["needed"] == "editor"


def test_hub_identity_keeps_the_role_and_the_length_limit():
    assert hub_identity(b"abc", "editor") == b"remote:editor:abc"
    long = hub_identity(b"x" * 255, "observer")
    assert len(long) <= 255 and roles.role_of_identity(long) == "observer"


def test_key_files_keep_the_role(tmp_path):
    curve_keys.create_server_keys(tmp_path)
    pair, _ = curve_keys.create_client_keys("lap", tmp_path)
    assert curve_keys.authorized_roles(tmp_path) == {pair.public.decode(): ("lap", "editor")}
    curve_keys.set_role("lap", "owner", tmp_path)
    assert curve_keys.authorized_roles(tmp_path)[pair.public.decode()] == ("lap", "owner")
    assert curve_keys.authorized(tmp_path) == {"lap": pair.public}   # zmq still reads it
    with pytest.raises(RioError) as info:
        curve_keys.set_role("lap", "root", tmp_path)
    assert info.value.kind == "config.bad_role"
    with pytest.raises(RioError) as info:
        curve_keys.set_role("nobody", "owner", tmp_path)
    assert info.value.kind == "config.unknown_client"


def test_a_key_file_from_before_roles_is_an_editor(tmp_path):
    path = tmp_path / "old.key"
    curve_keys.write_key_file(path, zmq.curve_keypair()[0])
    assert curve_keys.read_role(path) == "editor"
    path.write_text(path.read_text().replace("metadata\n", 'metadata\n    role = "root"\n'))
    assert curve_keys.read_role(path) == "observer"     # unknown: fail closed


# --- real CURVE over loopback -----------------------------------------------------------------

@pytest.fixture
def server(tmp_path, endpoints):
    """A hub with a service for buffer/fs/run/gate, system.* answered by the hub's local
    handler (as the supervisor does), and a CURVE bridge; one client key per role."""
    base = tmp_path / "curve"
    server_keys, _ = curve_keys.create_server_keys(base)
    clients = {role: curve_keys.create_client_keys(role, base, role=role)[0]
               for role in roles.ROLES}
    served: list[str] = []

    def system(_sender, req):
        if req.op.startswith("system.") and req.op != "system.ping":
            served.append(req.op)
            return Reply.success(req.id, {"op": req.op})
        return None

    hub = Hub(endpoints.requests, endpoints.events, local_handler=system).start()

    def handle(ctx):
        served.append(ctx.op)
        ctx.reply({"op": ctx.op})

    bus = BusThread(endpoints, name="svc", handlers={p: handle for p in
                                                     ("buffer", "fs", "run", "gate")}).start()
    port = free_port_pair()
    remote = RemoteListener(f"tcp://127.0.0.1:{port}", endpoints.requests, endpoints.events,
                            server_keys, base / curve_keys.AUTHORIZED).start()
    conns = []

    def client(role):
        pair = clients[role]
        conn = connect(Endpoints(remote.requests_endpoint, remote.events_endpoint,
                                 server_keys.public, pair.public, pair.secret),
                       name=f"far-{role}", timeout=10)
        conns.append(conn)
        return conn

    yield client, served, base, remote, server_keys, clients
    for conn in conns:
        conn.close()
    remote.stop()
    bus.stop()
    hub.stop()


def forbidden(conn, op, args):
    with pytest.raises(AuthError) as info:
        conn.call(op, args, timeout=10)
    assert info.value.kind == "auth.forbidden"
    return info.value


def test_an_observer_reads_but_cannot_edit(server):
    client, served, *_ = server
    conn = client("observer")
    assert conn.call(*READ, timeout=10) == {"op": "fs.read"}
    err = forbidden(conn, *EDIT)
    assert "editor" in err.message and "rio keys" in err.next
    for op, args in (RUN, GATE, SPAWN):
        forbidden(conn, op, args)
    assert served == ["fs.read"]   # nothing refused reached a service


def test_an_editor_edits_but_cannot_run_change_the_gate_or_spawn(server):
    client, served, *_ = server
    conn = client("editor")
    assert conn.call(*EDIT, timeout=10) == {"op": "buffer.replace"}
    for op, args in (RUN, GATE, SPAWN, ("system.stop", {}), ("agent.mode", {"mode": "allow_all"})):
        err = forbidden(conn, op, args)
        assert "owner" in err.message
    assert served == ["buffer.replace"]


def test_an_owner_can_do_everything(server):
    client, served, *_ = server
    conn = client("owner")
    for op, args in (READ, EDIT, RUN, GATE, SPAWN):
        assert conn.call(op, args, timeout=10) == {"op": op}
    assert served == ["fs.read", "buffer.replace", "run.start", "gate.mode", "system.spawn"]


def test_a_forged_role_is_ignored(server):
    """An observer claims to be an owner in the frame, in the args and in its own routing id:
    the bridge never reads any of them."""
    _client, served, _base, remote, server_keys, clients = server
    pair = clients["observer"]
    ctx = zmq.Context.instance()
    raw = ctx.socket(zmq.DEALER)
    raw.setsockopt(zmq.LINGER, 0)
    raw.setsockopt(zmq.ROUTING_ID, b"remote:owner:me")
    raw.curve_serverkey = server_keys.public
    raw.curve_publickey = pair.public
    raw.curve_secretkey = pair.secret
    raw.connect(remote.requests_endpoint)
    try:
        for i, (op, args) in enumerate((RUN, GATE, EDIT)):
            frame = {"v": 1, "t": "req", "id": f"f{i}", "op": op, "role": "owner",
                     "args": {**args, "role": "owner"}}
            raw.send(msgpack.packb(frame, use_bin_type=True))
            assert raw.poll(10_000), "no answer"
            reply = decode(raw.recv())
            assert not reply.ok and reply.error["kind"] == "auth.forbidden", reply
    finally:
        raw.close()
    assert served == []


def test_a_new_role_applies_to_the_next_request(server):
    client, _served, base, *_ = server
    conn = client("observer")
    forbidden(conn, *EDIT)
    curve_keys.set_role("observer", "editor", base)

    def allowed():
        try:
            return conn.call(*EDIT, timeout=10) == {"op": "buffer.replace"}
        except AuthError:
            return False
    assert wait_for(allowed, 10)
    curve_keys.revoke("observer", base)     # an open connection loses access too

    def refused():
        try:
            conn.call(*READ, timeout=10)
        except AuthError as err:
            return "no longer authorised" in err.message
        return False
    assert wait_for(refused, 10)


def test_system_ops_shows_each_ops_role():
    described = {d["op"]: d["role"] for d in ops.describe()}
    assert described["fs.read"] == "observer" and described["buffer.save"] == "editor"
    assert described["run.start"] == "owner"


def test_an_unknown_op_is_refused_naming_the_likely_typo():
    """A remote key that mistypes an op (fs.raed) was told to ask for the owner role — the
    wrong next action. It is still refused (fail closed), but the message says the op is not
    in the catalogue and the next action is to check the name."""
    err = roles.refusal(b"remote:observer:c", "fs.raed")
    assert isinstance(err, AuthError) and err.kind == "auth.forbidden"
    assert "fs.raed" in err.message and "not an op" in err.message
    assert "system.ops" in err.next and err.details["needed"] == "owner"
