"""Model-written code attacks harness from inside each sandbox, for real.

The table "What the code can reach" in docs/sandbox.md says, per backend and user, which
attacks succeed. Each row here is an attack: code run through the sandbox by a harness
process that holds an API key in its environment (as `harness run` does in CI), with
host-side bait where the attack needs it (a file of the user's, a Unix socket under /run,
a server on 127.0.0.1). The test fails when an outcome differs from the table, so the docs
cannot promise more than the sandboxes hold. Each backend is attacked as root (as CI runs)
and as an ordinary user (uid 65534, through setpriv in a private mount namespace that lets
that user reach the interpreter and harness).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECRET = "sk-proj-attackme-" + "7Fq2" * 8  # the key in harness's environment
NOBODY = 65534

# Columns of the docs table -> (backend, user) pairs that must behave as the column says.
COLUMNS = {
    "process, as root": [("process", "root")],
    "process, other users": [("process", "nobody")],
    "bubblewrap": [("bubblewrap", "root"), ("bubblewrap", "nobody")],
    "docker": [("docker", "root")],
}


def docs_table() -> dict[str, dict[str, bool]]:
    """{row label: {column: the code can}} from docs/sandbox.md's table."""
    text = (ROOT / "docs" / "sandbox.md").read_text(encoding="utf-8")
    section = text.split("### What the code can reach", 1)[1]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    table = {}
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        cells = [re.sub(r"[*`]", "", cell) for cell in cells]
        table[cells[0]] = {
            column: cell == "yes" for column, cell in zip(header[1:], cells[1:], strict=True)
        }
    return table


# -- the attacks ---------------------------------------------------------------------------
# Each is Python source run in the sandbox. HARNESS_PID is harness's process id (the one
# that runs the sandbox); BAIT is the bait of this run (paths, addresses, names). The code
# prints ESCAPED when it got what it wanted.

_PRELUDE = """
import ctypes, json, os, socket, sys, time
HARNESS_PID = @HARNESS_PID@
BAIT = json.loads({bait!r})
SECRET = BAIT["secret"]
libc = ctypes.CDLL(None, use_errno=True)
def escaped(what=""):
    print("ESCAPED", what)
"""

ATTACK_CODE = {
    "read harness's environment (/proc/PID/environ)": """
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        if SECRET.encode() in open(f'/proc/{pid}/environ', 'rb').read():
            escaped(pid)
    except OSError as exc:
        pass
""",
    "read harness's memory (/proc/PID/mem)": """
try:
    maps = open(f'/proc/{HARNESS_PID}/maps').read().splitlines()
    stack = [line for line in maps if line.endswith('[stack]')][0]
    start, end = (int(x, 16) for x in stack.split()[0].split('-'))
    with open(f'/proc/{HARNESS_PID}/mem', 'rb') as mem:
        mem.seek(start)
        if SECRET.encode() in mem.read(end - start):
            escaped()
except (OSError, IndexError) as exc:
    print(repr(exc))
""",
    "trace harness (ptrace)": """
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
PTRACE_SEIZE = 0x4206  # attaches without stopping harness; detached when this process ends
if libc.ptrace(PTRACE_SEIZE, HARNESS_PID, None, None) == 0:
    escaped()
print(os.strerror(ctypes.get_errno()))
""",
    "see harness's process": """
try:
    if BAIT["driver"].encode() in open(f'/proc/{HARNESS_PID}/cmdline', 'rb').read():
        escaped()
except OSError as exc:
    print(repr(exc))
""",
    "hold a capability": """
status = open('/proc/self/status').read()
effective = int(status.split('CapEff:')[1].split()[0], 16)
print('CapEff', hex(effective))
if effective:
    escaped()
""",
    "make a read-only mount writable": """
MS_REMOUNT, MS_BIND = 32, 4096
for target in ['/', '/usr', sys.prefix]:
    if libc.mount(None, target.encode(), None, MS_REMOUNT | MS_BIND, None) == 0:
        escaped(target)
    print(target, os.strerror(ctypes.get_errno()))
""",
    "read the user's files": """
try:
    print(open(BAIT["file"]).read())
    escaped()
except OSError as exc:
    print(repr(exc))
""",
    "write outside its working folder": """
for path in [BAIT["write"], sys.prefix + '/' + BAIT["name"], '/usr/' + BAIT["name"]]:
    try:
        open(path, 'w').write('x')
        escaped(path)
    except OSError as exc:
        print(repr(exc))
""",
    "connect to the host's Unix sockets (/run, abstract)": """
for address in [BAIT["unix"], '\\0' + BAIT["abstract"]]:
    client = socket.socket(socket.AF_UNIX)
    try:
        client.connect(address)
        client.sendall(b'x')
        escaped(repr(address))
    except OSError as exc:
        print(repr(exc))
""",
    "connect to a server on the host's 127.0.0.1": """
try:
    socket.create_connection(('127.0.0.1', BAIT["port"]), timeout=2).sendall(b'x')
    escaped()
except OSError as exc:
    print(repr(exc))
""",
    "leave a setsid daemon running": """
if os.fork() == 0:
    os.setsid()  # out of the process group
    if os.fork() == 0:
        open('/proc/self/comm', 'w').write(BAIT["daemon"])
        for procs in ['/sys/fs/cgroup/pids/cgroup.procs', '/sys/fs/cgroup/cgroup.procs']:
            try:
                open(procs, 'w').write(str(os.getpid()))  # out of the pids cgroup
            except OSError:
                pass
        time.sleep(3600)  # holding stdout and stderr open
    os._exit(0)
print('daemon started')
""",
    "start more processes than its limit": """
open('/proc/self/comm', 'w').write(BAIT["bomb"])
while True:
    os.fork()
""",
}

