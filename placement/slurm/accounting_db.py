"""Slurm accounting for a local cluster: a private MariaDB server and ``slurmdbd``.

:class:`~tjap.placement.slurm.harness.LocalSlurm` with ``LocalSlurmConfig(accounting=True)``
uses :class:`AccountingDaemons` to start, before ``slurmctld``:

1. ``mariadbd`` (Debian's ``mariadb-server``), as the ``mysql`` system user, with a fresh data
   directory made by ``mariadb-install-db``, listening on 127.0.0.1 only, on a free port, with
   ``--no-defaults`` (nothing under ``/etc/mysql`` is read; the system's MariaDB, if any, is not
   touched). The data directory is a private temporary directory (owned by ``mysql``, mode 700)
   outside the cluster's workdir, because ``mysql`` cannot enter a workdir that only root may
   enter; ``WORKDIR/mariadb`` links to it, and it is removed when the cluster stops. Its
   ``root`` account logs in only through the server's Unix socket in that directory, as the
   system's root (socket authentication, no password).
2. A database ``slurm_acct_db`` and a user ``slurmdbd@127.0.0.1`` with a random password that
   has every right on that database and no other (``GRANT ALL ON slurm_acct_db.*``). The password
   is written only into ``WORKDIR/slurmdbd.conf`` (mode 600, owned by the SlurmUser), and the SQL
   that creates the user goes to the server on standard input, never on a command line.
3. ``slurmdbd -D`` (Debian's ``slurmdbd``) with that ``slurmdbd.conf`` (``DbdPort`` a free port,
   munge authentication), which ``slurm.conf`` names (``AccountingStorageType=
   accounting_storage/slurmdbd``).

Every daemon is a child process stopped by its process id. With accounting, ``sacct`` prints
the cluster's jobs (see :meth:`~tjap.placement.slurm.harness.LocalSlurm.accounting_records`) and
``jobcomp/filetxt`` keeps writing its log, so one run gives both kinds of records that
``tjap audit`` reads. Starting the database and slurmdbd adds about 2 s to a cluster's start here.
"""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
from pathlib import Path

from tjap.placement.slurm.client import SlurmError

#: What to install when the accounting daemons are missing (Debian/Ubuntu).
ACCOUNTING_INSTALL_HINT = "apt-get install -y mariadb-server slurmdbd"
#: MariaDB's programs the accounting needs (``mariadbd`` is in ``/usr/sbin``).
MARIADB_BINARIES = ("mariadbd", "mariadb-install-db", "mariadb", "mariadb-admin")
#: Slurm's programs the accounting needs, from the cluster's own Slurm.
SLURM_ACCOUNTING_BINARIES = ("slurmdbd", "sacct", "sacctmgr")
#: The accounting database and the user slurmdbd connects as.
DATABASE = "slurm_acct_db"
DATABASE_USER = "slurmdbd"
#: The columns of the sacct records ``tjap audit`` reads, in the order it expects them.
SACCT_FORMAT = "JobID,Partition,Submit,Start,End,NNodes,NodeList,State"


def sacct_records_argv(starttime: str, endtime: str = "now") -> list[str]:
    """The sacct command a site runs to give ``tjap audit`` its records, as an argument list:
    ``sacct --allusers --allocations --duplicates --parsable2 --starttime DATE --endtime now
    --format JobID,Partition,Submit,Start,End,NNodes,NodeList,State``.

    Examples
    --------
    >>> " ".join(sacct_records_argv("2026-10-01")[:6])
    'sacct --allusers --allocations --duplicates --parsable2 --starttime'
    """
    return [
        "sacct",
        "--allusers",
        "--allocations",
        "--duplicates",
        "--parsable2",
        "--starttime",
        starttime,
        "--endtime",
        endtime,
        "--format",
        SACCT_FORMAT,
    ]


def mariadb_program(name: str) -> str | None:
    """The full path of MariaDB's program ``name`` (on PATH or in ``/usr/sbin``), or None."""
    found = shutil.which(name)
    if found:
        return found
    path = Path("/usr/sbin") / name
    return str(path) if path.is_file() and os.access(path, os.X_OK) else None


