"""Limits with clear errors: out of memory (GPU and host), NaN/inf, float images.

The out-of-memory tests check that the error says how much memory the batch
needs, and that the process goes on: the next call succeeds and gives the
result a fresh process would.
"""

from __future__ import annotations

import gc
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import object_image, requires_cuda
from torchgrabcut import GrabCutModel, grabcut

HERE = Path(__file__).resolve().parent
GIB = 1 << 30
# The CUDA scratch holds at least, per pixel: component (1 B), cut side (1 B),
# terminal capacity (4 B) and four n-link capacities (16 B).
MIN_SCRATCH_BYTES_PER_PIXEL = 22

rng0 = np.random.default_rng(0)
BOX = (20, 15, 80, 60)
IMG = object_image(rng0, 75, 100, BOX)


# ---------------------------------------------------------------- float images and NaN


@pytest.mark.parametrize("scale", [1.0, 255.0])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_float_numpy_images_are_rejected_with_both_conversions(scale: float, dtype: type) -> None:
    image = (IMG.astype(np.float64) / 255.0 * scale).astype(dtype)
    before = image.copy()
    with pytest.raises(TypeError) as info:
        grabcut(image, box=BOX, device="cpu")
    message = str(info.value)
    assert f"image: expected dtype uint8 (colours 0..255), got {np.dtype(dtype)}" in message
    assert "in [0, 1] with (image * 255).round().clip(0, 255).astype(np.uint8)" in message
    assert "in [0, 255] with image.round().clip(0, 255).astype(np.uint8)" in message
    assert "NaN" not in message
    assert np.array_equal(image, before)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_float_tensor_images_are_rejected_with_both_conversions(dtype: torch.dtype) -> None:
    image = torch.from_numpy(IMG).permute(2, 0, 1).to(dtype) / 255
    with pytest.raises(TypeError) as info:
        grabcut(image, box=BOX)
    message = str(info.value)
    assert f"image: expected dtype torch.uint8 (colours 0..255), got {dtype}" in message
    assert "(image * 255).round().clamp(0, 255).to(torch.uint8)" in message
    with pytest.raises(TypeError, match=r"image\[1\]: expected dtype torch.uint8"):
        grabcut([image.to(torch.uint8), image], box=[BOX, BOX])


def test_the_advised_conversions_give_the_uint8_result() -> None:
    """Following the message: [0, 1] and [0, 255] floats of an image segment like the image."""
    expected = grabcut(IMG, box=BOX, device="cpu")
    unit = IMG.astype(np.float32) / 255
    full = IMG.astype(np.float32)
    assert np.array_equal(grabcut((unit * 255).round().clip(0, 255).astype(np.uint8), box=BOX, device="cpu"), expected)
    assert np.array_equal(grabcut(full.round().clip(0, 255).astype(np.uint8), box=BOX, device="cpu"), expected)
    tensor = torch.from_numpy(unit).permute(2, 0, 1)
    converted = (tensor * 255).round().clamp(0, 255).to(torch.uint8)
    assert np.array_equal(grabcut(converted, box=BOX).numpy(), expected)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_nan_and_inf_in_float_images_are_named(bad: float) -> None:
    image = IMG.astype(np.float32)
    image[3, 4, 1] = bad
    with pytest.raises(TypeError, match="also holds NaN or inf"):
        grabcut(image, box=BOX, device="cpu")
    tensor = torch.from_numpy(image).permute(2, 0, 1)
    with pytest.raises(TypeError, match="also holds NaN or inf"):
        grabcut(tensor, box=BOX)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("where", [(0, 0), (3, 1), (7, 12)])  # a weight, a mean, a covariance entry
def test_nan_and_inf_in_models_are_rejected(bad: float, where: tuple[int, int]) -> None:
    mask, model = grabcut(IMG, box=BOX, device="cpu", return_model=True)
    params = model.params.clone()
    params[where] = bad
    with pytest.raises(ValueError, match="model: expected finite parameters"):
        grabcut(IMG, mask, model=GrabCutModel(params), device="cpu")
    # The operator checks too, for callers that skip the Python layer.
    op = torch.ops.torchgrabcut.grabcut
    img_t = [torch.from_numpy(IMG).permute(2, 0, 1)]
    mask_t = [torch.from_numpy(mask)]
    with pytest.raises(ValueError, match="model: expected finite parameters"):
        op(img_t, mask_t, params[None], 2, 5, 50.0, 0, False, False)
    # With init_model the model is only written: whatever it held does not matter.
    _, out_model = op(img_t, mask_t, params[None], 2, 5, 50.0, 0, True, False)
    assert bool(torch.isfinite(out_model).all())
    assert torch.isnan(params).any() or torch.isinf(params).any()  # the input is untouched


