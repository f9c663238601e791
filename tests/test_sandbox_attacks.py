"""Model-written code attacks harness from inside each sandbox, for real.

The table "What the code can reach" in docs/sandbox.md says, per backend and user, which
attacks succeed. Each row here is an attack: code run through the sandbox by a harness
process that holds an API key in its environment and a key in its session keyring (as a
user's harness would), with host-side bait where the attack needs it (a file of the user's,
a Unix socket under /run, a server on 127.0.0.1), and host-side checks of what it left (a
set-user-ID file run by uid 65534, a work folder, a cgroup, a process that outlived a
harness killed mid-run). The test fails when an outcome differs from the table, so the docs
cannot promise more than the sandboxes hold. Each backend is attacked as root (as CI runs)
and as an ordinary user (uid 65534, through setpriv in a private mount namespace that lets
that user reach the interpreter and harness), with the harness of this tree.
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

# Sandboxed code runs as uid 65534 in every worker: one test at a time (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("one_sandbox_user_at_a_time")

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
import ctypes, json, os, platform, shutil, socket, stat, struct, sys, time
HARNESS_PID = @HARNESS_PID@
BAIT = json.loads({bait!r})
SECRET = BAIT["secret"]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def escaped(what=""):
    print("ESCAPED", what)
def fill(folder, prefix, total):
    # total bytes into folder, in files of 8 MB (under the file-size limit); what was
    # written before the first refusal
    written, chunk = 0, b"x" * (1 << 20)
    try:
        for part in range(total >> 23):
            with open(os.path.join(folder, f"{{prefix}}-{{part}}"), "wb") as out:
                for _ in range(8):
                    out.write(chunk)
                    out.flush()
                    written += len(chunk)
    except OSError as exc:
        print(repr(exc))
    print("wrote", written >> 20, "MB")
    return written
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
    # The audit's way: its folder opened to all, a tree too deep for shutil.rmtree (whose
    # RecursionError is no OSError, so ignore_errors let it through), and a copy of `id`
    # made set-user-ID at the bottom; then the same at the host's shared folders. Found
    # on the host afterwards and run by uid 65534, it says whose rights it gives; in the
    # sandbox, a root-owned set-user-ID file on a mount that honours the bit is enough.
    "plant a set-user-ID root program (on the host, or honoured in its sandbox)": """
def plant(folder):
    path = os.path.join(folder, BAIT["setuid"])
    try:
        shutil.copy('/usr/bin/id', path)
        os.chmod(path, 0o4755)
        mode, owner = os.stat(path).st_mode, os.stat(path).st_uid
        honoured = not os.statvfs(path).f_flag & os.ST_NOSUID
        print(folder[-40:], 'owner', owner, oct(mode), 'honoured', honoured)
        if owner == 0 and mode & stat.S_ISUID and honoured:
            escaped(folder[-40:])
    except OSError as exc:
        print(folder[-40:], repr(exc))
os.chmod('.', 0o755)
for _ in range(1500):
    os.mkdir('d')
    os.chdir('d')
plant(os.getcwd())
for folder in ['/tmp', '/var/tmp', '/dev/shm']:
    plant(folder)
""",
    # Root on the host, even without capabilities, passes every check the kernel makes by
    # uid alone (kernel settings, files of root's, set-user-ID root files it makes). Its
    # user as the host sees it is read from outside while it waits (inside, nested user
    # namespaces show a root of their own): harness's driver watches for this name.
    "run as root on the host (even without capabilities)": """
open('/proc/self/comm', 'w').write(BAIT["watched"])
time.sleep(3)
""",
    "change kernel settings (/proc/sys, /sys)": """
for path in ['/proc/sys/vm/swappiness', '/proc/sys/kernel/core_pattern']:
    try:
        value = open(path).read()
        with open(path, 'w') as setting:
            setting.write(value)  # its own value back: the write is what counts
        escaped(path)
    except OSError as exc:
        print(path, repr(exc))
