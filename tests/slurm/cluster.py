"""A real single-node SLURM cluster on this machine, for the tests in ``tests/slurm``.

What it does, as root on Debian (no systemd needed):

1. installs ``slurmctld slurmd slurm-client munge`` with apt when any is missing;
2. writes ``/etc/slurm/slurm.conf`` and ``/etc/slurm/gres.conf`` (the compiled-in default path: the
   jobstep executor strips ``SLURM_CONF`` from the job environment, so any other path breaks jobs),
   sized from ``nproc`` and ``MemAvailable``, with three partitions on the node (``main``, the
   default, ``cpu`` and ``gpu``) and fake GPUs (character devices with the numbers of /dev/null,
   which gres/gpu accepts);
3. starts munged, slurmctld and slurmd (``-N localhost``) in the foreground as child processes,
   waits until the node is idle and runs one ``srun`` as a smoke test;
4. on ``down`` cancels the cluster's jobs and stops exactly the daemons it started, by PID.

State, logs and the fake GPU devices live in a run directory under /tmp (``SENTREPRO_SLURM_TEST_RUNDIR``
overrides it). ``up`` is idempotent: daemons that already run with this module's configuration are
reused and never stopped by the caller that reused them; a cluster this module started from an
older configuration is restarted. Without root, an already running cluster
(for example one a CI step started with ``sudo``) is still usable.

Command line: ``python -m tests.slurm.cluster up|down|status`` from the repository root.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator

from sentrepro.files import atomic_path, atomic_write_json

RUN_DIR_ENV = "SENTREPRO_SLURM_TEST_RUNDIR"
DEFAULT_RUN_DIR = Path("/tmp/sentrepro-slurm")
SLURM_CONF = Path("/etc/slurm/slurm.conf")
GRES_CONF = Path("/etc/slurm/gres.conf")
MUNGE_KEY = Path("/etc/munge/munge.key")
MUNGE_RUN_DIR = Path("/run/munge")
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge")

NODE_NAME = "localhost"
CLUSTER_NAME = "sentrepro"
# Three partitions on the one node, so tests can tell a chosen partition from the default one.
DEFAULT_PARTITION = "main"
CPU_PARTITION = "cpu"
GPU_PARTITION = "gpu"
FAKE_GPU_TYPE = "fake"
DEFAULT_FAKE_GPUS = 2
# squeue-based status polling in snakemake-executor-plugin-slurm needs MinJobAge >= 3 x its init interval;
# 300 s is also how long finished jobs stay visible to squeue for the tests' checks.
MIN_JOB_AGE_S = 300
# A requeued job may start again only after the job credential lifetime has passed (SLURM's default
# is 120 s, its minimum 5 s), and then waits for the next scheduling pass (every 30-60 s by default):
# both short, so that the tests' requeued training job restarts within seconds.
CRED_EXPIRE_S = 10
SCHEDULER_INTERVAL_S = 2
DEF_MEM_PER_CPU_MB = 500
READY_NODE_STATES = frozenset({"idle", "mix", "mixed", "alloc", "allocated", "comp", "completing"})

# Stop order: compute daemon first, controller next, authentication last.
DAEMONS = ("slurmd", "slurmctld", "munged")

Log = Callable[[str], None]


class ClusterUnavailable(RuntimeError):
    """This machine cannot host the cluster (not root, apt failed, a foreign SLURM is running)."""


class ClusterError(RuntimeError):
    """A daemon failed to start, or the node never became usable."""


@dataclass(frozen=True)
class ClusterSpec:
    """Where the cluster keeps its state and how big its single node is."""

    run_dir: Path
    cpus: int
    real_memory_mb: int
    fake_gpus: int = DEFAULT_FAKE_GPUS

    @classmethod
    def for_this_machine(cls, run_dir: str | os.PathLike | None = None,
                         fake_gpus: int = DEFAULT_FAKE_GPUS) -> "ClusterSpec":
        """Size the node from ``nproc`` and 90 % of ``MemAvailable``."""
        if run_dir is None:
            run_dir = os.environ.get(RUN_DIR_ENV) or DEFAULT_RUN_DIR
        meminfo = Path("/proc/meminfo").read_text(encoding="ascii")
        return cls(
            run_dir=Path(run_dir).resolve(),
            cpus=len(os.sched_getaffinity(0)),
            real_memory_mb=schedulable_memory_mb(meminfo),
            fake_gpus=fake_gpus,
        )

    @property
    def state_dir(self) -> Path:
        return self.run_dir / "ctld"

    @property
    def spool_dir(self) -> Path:
        return self.run_dir / "spool"

    @property
    def log_dir(self) -> Path:
        return self.run_dir / "logs"

    @property
    def fake_gpu_dir(self) -> Path:
        return self.run_dir / "fakegpu"

    @property
    def jobcomp_file(self) -> Path:
        return self.log_dir / "jobcomp.txt"

    @property
    def started_file(self) -> Path:
        """JSON ``{daemon: pid}`` of the daemons this module started and has not stopped yet."""
        return self.run_dir / "started.json"

    @property
    def session_lock_file(self) -> Path:
        return self.run_dir / "session.lock"

    @property
    def conf_marker(self) -> str:
        """First line of every slurm.conf this module writes; identifies 'our' running cluster."""
        return f"# written by sentrepro tests/slurm/cluster.py for run dir {self.run_dir}"


@dataclass
class Cluster:
    """A running cluster and the daemons *this* call of :func:`up` started (name -> pid)."""

    spec: ClusterSpec
    started: dict[str, int] = field(default_factory=dict)
    processes: dict[str, subprocess.Popen] = field(default_factory=dict, repr=False)


# ----------------------------------------------------------------------------------------------
# Pure parts: sizing and configuration text
# ----------------------------------------------------------------------------------------------

def schedulable_memory_mb(meminfo_text: str, fraction: float = 0.9) -> int:
    """``fraction`` of MemAvailable (kB in /proc/meminfo) in MiB: what the node advertises to SLURM."""
    for line in meminfo_text.splitlines():
        if line.startswith("MemAvailable:"):
            return int(int(line.split()[1]) / 1024 * fraction)
    raise ClusterError("/proc/meminfo has no MemAvailable line")


def fake_gpu_paths(spec: ClusterSpec) -> list[Path]:
    return [spec.fake_gpu_dir / f"gpu{index}" for index in range(spec.fake_gpus)]


def render_slurm_conf(spec: ClusterSpec) -> str:
    """slurm.conf for one node without cgroups or accounting (squeue/jobcomp still see every job)."""
    gres_node = f" Gres=gpu:{FAKE_GPU_TYPE}:{spec.fake_gpus}" if spec.fake_gpus else ""
    lines = [
        spec.conf_marker,
        f"ClusterName={CLUSTER_NAME}",
        f"SlurmctldHost={NODE_NAME}",
        "SlurmUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=cred_expire={CRED_EXPIRE_S}",
        "CredType=cred/munge",
        "MpiDefault=none",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "ReturnToService=2",
        "MailProg=/bin/true",
        f"StateSaveLocation={spec.state_dir}",
        f"SlurmdSpoolDir={spec.spool_dir}",
        f"SlurmctldPidFile={spec.run_dir / 'slurmctld.pid'}",
        f"SlurmdPidFile={spec.run_dir / 'slurmd.pid'}",
        f"SlurmctldLogFile={spec.log_dir / 'slurmctld.log'}",
        f"SlurmdLogFile={spec.log_dir / 'slurmd.log'}",
        "SchedulerType=sched/backfill",
        f"SchedulerParameters=sched_interval={SCHEDULER_INTERVAL_S},bf_interval={SCHEDULER_INTERVAL_S}",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core_Memory",
        f"DefMemPerCPU={DEF_MEM_PER_CPU_MB}",
        f"MinJobAge={MIN_JOB_AGE_S}",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={spec.jobcomp_file}",
        "AccountingStorageType=accounting_storage/none",
        "JobAcctGatherType=jobacct_gather/none",
    ]
    if spec.fake_gpus:
        lines.append("GresTypes=gpu")
    lines += [
        f"NodeName={NODE_NAME} NodeAddr=127.0.0.1 CPUs={spec.cpus} RealMemory={spec.real_memory_mb}"
        f"{gres_node} State=UNKNOWN",
        f"PartitionName={DEFAULT_PARTITION} Nodes={NODE_NAME} Default=YES MaxTime=INFINITE State=UP",
    ]
    lines += [f"PartitionName={name} Nodes={NODE_NAME} Default=NO MaxTime=INFINITE State=UP"
              for name in (CPU_PARTITION, GPU_PARTITION)]
    return "\n".join(lines) + "\n"


def render_gres_conf(spec: ClusterSpec) -> str:
    """gres.conf naming one character device per fake GPU (gres/gpu drops GPUs without File=)."""
    lines = [spec.conf_marker]
    for path in fake_gpu_paths(spec):
        lines.append(f"NodeName={NODE_NAME} Name=gpu Type={FAKE_GPU_TYPE} File={path}")
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------------------------
# Processes
# ----------------------------------------------------------------------------------------------

def process_name(pid: int) -> str | None:
    """The kernel's short name of a live (non-zombie) process, or None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    # Format: "pid (comm) state ..."; comm may contain spaces or parentheses.
    name = fields[fields.index("(") + 1: fields.rindex(")")]
    state = fields[fields.rindex(")") + 2:].split()[0]
    return None if state in ("Z", "X") else name


