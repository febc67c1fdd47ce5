"""How the package starts processes: never by forking the process it runs in.

A forked child is a copy of its parent at the moment of the fork, and three things of that copy have
hung or duplicated test runs (docs/safety.md "Processes"):
- a lock that another thread of the parent held (OpenMP's, Ray's, tqdm's monitor) stays held in the
  child forever: the child deadlocks on its first use of it;
- the parent's Python signal handlers: a pool's SIGTERM is caught (a training run's stop handler, Ray's
  `sys.exit`) instead of ending the worker, which then blocks `Pool.terminate()`;
- where a signal's handler raises in the child before multiprocessing's `try/finally os._exit`, the
  exception travels back into the caller's code: a second copy of the program runs on.

So every pool and worker process the package starts comes from a fresh interpreter: "forkserver"
where the platform has it (a single-threaded server, started once with the modules workers need
already imported, forks each worker quickly), else "spawn". Work sent to such a process must be
picklable and defined at a module's top level.

A fresh interpreter of multiprocessing imports the caller's main module again (as `__mp_main__`), which runs a
program's top level once more in every worker where it lacks the `if __name__ == "__main__":` guard: a top level
that prepares a corpus in processes, or starts Ray, then does so again in each worker. The package's workers start
from the package's own entry instead: they are started inside `from_package_entry()`, which hides the caller's
main module from multiprocessing, so a worker imports only the package modules its work needs (and a program read
from standard input, which has no file to import again, can use processes too).
"""

import builtins
import contextlib
import multiprocessing
import multiprocessing.context
import sys
import threading
import types
from typing import Iterator, Sequence

START_METHOD = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"


def process_context(preload: Sequence[str] = ()) -> multiprocessing.context.BaseContext:
    """The multiprocessing context for the package's processes.

    preload (Sequence[str]): modules the fork server imports once, so that each worker starts without
        importing them again (no effect once this process's fork server runs, or with "spawn").
    RETURNS (BaseContext): a context whose processes never inherit this process's threads, locks or
        signal handlers.
    """
    context = multiprocessing.get_context(START_METHOD)
    if preload and START_METHOD == "forkserver":
        from multiprocessing import forkserver

        # The public setter replaces the list; keep what the program asked for already, but not its main module
        server = getattr(forkserver, "_forkserver", None)
        already = [m for m in getattr(server, "_preload_modules", []) if m != "__main__"]
        context.set_forkserver_preload(already + [m for m in preload if m not in already])  # type: ignore[attr-defined]
    return context


_HIDING = threading.Lock()


@contextlib.contextmanager
def from_package_entry() -> Iterator[None]:
    """Start processes inside this block: they do not import the caller's main module again (see the module
    docstring). For the moment of the start, `sys.modules["__main__"]` is a stand-in without a file or a spec,
    which is what multiprocessing reads to decide what a new process imports."""
    with _HIDING:
        main = sys.modules.get("__main__")
        stand_in = types.ModuleType("__main__")
        stand_in.__dict__["__builtins__"] = builtins
        sys.modules["__main__"] = stand_in
        try:
            yield
        finally:
            if main is not None:
                sys.modules["__main__"] = main
