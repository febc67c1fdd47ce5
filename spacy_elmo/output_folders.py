"""The folders spacy-elmo writes, and the one rule for them: a command writes, replaces or removes
only what it can prove it made.

A folder that a command creates (a prepared corpus, a pretraining run, a usage index) gets a marker
file, `.spacy-elmo.json`, naming what it holds. Only a folder with that marker is ever written into,
and there only the command's own files; a folder that is not empty and has no marker is refused
(whatever its files are called), and nothing in it is touched. A build writes into a scratch folder
of a fresh name that `tempfile` makes beside its output (so no user's folder can be one), moves its
files into the output at the end, and removes the scratch folder, which it made. While a command
writes a folder it holds an OS file lock on `.lock` there (released when the process ends, also on
kill -9), with its process id in the file, so that a second command on the same folder is refused
instead of interleaving; the lock file is never opened through a link. Single files are written
through a temporary file of a fresh name and a rename, with the mode a plain `open()` would give.
"""

import errno
import functools
import glob
import hashlib
import os
import re
import shutil
import socket
import stat
import tempfile
import warnings
import threading
import time
import weakref
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Optional, Sequence, Tuple, Union

import numpy
import srsly

from .errors import InputError, OutputFolderError
from .types import PathLike

try:  # POSIX; elsewhere folders are not locked
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

MARKER = ".spacy-elmo.json"
LOCK = ".lock"
SCRATCH_SUFFIX = ".spacy-elmo-scratch"
PREPARED_CORPUS = "prepared-corpus"
PRETRAIN_RUN = "pretrain-run"
USAGE_INDEX = "usage-index"
KEPT_INDEXES = "change-indexes"  # `change --keep-indexes DIR`: the indexes of its sides, A and B


def kind_of(folder: PathLike) -> Optional[str]:
    """RETURNS (Optional[str]): what the marker of `folder` says it holds, None without one."""
    marker = Path(folder) / MARKER
    if not marker.is_file():
        return None
    try:
        data = srsly.read_json(marker)
    except ValueError:
        return None
    return data.get("kind") if isinstance(data, dict) else None


def is_own(folder: PathLike, kind: str) -> bool:
    """Whether `folder` carries the marker of a `kind` folder made by spacy-elmo."""
    return kind_of(folder) == kind


def mark(folder: PathLike, kind: str, scratch: bool = False) -> None:
    """Give `folder` the marker of a `kind` folder made by spacy-elmo; `scratch`: also the proof that it is a build's
    scratch folder, its own name as made (a copy or a renamed folder, whatever it holds, is no scratch of ours)."""
    data = {"kind": kind, "made_by": "spacy-elmo"}
    if scratch:
        data["scratch"] = Path(folder).name
    srsly.write_json(Path(folder) / MARKER, data)


def is_scratch(folder: PathLike, kind: str) -> bool:
    """Whether `folder` is a `kind` scratch folder a build made and marked (`mark(..., scratch=True)`): a folder
    itself (never a link), its marker naming it as made. Holding a `kind` marker alone proves nothing: a user's copy of
    an index named like a scratch folder holds one."""
    folder = Path(folder)
    if not is_plain_folder(folder) or not is_plain_file(folder / MARKER):
        return False
    try:
        data = srsly.read_json(folder / MARKER)
    except ValueError:
        return False
    return isinstance(data, dict) and data.get("kind") == kind and data.get("scratch") == folder.name


def fresh_folder_beside(output: PathLike) -> Path:
    """RETURNS (Path): a new, empty folder of a fresh name beside `output` (made by `tempfile`, so it
    is no user's; `.OUTPUT.*.spacy-elmo-scratch`), with the mode `mkdir` gives (not tempfile's 0o700)."""
    output = Path(output)
    folder = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=SCRATCH_SUFFIX, dir=output.parent))
    os.chmod(folder, default_folder_mode())
    return folder


def claim_folder(folder: PathLike, kind: str, hint: str = "") -> Path:
    """Make `folder` a `kind` folder of ours: create it, or take it when it is empty or already ours.

    hint (str): what else the user can do, added to the error.
    RETURNS (Path): the folder.
    """
    folder = check_claimable(folder, kind, hint)
    folder.mkdir(parents=True, exist_ok=True)
    if not is_own(folder, kind):
        mark(folder, kind)
    return folder