# ---------------------------------------------------------------- out of host memory

HOST_OOM_SCRIPT = """
import resource, sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
from conftest import object_image
from torchgrabcut import grabcut

rng = np.random.default_rng(2)
small = object_image(rng, 60, 80, (10, 10, 70, 50))
expected = grabcut(small, box=(10, 10, 70, 50), device="cpu")
big = object_image(rng, 2000, 2500, (100, 100, 2400, 1900))
big_copy = big.copy()

def vm_bytes():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024

soft, hard = resource.getrlimit(resource.RLIMIT_AS)
resource.setrlimit(resource.RLIMIT_AS, (vm_bytes() + int(sys.argv[2]) * 2**20, hard))
try:
    grabcut(big, box=(100, 100, 2400, 1900), device="cpu")
    outcome = "no error"
except torch.OutOfMemoryError as err:
    outcome = "OutOfMemoryError: " + str(err).splitlines()[0]
except RuntimeError as err:
    outcome = "RuntimeError: " + str(err).splitlines()[0]
resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
print(outcome)
assert np.array_equal(grabcut(small, box=(10, 10, 70, 50), device="cpu"), expected)
assert np.array_equal(big, big_copy)
print("ok")
"""


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc and RLIMIT_AS")
def test_out_of_host_memory_is_a_clear_error_and_the_process_goes_on() -> None:
    """Under an address-space limit a 5-megapixel image fails cleanly; the next call succeeds."""
    proc = subprocess.run(
        [sys.executable, "-c", HOST_OOM_SCRIPT, str(HERE), "160"],
        capture_output=True,
        text=True,
        timeout=300,
        env=dict(os.environ, OMP_NUM_THREADS="1"),
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first, last = proc.stdout.strip().splitlines()
    assert last == "ok"
    assert first.startswith("OutOfMemoryError: torchgrabcut.grabcut: out of host memory"), first
    assert "for the scratch of image 0" in first, first
    assert "(2000x2500, 5000000 pixels)" in first, first


# ---------------------------------------------------------------- out of GPU memory


def needed_bytes(message: str) -> int:
    found = re.search(r"needs (\d+) bytes \((\d+\.\d\d) GiB\) of GPU scratch memory", message)
    assert found, message
    n = int(found.group(1))
    assert abs(n / GIB - float(found.group(2))) < 0.01
    return n


def expanded_batch(batch: int, side: int) -> tuple[torch.Tensor, tuple[int, int, int, int]]:
    """batch views of one side x side image on the GPU (no memory per view)."""
    box = (side // 8, side // 8, side - side // 8, side - side // 8)
    one = torch.from_numpy(object_image(np.random.default_rng(4), side, side, box)).permute(2, 0, 1).cuda()
    return one[None].expand(batch, -1, -1, -1), box


def run_in_child(check: str) -> None:
    """Runs the named check of this module in a fresh process: a crash there fails the test
    with the child's output instead of ending the whole pytest run."""
    code = f"import test_limits; test_limits.{check}()"
    env = dict(os.environ, PYTHONFAULTHANDLER="1")
    proc = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, f"{check} exited with {proc.returncode}:\n{proc.stdout[-2000:]}{proc.stderr[-4000:]}"


@requires_cuda
def test_a_batch_larger_than_the_gpu_says_how_much_it_needs() -> None:
    run_in_child("check_batch_larger_than_the_gpu")


@requires_cuda
def test_a_batch_larger_than_the_free_gpu_memory_says_how_much_it_needs() -> None:
    """The allocator's own failure (more than is free, less than the device): same message, then recovery."""
    run_in_child("check_batch_larger_than_the_free_gpu_memory")


def check_batch_larger_than_the_gpu() -> None:
    total = torch.cuda.mem_get_info()[1]
    side = 512
    batch = total // (MIN_SCRATCH_BYTES_PER_PIXEL * side * side) + 1  # scratch > the whole device
    images, box = expanded_batch(batch, side)
    base = torch.cuda.memory_allocated()
    with pytest.raises(torch.OutOfMemoryError) as info:
        grabcut(images, box=box)
    message = str(info.value)
    del info  # its traceback holds grabcut()'s frame, and so the batch's masks
    gc.collect()
    n = needed_bytes(message)
    assert n > total
    assert n >= MIN_SCRATCH_BYTES_PER_PIXEL * batch * side * side
    assert f"{batch} images, {batch * side * side} pixels" in message
    assert "split the batch" in message
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == base
    # The process goes on: a small batch right after works and matches the CPU.
    small = images[:3].contiguous()
    assert torch.equal(grabcut(small, box=box).cpu(), grabcut(small.cpu(), box=box))


def check_batch_larger_than_the_free_gpu_memory() -> None:
    torch.cuda.empty_cache()
    free, total = torch.cuda.mem_get_info()
    keep_free = 6 * GIB
    blocker = torch.empty(free - keep_free, dtype=torch.uint8, device="cuda")
    side = 512
    batch = (2 * keep_free) // (MIN_SCRATCH_BYTES_PER_PIXEL * side * side) + 1
    images, box = expanded_batch(batch, side)
    try:
        with pytest.raises(torch.OutOfMemoryError) as info:
            torch.ops.torchgrabcut.grabcut(
                list(images.unbind(0)),
                list(torch.zeros(1, side, side, dtype=torch.uint8, device="cuda").expand(batch, -1, -1).unbind(0)),
                torch.zeros(batch, 10, 13, dtype=torch.float64, device="cuda"),
                2,
                5,
                50.0,
                0,
                True,
                False,
            )
        message = str(info.value)
        n = needed_bytes(message)
        assert keep_free < n < total
        free_said = float(re.search(r"but (\d+\.\d\d) GiB of its", message).group(1))  # type: ignore[union-attr]
        assert free_said * GIB < n
    finally:
        del blocker
    torch.cuda.empty_cache()
    small = images[:2].contiguous()
    assert torch.equal(grabcut(small, box=box).cpu(), grabcut(small.cpu(), box=box))


# ---------------------------------------------------------------- CPU threads
# Which team runs which image is the core's schedule, tested in C++ (tests/core/test_batch.cpp,
# which counts the stages' team sizes). Here, from outside: the threads a call starts, in a
# fresh process (OpenMP keeps its workers, so a process's count only grows), read from /proc.

THREADS_SCRIPT = """
import os, sys
import numpy as np
import torch
sys.path.insert(0, sys.argv[1])
from conftest import object_image
from torchgrabcut import grabcut

img = object_image(np.random.default_rng(0), 75, 100, (20, 15, 80, 60))
torch.set_num_threads(int(sys.argv[2]))
images = [img] * int(sys.argv[3])

def measure():
    start = len(os.listdir("/proc/self/task"))
    grabcut(images if len(images) > 1 else img, box=(20, 15, 80, 60), device="cpu", max_iter=2)
    print(len(os.listdir("/proc/self/task")) - start)

if sys.argv[4] == "worker":  # a Python thread of its own, which takes torch's setting too
    import threading
    worker = threading.Thread(target=measure)
    worker.start()
    worker.join()
else:
    measure()
"""


def _threads_started(threads: int, images: int, caller: str = "main", **env: str) -> int:
    """The threads one call (``images`` copies of one image, as a list when more than one) starts."""
    out = subprocess.run(
        [sys.executable, "-c", THREADS_SCRIPT, str(HERE), str(threads), str(images), caller],
        env=dict(os.environ, **env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return int(out.stdout.split()[-1])


@pytest.fixture
def torch_threads():  # type: ignore[no-untyped-def]
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_one_image_runs_on_torch_get_num_threads(threads: int) -> None:
    assert _threads_started(threads, 1) == threads - 1  # the calling thread and threads - 1 workers


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
def test_one_level_of_parallelism_even_where_openmp_nests() -> None:
    """With nested OpenMP enabled (OMP_NESTED=true), a batch's images, already run in parallel,
    must not each start a team of their own (2 x 2 threads here)."""
    assert _threads_started(2, 3, OMP_NESTED="true", OMP_MAX_ACTIVE_LEVELS="4") == 1


def test_an_image_with_more_than_a_threads_share_of_a_batchs_work_gives_its_own_result(
    torch_threads: None,
) -> None:
    # Such an image runs first, alone, on every thread (the schedule: tests/core/test_batch.cpp);
    # every image's mask is the one it gets alone.
    rng = np.random.default_rng(7)
    big = object_image(rng, 150, 200, (40, 30, 160, 120))
    torch.set_num_threads(2)
    images = [IMG, big, IMG]
    boxes = [BOX, (40, 30, 160, 120), BOX]
    singles = [grabcut(im, box=b, device="cpu") for im, b in zip(images, boxes)]
    for got, want in zip(grabcut(images, box=boxes, device="cpu"), singles):
        np.testing.assert_array_equal(got, want)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts threads in /proc")
def test_a_worker_thread_follows_torch_set_num_threads() -> None:
    assert _threads_started(1, 1, "worker") == 0
    assert _threads_started(2, 1, "worker") == 1