for path in ['/sys/kernel/mm/transparent_hugepage/enabled', '/sys/kernel/uevent_helper',
             '/sys/kernel/profiling', '/sys/power/state']:
    try:
        os.close(os.open(path, os.O_WRONLY))  # opened for writing; nothing written
        escaped(path)
    except OSError as exc:
        print(path, repr(exc))
""",
    "read harness's session keyring": """
KEYCTL = {'x86_64': 250, 'aarch64': 219, 'riscv64': 219}[platform.machine()]
def keyctl(*args):
    return libc.syscall(KEYCTL, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
def read(key):
    buffer = ctypes.create_string_buffer(65536)
    size = keyctl(11, key, buffer, 65536)  # KEYCTL_READ
    return buffer.raw[:size] if size >= 0 else b''
def keys_in(ring):
    data = read(ring)
    return set(struct.unpack(f'{len(data) // 4}i', data[: len(data) // 4 * 4]))
def look(keys):
    for key in keys:
        if SECRET.encode() in read(key):
            escaped(hex(key))
look(keys_in(-3))  # KEY_SPEC_SESSION_KEYRING: the session keyring it was given
look(int(line.split()[0], 16) for line in open('/proc/keys'))  # every key it may see
if keyctl(1, BAIT["keyring"].encode()) > 0:  # KEYCTL_JOIN_SESSION_KEYRING by name
    look(keys_in(-3))
""",
    "signal harness (kill)": """
try:
    os.kill(HARNESS_PID, 0)  # the permission check of SIGKILL, without the kill
    escaped()
except OSError as exc:
    print(repr(exc))
""",
    "raise its own process limit (pids.max)": """
LIMIT = 16
for line in open('/proc/self/cgroup'):
    _, controllers, path = line.strip().split(':', 2)
    base = {'pids': '/sys/fs/cgroup/pids', '': '/sys/fs/cgroup'}.get(controllers)
    if base is None:
        continue
    try:
        with open(base + path + '/pids.max', 'w') as limit:
            limit.write('max')
        escaped(base + path)
    except OSError as exc:
        print(base + path, repr(exc))
children = 0
for _ in range(LIMIT + 10):
    try:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
    except OSError as exc:
        print(repr(exc))
        break
    children += 1
print(children, 'children')
if children >= LIMIT:  # with itself, more processes than the limit
    escaped(children)
""",
    "write more than its room for files (/dev/shm)": """
if fill('/dev/shm', BAIT["fill"], 96 << 20) > 48 << 20:
    escaped()
""",
    "write more than its room for files (its folder)": """
if fill('.', BAIT["fill"], 96 << 20) > 48 << 20:
    escaped()
""",
    "write a file larger than its file-size limit": """
try:
    with open('big', 'wb') as big:
        for _ in range(24):
            big.write(b'x' * (1 << 20))
            big.flush()
    escaped(os.path.getsize('big'))
except OSError as exc:
    print(repr(exc))
""",
    "leave files behind (a 1,500-deep tree)": """
os.chmod('.', 0o755)
for _ in range(1500):
    os.mkdir('d')
    os.chdir('d')
open(BAIT["left"], 'w').write('left behind')
os.chmod('.', 0)
""",
}

# Limits per attack (the rest use the defaults with a short timeout).
ATTACK_LIMITS = {
    "start more processes than its limit": {"timeout": 4.0, "processes": 16},
    "leave a setsid daemon running": {"timeout": 3.0},
    "raise its own process limit (pids.max)": {"processes": 16},
    "write more than its room for files (/dev/shm)": {"timeout": 20.0, "disk_mb": 32},
    "write more than its room for files (its folder)": {"timeout": 20.0, "disk_mb": 32},
    "write a file larger than its file-size limit": {"timeout": 20.0},
    "plant a set-user-ID root program (on the host, or honoured in its sandbox)": {"timeout": 20.0},
    "leave files behind (a 1,500-deep tree)": {"timeout": 20.0},
}

# The code of a run that harness is killed in the middle of: it leaves a daemon and
# waits; the test kills harness (SIGKILL) once the daemon runs.
HOLD_CODE = """
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open('/proc/self/comm', 'w').write(BAIT["orphan"])
        time.sleep(3600)
    os._exit(0)
open('/proc/self/comm', 'w').write(BAIT["orphan"])
time.sleep(3600)
"""

# Harness, as a user runs it: an API key in its environment and a key in its session
# keyring (the process's own keyring, named so that the code may try to join it by name).
DRIVER = """
import asyncio, ctypes, dataclasses, json, os, platform, sys
from harness.sandbox import Limits, get_sandbox
spec = json.loads(sys.argv[1])
sandbox = get_sandbox(spec["backend"])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
KEYCTL, ADD_KEY = {"x86_64": (250, 248), "aarch64": (219, 217), "riscv64": (219, 217)}[
    platform.machine()
]
assert libc.syscall(KEYCTL, 1, spec["keyring"].encode()) > 0, "join a session keyring"
secret = spec["secret"].encode()
key = libc.syscall(ADD_KEY, b"user", b"harness-secret", secret, len(secret), -3)
assert key > 0, ("add a key", ctypes.get_errno())
known = {field.name for field in dataclasses.fields(Limits)}

async def watch(seen):
    # The host's user ids (real, effective) of the processes named spec["watched"].
    while True:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/status") as status:
                    fields = dict(line.split(":", 1) for line in status.read().splitlines())
            except (OSError, ValueError):
                continue
            if fields.get("Name", "").strip() == spec["watched"]:
                seen.update(int(uid) for uid in fields["Uid"].split()[:2])
        await asyncio.sleep(0.05)

async def main():
    done = {}
    for name, code in spec["attacks"].items():
        given = {"timeout": 5.0, **spec["limits"].get(name, {})}
        limits = Limits(**{key: value for key, value in given.items() if key in known})
        code = code.replace("@HARNESS_PID@", str(os.getpid()))
        seen = set()
        watcher = asyncio.create_task(watch(seen))
        try:
            # A hang is a failure of its own, not a test that never ends.
            execution = await asyncio.wait_for(sandbox.run(code, limits), limits.timeout + 30)
        except Exception as exc:  # the attack broke harness itself: it got through
            done[name] = {"stdout": "", "stderr": "", "error": repr(exc)[:2000]}
            continue
        finally:
            watcher.cancel()
        done[name] = {
            "stdout": execution.stdout, "stderr": execution.stderr[-2000:],
            "limit": execution.limit, "survivors": getattr(execution, "survivors", []),
            "host_uids": sorted(seen),
        }
    print(json.dumps(done), flush=True)

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
            "orphan": f"orp{self.tag}",
            "keyring": f"harness-attack-{self.tag}",
            "setuid": f"harness-setuid-{self.tag}",
            "left": f"harness-left-{self.tag}",
            "fill": f"harness-fill-{self.tag}",
            "watched": f"wch{self.tag}",
        }

    def close(self) -> None:
        for server in self._servers:
            server.close()
        for name in ("daemon", "bomb", "orphan"):
            for pid in named(str(self.spec()[name])):
                os.kill(int(pid), signal.SIGKILL)
        Path(self.unix).unlink(missing_ok=True)
        shutil.rmtree(self.folder, ignore_errors=True)
        for base in (sys.prefix, "/usr"):
            Path(base, f"harness-attack-{self.tag}").unlink(missing_ok=True)
        # What the attacks left on the host: their files, and work folders holding them.
        for path in self.planted():
            top = Path(*path.parts[:3])
            remove(top if top.name.startswith("harness-sandbox-") else path)
        for path in Path("/dev/shm").glob(f"{self.spec()['fill']}-*"):
            path.unlink()

    def planted(self) -> list[Path]:
        """The host's files named as the setuid and deep-tree attacks name theirs: in the
        shared folders, and in work folders that were left (however deep)."""
        names = {self.spec()["setuid"], self.spec()["left"]}
        found = [Path(f, n) for f in ("/tmp", "/var/tmp", "/dev/shm") for n in names]
        found = [path for path in found if path.exists()]
        for folder in Path("/tmp").glob("harness-sandbox-*"):
            found += [path for path in files_under(folder) if path.name in names]
        return found


def files_under(top: Path) -> list[Path]:
    """Every file under ``top``, however deep (no recursion: 1,500 levels are no trouble)."""
    found, folders = [], [top]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            else:
                found.append(Path(entry.path))
    return found


def remove(top: Path) -> None:
    """Remove ``top`` and all below it, however deep (the test's own cleanup)."""
    if not top.is_dir() or top.is_symlink():
        top.unlink(missing_ok=True)
        return
    folders, order = [top], []
    while folders:
        folder = folders.pop()
        folder.chmod(0o700)
        order.append(folder)
        for entry in os.scandir(folder):
            if entry.is_dir(follow_symlinks=False):
                folders.append(Path(entry.path))
            else:
                os.unlink(entry.path)
    for folder in reversed(order):
        folder.rmdir()


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


def usable(backend: str, user: str) -> None:
    """Skip (or, for bubblewrap under CI, fail) where this attack cannot be made here."""
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


def driver(backend: str, user: str, bait: Bait, attacks: dict[str, str]) -> list[str]:
    """The command that runs ``attacks`` through ``backend`` from a harness process of
    ``user`` (its last argument names it, for the attack that looks for it)."""
    prelude = _PRELUDE.format(bait=json.dumps(bait.spec()))
    spec = {
        "backend": backend,
        "attacks": {name: prelude + code for name, code in attacks.items()},
        "limits": ATTACK_LIMITS,
        "keyring": bait.spec()["keyring"],
        "secret": SECRET,
        "watched": bait.spec()["watched"],
    }
    argv = [sys.executable, "-c", DRIVER, json.dumps(spec), str(bait.spec()["driver"])]
    return as_nobody(argv) if user == "nobody" else argv


# What harness runs with: an API key in its environment (as `harness run` in CI); the
# harness of this tree (a worktree's, not the installed one's).
DRIVER_ENV = {
    "PATH": os.environ["PATH"],
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "OPENAI_API_KEY": SECRET,
    "PYTHONPATH": str(ROOT),
}


def tasks_of(uid: int) -> int:
    """How many tasks (threads, zombies too) of real uid ``uid`` the machine has now."""
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/status") as status:
                    uids = next(line for line in status if line.startswith("Uid:"))
                count += int(uids.split()[1]) == uid
        except (OSError, StopIteration):
            continue
    return count


def settled(user: str) -> None:
    """Before harness runs as uid 65534: wait (a bounded moment) for that uid's tasks of
    earlier tests to be gone. Its process limit is RLIMIT_NPROC, which counts every task of
    the uid host-wide, zombies too, and a killed fork bomb's processes are reaped by the
    machine's init, which may be slow to: until then the next sandbox of that uid cannot
    start (clone: "Resource temporarily unavailable")."""
    deadline = time.monotonic() + 30
    while user == "nobody" and tasks_of(NOBODY) and time.monotonic() < deadline:
        time.sleep(0.1)


def attack(backend: str, user: str) -> tuple[dict[str, dict], Bait]:
    """Run every attack through ``backend`` from a harness process of ``user``."""
    usable(backend, user)
    settled(user)
    bait = Bait(user)
    try:
        done = subprocess.run(
            driver(backend, user, bait, ATTACK_CODE),
            capture_output=True,
            text=True,
            env=DRIVER_ENV,
            timeout=400,
            cwd="/tmp",
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1]), bait
    except BaseException:
        bait.close()
        raise


OUTLIVE = "outlive harness killed mid-run, or leave its cgroup or folder behind"


def outlive(backend: str, user: str) -> bool:
    """Kill harness (SIGKILL) while the code runs with a daemon of its own: whether any
    of the code's processes lives on, or harness's cgroup or work folder for the run
    stays after a later run of the same user (a run is where harness tidies up after one
    that was killed)."""
    settled(user)
    bait = Bait(user)
    try:
        harness = subprocess.Popen(
            driver(backend, user, bait, {OUTLIVE: HOLD_CODE}),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=DRIVER_ENV,
            cwd="/tmp",
        )
        orphan = str(bait.spec()["orphan"])
        deadline = time.monotonic() + 120
        while len(named(orphan)) < 2 and harness.poll() is None:
            assert time.monotonic() < deadline, "the code never started"
            time.sleep(0.05)
        assert harness.poll() is None, harness.communicate()[1][-3000:]
        harness.kill()
        harness.communicate()
        left = wait_gone(orphan)
        later = [sys.executable, "-c", LATER_RUN, backend]
        subprocess.run(
            as_nobody(later) if user == "nobody" else later,
            check=True,
            capture_output=True,
            env=DRIVER_ENV,
            timeout=120,
            cwd="/tmp",
        )
        prefix = f"harness-sandbox-{harness.pid}-"
        cgroups = [path for path in cgroup_folders() if path.name.startswith(prefix)]
        folders = list(Path("/tmp").glob(f"{prefix}*"))
        print(f"{backend} as {user}: left running {left}, cgroups {cgroups}, folders {folders}")
        return bool(left or cgroups or folders)
    finally:
        bait.close()


LATER_RUN = """
import asyncio, sys
from harness.sandbox import Limits, get_sandbox
print(asyncio.run(get_sandbox(sys.argv[1]).run("print(1)", Limits())).stdout)
"""


def cgroup_folders() -> list[Path]:
    """Harness's pids cgroups on this machine (v1 and v2)."""
    return [
        path
        for base in (Path("/sys/fs/cgroup/pids"), Path("/sys/fs/cgroup"))
        for path in base.glob("harness-sandbox-*")
    ]


@pytest.fixture(scope="module")
def outcomes() -> Iterator[dict[tuple[str, str], dict[str, bool]]]:
    """Per (backend, user): per attack, whether it succeeded (made once, lazily)."""

    class Lazy(dict):
        def __missing__(self, key: tuple[str, str]) -> dict[str, bool]:
            self[key] = {**judge(*attack(*key)), OUTLIVE: outlive(*key)}
            return self[key]

    yield Lazy()


def judge(results: dict[str, dict], bait: Bait) -> dict[str, bool]:
    """Whether each attack got what it wanted, from what the code printed and what the
    host saw (a connection, a file, a process left running)."""
    try:
        spec = bait.spec()
        # An attack that made harness itself fail got through too.
        escaped = {
            name: "ESCAPED" in result["stdout"] or "error" in result
            for name, result in results.items()
        }
        written = [Path(spec["write"]), Path(sys.prefix, spec["name"]), Path("/usr", spec["name"])]
        escaped["write outside its working folder"] |= any(path.exists() for path in written)
        unix = "connect to the host's Unix sockets (/run, abstract)"
        escaped[unix] |= bool({"unix", "abstract"} & set(bait.connections))
        escaped["connect to a server on the host's 127.0.0.1"] |= "tcp" in bait.connections
        escaped["leave a setsid daemon running"] |= wait_gone(spec["daemon"]) != []
        bomb = results["start more processes than its limit"]
        # Contained means stopped at the process limit, not merely at the timeout.
        escaped["start more processes than its limit"] |= bomb.get("limit") != "processes"
        escaped["start more processes than its limit"] |= wait_gone(spec["bomb"]) != []
        root = "run as root on the host (even without capabilities)"
        if "error" not in results[root]:
            uids = results[root]["host_uids"]
            assert uids, "the code's process was never seen from the host: nothing was judged"
            escaped[root] |= 0 in uids
        planted = bait.planted()
        setuid = "plant a set-user-ID root program (on the host, or honoured in its sandbox)"
        escaped[setuid] |= any(gives_root(path) for path in planted)
        left = "leave files behind (a 1,500-deep tree)"
        escaped[left] |= any(path.name == spec["left"] for path in planted)
        return escaped
    finally:
        bait.close()


def gives_root(path: Path) -> bool:
    """Whether the program at ``path``, run by uid 65534, runs with root's rights."""
    if path.name.startswith("harness-left-"):
        return False
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    print(path, done.stdout, done.stderr)
    return "euid=0(" in done.stdout


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
    assert list(docs_table()) == [*ATTACK_CODE, OUTLIVE]
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