def find_pids(name: str) -> list[int]:
    """PIDs of live processes whose kernel name is exactly ``name``."""
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and process_name(int(entry.name)) == name:
            pids.append(int(entry.name))
    return sorted(pids)


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def stop_pid(pid: int, name: str, log: Log, grace_s: float = 10.0) -> bool:
    """SIGTERM ``pid`` if it still is ``name``; SIGKILL after ``grace_s``. True if it was running."""
    if process_name(pid) != name:
        _reap(pid)
        return False
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        _reap(pid)
        if process_name(pid) != name:
            log(f"stopped {name} (pid {pid})")
            return True
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    time.sleep(0.2)
    _reap(pid)
    log(f"killed {name} (pid {pid}) after {grace_s:.0f} s without exiting on SIGTERM")
    return True


def process_environ(pid: int) -> dict[str, str]:
    """The environment a live process was started with ({} if it is gone or unreadable)."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return {}
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {key.decode(errors="replace"): value.decode(errors="replace") for key, value in pairs}


def job_processes(cluster_name: str = CLUSTER_NAME) -> list[int]:
    """Live processes that belong to a job of this cluster: every process whose environment carries
    ``SLURM_CLUSTER_NAME=<cluster_name>`` with a ``SLURM_JOB_ID`` (what SLURM sets for a job's batch script and
    steps, inherited by everything they start, daemonised or not), and, for the test cluster itself
    (:data:`CLUSTER_NAME`), every ``slurmstepd``. A ``slurmstepd`` carries no cluster name (it has slurmd's
    environment); it belongs to this machine's slurmd, which is the test cluster's. Under any other name it is
    left alone: tests/test_slurm_cleanup.py ran beside a rehearsal on the test cluster once and ended all its job
    steps."""
    own = os.getpid()
    steps_are_ours = cluster_name == CLUSTER_NAME
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == own:
            continue
        pid = int(entry.name)
        name = process_name(pid)
        if name is None:
            continue
        environ = process_environ(pid)
        if (name == "slurmstepd" and steps_are_ours) or (environ.get("SLURM_CLUSTER_NAME") == cluster_name
                                                         and "SLURM_JOB_ID" in environ):
            found.append(pid)
    return sorted(found)


def end_job_processes(log: Log, cluster_name: str = CLUSTER_NAME, grace_s: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL after ``grace_s``, every process of :func:`job_processes`.

    ``scancel`` with ``proctrack/linuxproc`` ends a job's process tree, but a step whose parent was lost
    (a requeued job's ``srun`` step re-parented to PID 1) can outlive it. Returns the PIDs still alive
    after SIGKILL (normally none)."""
    pids = job_processes(cluster_name)
    if not pids:
        return []
    log(f"ending {len(pids)} leftover job process(es): {' '.join(map(str, pids))}")
    for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            for pid in pids:
                _reap(pid)
            pids = [pid for pid in pids if process_name(pid) is not None]
            if not pids:
                return []
            time.sleep(0.1)
    return pids


