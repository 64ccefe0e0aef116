"""The shipped deployment files (deploy/, issue 19): the systemd template unit verified and
rated by systemd-analyze, the image file's entrypoint run as PID 1 of a PID namespace (SIGTERM
ends everything with exit 0, an orphaned grandchild is reaped, a stale instance file of an
earlier PID 1 does not block the next start), the image built where podman can, and the
Kubernetes manifests checked: probes are `rio health`, state on a volume, the CURVE ports, no
root."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from actors.runtime import process_control
from tests.support import REPO, rio_env, wait_for

DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "systemd" / "rio@.service"
CONTAINERFILE = DEPLOY / "Containerfile"
MANIFEST = DEPLOY / "kubernetes" / "rio-worker.yaml"
#: The ExecStart binary of the unit (where docs/deploy.md installs Rio); the tests put the
#: `rio` of this environment there, since systemd-analyze checks that it exists.
UNIT_RIO = "/opt/rio/bin/rio"
#: The most `systemd-analyze security` may rate the unit (ADR-0035 quotes the number).
EXPOSURE_MAX = 2.0


def rio_script() -> list[str]:
    """How to run `rio` here: the console script beside this Python, else `python -m rio.cli`."""
    script = Path(sys.executable).with_name("rio")
    return [str(script)] if script.exists() else [sys.executable, "-m", "rio.cli"]


# --- the systemd unit ------------------------------------------------------------------------


def unit_settings() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith(("#", "[")):
            continue
        key, _, value = line.partition("=")
        found.setdefault(key, []).append(value)
    return found


def analyzable_unit(tmp_path: Path, instance: str) -> Path:
    """The unit as shipped, as an instance (``rio@NAME.service``), with this environment's
    `rio` in ExecStart — the only change."""
    script = rio_script()
    if len(script) != 1:
        pytest.skip("no `rio` console script beside this Python (pip install -e . makes it)")
    text = UNIT.read_text()
    assert UNIT_RIO in text
    path = tmp_path / f"rio@{instance}.service"
    path.write_text(text.replace(UNIT_RIO, script[0]))
    return path


def systemd_analyze() -> str:
    found = shutil.which("systemd-analyze")
    if found is None:
        pytest.skip("systemd-analyze is not installed (Debian: apt-get install systemd; "
                    ".ci/run installs it)")
    return found


@pytest.mark.timeout(60)
def test_the_unit_passes_systemd_analyze_verify_with_nothing_said(tmp_path: Path):
    analyze = systemd_analyze()
    for instance in ("alpha", "my-project.2"):
        unit = analyzable_unit(tmp_path, instance)
        done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                              timeout=50)
        assert done.returncode == 0 and done.stderr == "" and done.stdout == "", \
            done.stdout + done.stderr


@pytest.mark.timeout(60)
def test_the_user_unit_docs_deploy_md_shows_verifies_too(tmp_path: Path):
    analyze = systemd_analyze()
    script = rio_script()
    if len(script) != 1:
        pytest.skip("no `rio` console script beside this Python (pip install -e . makes it)")
    text = (REPO / "docs" / "deploy.md").read_text()
    block = re.search(r"```ini\n(.*?)```", text, re.S).group(1)
    assert "Type=notify" in block and "--log-stderr" in block
    unit = tmp_path / "rio-myproject.service"
    unit.write_text(block.replace("%h/.local/bin/rio", script[0]))
    done = subprocess.run([analyze, "verify", str(unit)], capture_output=True, text=True,
                          timeout=50)
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr


@pytest.mark.timeout(60)
def test_the_unit_is_rated_ok_by_systemd_analyze_security(tmp_path: Path):
    analyze = systemd_analyze()
    unit = analyzable_unit(tmp_path, "alpha")
    done = subprocess.run([analyze, "security", "--offline=true", "--no-pager", str(unit)],
                          capture_output=True, text=True, timeout=50)
    if "--offline" in done.stderr and "unrecognized" in done.stderr:
        pytest.skip(f"this systemd-analyze has no offline mode: {done.stderr.strip()}")
    found = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\w+)", done.stdout)
    assert found, done.stdout + done.stderr
    print(f"\nsystemd-analyze security: {found.group(1)} {found.group(2)}")
    assert float(found.group(1)) <= EXPOSURE_MAX, done.stdout
    # Each exposure left is one ADR-0035 explains.
    left = {line.split()[1] for line in done.stdout.splitlines() if line.startswith("✗")}
    adr = (REPO / "docs" / "adr" / "0035-workers-on-systemd-and-kubernetes.md").read_text()
    for setting in left:
        assert setting.split("=")[0] in adr, setting


def test_the_unit_is_a_notify_service_with_a_watchdog_and_a_stop_that_fits():
    from rio.config.supervisor_toml import load_config
    unit = unit_settings()
    assert unit["Type"] == ["notify"] and unit["NotifyAccess"] == ["main"]
    assert unit["KillMode"] == ["mixed"] and unit["OOMPolicy"] == ["continue"]
    assert unit["MemoryMax"] and unit["TasksMax"]
    exec_start = unit["ExecStart"][0].split()
    assert exec_start[:2] == [UNIT_RIO, "serve"]
    assert "--log-stderr" in exec_start and exec_start[exec_start.index("--instance") + 1] == "%i"
    # The stop: three ranks (window, agents, core) one after another, each at most its
    # graces plus a one-second sweep (actors/runtime/supervisor.py shutdown; ADR-0007).
    config = load_config(None, None)
    worst = max(sum(p.stop_graces().values()) for p in config.processes)
    needed = 3 * (worst + 1.0)
    assert _seconds(unit["TimeoutStopSec"][0]) >= needed + 10, (needed, unit["TimeoutStopSec"])
    assert _seconds(unit["WatchdogSec"][0]) >= 10
    # The folders the environment names are the ones systemd makes and opens for writing.
    env = dict(kv.split("=", 1) for line in unit["Environment"] for kv in line.split())
    assert env["RIO_RUNTIME_DIR"] == "/run/" + unit["RuntimeDirectory"][0]
    assert env["RIO_STATE_DIR"].startswith("/var/lib/" + unit["StateDirectory"][0] + "/")
    assert env["XDG_CACHE_HOME"] == "/var/cache/" + unit["CacheDirectory"][0]
    assert unit["ReadWritePaths"] == [unit["WorkingDirectory"][0]] == \
        [exec_start[exec_start.index("--root") + 1]]
    assert unit["ProtectSystem"] == ["strict"]      # so /etc/rio/%i (keys) is read-only


def _seconds(value: str) -> float:
    number = re.fullmatch(r"(\d+)(s|min)?", value.strip())
    assert number, value
    return float(number.group(1)) * (60 if number.group(2) == "min" else 1)


# --- the image file --------------------------------------------------------------------------


def containerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) in order, continuation lines joined."""
    out: list[tuple[str, str]] = []
    pending = ""
    for raw in CONTAINERFILE.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = pending + line
        pending = ""
        word, _, rest = line.partition(" ")
        out.append((word.upper(), rest.strip()))
    return out


