"""`embed --ray` and `index-usages --ray`: the shards of a corpus run as Ray actors, then merged.

Each actor loads the pipeline once and runs shard after shard (an actor pool hands the next shard
to whichever actor is free), writing its part into a scratch folder beside OUTPUT; the driver merges
the parts into OUTPUT (`merge`), which then equals a single run's. A worker that dies mid-shard
(killed, out of memory, a lost node) is restarted by Ray and its shard run again from the start:
the half-written part is never published. On a cluster of several machines, OUTPUT's folder must be
one every node can write (a shared file system), as must the corpus and the model be readable.
"""

import contextlib
import glob
import json
import os
import re
import shutil
import signal
import socket
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List

from ..errors import InputError

SHARDS_PER_WORKER = 4  # smaller shards balance the load, and a retried shard redoes less
TASK_RETRIES = 3


@contextlib.contextmanager
def ray_session(address: str) -> Iterator[Any]:
    """Ray for one job: "auto" joins the cluster at $RAY_ADDRESS, else starts a local one; anything
    else is a cluster's address. A session this starts is shut down at the end, and the signal
    handlers that `ray.init` installs (SIGTERM: `sys.exit`, which a forked child would inherit) are
    put back as they were; a session the program had already started is used and left running.
    YIELDS: the ray module."""
    try:
        import ray
    except ImportError:
        raise InputError("--ray needs Ray: pip install 'spacy-elmo[ray]'") from None
    if ray.is_initialized():
        yield ray
        return
    reached = os.environ.get("RAY_ADDRESS") if address == "auto" else address
    if reached:
        check_reachable(reached)
    handlers = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    # Ray's own notices (token authentication, autoscaler) are not this job's: errors only, unless the
    # user asks Ray for more (RAY_LOGGER_LEVEL)
    kwargs: Dict[str, Any] = {"logging_level": os.environ.get("RAY_LOGGER_LEVEL", "ERROR").upper(), "log_to_driver": False}
    try:
        if address == "auto":
            ray.init(
                **({"address": os.environ["RAY_ADDRESS"]} if os.environ.get("RAY_ADDRESS") else {"include_dashboard": False}), **kwargs
            )
        else:
            ray.init(address=address, **kwargs)
        yield ray
    finally:
        if ray.is_initialized():
            ray.shutdown()
        if threading.current_thread() is threading.main_thread():
            for signum, handler in handlers.items():
                if handler is not None:
                    signal.signal(signum, handler)


PROBE_SECONDS = 5.0
PARTS_SUFFIX = ".spacy-elmo-parts"  # the scratch folder of a Ray run's parts, beside OUTPUT
DRIVER = "driver.json"  # in it: the host and process that made it


