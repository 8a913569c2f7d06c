"""Ctrl-C during a long 3D min-cut on the device path: KeyboardInterrupt, inputs intact, the next call right.

The 3D device solver's host loop waits for the device every few steps; there it polls
Python's signal handlers. A volume holding one long snake (a path through every voxel)
takes thousands of steps. The CPU replay of that path (the development build's hook
_mincut_grid3d_emulated) runs the same loop, so the test runs without a GPU; on a GPU
the CUDA kernel runs it too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from conftest import has_cuda, run_interrupted_script

HERE = Path(__file__).resolve().parent

SCRIPT = """
import dis, faulthandler, os, signal, sys, time
faulthandler.dump_traceback_later(540, exit=True)  # a hang fails with every thread's stack
import torch
sys.path.insert(0, sys.argv[1])
from test_graphcut import make_snake3d, stacked3d
import torchgrabcut

device, side = sys.argv[2], int(sys.argv[3])
op = getattr(torch.ops.torchgrabcut, "mincut_grid3d" if device == "cuda" else "_mincut_grid3d_emulated").default

# At a poll the operator runs Python's handlers with the frame that called it: torch's
# OpOverload.__call__, stopped at its call into the operator. A handler that sees that
# frame runs inside the solve, so the signal it sends lands there whatever the speed of
# the machine.
CALL = type(op).__call__.__code__
CALL_AT = [i.offset for i in dis.get_instructions(CALL) if i.opname.startswith("CALL")][-1]

def in_call(frame):
    return frame is not None and frame.f_code is CALL and frame.f_lasti == CALL_AT

args = stacked3d([make_snake3d((side, side, side))], torch.int32, device)
copies = [a.clone() for a in args if a is not None]
small = stacked3d([make_snake3d((6, 6, 6))], torch.int32, device)
want = torchgrabcut.mincut(*[a.cpu() for a in small[:3]])

# The SIGINT goes at the handler's second run inside the call: the first may come only
# once the operator has returned (at the caller's next instruction, whose frame is the
# same), so a solve that never polled would finish and fail the test.
runs, sent = [], []
def send_sigint(signum, frame):
    if in_call(frame):
        runs.append(1)
        if len(runs) == 2:
            signal.setitimer(signal.ITIMER_REAL, 0)
            sent.append(time.perf_counter())
            os.kill(os.getpid(), signal.SIGINT)
signal.signal(signal.SIGALRM, send_sigint)
signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)  # several ticks between two polls (20 ms)
try:
    op(*args)
    sys.exit(f"the solve finished; the handler ran {len(runs)} time(s) inside the call")
except KeyboardInterrupt:
    print("stopped", round(time.perf_counter() - sent[0], 3), "s after SIGINT")
finally:
    signal.setitimer(signal.ITIMER_REAL, 0)
assert all(torch.equal(a, b) for a, b in zip([a for a in args if a is not None], copies)), "input modified"
cut, flow = op(*small)
assert torch.equal(cut.cpu(), want.cut) and torch.equal(flow.cpu(), want.flow), "wrong result after"
print("ok")
"""


@pytest.mark.parametrize(
    "device",
    ["emulated", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(not has_cuda(), reason="no GPU")])],
)
def test_ctrl_c_stops_a_long_3d_solve(device: str) -> None:
    if device == "emulated" and not hasattr(torch.ops.torchgrabcut, "_mincut_grid3d_emulated"):
        pytest.skip("the extension was built without TORCHGRABCUT_TEST_HOOKS=1 (make build sets it)")
    # The emulated 20^3 snake takes ~2 s on a 2-core machine, the CUDA 24^3 one ~0.2-0.5 s on an
    # H100: many polls either way, so the test does not depend on the machine's speed.
    side = "20" if device == "emulated" else "24"
    run_interrupted_script(SCRIPT, str(HERE), "cuda" if device == "cuda" else "cpu", side)