def image() -> dict:
    found: dict = {"ENV": {}}
    for word, rest in containerfile():
        if word == "ENV":
            key, _, value = rest.partition("=")
            found["ENV"][key] = value
        elif word in ("ENTRYPOINT", "CMD", "VOLUME"):
            found[word] = json.loads(rest)
        else:
            found.setdefault(word, []).append(rest)
    return found


def test_the_image_runs_rio_serve_as_a_non_root_user_with_state_on_a_volume():
    spec = image()
    user = spec["USER"][-1].split(":")
    assert user[0].isdigit() and int(user[0]) != 0 and int(user[1]) != 0   # numeric: checkable
    assert spec["ENTRYPOINT"][:2] == ["rio", "serve"] and "--log-stderr" in spec["ENTRYPOINT"]
    assert spec["VOLUME"] == ["/var/lib/rio"]
    env = spec["ENV"]
    for key in ("RIO_STATE_DIR", "RIO_CONFIG_DIR", "HOME"):
        assert env[key].startswith("/var/lib/rio"), key
    assert spec["WORKDIR"] == [spec["CMD"][spec["CMD"].index("--root") + 1]]
    listen = spec["CMD"][spec["CMD"].index("--listen") + 1]
    port = int(listen.rsplit(":", 1)[1])
    assert spec["EXPOSE"] == [f"{port} {port + 1}"]
    assert spec["STOPSIGNAL"] == ["SIGTERM"]
    assert "rio\", \"health" in spec["HEALTHCHECK"][0]


