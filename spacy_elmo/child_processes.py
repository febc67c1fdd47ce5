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
"""

import multiprocessing
import multiprocessing.context
import os
import sys
from typing import Sequence

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

        # The public setter replaces the list; keep what the program asked for already.
        server = getattr(forkserver, "_forkserver", None)
        already = list(getattr(server, "_preload_modules", ["__main__"]))
        context.set_forkserver_preload(already + [m for m in preload if m not in already])  # type: ignore[attr-defined]
    return context


def why_no_processes() -> str:
    """RETURNS (str): why this program cannot start worker processes ("" where it can). A fresh interpreter
    imports the program's main module again, from its file: a program read from standard input (`python -`)
    has none, and every worker would die at start while the pool started new ones for ever."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if getattr(main, "__spec__", None) is None and path is not None and not os.path.isfile(path):
        return f"the program's main module ({path}) is not a file that a worker process can import again"
    return ""
