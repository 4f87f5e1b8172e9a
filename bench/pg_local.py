#!/usr/bin/python3
"""A throwaway PostgreSQL 15 on loopback for the cluster scripts (bench/cluster_failover.py,
./dev demo --nodes N --store postgres), with the choices of tests/support/postgres_server.cc:
Debian's /usr/lib/postgresql/15/bin, initdb into a temporary directory (trust authentication
for the user "egress", UTF8, no locale), `postgres` on 127.0.0.1 only on a free port, with
fsync on (as a production server: these are measurements; the tests turn it off),
synchronous_commit on, full_page_writes off, max_connections 200, shared_buffers 32MB. The Unix
socket is in that directory, never in /run. Run as root, initdb and the server run as "nobody"
(PostgreSQL refuses root) and the directory is handed to that user. The server dies with the
process that started it (the kernel's parent-death signal: start it from the main thread).

A standby (Standby): pg_basebackup -R of the primary into its own directory, streaming on its
own loopback port; the primary then names it in synchronous_standby_names, so that a commit
(and so an acknowledged delivery) waits for it; promote() is `pg_ctl promote`.

As a program (./dev demo --nodes N --store postgres):
  bench/pg_local.py --serve DIR [--standby] [--no-fsync]
starts one in DIR (created; its parents must be reachable by "nobody" when run as root), makes
the database "egress", prints its URL as the first line of stdout (with --standby: both hosts
and target_session_attrs=read-write, the standby streaming and synchronous), and serves until
SIGTERM or SIGINT, then stops it (fast shutdown). DIR/postgres.log is the server's log.
"""

import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import time

BIN = "/usr/lib/postgresql/15/bin"
USER = "egress"
DATABASE = "egress"


def installed():
    return all(os.access(os.path.join(BIN, p), os.X_OK)
               for p in ("initdb", "postgres", "pg_ctl", "pg_basebackup", "psql"))