def _run(cmd: list[str], timeout_s: float = 30.0) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)


def _tail(path: Path, lines: int = 25) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    return f"--- last lines of {path} ---\n" + "\n".join(text.splitlines()[-lines:])


# ----------------------------------------------------------------------------------------------
# Packages and static files
# ----------------------------------------------------------------------------------------------

def missing_packages(packages: tuple[str, ...] = PACKAGES) -> list[str]:
    missing = []
    for package in packages:
        query = _run(["dpkg-query", "-W", "-f=${Status}", package])
        if query.returncode != 0 or "install ok installed" not in query.stdout:
            missing.append(package)
    return missing


def install_packages(packages: list[str], log: Log) -> None:
    """apt-get install, non-interactive; any failure makes the cluster unavailable, with apt's words."""
    if shutil.which("apt-get") is None:
        raise ClusterUnavailable(f"packages {' '.join(packages)} are missing and there is no apt-get")
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    log(f"apt-get install {' '.join(packages)}")
    steps = (
        ["apt-get", "-q", "update"],
        ["apt-get", "-q", "-y", "--no-install-recommends", "-o", "DPkg::Lock::Timeout=300", "install",
         *packages],
    )
    for cmd in steps:
        done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=False)
        if done.returncode != 0:
            raise ClusterUnavailable(
                f"`{' '.join(cmd)}` failed with exit code {done.returncode}:\n{done.stderr[-2000:]}"
            )
    if Path("/run/systemd/system").is_dir():
        # systemd hosts start the packaged units on install, with a default configuration; this
        # module runs the daemons itself, so stop those units (munge is reused, not stopped).
        _run(["systemctl", "stop", "slurmd", "slurmctld"])