def check_claimable(folder: PathLike, kind: str, hint: str = "") -> Path:
    """Raise an OutputFolderError unless `claim_folder` may take `folder`; changes nothing."""
    folder = Path(folder)
    if folder.is_symlink():
        raise OutputFolderError(
            f"{folder} is a symbolic link: spacy-elmo writes through no link; give the folder it points to, or a new one"
        )
    if folder.exists() and not folder.is_dir():
        raise OutputFolderError(f"{folder} is a file, not a folder: choose another output folder")
    if is_own(folder, kind):
        return folder
    entries = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    other = kind_of(folder)
    if other is not None:
        raise OutputFolderError(f"{folder} holds a spacy-elmo {other}, not a {kind}: nothing was changed; choose another output folder")
    if entries:
        shown = ", ".join(entries[:5]) + (", ..." if len(entries) > 5 else "")
        raise OutputFolderError(
            f"{folder} is not empty ({shown}) and was not made by spacy-elmo: nothing was changed. "
            f"Choose a new or empty output folder{hint}"
        )
    return folder


def remove_own(folder: PathLike, kind: str) -> None:
    """Remove `folder` if it is a `kind` folder of ours; refuse anything else."""
    folder = Path(folder)
    if not folder.exists():
        return
    if not is_own(folder, kind):
        raise OutputFolderError(f"{folder} was not made by spacy-elmo: it was left as it is; remove or rename it yourself")
    shutil.rmtree(folder)


def scratch_folder(output: PathLike, kind: str, command: str) -> Tuple[Path, "FolderLock"]:
    """A new `kind` folder of a fresh name beside `output` (made by `tempfile`, so it cannot be a
    user's), locked by `command` and then marked as ours, for a build to write before
    `publish_files`. Scratch folders of earlier builds of `output` that were killed (ours by their
    scratch mark, `is_scratch`, and not locked by a running build) are removed: a folder is locked
    before it carries the mark, so a running build's is never taken for a killed one's; a folder named
    like one without the mark (a user's copy, a link) stays, said in one line.

    RETURNS (Tuple[Path, FolderLock]): the folder and its held lock (release it when done).
    """
    output = Path(output)
    parent = output.parent
    parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{output.name}."
    for stale in parent.glob(f"{glob.escape(prefix)}*{SCRATCH_SUFFIX}"):
        if not is_scratch(stale, kind):
            if os.path.islink(stale) or (is_plain_folder(stale) and kind_of(stale) is not None):
                why = "a link" if os.path.islink(stale) else "it carries no scratch mark of its own name"
                warnings.warn(
                    f"{stale} is named like a scratch folder of a killed build, but spacy-elmo did not make it there ({why}): "
                    "left as it is",
                    UserWarning,
                    stacklevel=2,
                )
            continue
        if _holder_alive(stale / LOCK):
            continue  # its process still runs (where locks are not kept across a fork, or there are none)
        try:
            lock = FolderLock(stale, "").acquire()
        except OutputFolderError:
            continue  # a build still running
        lock.release()
        shutil.rmtree(stale)
    folder = fresh_folder_beside(output)
    lock = FolderLock(folder, command).acquire()
    mark(folder, kind, scratch=True)
    # Looked at once ours is locked and marked: of two builds started together, at least one sees the other's.
    running = _running_build(parent, prefix, kind, folder)
    if running:
        lock.release()
        shutil.rmtree(folder, ignore_errors=True)
        raise OutputFolderError(
            f"{output} is being built by {running}: wait for it to finish (or stop it), or choose another output "
            "(a second build would replace the first one's)"
        )
    return folder, lock


def _running_build(parent: Path, prefix: str, kind: str, mine: Path) -> str:
    """RETURNS (str): who holds the lock of another build's scratch folder of the same output ("" where none does)."""
    for other in parent.glob(f"{glob.escape(prefix)}*{SCRATCH_SUFFIX}"):
        if other == mine or not is_scratch(other, kind):
            continue
        try:
            FolderLock(other, "").acquire().release()
        except OutputFolderError:
            try:
                return (other / LOCK).read_text(encoding="utf8", errors="replace").strip() or "another process"
            except OSError:
                return "another process"
    return ""