def remove_stale_parts(output: Path) -> int:
    """Remove the scratch folders of earlier Ray runs into `output` whose driver, on this host, has ended
    (killed before it could remove them); folders of a live driver, or of another host, stay.

    RETURNS (int): how many were removed."""
    removed = 0
    for folder in output.parent.glob(f".{glob.escape(output.name)}.*{PARTS_SUFFIX}"):
        try:
            driver = json.loads((folder / DRIVER).read_text(encoding="utf8"))
            host, pid = driver["host"], int(driver["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # not one of ours, or its driver had not said who it was
        if host != socket.gethostname() or _alive(pid):
            continue
        shutil.rmtree(folder, ignore_errors=True)
        removed += 1
    return removed


def check_workers(workers: int) -> None:
    """Raise an InputError unless `workers` is a number of Ray actors (0: one per CPU); before Ray starts."""
    if workers < 0:
        raise InputError(f"--workers {workers}: give a number of workers (0: one per CPU of the cluster)")


def worker_count(workers: int, cpus: int, say: Callable[[str], Any] = print) -> int:
    """RETURNS (int): the Ray actors to start: `workers`, 0 for one per CPU, more than the cluster's CPUs
    capped at them (an actor needs one, and the others would wait for ever), said in a line."""
    check_workers(workers)
    if workers > cpus:
        say(f"--workers {workers}: the cluster has {cpus} CPUs, so {cpus} workers (each needs one)")
        return cpus
    return workers or cpus


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def check_reachable(address: str) -> None:
    """Raise an InputError, in one line, unless a Ray cluster's address ("host:port", "ray://host:port")
    is well formed and something answers there within PROBE_SECONDS (Ray itself would wait for minutes)."""
    match = re.fullmatch(r"(?:ray://)?(\[[0-9a-fA-F:.]+\]|[^:/\s]+):(\d{1,5})", address.strip())
    if match is None:
        raise InputError(f"--ray {address!r}: give a Ray cluster's address as HOST:PORT (e.g. 10.0.0.5:6379), or auto")
    host, port = match.group(1).strip("[]"), int(match.group(2))
    try:
        with socket.create_connection((host, port), timeout=PROBE_SECONDS):
            pass
    except OSError as err:
        why = "no answer" if isinstance(err, socket.timeout) else (err.strerror or type(err).__name__)
        raise InputError(
            f"the Ray cluster at {address} cannot be reached ({why}): start it (ray start --head) or check the address"
        ) from None


class _ShardWorker:
    """A Ray actor (see `_worker_class`): the pipeline loaded once, shards run one after another."""

    def __init__(self, kind: str, settings: Dict[str, Any], threads: int) -> None:
        from ..bilm.threads import fix_threads
        from ..pipeline.loading import load_elmo_pipeline

        fix_threads(threads)  # the actor's share of the node's CPUs, as Ray reserved them
        self.kind, self.settings = kind, settings
        if kind == "index":
            self.nlp = load_elmo_pipeline(settings["model"], settings["lang"])
        else:
            sentences = settings["sentences"] and not settings["pretokenized"]
            self.nlp = load_elmo_pipeline(settings["model"], settings["lang"], sentences, settings["dtype"], settings["precision"])

    def run(self, index: int, count: int, part: str) -> str:
        from ..shards import Shard

        shard = Shard(index, count)
        if self.kind == "index":
            from ..usages.builder import build_from_settings

            build_from_settings(self.nlp, self.settings, part, shard, log=lambda _: None)
        else:
            from ..pipeline.export import embed_to_file

            embed_to_file(self.nlp, self.settings, shard, Path(part))
        return part


def run_index_usages(address: str, settings: Dict[str, Any], output: Path, workers: int = 0, quiet: bool = False) -> None:
    """`index-usages --ray`: index the corpus in shards on Ray and merge them into `output`."""
    from ..output_folders import USAGE_INDEX, check_claimable, check_not_inside

    check_not_inside(output, settings["corpus"], "the corpus")
    check_claimable(output, USAGE_INDEX, " for the index")
    _run("index", address, settings, output, workers, "", quiet)


def run_embed(address: str, settings: Dict[str, Any], output: Path, workers: int = 0, quiet: bool = False) -> None:
    """`embed --ray`: embed the input in shards on Ray and merge them into `output`."""
    _run("embed", address, settings, output, workers, output.suffix, quiet)


def _run(kind: str, address: str, settings: Dict[str, Any], output: Path, workers: int, suffix: str, quiet: bool) -> None:
    check_workers(workers)
    removed = remove_stale_parts(output)
    if removed and not quiet:
        print(f"Removed the parts of {removed} interrupted run{'s' * (removed > 1)} into {output} (their driver has ended)")
    with ray_session(address) as ray:
        _run_on(ray, kind, settings, output, workers, suffix, quiet)


def _run_on(ray: Any, kind: str, settings: Dict[str, Any], output: Path, workers: int, suffix: str, quiet: bool) -> None:
    from ..progress_bar import progress_bar

    from .merge import merge_parts

    cpus = max(int(ray.cluster_resources().get("CPU", 1)), 1)
    workers = worker_count(workers, cpus, (lambda _: None) if quiet else print)
    threads = max(cpus // workers, 1)
    count = SHARDS_PER_WORKER * workers
    worker_class = ray.remote(num_cpus=threads, max_restarts=-1, max_task_retries=TASK_RETRIES)(_ShardWorker)
    output.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{output.name}.", suffix=PARTS_SUFFIX, dir=output.parent))
    (scratch / DRIVER).write_text(json.dumps({"host": socket.gethostname(), "pid": os.getpid()}), encoding="utf8")
    actors: List[Any] = []
    try:
        parts = [str(scratch / f"part-{i:05d}-of-{count:05d}{suffix}") for i in range(count)]
        actors = [worker_class.remote(kind, settings, threads) for _ in range(workers)]
        pool = ray.util.ActorPool(actors)
        done = pool.map_unordered(lambda actor, i: actor.run.remote(i, count, parts[i]), range(count))
        bar = progress_bar(total=count, desc="Ray", unit=" shards done", disable=True if quiet else None, leave=False)
        try:
            for _ in done:
                bar.update(1)
        except ray.exceptions.RayError as err:
            raise InputError(f"a shard failed on Ray after {TASK_RETRIES} retries: {str(err).splitlines()[0]}") from None
        finally:
            bar.close()
        merge_parts([Path(p) for p in parts], output, overwrite=True, log=(lambda _: None) if quiet else print)
    finally:
        for actor in actors:
            ray.kill(actor)
        shutil.rmtree(scratch, ignore_errors=True)  # made here, by mkdtemp