def _write_file(target: Path, text: str, mode: int) -> None:
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")
        tmp.chmod(mode)


def write_configuration(spec: ClusterSpec, log: Log) -> None:
    """Fresh run directory contents, fake GPU devices, slurm.conf and gres.conf."""
    for directory in (spec.state_dir, spec.spool_dir):
        shutil.rmtree(directory, ignore_errors=True)
    for directory in (spec.state_dir, spec.spool_dir, spec.log_dir):
        directory.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(spec.fake_gpu_dir, ignore_errors=True)
    if spec.fake_gpus:
        spec.fake_gpu_dir.mkdir(parents=True)
        null_device = os.stat("/dev/null").st_rdev
        for path in fake_gpu_paths(spec):
            os.mknod(path, stat.S_IFCHR | 0o666, null_device)
    SLURM_CONF.parent.mkdir(parents=True, exist_ok=True)
    _write_file(SLURM_CONF, render_slurm_conf(spec), 0o644)
    if spec.fake_gpus:
        _write_file(GRES_CONF, render_gres_conf(spec), 0o644)
    else:
        with contextlib.suppress(FileNotFoundError):
            GRES_CONF.unlink()
    log(f"wrote {SLURM_CONF} (CPUs={spec.cpus} RealMemory={spec.real_memory_mb} fake GPUs={spec.fake_gpus})")


def _ensure_munge_key() -> None:
    """Debian's munge postinst makes the key; recreate it only if it is missing or empty."""
    munge_user = pwd.getpwnam("munge")
    if not MUNGE_KEY.is_file() or MUNGE_KEY.stat().st_size == 0:
        with atomic_path(MUNGE_KEY) as tmp:
            tmp.write_bytes(os.urandom(1024))
            os.chown(tmp, munge_user.pw_uid, munge_user.pw_gid)
            tmp.chmod(0o400)
    os.chown(MUNGE_KEY, munge_user.pw_uid, munge_user.pw_gid)
    MUNGE_KEY.chmod(0o400)
    MUNGE_RUN_DIR.mkdir(parents=True, exist_ok=True)
    os.chown(MUNGE_RUN_DIR, munge_user.pw_uid, munge_user.pw_gid)
    MUNGE_RUN_DIR.chmod(0o755)