def _holder_alive(lock_file: Path) -> bool:
    """Whether the process a lock file names ("process N (...)") is still running (POSIX; on Windows
    os.kill would end it, so False there)."""
    if os.name == "nt":  # pragma: no cover
        return False
    try:
        text = lock_file.read_text(encoding="utf8", errors="replace") if is_plain_file(lock_file) else ""
        pid = int(text.split()[1]) if text.startswith("process ") else 0
    except (OSError, ValueError, IndexError):
        return False
    return _pid_alive(pid)


def _pid_alive(pid: int) -> bool:
    """Whether process `pid` of this machine runs (POSIX; on Windows os.kill would end it, so True there: kept)."""
    if os.name == "nt":  # pragma: no cover
        return True
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # it exists (another user's)
    return True


def publish_files(tmp: PathLike, output: PathLike, kind: str, names: Sequence[str], last: str) -> Path:
    """Move the files `names` that the `kind` folder `tmp` holds into `output` (claimed as a `kind`
    folder), `last` at the end: `output` loses `last` first, so it reads as finished again only when
    every file has arrived. A file of `names` that `tmp` lacks is removed from `output`; files a user
    put in `output` stay. Then `tmp`, now holding only its marker and lock, is removed.

    RETURNS (Path): the output folder.
    """
    tmp, output = Path(tmp), claim_folder(output, kind)
    with FolderLock(output, f"spacy-elmo (publishing {kind})"):
        (output / last).unlink(missing_ok=True)
        for name in [n for n in names if n != last] + [last]:
            if (tmp / name).exists():
                os.replace(tmp / name, output / name)
            else:
                (output / name).unlink(missing_ok=True)
    remove_own(tmp, kind)
    return output