def free_port():
    """A loopback port nothing listens on now (another process may take it before we do)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user():
    """The prefix that runs a PostgreSQL program as "nobody" when we are root."""
    if os.geteuid() != 0:
        return []
    return ["/usr/bin/setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]


def _chown_to_server_user(path):
    if os.geteuid() != 0:
        return
    pw = pwd.getpwnam("nobody")
    os.chown(path, pw.pw_uid, pw.pw_gid)
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            os.lchown(os.path.join(root, name), pw.pw_uid, pw.pw_gid)


def _check_reachable(path):
    """Run as root, the server user must be able to reach `path`: every parent searchable."""
    if os.geteuid() != 0:
        return
    parent = os.path.dirname(os.path.abspath(path))
    while True:
        if not os.stat(parent).st_mode & 0o001:
            raise RuntimeError("'nobody' cannot reach %s: %s is not searchable by others "
                               "(chmod o+x, or use a directory under /tmp)" % (path, parent))
        if parent == "/":
            return
        parent = os.path.dirname(parent)


def _run(args, what):
    out = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if out.returncode != 0:
        raise RuntimeError("%s failed (%d): %s" % (what, out.returncode, out.stdout.strip()))
    return out.stdout


class Server:
    """One PostgreSQL server in `root` (a new temporary directory unless given; it must be empty
    or absent). start() initdb's it the first time (unless `data_ready`), then runs postgres;
    kill() is an outage (SIGKILL), stop() a fast shutdown. Call from the main thread."""

    def __init__(self, root=None, fsync=True, port=None, data_ready=False):
        if not installed():
            raise RuntimeError("PostgreSQL 15 is not installed (apt-get install postgresql-15)")
        self.root = root or tempfile.mkdtemp(prefix="pg-local-")
        os.makedirs(self.root, exist_ok=True)
        _check_reachable(self.root)
        self.data = os.path.join(self.root, "data")
        self.log = os.path.join(self.root, "postgres.log")
        self.fsync = fsync
        self.port = port or free_port()
        self.process = None
        self._initialized = data_ready

    def url(self, database=DATABASE):
        return "postgresql://%s@127.0.0.1:%d/%s" % (USER, self.port, database)

    def _initdb(self):
        _chown_to_server_user(self.root)
        _run(_as_server_user() + [os.path.join(BIN, "initdb"), "--auth=trust",
                                  "--username=" + USER, "--encoding=UTF8", "--no-locale",
                                  "--no-sync", "--pgdata=" + self.data], "initdb")
        self._initialized = True

    def start(self, extra=()):
        """Starts the server and waits until it answers (its first start: initdb)."""
        if not self._initialized:
            self._initdb()
        _chown_to_server_user(self.root)
        prefix = _as_server_user() or ["/usr/bin/setpriv"]
        # Dies with this process, also when it is killed (set after the change of user, which
        # would clear it).
        prefix = prefix + ["--pdeathsig=KILL"]
        args = prefix + [
            os.path.join(BIN, "postgres"), "-D", self.data,
            "-c", "listen_addresses=127.0.0.1", "-c", "port=%d" % self.port,
            "-c", "unix_socket_directories=" + self.root,
            "-c", "fsync=" + ("on" if self.fsync else "off"), "-c", "synchronous_commit=on",
            "-c", "full_page_writes=off", "-c", "max_connections=200",
            "-c", "shared_buffers=32MB", "-c", "log_min_messages=warning"]
        for setting in extra:
            args += ["-c", setting]
        # A killed server's backends leave within moments; until then a new one refuses to start.
        for _ in range(6):
            with open(self.log, "ab") as log:
                self.process = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                                stdout=log, stderr=log)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.process.poll() is None:
                if self.answers():
                    return self
                time.sleep(0.02)
            self.kill()
            time.sleep(0.2)
        with open(self.log, errors="replace") as f:
            raise RuntimeError("postgres did not start: " + f.read()[-2000:])

    def answers(self):
        return subprocess.run(
            [os.path.join(BIN, "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port),
             "-t", "1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0

    def sql(self, statement, database="postgres"):
        """Runs one statement with psql over loopback; its output, unaligned, tuples only."""
        return _run([os.path.join(BIN, "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                     "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, "-d", database,
                     "-c", statement], "psql " + statement).strip()

    def create_database(self, name=DATABASE):
        self.sql("CREATE DATABASE " + name)
        return self.url(name)

    def kill(self):
        """SIGKILL: an outage, not a shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self, timeout=10):
        """A fast shutdown (SIGINT), then SIGKILL if it takes longer than `timeout` s."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None


class Standby(Server):
    """A streaming standby of `primary` (pg_basebackup -R), synchronous once sync() ran."""

    NAME = "standby1"

    def __init__(self, primary, root=None):
        super().__init__(root, primary.fsync, data_ready=True)
        self.primary = primary

    def start(self, extra=()):
        if not os.path.exists(self.data):
            _chown_to_server_user(self.root)
            # As the server user, so the copy is that user's; application_name is how the
            # primary's synchronous_standby_names names this standby.
            _run(_as_server_user() + [
                os.path.join(BIN, "pg_basebackup"), "-D", self.data, "-R", "-X", "stream",
                "-c", "fast", "--no-sync", "-d",
                "host=127.0.0.1 port=%d user=%s application_name=%s" % (
                    self.primary.port, USER, self.NAME)], "pg_basebackup")
        return super().start(extra)

    def sync(self, timeout=30):
        """Waits until this standby streams, then makes it the primary's synchronous standby
        (from then a commit on the primary waits for this standby's flush)."""
        query = ("SELECT count(*) FROM pg_stat_replication WHERE application_name = '%s' "
                 "AND state = 'streaming'" % self.NAME)
        deadline = time.monotonic() + timeout
        while self.primary.sql(query) != "1":
            if time.monotonic() > deadline:
                raise RuntimeError("the standby did not stream within %d s" % timeout)
            time.sleep(0.1)
        self.primary.sql("ALTER SYSTEM SET synchronous_standby_names = '%s'" % self.NAME)
        self.primary.sql("SELECT pg_reload_conf()")
        query = "SELECT sync_state FROM pg_stat_replication WHERE application_name = '%s'" % (
            self.NAME)
        while self.primary.sql(query) != "sync":
            if time.monotonic() > deadline:
                raise RuntimeError("the standby did not become synchronous within %d s" % timeout)
            time.sleep(0.1)

    def promote(self):
        """pg_ctl promote, waiting until it takes writes."""
        _run(_as_server_user() + [os.path.join(BIN, "pg_ctl"), "promote", "-w", "-t", "60",
                                  "-D", self.data], "pg_ctl promote")


def failover_url(primary, standby, database=DATABASE):
    """A libpq URL naming both servers: a client connects to whichever takes writes."""
    return "postgresql://%s@127.0.0.1:%d,127.0.0.1:%d/%s?target_session_attrs=read-write" % (
        USER, primary.port, standby.port, database)


def serve_main(argv):
    """bench/pg_local.py --serve DIR [--standby] [--no-fsync]: see the module's comment."""
    root = argv[0]
    if os.path.exists(root) and os.listdir(root):
        sys.exit("pg_local: %s is not empty" % root)
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    fsync = "--no-fsync" not in argv
    primary = Server(os.path.join(root, "primary"), fsync)
    standby = None
    try:
        primary.start()
        url = primary.create_database()
        if "--standby" in argv:
            standby = Standby(primary, os.path.join(root, "standby"))
            standby.start()
            standby.sync()
            url = failover_url(primary, standby)
        print(url, flush=True)
        while not stopping:
            if primary.process.poll() is not None and (standby is None or
                                                       standby.process.poll() is not None):
                sys.exit("pg_local: postgres exited (see %s)" % primary.log)
            time.sleep(0.2)
    finally:
        for server in (standby, primary):
            if server is not None:
                server.stop()


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "--serve":
        serve_main(sys.argv[2:])
    else:
        sys.exit(__doc__)