def missing_accounting(slurm_binary) -> str | None:
    """None if MariaDB and the accounting programs of a Slurm are installed, else a one-line
    reason naming what to install; ``slurm_binary(name)`` finds that Slurm's program ``name``
    (None: missing)."""
    missing = [b for b in MARIADB_BINARIES if mariadb_program(b) is None]
    missing += [b for b in SLURM_ACCOUNTING_BINARIES if slurm_binary(b) is None]
    if missing:
        return (
            f"Slurm accounting needs MariaDB and slurmdbd (missing {', '.join(missing)}; "
            f"{ACCOUNTING_INSTALL_HINT})"
        )
    return None


def _mysql_user() -> pwd.struct_passwd | None:
    """The ``mysql`` system user MariaDB runs as, when this process is root and it exists."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam("mysql")
    except KeyError:
        return None


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by its owner only (mode 600 from the first byte)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


class AccountingDaemons:
    """The MariaDB server and slurmdbd of one local cluster: their files, command lines and
    readiness checks. :class:`~tjap.placement.slurm.harness.LocalSlurm` spawns and stops the
    processes (by process id); this class holds no process.

    Parameters
    ----------
    workdir
        The cluster's workdir: ``slurmdbd.conf``, ``slurmdbd.log`` and the link to the data
        directory go there.
    slurm_user
        The SlurmUser (slurmdbd runs as it and must own ``slurmdbd.conf``).
    db_port, dbd_port
        Free TCP ports for MariaDB and slurmdbd.
    """

    def __init__(self, workdir: Path, slurm_user: str, db_port: int, dbd_port: int):
        self.workdir = Path(workdir)
        self.slurm_user = slurm_user
        self.db_port = int(db_port)
        self.dbd_port = int(dbd_port)
        self.conf_path = self.workdir / "slurmdbd.conf"
        self.log_path = self.workdir / "slurmdbd.log"
        #: The private MariaDB directory (created by :meth:`prepare`, removed by :meth:`remove`).
        self.base: Path | None = None
        self._password = secrets.token_urlsafe(24)

    # -- MariaDB -----------------------------------------------------------------------------
    @property
    def datadir(self) -> Path:
        return self._base() / "data"

    @property
    def socket(self) -> Path:
        return self._base() / "mariadb.sock"

    @property
    def error_log(self) -> Path:
        return self._base() / "error.log"

    def _base(self) -> Path:
        if self.base is None:
            raise SlurmError("the accounting database is not prepared")
        return self.base

    def _user_args(self) -> list[str]:
        user = _mysql_user()
        if user is not None:
            return [f"--user={user.pw_name}"]
        # not root: MariaDB runs as this user; root without a mysql user: it must be told
        return ["--user=root"] if os.geteuid() == 0 else []

    def _server_options(self) -> list[str]:
        # a throw-away database: small, and no flush to disk at every commit
        return [
            "--skip-name-resolve",
            "--innodb-log-file-size=8M",
            "--innodb-buffer-pool-size=64M",
            "--innodb-flush-log-at-trx-commit=2",
            "--innodb-lock-wait-timeout=900",
        ]

    def prepare(self, timeout_s: float = 60) -> None:
        """Create the private data directory (owned by ``mysql``, mode 700) and initialise it
        with ``mariadb-install-db`` (system tables only; ``root`` by socket authentication)."""
        self.base = Path(tempfile.mkdtemp(prefix="tjap-mariadb-"))
        user = _mysql_user()
        if user is not None:
            os.chown(self.base, user.pw_uid, user.pw_gid)
        self.base.chmod(0o700)
        link = self.workdir / "mariadb"
        if not link.exists() and not link.is_symlink():
            link.symlink_to(self.base)
        argv = [
            mariadb_program("mariadb-install-db"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            *self._user_args(),
            "--auth-root-authentication-method=socket",
            "--skip-test-db",
            *self._server_options(),
        ]
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=timeout_s, cwd=self.base
            )
        except subprocess.TimeoutExpired:
            raise SlurmError(f"mariadb-install-db took more than {timeout_s:.0f} s") from None
        if proc.returncode != 0:
            tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
            raise SlurmError(f"mariadb-install-db failed (status {proc.returncode}):\n{tail}")

    def mariadbd_argv(self) -> list[str]:
        """``mariadbd`` in the foreground on 127.0.0.1:``db_port``, reading no option file."""
        return [
            mariadb_program("mariadbd"),
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--pid-file={self._base() / 'mariadb.pid'}",
            f"--log-error={self.error_log}",
            "--bind-address=127.0.0.1",
            f"--port={self.db_port}",
            *self._user_args(),
            *self._server_options(),
        ]

    def _client(
        self, program: str, *args: str, sql: str | None = None, timeout_s: float = 10
    ) -> subprocess.CompletedProcess:
        argv = [
            mariadb_program(program),
            "--no-defaults",
            f"--socket={self.socket}",
            "--user=root",
            *args,
        ]
        return subprocess.run(argv, input=sql, capture_output=True, text=True, timeout=timeout_s)

    def database_ready(self) -> bool:
        """Whether the server answers on its socket."""
        if self.base is None or not self.socket.exists():
            return False
        try:
            return self._client("mariadb-admin", "ping", timeout_s=5).returncode == 0
        except subprocess.TimeoutExpired:
            return False

    def create_database(self) -> None:
        """Create the accounting database and slurmdbd's user, with rights on that database
        only (the SQL, password included, goes through standard input)."""
        user = f"'{DATABASE_USER}'@'127.0.0.1'"
        sql = (
            f"CREATE DATABASE IF NOT EXISTS {DATABASE};\n"
            f"CREATE USER {user} IDENTIFIED BY '{self._password}';\n"
            f"GRANT ALL PRIVILEGES ON {DATABASE}.* TO {user};\n"
        )
        proc = self._client("mariadb", "--batch", sql=sql)
        if proc.returncode != 0:
            raise SlurmError(
                "cannot create the accounting database: "
                + (proc.stderr or proc.stdout).strip().splitlines()[-1]
            )

    def grants(self) -> list[str]:
        """The rights of slurmdbd's database user, as ``SHOW GRANTS`` lists them."""
        proc = self._client(
            "mariadb",
            "--batch",
            "--skip-column-names",
            sql=f"SHOW GRANTS FOR '{DATABASE_USER}'@'127.0.0.1';\n",
        )
        if proc.returncode != 0:
            raise SlurmError(
                f"cannot read the grants of {DATABASE_USER}: "
                + (proc.stderr or proc.stdout).strip()
            )
        return proc.stdout.splitlines()

    def error_tail(self, lines: int = 10) -> str:
        try:
            text = self.error_log.read_text(errors="replace").splitlines()
        except (OSError, SlurmError):
            return "(no MariaDB error log)"
        return "--- mariadb error.log:\n" + "\n".join(text[-lines:])

    # -- slurmdbd ----------------------------------------------------------------------------
    def conf_text(self) -> str:
        """The text of ``slurmdbd.conf`` (it holds the database password)."""
        settings = {
            "AuthType": "auth/munge",
            "DbdHost": "localhost",
            "DbdPort": str(self.dbd_port),
            "SlurmUser": self.slurm_user,
            "DebugLevel": "info",
            "LogFile": str(self.log_path),
            "PidFile": str(self.workdir / "slurmdbd.pid"),
            "StorageType": "accounting_storage/mysql",
            "StorageHost": "127.0.0.1",
            "StoragePort": str(self.db_port),
            "StorageUser": DATABASE_USER,
            "StoragePass": self._password,
            "StorageLoc": DATABASE,
        }
        return "".join(f"{k}={v}\n" for k, v in settings.items())

    def write_conf(self) -> None:
        """Write ``slurmdbd.conf`` beside ``slurm.conf`` (slurmdbd finds it there through
        ``SLURM_CONF``), mode 600, owned by the SlurmUser."""
        write_private(self.conf_path, self.conf_text())
        if os.geteuid() == 0:
            user = pwd.getpwnam(self.slurm_user)
            os.chown(self.conf_path, user.pw_uid, user.pw_gid)

    def remove(self) -> None:
        """Delete the private data directory (the database with it) and the link to it."""
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)
            self.base = None
        link = self.workdir / "mariadb"
        if link.is_symlink():
            link.unlink()
