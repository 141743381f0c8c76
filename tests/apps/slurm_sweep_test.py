#!/usr/bin/env python3
"""A cluster sweep under a real Slurm, on this machine (docs/cluster.md).

Starts munged, slurmctld and slurmd with a generated one-node configuration in a temporary
folder, plans a CPU sweep of the test variant test.delays (24 configs whose order is known) as
a 4-task job array with `attn-tune plan`, submits it with the plan's submit.sh, cancels one task in
the middle of its shard and requeues it, waits for the merge job, and checks that every config of
the space was recorded exactly once, that the merged winners are a single-process sweep's, and
that no process or daemon is left afterwards. The daemons are stopped whatever happens.

It installs nothing: it needs Debian's slurm-wlm and munge (scripts/install-deps.sh) and root,
since slurmd starts jobs (as another user through passwordless sudo, it runs itself again under
sudo). Where the daemons cannot start it fails and says why.

    slurm_sweep_test.py ATTN_TUNE_BINARY
"""

import ctypes
import os
import re
import secrets
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time

TIME_LIMIT = 170  # seconds for the whole test; CTest's TIMEOUT is a little longer
SHARDS = 4
CANCELLED_SHARD = 2
VARIANT = "test.delays"
CONFIGS = {f"delay_ms={d}" for d in range(10, 34)}  # its space (kernels/test_faults)
FASTEST = "delay_ms=10"
DAEMONS = ["munged", "slurmctld", "slurmd"]
CLIENTS = ["sbatch", "squeue", "scontrol", "scancel", "sinfo", "munge"]

START = time.monotonic()


class TestFailure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise TestFailure(message)


def left():
    return TIME_LIMIT - (time.monotonic() - START)


def log(message):
    print(f"[slurm sweep {time.monotonic() - START:5.1f}s] {message}", flush=True)


def eventually(predicate, seconds, what):
    deadline = time.monotonic() + min(seconds, max(left(), 0))
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TestFailure(f"timed out waiting for {what}")
        time.sleep(0.2)


def tail(path, lines=30):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"({path}: {e})"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def die_with_parent():
    """In a child before exec: SIGTERM when this test dies, however it dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_PDEATHSIG = 1
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def processes_with(marker):
    """Processes (not this one) whose environment holds the marker."""
    found = []
    needle = marker.encode()
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if needle not in f.read():
                    continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                found.append((int(pid), f.read().replace(b"\0", b" ").decode(errors="replace")))
        except OSError:
            continue
    return found


def db_rows(path, sql):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=10)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def db_count(path, sql):
    try:
        return db_rows(path, sql)[0][0]
    except (sqlite3.Error, IndexError):
        return -1  # not written yet


def winners(text):
    """The '  winner    VARIANT {CONFIG}' lines of a tune or merge output, and 'overall'."""
    return re.findall(r"^(?:  winner|overall)\s+(\S+ \{[^}]*\})", text, re.M)


class Cluster:
    """munged, slurmctld and slurmd in a folder of their own, on free ports."""

    def __init__(self, root, env):
        self.root = root
        self.env = env
        self.daemons = []
        self.conf = os.path.join(root, "slurm.conf")
        self.socket = os.path.join(root, "munge", "munge.socket")

    def write_configuration(self):
        os.makedirs(os.path.join(self.root, "munge"))
        os.chmod(os.path.join(self.root, "munge"), 0o755)
        for name in ["state", "spool"]:
            os.makedirs(os.path.join(self.root, name))
        key = os.path.join(self.root, "munge.key")
        with open(key, "wb") as f:
            f.write(secrets.token_bytes(1024))
        os.chmod(key, 0o400)
        host = socket.gethostname().split(".")[0]
        r = self.root
        with open(self.conf, "w") as f:
            f.write(f"""# A one-node cluster for tests/apps/slurm_sweep_test.py