# Limits per attack (the rest use the defaults with a short timeout).
ATTACK_LIMITS = {
    "start more processes than its limit": {"timeout": 4.0, "processes": 16},
    "leave a setsid daemon running": {"timeout": 3.0},
}

DRIVER = """
import asyncio, json, os, sys
from harness.sandbox import Limits, get_sandbox
spec = json.loads(sys.argv[1])
sandbox = get_sandbox(spec["backend"])

async def main():
    done = {}
    for name, code in spec["attacks"].items():
        limits = Limits(**{"timeout": 5.0, **spec["limits"].get(name, {})})
        code = code.replace("@HARNESS_PID@", str(os.getpid()))
        # A hang is a failure of its own, not a test that never ends.
        execution = await asyncio.wait_for(sandbox.run(code, limits), limits.timeout + 30)
        done[name] = {
            "stdout": execution.stdout, "stderr": execution.stderr[-2000:],
            "limit": execution.limit, "survivors": getattr(execution, "survivors", []),
        }
    print(json.dumps(done))

asyncio.run(main())
"""


@dataclass
class Bait:
    """What the host puts out for one attack run, and what it saw afterwards."""

    user: str
    tag: str = field(default_factory=lambda: uuid.uuid4().hex[:10])
    connections: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        uid = NOBODY if self.user == "nobody" else os.getuid()
        self.folder = Path(f"/var/tmp/harness-attack-{self.tag}")
        self.folder.mkdir(mode=0o700)
        self.file = self.folder / "notes.txt"
        self.file.write_text("the user's own file\n")
        self.file.chmod(0o600)
        for path in (self.folder, self.file):
            os.chown(path, uid, uid)
        self.unix = f"/run/harness-attack-{self.tag}.sock"
        self._servers = [
            self._serve(socket.AF_UNIX, self.unix, "unix"),
            self._serve(socket.AF_UNIX, f"\0harness-attack-{self.tag}", "abstract"),
            self._serve(socket.AF_INET, ("127.0.0.1", 0), "tcp"),
        ]
        os.chmod(self.unix, 0o777)
        self.port = self._servers[2].getsockname()[1]

    def _serve(self, family: int, address: object, name: str) -> socket.socket:
        server = socket.socket(family, socket.SOCK_STREAM)
        server.bind(address)
        server.listen(8)
        server.settimeout(0.2)

        def accept() -> None:
            while server.fileno() != -1:
                try:
                    server.accept()[0].close()
                    self.connections.append(name)
                except TimeoutError:
                    continue
                except OSError:
                    return

        threading.Thread(target=accept, daemon=True, name=f"bait-{name}").start()
        return server

    def spec(self) -> dict[str, object]:
        return {
            "secret": SECRET,
            "driver": f"attack-driver-{self.tag}",
            "file": str(self.file),
            "write": str(self.folder / "written.txt"),
            "name": f"harness-attack-{self.tag}",
            "unix": self.unix,
            "abstract": f"harness-attack-{self.tag}",
            "port": self.port,
            "daemon": f"dmn{self.tag}",
            "bomb": f"bmb{self.tag}",
        }

    def close(self) -> None:
        for server in self._servers:
            server.close()
        for name in (self.spec()["daemon"], self.spec()["bomb"]):
            for pid in named(str(name)):
                os.kill(int(pid), signal.SIGKILL)
        Path(self.unix).unlink(missing_ok=True)
        shutil.rmtree(self.folder, ignore_errors=True)
        for base in (sys.prefix, "/usr"):
            Path(base, f"harness-attack-{self.tag}").unlink(missing_ok=True)