# ----------------------------------------------------------------------------------------------
# Health checks
# ----------------------------------------------------------------------------------------------

def munge_works() -> bool:
    try:
        return shutil.which("munge") is not None and _run(["munge", "-n"], timeout_s=5).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def node_state() -> str | None:
    """sinfo's compact state of the node (``idle``, ``mix``, ``down*``, ...), or None if no answer."""
    # Without a local slurmctld, sinfo would retry for about ten seconds before giving up.
    if shutil.which("sinfo") is None or not find_pids("slurmctld"):
        return None
    try:
        answer = _run(["sinfo", "--noheader", "--nodes", NODE_NAME, "--format", "%t"], timeout_s=10)
    except subprocess.TimeoutExpired:
        return None
    states = answer.stdout.split()
    return states[0] if answer.returncode == 0 and states else None


def conf_is_ours(spec: ClusterSpec) -> bool:
    try:
        first_line = SLURM_CONF.read_text(encoding="utf-8").splitlines()[0]
    except (FileNotFoundError, IndexError):
        return False
    return first_line == spec.conf_marker


def _comparable(conf_text: str) -> str:
    """Configuration text without the memory figure, which follows MemAvailable from run to run."""
    return re.sub(r"RealMemory=\d+", "RealMemory=*", conf_text)


def conf_is_current(spec: ClusterSpec) -> bool:
    """The files on disk are what this version of the module would write for ``spec``."""
    try:
        slurm_conf = SLURM_CONF.read_text(encoding="utf-8")
        gres_conf = GRES_CONF.read_text(encoding="utf-8") if spec.fake_gpus else ""
    except FileNotFoundError:
        return False
    wanted_gres = render_gres_conf(spec) if spec.fake_gpus else ""
    return _comparable(slurm_conf) == _comparable(render_slurm_conf(spec)) and gres_conf == wanted_gres


def is_usable(spec: ClusterSpec) -> bool:
    """A cluster with this module's current configuration answers and its node takes jobs."""
    return conf_is_current(spec) and node_state() in READY_NODE_STATES


# ----------------------------------------------------------------------------------------------
# Bookkeeping of started daemons
# ----------------------------------------------------------------------------------------------

def read_started(spec: ClusterSpec) -> dict[str, int]:
    try:
        return {name: int(pid) for name, pid in json.loads(spec.started_file.read_text()).items()}
    except FileNotFoundError:
        return {}
    except (ValueError, AttributeError) as error:
        raise ClusterError(f"{spec.started_file}: not a JSON object of daemon -> pid ({error})") from error


def _record_started(spec: ClusterSpec, name: str, pid: int | None) -> None:
    started = read_started(spec)
    if pid is None:
        started.pop(name, None)
    else:
        started[name] = pid
    atomic_write_json(spec.started_file, started)


@contextlib.contextmanager
def exclusive_use(spec: ClusterSpec, log: Log, timeout_s: float = 1800.0) -> Iterator[None]:
    """Hold the cluster for one test session; a second session on this machine waits its turn."""
    try:
        spec.run_dir.mkdir(parents=True, exist_ok=True)
        # Read-only is enough for flock, and lets a non-root session share a lock file root created.
        descriptor = os.open(spec.session_lock_file, os.O_RDONLY | os.O_CREAT, 0o666)
    except OSError as error:
        raise ClusterUnavailable(f"cannot open the session lock {spec.session_lock_file}: {error}") from error
    try:
        deadline = time.monotonic() + timeout_s
        waiting_said = False
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ClusterUnavailable(
                        f"another test session held {spec.session_lock_file} for over {timeout_s:.0f} s"
                    ) from None
                if not waiting_said:
                    log(f"waiting for another test session that uses the cluster ({spec.session_lock_file})")
                    waiting_said = True
                time.sleep(1.0)
        yield
    finally:
        os.close(descriptor)  # also releases the lock


