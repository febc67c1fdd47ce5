import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc settings are Linux-only")

# Allocates and frees a 256 MB tensor, then prints how much of it the process still holds.
SCRIPT = """
import sys, torch
from spacy_elmo.training.memory import reuse_freed_memory
def rss_mb():
    return int(open("/proc/self/statm").read().split()[1]) * 4096 / 2**20
took = reuse_freed_memory() if sys.argv[1] == "reuse" else None
before = rss_mb()
x = torch.ones(64 * 2**20)
del x
print(took, rss_mb() - before)
"""


def _held_after_free(mode: str):
    out = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True).stdout.split()
    return out[0], float(out[1])


@pytest.mark.slow
def test_freed_large_blocks_are_kept_for_reuse_only_when_asked():
    took, held = _held_after_free("reuse")
    if took != "True":
        pytest.skip("not glibc: reuse_freed_memory changes nothing here")
    assert held > 200  # the 256 MB stay in the process, ready for the next step
    _, held_default = _held_after_free("default")
    assert held_default < 50  # by default glibc unmaps a block this large on free