# --- the image's entrypoint as PID 1 of a PID namespace ------------------------------------------


def unshare_available() -> None:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed")
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"],
                           capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"new PID namespaces are not permitted here: {probe.stderr.strip()}")


def free_port_pair() -> int:
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.1", port + 1))
                except OSError:
                    continue
                return port
    raise RuntimeError("no two free ports in a row")


class Container:
    """The image's ENTRYPOINT + CMD and ENV, its paths moved under tmp_path, run as PID 1 of a
    new PID namespace (with its own /proc), as a container runtime would."""

    def __init__(self, tmp_path: Path) -> None:
        spec = image()
        self.volume = tmp_path / "volume"
        self.env = rio_env(tmp_path)      # RIO_CHECK_EVENTS, a short runtime folder, PYTHONPATH
        for key, value in spec["ENV"].items():
            if key in ("PATH", "RIO_RUNTIME_DIR"):
                continue                  # this machine's PATH; rio_env's short runtime folder
            self.env[key] = self.moved(value)
        for leaf in ("project", "state", "config"):
            (self.volume / leaf).mkdir(parents=True, mode=0o700, exist_ok=True)
        self.port = free_port_pair()
        args = [self.moved(a) for a in spec["CMD"]]
        args[args.index("--listen") + 1] = f"tcp://127.0.0.1:{self.port}"
        self.instance = args[args.index("--instance") + 1]
        self.argv = [*rio_script(), *spec["ENTRYPOINT"][1:], *args, "--fault-injection"]
        self.workdir = self.moved(spec["WORKDIR"][-1])
        self.stderr = tmp_path / "container.stderr"
        self.proc: subprocess.Popen | None = None
        # The server keys `--listen` needs, made as docs/deploy.md says (`rio keys`).
        subprocess.run([*rio_script(), "keys"], env=self.env, check=True, timeout=60,
                       capture_output=True)

    def moved(self, value: str) -> str:
        return value.replace("/var/lib/rio", str(self.volume))

    def start(self) -> "Container":
        with open(self.stderr, "ab") as sink:
            self.proc = subprocess.Popen(
                ["unshare", "--pid", "--fork", "--mount-proc", "--kill-child", *self.argv],
                env=self.env, cwd=self.workdir, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=sink,
                preexec_fn=process_control.dies_with_this_process())
        if not wait_for(lambda: self.health() == 0, 30):
            why = self.stderr.read_text()[-3000:]
            self.end()      # a start that fails leaves no namespace running (the tests'
            raise AssertionError(why)   # `try: … finally: box.end()` begins after it)
        return self

    def init(self) -> psutil.Process:
        """The namespace's PID 1, seen from here."""
        assert self.proc is not None
        children = psutil.Process(self.proc.pid).children()
        assert len(children) == 1, children
        return children[0]

    def health(self) -> int:
        done = subprocess.run([*rio_script(), "health", "--instance", self.instance],
                              env=self.env, capture_output=True, text=True, timeout=30)
        return done.returncode

    def call(self, op: str, args: dict) -> object:
        from actors.bus.client import Endpoints, connect
        info = json.loads((Path(self.env["RIO_RUNTIME_DIR"]) / self.instance
                           / "instance.json").read_text())
        conn = connect(Endpoints(info["requests"], info["events"]), name="test")
        try:
            return conn.call(op, args, timeout=10)
        finally:
            conn.close()

    def everything(self) -> list[psutil.Process]:
        assert self.proc is not None
        try:
            return psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def end(self) -> None:
        """Whatever happened: nothing of it is left."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.kill()          # --kill-child: the namespace goes with it
            self.proc.wait(10)
        for p in self.everything():
            p.kill()


def cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:       # gone, or a zombie (the run's shell, reaped soon)
        return []


def ns_pid(proc: psutil.Process) -> str:
    status = Path(f"/proc/{proc.pid}/status").read_text()
    return re.search(r"^NSpid:\s+(.*)$", status, re.M).group(1).split()[-1]


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_rio_serve_as_pid_1_reaps_orphans_and_ends_everything_on_sigterm(tmp_path: Path):
    unshare_available()
    box = Container(tmp_path).start()
    try:
        init = box.init()
        assert ns_pid(init) == "1" and "serve" in init.cmdline()
        # A grandchild orphaned on purpose: out of its run's process group (setsid) and
        # without Rio's cookie (env -i), so the run's stop cannot find it. It reparents to
        # PID 1 — the supervisor.
        box.call("run.start", {"command": "env -i setsid sleep 37.25 & exit 0"})

        def orphan() -> psutil.Process | None:
            return next((p for p in box.everything() if cmdline(p) == ["sleep", "37.25"]),
                        None)
        assert wait_for(lambda: orphan() is not None and orphan().ppid() == init.pid, 20)
        stray = orphan()
        os.kill(stray.pid, signal.SIGKILL)            # now a zombie of PID 1: reaped?
        assert wait_for(lambda: not psutil.pid_exists(stray.pid), 10), stray
        inside = box.everything()
        assert len(inside) >= 3                        # the supervisor, the core, its spare
        init.send_signal(signal.SIGTERM)
        assert box.proc.wait(30) == 0, box.stderr.read_text()[-3000:]
        assert not [p for p in inside if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        said = box.stderr.read_text()
        assert "[supervisor] " in said and "rio: event check failed" not in said
    finally:
        box.end()


@pytest.mark.slow
@pytest.mark.timeout(150)
def test_a_killed_pid_1_leaves_an_instance_file_that_does_not_block_the_next_start(
        tmp_path: Path):
    """In a container the supervisor is PID 1 every time, and the runtime folder (an emptyDir
    in a pod) outlives the container: the instance file of a killed run names pid 1 — which
    is alive, being the new supervisor itself. It is stale, not "already running"."""
    unshare_available()
    box = Container(tmp_path).start()
    try:
        box.init().send_signal(signal.SIGKILL)       # the whole namespace dies with it
        box.proc.wait(30)
        info = Path(box.env["RIO_RUNTIME_DIR"]) / box.instance / "instance.json"
        assert json.loads(info.read_text())["pid"] == 1
        box.start()                                   # healthy again: not "instance exists"
        box.init().send_signal(signal.SIGTERM)
        assert box.proc.wait(30) == 0
    finally:
        box.end()


# --- the image, built and run where the machine allows ------------------------------------------


BASE_IMAGE = "docker.io/library/python:3.11-slim-bookworm"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_the_image_builds_and_serves_where_podman_can(tmp_path: Path):
    """Only where podman runs containers and the base image is already present (tests never
    reach the internet): build, make keys on a volume, run, probe with `rio health`, stop."""
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed")
    if subprocess.run(["podman", "image", "exists", BASE_IMAGE], timeout=60).returncode != 0:
        pytest.skip(f"the base image {BASE_IMAGE} is not present locally and tests do not pull")
    tag = f"localhost/rio-test:{os.getpid()}"
    volume = tmp_path / "volume"
    volume.mkdir(mode=0o777)
    os.chmod(volume, 0o777)
    name = f"rio-test-{os.getpid()}"
    try:
        subprocess.run(["podman", "build", "--format", "docker", "-f", str(CONTAINERFILE),
                        "-t", tag, str(REPO)], check=True, timeout=800)
        subprocess.run(["podman", "run", "--rm", "-v", f"{volume}:/var/lib/rio:Z",
                        "--entrypoint", "rio", tag, "keys"], check=True, timeout=120)
        subprocess.run(["podman", "run", "-d", "--name", name, "-v",
                        f"{volume}:/var/lib/rio:Z", tag], check=True, timeout=120)
        assert wait_for(lambda: subprocess.run(
            ["podman", "exec", name, "rio", "health", "--instance", "rio"],
            timeout=60).returncode == 0, 60)
        subprocess.run(["podman", "stop", "-t", "30", name], check=True, timeout=60)
        code = subprocess.run(["podman", "inspect", "-f", "{{.State.ExitCode}}", name],
                              capture_output=True, text=True, timeout=60).stdout.strip()
        assert code == "0"
    finally:
        subprocess.run(["podman", "rm", "-f", name], capture_output=True, timeout=60)
        subprocess.run(["podman", "rmi", "-f", tag], capture_output=True, timeout=60)


# --- Kubernetes ------------------------------------------------------------------------------


def manifests() -> dict[str, dict]:
    import yaml  # PyYAML: the test extra (pyproject.toml)
    return {doc["kind"]: doc for doc in yaml.safe_load_all(MANIFEST.read_text())}


def test_the_worker_is_a_statefulset_probed_by_rio_health_with_state_on_a_claim():
    docs = manifests()
    assert set(docs) == {"Service", "StatefulSet"}
    sts = docs["StatefulSet"]["spec"]
    assert sts["replicas"] == 1
    pod = sts["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    uid = image()["USER"][-1].split(":")[0]
    assert pod["securityContext"]["runAsUser"] == int(uid) != 0
    assert pod["automountServiceAccountToken"] is False
    (rio,) = pod["containers"]
    assert rio["securityContext"]["allowPrivilegeEscalation"] is False
    assert rio["securityContext"]["capabilities"]["drop"] == ["ALL"]
    instance = rio["args"][rio["args"].index("--instance") + 1]
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        command = rio[probe]["exec"]["command"]
        assert command[:2] == ["rio", "health"], probe
        assert command[command.index("--instance") + 1] == instance
        timeout = float(command[command.index("--timeout") + 1])
        assert rio[probe]["timeoutSeconds"] > timeout      # rio health answers first
    # State: the volume the image declares, from the claim template.
    claims = {c["metadata"]["name"] for c in sts["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in rio["volumeMounts"]}
    assert mounts[image()["VOLUME"][0]] in claims
    root = rio["args"][rio["args"].index("--root") + 1]
    assert root.startswith(image()["VOLUME"][0] + "/")
    # The runtime folder (the bus's sockets) is writable with a read-only root file system.
    assert rio["securityContext"]["readOnlyRootFilesystem"] is True
    runtime = image()["ENV"]["RIO_RUNTIME_DIR"]
    assert any(runtime.startswith(path + "/") for path in mounts)


def test_the_curve_ports_are_behind_the_service_and_the_keys_come_from_secrets():
    docs = manifests()
    pod = docs["StatefulSet"]["spec"]["template"]["spec"]
    (rio,) = pod["containers"]
    listen = rio["args"][rio["args"].index("--listen") + 1]
    port = int(listen.rsplit(":", 1)[1])
    ports = {p["name"]: p["containerPort"] for p in rio["ports"]}
    assert ports == {"requests": port, "events": port + 1}
    service = docs["Service"]["spec"]
    assert {p["targetPort"]: p["port"] for p in service["ports"]} == ports
    labels = docs["StatefulSet"]["spec"]["template"]["metadata"]["labels"]
    assert service["selector"].items() <= labels.items()
    secrets = {v["name"]: v["secret"]["secretName"] for v in pod["volumes"] if "secret" in v}
    assert len(secrets) == 2
    # The keys reach RIO_CONFIG_DIR/curve through the init container, read-only for Rio.
    config_dir = next(e["value"] for e in rio["env"] if e["name"] == "RIO_CONFIG_DIR")
    (keys,) = pod["initContainers"]
    assert f"{config_dir}/curve/authorized_clients" in " ".join(keys["command"])
    assert {m["name"] for m in keys["volumeMounts"]} >= set(secrets)
    config_mount = next(m for m in rio["volumeMounts"] if m["mountPath"] == config_dir)
    assert config_mount["readOnly"] is True
    assert not any(m["name"] in secrets for m in rio["volumeMounts"])