# ----------------------------------------------------------------------------------------------
# up / down / status
# ----------------------------------------------------------------------------------------------

def _stderr_log(message: str) -> None:
    print(f"[slurm-cluster] {message}", file=sys.stderr, flush=True)


def _start(cluster: Cluster, name: str, cmd: list[str], **popen_kwargs) -> None:
    spec = cluster.spec
    with open(spec.log_dir / f"{name}.out", "ab") as output:  # the child keeps its own copy
        process = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=output, stderr=subprocess.STDOUT,
                                   start_new_session=True, **popen_kwargs)
    cluster.started[name] = process.pid
    cluster.processes[name] = process
    _record_started(spec, name, process.pid)


def _fail_start(cluster: Cluster, problem: str) -> ClusterError:
    """Stop what this call started and build the error with the daemons' log tails."""
    logs = "\n".join(_tail(cluster.spec.log_dir / f"{name}{suffix}")
                     for name in ("munged", "slurmctld", "slurmd") for suffix in (".out", ".log")
                     if (cluster.spec.log_dir / f"{name}{suffix}").exists())
    down(cluster, log=lambda _message: None)
    return ClusterError(f"{problem}\n{logs}")


def _wait_until(check: Callable[[], bool], cluster: Cluster, what: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        for name, process in cluster.processes.items():
            if process.poll() is not None:
                raise _fail_start(cluster, f"{name} exited with code {process.returncode} while waiting "
                                           f"for {what}")
        if time.monotonic() > deadline:
            raise _fail_start(cluster, f"timed out after {timeout_s:.0f} s waiting for {what} "
                                       f"(node state: {node_state()})")
        time.sleep(0.2)


def up(spec: ClusterSpec | None = None, log: Log = _stderr_log, ready_timeout_s: float = 60.0) -> Cluster:
    """Bring the cluster up (or reuse the running one) and return which daemons this call started."""
    spec = spec or ClusterSpec.for_this_machine()
    cluster = Cluster(spec=spec)
    if is_usable(spec):
        log(f"reusing the running cluster (node {node_state()})")
        return cluster
    if os.geteuid() != 0:
        raise ClusterUnavailable("starting the SLURM daemons needs root (run `sudo python -m "
                                 "tests.slurm.cluster up` first, or run the tests as root)")
    t0 = time.monotonic()
    if conf_is_ours(spec) and not conf_is_current(spec) and read_started(spec):
        log("the running cluster has an older configuration: restarting the daemons cluster.py started")
        down(spec, log)
    missing = missing_packages()
    if missing:
        install_packages(missing, log)
    spec.log_dir.mkdir(parents=True, exist_ok=True)

    running = {name: find_pids(name) for name in ("slurmctld", "slurmd")}
    if any(running.values()) and not conf_is_current(spec):
        described = ", ".join(f"{name} pid {pids}" for name, pids in running.items() if pids)
        raise ClusterUnavailable(f"SLURM daemons not started by this module are running ({described}) "
                                 f"with a {SLURM_CONF} other than this module's; stop them first")
    if not any(running.values()):
        write_configuration(spec, log)

    if not munge_works():
        _ensure_munge_key()
        _start(cluster, "munged", ["/usr/sbin/munged", "--foreground", "--force"],
               user="munge", group="munge", extra_groups=[])
        _wait_until(munge_works, cluster, "munged to answer `munge -n`", 15.0)
    if not running["slurmctld"]:
        _start(cluster, "slurmctld", ["/usr/sbin/slurmctld", "-D", "-c", "-i"])
    if not running["slurmd"]:
        _start(cluster, "slurmd", ["/usr/sbin/slurmd", "-D", "-N", NODE_NAME])
    _wait_until(lambda: node_state() == "idle", cluster, f"node {NODE_NAME} to be idle", ready_timeout_s)
    smoke = _run(["srun", "--nodes=1", "--ntasks=1", "--mem=10", "--time=1", "/bin/true"], timeout_s=60)
    if smoke.returncode != 0:
        raise _fail_start(cluster, f"`srun /bin/true` failed: {smoke.stderr.strip()}")
    log(f"cluster up in {time.monotonic() - t0:.1f} s; started {cluster.started or 'nothing'}")
    return cluster


def _cancel_all_jobs(log: Log, timeout_s: float = 20.0) -> None:
    """Cancel every job of the cluster and wait until none runs, so no slurmstepd outlives slurmd."""
    if node_state() is None:
        return
    _run(["scancel", "--full", "--state=PENDING"])
    _run(["scancel", "--full", "--state=RUNNING"])
    deadline = time.monotonic() + timeout_s
    active: list[str] = []
    while time.monotonic() < deadline:
        active = _run(["squeue", "--noheader", "--states=PENDING,RUNNING,COMPLETING,CONFIGURING",
                       "--format=%i"]).stdout.split()
        if not active:
            return
        time.sleep(0.3)
    log(f"jobs still active after scancel: {' '.join(active)}")


def down(cluster: Cluster | ClusterSpec | None = None, log: Log = _stderr_log) -> list[str]:
    """Stop the daemons a :class:`Cluster` started, or, given a spec, all that ``started.json`` lists.

    Every process of a job of this cluster is ended first (:func:`end_job_processes`), so no job step
    outlives the tests. Other daemons (reused, or never started here) keep running.
    Returns the names of the daemons that were stopped.
    """
    if cluster is None:
        cluster = ClusterSpec.for_this_machine()
    if isinstance(cluster, ClusterSpec):
        spec, owned = cluster, read_started(cluster)
    else:
        spec, owned = cluster.spec, dict(cluster.started)
    if "slurmctld" in owned and process_name(owned["slurmctld"]) == "slurmctld":
        _cancel_all_jobs(log)
    survivors = end_job_processes(log)
    if survivors:
        log(f"job processes still alive after SIGKILL: {' '.join(map(str, survivors))}")
    stopped = []
    for name in DAEMONS:
        if name in owned:
            if stop_pid(owned[name], name, log):
                stopped.append(name)
            _record_started(spec, name, None)
    if isinstance(cluster, Cluster):
        for process in cluster.processes.values():
            with contextlib.suppress(ChildProcessError, OSError):
                process.wait(timeout=1)
        cluster.started.clear()
        cluster.processes.clear()
    return stopped


def status(spec: ClusterSpec | None = None) -> str:
    """Human-readable state: daemons running, which of them this module started, sinfo."""
    spec = spec or ClusterSpec.for_this_machine()
    owned = read_started(spec)
    if conf_is_current(spec):
        conf_state = "current"
    elif conf_is_ours(spec):
        conf_state = "written by an older version of cluster.py"
    else:
        conf_state = "absent or not written by cluster.py"
    lines = [f"run dir: {spec.run_dir}", f"{SLURM_CONF}: {conf_state}"]
    for name in reversed(DAEMONS):
        pids = find_pids(name)
        mark = " (started by cluster.py)" if owned.get(name) in pids else ""
        lines.append(f"{name}: {'pid ' + ' '.join(map(str, pids)) if pids else 'not running'}{mark}")
    lines.append(f"node {NODE_NAME}: {node_state() or 'no answer'}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.slurm.cluster", description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("up", "down", "status"))
    parser.add_argument("--run-dir", default=None, help=f"state directory (default ${RUN_DIR_ENV} or "
                                                         f"{DEFAULT_RUN_DIR})")
    parser.add_argument("--fake-gpus", type=int, default=DEFAULT_FAKE_GPUS)
    args = parser.parse_args(argv)
    spec = ClusterSpec.for_this_machine(args.run_dir, fake_gpus=args.fake_gpus)
    try:
        if args.action == "up":
            up(spec)
        elif args.action == "down":
            down(spec)
        print(status(spec))
    except (ClusterUnavailable, ClusterError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