ClusterName=attntest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.socket}
StateSaveLocation={r}/state
SlurmdSpoolDir={r}/spool
SlurmctldPidFile={r}/slurmctld.pid
SlurmdPidFile={r}/slurmd.pid
SlurmctldLogFile={r}/slurmctld.log
SlurmdLogFile={r}/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
KillWait=10
MinJobAge=600
SlurmdParameters=config_overrides
NodeName=attnnode NodeHostname={host} NodeAddr=127.0.0.1 CPUs=4 RealMemory=1000 State=UNKNOWN
PartitionName=attn Nodes=attnnode Default=YES MaxTime=INFINITE State=UP
""")

    def start(self, name, argv):
        out = open(os.path.join(self.root, f"{name}.out"), "w")
        p = subprocess.Popen(argv, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, preexec_fn=die_with_parent)
        self.daemons.append((name, p))
        return p

    def run(self, argv, check_rc=True):
        r = subprocess.run(argv, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=30)
        if check_rc and r.returncode != 0:
            raise TestFailure(f"{' '.join(argv)} exited with {r.returncode}:\n{r.stdout}")
        return r

    def alive(self, name):
        for n, p in self.daemons:
            if n == name:
                return p.poll() is None
        return False

    def wait_until(self, name, predicate, log_file, what):
        def ready():
            if not self.alive(name):
                raise TestFailure(
                    f"{name} exited at start: the daemons cannot run here.\n"
                    f"{tail(os.path.join(self.root, name + '.out'))}{tail(log_file)}")
            return predicate()
        try:
            eventually(ready, 30, what)
        except TestFailure as e:
            raise TestFailure(f"{e}\n{name}'s log:\n{tail(log_file)}") from None

    def up(self):
        self.write_configuration()
        r = self.root
        self.start("munged", ["munged", "--foreground", f"--key-file={r}/munge.key",
                              f"--socket={self.socket}", f"--pid-file={r}/munged.pid",
                              f"--log-file={r}/munged.log", f"--seed-file={r}/munged.seed"])
        self.wait_until("munged", lambda: os.path.exists(self.socket) and self.run(
            ["munge", "-n", "-S", self.socket], check_rc=False).returncode == 0,
            f"{r}/munged.log", "munged to answer")
        self.start("slurmctld", ["slurmctld", "-D", "-f", self.conf])
        self.wait_until("slurmctld", lambda: "UP" in self.run(
            ["scontrol", "ping"], check_rc=False).stdout, f"{r}/slurmctld.log",
            "slurmctld to answer scontrol ping")
        self.start("slurmd", ["slurmd", "-D", "-f", self.conf, "-N", "attnnode"])
        self.wait_until("slurmd", lambda: self.run(
            ["sinfo", "-h", "-o", "%T"], check_rc=False).stdout.strip() == "idle",
            f"{r}/slurmd.log", "the node to be idle")

    def jobs(self):
        r = self.run(["squeue", "-h", "-o", "%i %T"], check_rc=False)
        return r.stdout.split("\n") if r.returncode == 0 and r.stdout.strip() else []

    def job_state(self, job):
        r = self.run(["scontrol", "-o", "show", "job", str(job)], check_rc=False)
        m = re.search(r"\bJobState=(\S+)", r.stdout)
        return m.group(1) if m else ""

    def job_field(self, job, field):
        r = self.run(["scontrol", "-o", "show", "job", str(job)], check_rc=False)
        m = re.search(rf"\b{field}=(\S+)", r.stdout)
        return m.group(1) if m else ""

    def down(self):
        """Cancels every job, then stops the daemons (SIGTERM, then SIGKILL)."""
        if self.alive("slurmctld"):
            try:
                self.run(["scancel", "--partition=attn"], check_rc=False)
                deadline = time.monotonic() + 20
                while self.jobs() and time.monotonic() < deadline:
                    time.sleep(0.3)
            except (OSError, subprocess.TimeoutExpired):
                pass
        for name, p in reversed(self.daemons):
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def run_as_root():
    if os.geteuid() == 0:
        return
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"],
                                               stderr=subprocess.DEVNULL).returncode == 0:
        os.execvp("sudo", ["sudo", "-n", "env", f"PATH={os.environ.get('PATH', '')}",
                           sys.executable] + sys.argv)
    raise TestFailure("slurmd starts jobs and must run as root: run this test as root, or as a "
                      "user with passwordless sudo")


def main():
    check(len(sys.argv) == 2, "usage: slurm_sweep_test.py ATTN_TUNE_BINARY")
    attn_tune = os.path.abspath(sys.argv[1])
    missing = [p for p in DAEMONS + CLIENTS if not shutil.which(p)]
    check(not missing, f"{', '.join(missing)} not found: install Debian's slurm-wlm and munge "
                       "(scripts/install-deps.sh does)")
    run_as_root()

    root = tempfile.mkdtemp(prefix="attn_slurm_")
    os.chmod(root, 0o755)  # munged needs the folders above its socket searchable by all
    marker = f"attn_slurm_test_{os.getpid()}_{secrets.token_hex(4)}"
    env = dict(os.environ, SLURM_CONF=os.path.join(root, "slurm.conf"), ATTN_BENCH_TEST_VARIANTS="1",
               ATTN_DB="", ATTN_SLURM_TEST_MARKER=marker)
    for name in ["SLURM_JOB_ID", "SLURM_ARRAY_TASK_ID", "ATTN_SWEEP_SHARD"]:
        env.pop(name, None)
    cluster = Cluster(root, env)
    single = None
    failure = None
    try:
        cluster.up()
        log("munged, slurmctld and slurmd are up")
        workload = os.path.join(root, "tiny.json")
        with open(workload, "w") as f:
            f.write('{"schema_version": 1, "name": "tiny-prefill", "model": {"num_q_heads": 1, '
                    '"num_kv_heads": 1, "head_dim": 64, "dtype": "bf16"}, "kv_cache": '
                    '{"page_size": 16}, "sequences": [{"context_len": 8, "query_len": 2}], '
                    '"seed": 7}\n')
        plan = os.path.join(root, "plan")
        sweep = ["--variant", VARIANT, "--strategy", "exhaustive", "--cpu"]
        r = cluster.run([attn_tune, "plan", workload, *sweep, "--cpus-per-task", "1",
                         "--shards", str(SHARDS), "--out", plan, "--partition", "attn",
                         "--time", "10:00"])
        log("planned:\n" + r.stdout)

        # The reference: the same sweep in one process, meanwhile.
        single_out = open(os.path.join(root, "single.out"), "w")
        single = subprocess.Popen([attn_tune, "tune", workload, *sweep, "--threads", "1", "--db",
                                   os.path.join(root, "single.db")], env=env, stdout=single_out,
                                  stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

        r = cluster.run([os.path.join(plan, "submit.sh")])
        log(r.stdout.strip())
        m = re.search(r"job array (\d+) .* the merge as job (\d+)", r.stdout)
        check(m, "submit.sh did not say which jobs it submitted:\n" + r.stdout)
        array, merge = m.group(1), m.group(2)
        task = f"{array}_{CANCELLED_SHARD}"
        shard_db = os.path.join(plan, "shards", f"shard-{CANCELLED_SHARD}.db")

        # Cancel one task once its shard has measured a config, while its others wait.
        eventually(lambda: db_count(shard_db, "SELECT count(*) FROM measurements") >= 1, 60,
                   f"shard {CANCELLED_SHARD} to measure a config")
        check(cluster.job_state(task) == "RUNNING", f"task {task} is {cluster.job_state(task)}")
        cluster.run(["scancel", task])
        status_file = os.path.join(plan, "status", f"shard-{CANCELLED_SHARD}")
        eventually(lambda: tail(status_file, 1).startswith("exit "), 30,
                   f"task {task} to end (its status file: {tail(status_file, 1).strip()})")
        eventually(lambda: cluster.job_state(task) == "CANCELLED", 30,
                   f"task {task} to be cancelled (it is {cluster.job_state(task)})")
        measured = db_count(shard_db, "SELECT count(*) FROM measurements")
        status = db_rows(shard_db, "SELECT status FROM runs ORDER BY id")
        log(f"task {task} cancelled after {measured} configs: {tail(status_file, 1).strip()}; "
            f"its run: {status}")
        check(status == [("interrupted",)], f"the cancelled shard's run is {status}, not "
              "interrupted (did SIGTERM reach attn-tune?)\n" + tail(
                  os.path.join(plan, "logs", f"shard-{CANCELLED_SHARD}.log")))
        check(0 < measured < len(CONFIGS) // SHARDS,
              f"shard {CANCELLED_SHARD} had measured {measured} configs when cancelled: not in "
              "the middle of it")
        check(cluster.job_state(merge) == "PENDING",
              f"the merge job is {cluster.job_state(merge)} before the cancelled task ran again")
        # Slurm may still be cleaning up after the task for a moment.
        eventually(lambda: cluster.run(["scontrol", "requeue", task], check_rc=False).returncode
                   == 0, 20, f"scontrol requeue {task} to succeed")
        # A requeued job waits for a begin time a little ahead; a user may release it at once.
        cluster.run(["scontrol", "update", f"JobId={task}", "StartTime=now"])
        log(f"task {task} requeued")

        eventually(lambda: cluster.job_state(merge) in {"COMPLETED", "FAILED", "CANCELLED",
                                                        "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"},
                   max(left() - 30, 10), "the merge job to end")
        merge_log = tail(os.path.join(plan, "logs", "merge.log"), 200)
        log("merge job: " + cluster.job_state(merge) + "\n" + merge_log)
        check(cluster.job_state(merge) == "COMPLETED" and
              cluster.job_field(merge, "ExitCode") == "0:0",
              f"the merge job ended {cluster.job_state(merge)}, exit "
              f"{cluster.job_field(merge, 'ExitCode')}")
        check("every shard finished" in merge_log, "the merge did not find every shard finished")
        check(cluster.job_field(task, "Restarts") == "1",
              f"task {task} restarted {cluster.job_field(task, 'Restarts')} times, not once")

        # Every config of the space once, the requeued shard resumed rather than restarted.
        merged = os.path.join(plan, "merged.db")
        rows = db_rows(merged, "SELECT variant, config_key, count(*), "
                               "sum(disposition = 'passed') FROM measurements GROUP BY 1, 2")
        check({r[1] for r in rows} == CONFIGS and all(r[0] == VARIANT for r in rows),
              f"the merged configs are not the space: {sorted(r[1] for r in rows)}")
        check(all(r[2] == 1 and r[3] == 1 for r in rows),
              "configs recorded more than once or failed: " +
              str([r for r in rows if r[2] != 1 or r[3] != 1]))
        runs = db_rows(shard_db, "SELECT status FROM runs ORDER BY id")
        check(runs == [("interrupted",), ("completed",)],
              f"the requeued shard's runs are {runs}, not interrupted then completed")
        again = db_count(shard_db, "SELECT count(*) FROM measurements WHERE run_id = 2")
        check(again == len(CONFIGS) // SHARDS - measured,
              f"the requeued shard measured {again} configs, not the {len(CONFIGS) // SHARDS} - "
              f"{measured} left")
        check(db_count(merged, "SELECT count(*) FROM attempts WHERE status = 'started'") == 0,
              "an attempt was left started")

        # The merged winners are the single process's.
        eventually(lambda: single.poll() is not None, max(left() - 20, 10),
                   "the single-process sweep to end")
        single_out.close()
        with open(os.path.join(root, "single.out")) as f:
            single_text = f.read()
        check(single.returncode == 0, f"the single-process sweep exited {single.returncode}:\n"
              + single_text[-3000:])
        mine, theirs = winners(merge_log), winners(single_text)
        log(f"winners: merged {mine}, single process {theirs}")
        check(theirs == [f"{VARIANT} {{{FASTEST}}}"],
              f"the single-process sweep chose {theirs}, not the fastest config")
        check(mine == theirs, f"the merged winners {mine} are not the single process's {theirs}")
    except TestFailure as e:
        failure = str(e)
    except Exception as e:  # noqa: BLE001 - any error fails the test after the cleanup below
        failure = f"{type(e).__name__}: {e}"
    finally:
        if single and single.poll() is None:
            single.kill()
            single.wait()
        cluster.down()
        # Nothing may outlive the test: no daemon, no job, no attn-tune.
        try:
            eventually(lambda: not processes_with(marker), 10, "processes to end")
        except TestFailure:
            pass
        leftover = processes_with(marker)
        for pid, _ in leftover:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if leftover and not failure:
            failure = "processes left after the test: " + "; ".join(
                f"{pid} {cmd}" for pid, cmd in leftover)
        if failure:
            for name in ["slurmctld.log", "slurmd.log"]:
                print(f"--- {name}\n{tail(os.path.join(root, name), 15)}")
            print(f"kept for a look: {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    if failure:
        print(f"FAILED: {failure}", flush=True)
        return 1
    log("passed")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except TestFailure as e:
        print(f"FAILED: {e}", flush=True)
        sys.exit(1)