def named(comm: str) -> list[str]:
    """Live processes named ``comm`` (zombies hold nothing but an exit status)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if (
            stat[stat.index("(") + 1 : stat.rindex(")")] == comm
            and stat[stat.rindex(")") + 2] not in "ZX"
        ):
            found.append(pid)
    return found


def as_nobody(argv: list[str]) -> list[str]:
    """``argv`` run as uid/gid 65534 in a private mount namespace in which the folders
    holding the interpreter and harness can be reached (a pyenv under /root, mode 0700,
    cannot): each folder that user cannot pass is covered, in that namespace only, by a
    passable tmpfs holding binds of just what is needed below it."""
    needed = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, ROOT)}
    hidden: dict[Path, set[Path]] = {}
    for path in needed:
        for folder in reversed(path.parents):
            if not folder.stat().st_mode & 0o001:
                hidden.setdefault(folder, set()).add(path)
                break
    script = ["set -e"]
    for folder, paths in hidden.items():
        script += [
            "keep=$(mktemp -d)",
            f"mount --bind '{folder}' \"$keep\"",
            f"mount -t tmpfs -o mode=0755 harness-test '{folder}'",
        ]
        for path in sorted(paths):
            inside = path.relative_to(folder)
            script += [f"mkdir -p '{path}'", f"mount --bind \"$keep/{inside}\" '{path}'"]
        script += ['umount -l "$keep"', 'rmdir "$keep"']
    script.append(f'exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups -- "$@"')
    return [
        "unshare",
        "--mount",
        "--propagation",
        "private",
        "sh",
        "-c",
        "\n".join(script),
        "sh",
        *argv,
    ]


def attack(backend: str, user: str) -> tuple[dict[str, dict], Bait]:
    """Run every attack through ``backend`` from a harness process of ``user``."""
    if os.getuid() != 0:
        pytest.skip("the attacks are made as root and as uid 65534: run the tests as root")
    if user == "nobody" and not all(shutil.which(tool) for tool in ("unshare", "setpriv", "mount")):
        pytest.skip("unshare, setpriv and mount (util-linux) are needed to attack as uid 65534")
    if backend != "process":
        from harness.sandbox import BACKENDS

        reason = BACKENDS[backend]().unavailable()
        if reason is not None:
            if backend == "bubblewrap" and os.environ.get("CI"):
                pytest.fail(reason)  # CI installs bubblewrap (.ci/run)
            pytest.skip(reason)
    bait = Bait(user)
    try:
        prelude = _PRELUDE.format(bait=json.dumps(bait.spec()))
        spec = {
            "backend": backend,
            "attacks": {name: prelude + code for name, code in ATTACK_CODE.items()},
            "limits": ATTACK_LIMITS,
        }
        argv = [sys.executable, "-c", DRIVER, json.dumps(spec), bait.spec()["driver"]]
        env = {
            "PATH": os.environ["PATH"],
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "OPENAI_API_KEY": SECRET,
        }
        done = subprocess.run(
            as_nobody(argv) if user == "nobody" else argv,
            capture_output=True,
            text=True,
            env=env,
            timeout=240,
            cwd="/tmp",
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1]), bait
    except BaseException:
        bait.close()
        raise


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[tuple[str, str], dict[str, bool]]]:
    """Per (backend, user): per attack, whether it succeeded (made once, lazily)."""

    class Lazy(dict):
        def __missing__(self, key: tuple[str, str]) -> dict[str, bool]:
            self[key] = judge(*attack(*key))
            return self[key]

    yield Lazy()


def judge(results: dict[str, dict], bait: Bait) -> dict[str, bool]:
    """Whether each attack got what it wanted, from what the code printed and what the
    host saw (a connection, a file, a process left running)."""
    try:
        spec = bait.spec()
        escaped = {name: "ESCAPED" in result["stdout"] for name, result in results.items()}
        written = [Path(spec["write"]), Path(sys.prefix, spec["name"]), Path("/usr", spec["name"])]
        escaped["write outside its working folder"] |= any(path.exists() for path in written)
        unix = "connect to the host's Unix sockets (/run, abstract)"
        escaped[unix] |= bool({"unix", "abstract"} & set(bait.connections))
        escaped["connect to a server on the host's 127.0.0.1"] |= "tcp" in bait.connections
        escaped["leave a setsid daemon running"] |= wait_gone(spec["daemon"]) != []
        bomb = results["start more processes than its limit"]
        # Contained means stopped at the process limit, not merely at the timeout.
        escaped["start more processes than its limit"] = bomb["limit"] != "processes"
        escaped["start more processes than its limit"] |= wait_gone(spec["bomb"]) != []
        return escaped
    finally:
        bait.close()


def wait_gone(comm: str) -> list[str]:
    """Processes named ``comm`` still alive after a bounded moment (SIGKILL lands when the
    process is next scheduled: a moment on a busy machine)."""
    deadline = time.monotonic() + 10
    while named(comm) and time.monotonic() < deadline:
        time.sleep(0.05)
    return named(comm)


CASES = [
    (row, column, backend, user)
    for row, cells in docs_table().items()
    for column in cells
    for backend, user in COLUMNS[column]
]


def test_every_row_of_the_docs_table_is_an_attack_made_here():
    assert list(docs_table()) == list(ATTACK_CODE)
    assert set(next(iter(docs_table().values()))) == set(COLUMNS)


@pytest.mark.parametrize(
    ("row", "column", "backend", "user"),
    CASES,
    ids=[f"{backend}-{user}-{row}" for row, _, backend, user in CASES],
)
def test_the_sandbox_holds_what_the_docs_say(outcomes, row, column, backend, user):
    said = docs_table()[row][column]
    got = outcomes[(backend, user)][row]
    assert got == said, (
        f"{backend} as {user}: the code {'could' if got else 'could not'} {row!r}; "
        f"docs/sandbox.md says {'yes' if said else 'no'}"
    )