def check_output_file(path: PathLike, overwrite: bool) -> None:
    """Refuse to replace an existing file unless `--overwrite` was given."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder: give a file name")
    if os.path.lexists(path) and not overwrite:  # a link too, dangling or not (--overwrite replaces the link itself)
        raise InputError(f"{path} exists: give --overwrite to replace it, or another file name")


def check_not_inside(output: PathLike, source: PathLike, what: str) -> None:
    """Refuse an output folder that is the input or holds it: writing it could replace the input."""
    out, src = Path(output).resolve(), Path(source).resolve()
    if out == src or out in src.parents:
        raise OutputFolderError(f"{output} would hold {what} {source} itself: choose an output folder outside it")


_UMASK_LOCK = threading.Lock()


def _umask() -> int:
    with _UMASK_LOCK:  # the umask can only be read by setting it
        umask = os.umask(0o022)
        os.umask(umask)
    return umask


def default_file_mode() -> int:
    """RETURNS (int): the mode a plain `open(path, "w")` gives a new file: 0o666 less the umask."""
    return 0o666 & ~_umask()


def default_folder_mode() -> int:
    """RETURNS (int): the mode `mkdir` gives a new folder: 0o777 less the umask."""
    return 0o777 & ~_umask()


def temporary_path(path: PathLike) -> Path:
    """RETURNS (Path): a new, empty file of a fresh name beside `path` (made by `tempfile`, so it is
    no user's), to write and then rename to `path`. It gets the mode a plain `open()` would give
    (tempfile's 0o600 would keep the final file from other users). Its name carries this machine's
    name and this process's number, so that the temporaries of `path` left by a process that was killed
    (kill -9 runs no clean-up) are removed here, by the next run that writes `path` on this machine."""
    path = Path(path)
    _remove_dead_temporaries(path)
    handle, name = tempfile.mkstemp(dir=path.parent, prefix=f".{_temporary_stem(path)}.{_writer_tag()}.", suffix=".tmp")
    try:
        _mark_temporary(handle)
        if hasattr(os, "fchmod"):
            os.fchmod(handle, default_file_mode())
        else:  # pragma: no cover  (Windows before Python 3.13)
            os.chmod(name, default_file_mode())
    finally:
        os.close(handle)
    return Path(name)


_STEM_BYTES = 96  # of an output's name in its temporaries' names: a name may take 255 bytes, its temporary too


def _temporary_stem(path: Path) -> str:
    """RETURNS (str): the output's name as its temporaries' names hold it: whole where short, else its start and a
    digest of the whole (an output named with 231 bytes or more made a temporary name past the file system's 255)."""
    if len(path.name.encode("utf8")) <= _STEM_BYTES:
        return path.name
    start = path.name.encode("utf8")[: _STEM_BYTES - 17].decode("utf8", "ignore")
    return f"{start}-{hashlib.sha256(path.name.encode('utf8')).hexdigest()[:16]}"


def _pid_namespace() -> str:
    """RETURNS (str): this process's PID namespace ("4026531836", the inode of /proc/self/ns/pid), "0" where it cannot
    be read: two containers may share a host name, not a PID namespace, and a PID means something only in its own."""
    try:
        link = os.readlink("/proc/self/ns/pid")
    except OSError:
        return "0"
    digits = "".join(c for c in link if c.isdigit())
    return digits or "0"


@functools.lru_cache(maxsize=1)
def _machine_id() -> str:
    """RETURNS (str): /etc/machine-id ("" where there is none), read once a process: it names the machine for good."""
    try:
        return Path("/etc/machine-id").read_text(encoding="utf8", errors="replace").strip()
    except OSError:
        return ""


def _host_tag() -> str:
    """RETURNS (str): this machine in a file name: its host name reduced to letters, digits and "_" (at most 32), then a
    digest of the exact host name and /etc/machine-id. Reduced alone, hosts named node-1 and node.1 read as one machine,
    and every host's first PID namespace has the same number: one's temporaries on a shared folder read as the other's
    killed run's."""
    host = socket.gethostname()
    readable = "".join(c if c.isalnum() else "_" for c in host)[:32] or "host"
    return f"{readable}_{hashlib.sha256(chr(0).join([host, _machine_id()]).encode('utf8', 'surrogateescape')).hexdigest()[:10]}"


def _writer_tag(pid: Optional[int] = None) -> str:
    """RETURNS (str): "HOST-PIDNS-PID" of this process (or `pid`), HOST as `_host_tag` gives it."""
    return f"{_host_tag()}-{_pid_namespace()}-{os.getpid() if pid is None else pid}"


TEMPORARY_MARK = "user.spacy-elmo.temporary"  # the extended attribute a temporary carries: its writer's HOST-PID


def _mark_temporary(handle: int) -> None:
    """Write the proof that spacy-elmo made this temporary into the file itself: its writer's tag as an extended
    attribute (a name alone is no proof: a user's file can be named like one). Where the file system keeps no
    extended attributes, the temporary carries none and no later run removes it (a kill leaves it, named)."""
    try:
        os.setxattr(handle, TEMPORARY_MARK, _writer_tag().encode())  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        pass


def _temporary_mark(path: Path) -> str:
    try:
        return os.getxattr(path, TEMPORARY_MARK, follow_symlinks=False).decode("utf8", "replace")  # type: ignore[attr-defined]
    except (AttributeError, OSError):
        return ""


def _remove_dead_temporaries(path: Path) -> None:
    """Remove the temporaries of `path` that a process provably no longer running left: one of this machine and this
    PID namespace (a process number means nothing in another: two containers sharing a volume and a host name), and
    only files that carry the mark `temporary_path` wrote into them, naming that process. Another machine's (a shared
    folder) and a running process's stay; another PID namespace's on this host, and any file named like one but
    unmarked (a user's), stay and are said in one line."""
    host, namespace, _ = _writer_tag(0).split("-")
    prefix = f".{_temporary_stem(path)}."
    for stale in path.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        tag = stale.name[len(prefix) :].split(".", 1)[0]
        parts = tag.split("-")
        if len(parts) != 3 or parts[0] != host or not parts[2].isdigit() or not is_plain_file(stale):
            continue
        if parts[1] != namespace or namespace == "0":
            if _temporary_mark(stale) == tag:
                warnings.warn(
                    f"{stale} is a temporary of a spacy-elmo run in another PID namespace (another container on this host): "
                    f"whether that run still writes {path.name} cannot be told from here, so it was left as it is; remove it "
                    "once no run writes there",
                    UserWarning,
                    stacklevel=3,
                )
            continue
        if _pid_alive(int(parts[2])):
            continue
        if _temporary_mark(stale) != tag:
            warnings.warn(
                f"{stale} is named like a temporary of a spacy-elmo run that was killed, but spacy-elmo did not make it "
                "(it carries no mark of its writer): left as it is",
                UserWarning,
                stacklevel=3,
            )
            continue
        try:
            stale.unlink()
        except OSError:
            pass  # another run removed it, or it is not ours to remove: it stays


def open_no_follow(path: PathLike, flags: int, mode: int = 0o666) -> int:
    """Open `path` (os.open flags) refusing a symbolic link or anything but a plain file: spacy-elmo
    never writes or reads its own files through a link, which could point outside its folder. To
    write, it also refuses a file with a second name (a hard link), whose other name would change
    with it; O_TRUNC truncates only after that check.

    RETURNS (int): the file descriptor.
    """
    writing = bool(flags & (os.O_WRONLY | os.O_RDWR))
    truncate = bool(flags & os.O_TRUNC)
    flags &= ~os.O_TRUNC
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0), mode)
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise OutputFolderError(
                f"{path} is a symbolic link: spacy-elmo never opens its files through a link (it could point anywhere). "
                "Nothing was written; remove the link and run again"
            ) from None
        raise
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise OutputFolderError(f"{path} is not a plain file: nothing was written; remove it and run again")
    if writing and info.st_nlink > 1:
        os.close(fd)
        raise OutputFolderError(
            f"{path} has another name (a hard link, {info.st_nlink} names): spacy-elmo never writes a file that is also "
            "somewhere else. Nothing was written; remove it and run again"
        )
    if truncate:
        os.ftruncate(fd, 0)
    return fd


def is_plain_file(path: PathLike) -> bool:
    """RETURNS (bool): whether `path` is a plain file itself (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def is_plain_folder(path: PathLike) -> bool:
    """RETURNS (bool): whether `path` is a folder itself (not a link to one)."""
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


_DIGEST_END = re.compile(r"-[0-9a-f]{10}$")  # how a name with a digest ends (`name_from_data`)


def name_from_data(text: str, suffix: str = "") -> str:
    """RETURNS (str): a file name made from data (a word as a corpus spells it), never a path: its letters,
    digits, '-', '_' and inner dots kept, anything else '_'; where anything was changed, or the name would start
    with a dot or be empty, or where the word itself ends like such a name (`a_b-4e012385d7`, which `a&b` becomes), a
    digest of the text is added, so that two words never share a file."""
    kept = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:100]
    if kept != text or not kept or kept.startswith(".") or _DIGEST_END.search(kept):
        kept = f"{kept.lstrip('.') or '_'}-{hashlib.sha256(text.encode('utf8', 'surrogatepass')).hexdigest()[:10]}"
    return kept + suffix


def own_subfolder(folder: PathLike, name: str) -> Path:
    """RETURNS (Path): `folder`/`name`, a folder of its own (made where absent); a link there, or a file, is refused
    in one line, so that nothing is written through it to another place."""
    path = check_subfolder(folder, name)
    path.mkdir(exist_ok=True)
    return path


def check_subfolder(folder: PathLike, name: str) -> Path:
    """Refuse, before any work, what `own_subfolder(folder, name)` would refuse after it. RETURNS (Path): the path."""
    path = Path(folder) / name
    if os.path.lexists(path) and not is_plain_folder(path):
        raise InputError(f"{path} is a link or a file, not a folder: remove it, or write to another folder")
    return path


def write_atomically(path: PathLike, text: Union[str, bytes], overwrite: bool = True) -> None:
    """Write a text (str) or binary (bytes) file through a temporary file and a rename: a failure
    (a full disk) leaves the former file as it was. Without `overwrite`, the file is published only
    where its name is free at that moment (`publish_file`)."""
    with written_atomically(path, binary=isinstance(text, bytes), overwrite=overwrite) as stream:
        stream.write(text)


@contextmanager
def written_atomically(path: PathLike, binary: bool = False, overwrite: bool = True) -> Iterator[IO[Any]]:
    """A stream (text, UTF-8, or `binary`) into a temporary file beside `path` that takes the name `path` when the block
    ends without an error (`publish_file`, with `overwrite` as there); after an error it is removed and `path` stays as
    it was. `write_atomically` for what is written piece by piece."""
    tmp = temporary_path(path)
    try:
        with open(tmp, "wb" if binary else "w", encoding=None if binary else "utf8") as stream:
            yield stream
        publish_file(tmp, path, overwrite)
    finally:
        tmp.unlink(missing_ok=True)


def publish_file(tmp: PathLike, path: PathLike, overwrite: bool = True) -> None:
    """Give the finished temporary file `tmp` (beside `path`) the name `path`. With `overwrite`, what is there is
    replaced (a rename). Without, only a free name is taken, at the instant of publishing: a second name (a hard
    link) that the system refuses where the name exists, so that a file that appeared while the command computed
    (another run's, a user's) is never replaced, and of two runs writing one new name, the second fails. `tmp` is
    gone afterwards either way."""
    tmp, path = Path(tmp), Path(path)
    try:
        if overwrite:
            os.replace(tmp, path)
            return
        try:
            os.link(tmp, path, follow_symlinks=False)
        except FileExistsError:
            raise InputError(
                f"{path} appeared while this command ran (another run's, or a file put there): it was left as it is and nothing "
                "was written. Give --overwrite to replace it, or another file name"
            ) from None
        except OSError as err:
            if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            # a file system without hard links: create the name exclusively, then move the content in
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            os.close(fd)
            os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def read_json_file(path: PathLike, fix: str) -> object:
    """Read a JSON file this package wrote; a damaged one is an InputError naming it.

    fix (str): what to do about a damaged file.
    """
    try:
        return srsly.read_json(path)
    except ValueError as err:
        raise InputError(f"{path} is damaged (not valid JSON: {err}): {fix}") from None


def read_array_file(path: PathLike, fix: str, mmap: bool = False) -> numpy.ndarray:
    """Read a .npy file this package wrote (no pickles); a missing or damaged one is an
    InputError naming it (numpy raises many kinds of error for a damaged header).

    fix (str): what to do about a damaged file.
    mmap (bool): memory-map it (read-only).
    """
    try:
        return numpy.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except PermissionError:
        raise
    except Exception as err:
        raise InputError(f"{path} is missing or damaged ({type(err).__name__}): {fix}") from None


class FolderLock:
    """An exclusive lock on a folder while one process writes it (a context manager).

    folder (PathLike): the locked folder (its `.lock` file holds the owner's process id).
    command (str): what holds it, for the message a second process gets.
    """

    def __init__(self, folder: PathLike, command: str, name: str = LOCK, wait_s: float = 0.0) -> None:
        self.path = Path(folder) / name
        self.command = command
        self.wait_s = wait_s  # how long to wait for another holder before refusing (0: refuse at once)
        self._file: Optional[IO[str]] = None

    def acquire(self) -> "FolderLock":
        if fcntl is None or self._file is not None:
            return self
        handle = os.fdopen(open_no_follow(self.path, os.O_RDWR | os.O_CREAT), "r+", encoding="utf8")  # the mode open() gives
        deadline = time.monotonic() + self.wait_s
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError:
                if time.monotonic() < deadline:
                    time.sleep(0.05)
                    continue
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                waited = f" (waited {self.wait_s:g} s)" if self.wait_s else ""
                raise OutputFolderError(
                    f"{self.path.parent} is in use by {holder}{waited}: wait for it to finish (or stop it), or choose another output folder"
                ) from None
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"process {os.getpid()} ({self.command})\n")
            handle.flush()
        except OSError:
            handle.close()
            raise
        self._file = handle
        _HELD.add(self)
        return self

    def release(self) -> None:
        # The file stays: removing it would let a process that opened it just before lock an orphan.
        if self._file is not None:
            self._file.close()
            self._file = None
        _HELD.discard(self)

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# A forked child (a DataLoader worker, a process pool) shares the parent's open lock files, and an
# flock lasts while any process holds one: the child closes its copies, so that the lock ends with
# the process that took it.
_HELD: "weakref.WeakSet[FolderLock]" = weakref.WeakSet()


def _close_inherited_locks() -> None:
    for lock in list(_HELD):
        if lock._file is not None:
            lock._file.close()
            lock._file = None
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_inherited_locks)
