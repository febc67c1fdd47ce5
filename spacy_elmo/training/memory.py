"""Keep the memory a training step frees for the next step (glibc's malloc).

glibc serves every block above 32 MB with its own mmap and unmaps it on free, so each training
step's large tensors (logits, gate pre-activations and their gradients: hundreds of MB) come back
from the kernel as fresh pages, zeroed one page fault at a time. Serving them from the heap and
never trimming it lets a step reuse the last step's pages: measured 1.17x (float32) and 1.3x
(bfloat16) on the `small` preset's CPU step, for about 13% more peak memory.
"""

import ctypes
import sys

_M_TRIM_THRESHOLD = -1
_M_MMAP_MAX = -4
_done = False


def reuse_freed_memory() -> bool:
    """Tell glibc's malloc (Linux) to serve large blocks from its heap and keep freed memory.
    Affects the whole process and its forked children. RETURNS (bool): whether it took effect
    (False on other C libraries and systems, where nothing changes)."""
    global _done
    if _done:
        return True
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    _done = mallopt(_M_MMAP_MAX, 0) == 1 and mallopt(_M_TRIM_THRESHOLD, 2**31 - 1) == 1
    return _done
