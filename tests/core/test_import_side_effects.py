"""Importing the package changes nothing in the host process; the CPU pins apply where a published number is computed.

- Importing ``devil_dataset`` and every module of it, ``load_dataset`` of a built dataset and iterating the training
  DataLoader leave the environment, OpenCV (optimisation flag, IPP, threads), torch (threads, CPU capability) and
  the BLAS thread counts as a process that never imported the package has them (``process_state_probe.py``).
- The ``devil`` command, the local engine's workers and the public evaluate and metric calls are pinned
  (``core/cpu_pins``): the command and the workers for good, the calls for their duration.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from devil_dataset.core.cpu_pins import AVX2_PINS, NETWORK_KERNELS_ENV, pin_applies, pin_level

ROOT = Path(__file__).resolve().parents[2]
PROBE = Path(__file__).with_name("process_state_probe.py")
PINNED_CPU = pin_level()[0] == "avx2"


def _clean_env(**extra: str) -> dict[str, str]:
    """This environment without the pins the test process holds (conftest pins it as the command does)."""
    drop = {*AVX2_PINS, NETWORK_KERNELS_ENV, "DEVIL_FAST_SIMD"}
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(PROBE.parent)])
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", **extra)
    return env


def _run_together(*commands: list[str], timeout: float = 600) -> list[dict]:
    """Run the Python command lines at the same time (each a fresh process); the JSON each prints last."""
    running = [subprocess.Popen([sys.executable, *args], env=_clean_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, cwd=str(ROOT)) for args in commands]
    results = []
    for process in running:
        out, err = process.communicate(timeout=timeout)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


@pytest.fixture(scope="module")
def built_dataset(tmp_path_factory) -> Path:
    """A tiny dataset folder (two short clips at 64x48, fake scorers and masks), built in this process."""
    from devil_dataset.builder.build import build
    from devil_dataset.builder.build_options import BuildHooks, BuildOptions
    from devil_dataset.core.video_io import write_video

    root = tmp_path_factory.mktemp("import_side_effects")
    rng = np.random.default_rng(0)
    sources = []
    for i in range(2):
        base = (rng.random((48, 140, 3)) * 255).astype(np.uint8)
        frames = np.stack([base[:, k % 60 : k % 60 + 80] for k in range(45 + i)])
        sources.append(write_video(root / f"src{i}.mp4", frames, fps=25))

    def mask(preset: str, index: int) -> np.ndarray:
        m = np.zeros((90, 48, 64), bool)
        m[:, 10:30, index % 20 : index % 20 + 16] = True
        return m

    options = BuildOptions(size=(64, 48), curate_options={"min_size": (64, 48)}, progress=False)
    hooks = BuildHooks(camera_scorer=lambda f: float(f[..., 0].mean()) / 255.0,
                       scene_scorer=lambda f: float(f[..., 1].mean()) / 255.0, mask_loader=mask)
    build(sources, root / "ds", options, hooks=hooks)
    return root / "ds"


def test_import_load_and_training_loader_leave_the_process_as_it_was(built_dataset, tmp_path):
    """Fails where importing a module pins OpenCV or sets the pin variables (the package did both before)."""
    reference, subject = _run_together([str(PROBE), "--reference"],
                                       [str(PROBE), str(built_dataset), str(tmp_path / "hf-cache")])
    # OpenCV's own import prepends its library folder to LD_LIBRARY_PATH (cv2/__init__.py, for subprocesses): the
    # reference, which imports cv2, torch and datasets without the package, shows what the libraries change alone.
    assert subject["environ_changed"] == reference["environ_changed"]
    assert not set(subject["environ_changed"]) & {*AVX2_PINS, "KMP_DUPLICATE_LIB_OK"}
    # The package's modules load one more BLAS (scipy's): every BLAS keeps the count its kind has without the package.
    default_threads = {api: threads for api, _, threads in reference["after"].pop("blas_threads")}
    for state in (subject["after"], subject["during"]):  # at the end, and while the loader made its items
        assert {(api, threads) for api, _, threads in state.pop("blas_threads")} == set(default_threads.items())
        assert state == reference["after"]
    assert subject["after"]["cv2_optimized"] is True and subject["after"]["cv2_ipp"] is True


def test_the_devil_command_pins_its_process_before_torch_and_scipy():
    """``main`` pins once the arguments are read and before the command runs: the environment pins are in force (not
    late) and OpenCV is pinned for the command; ``--version`` (like ``--help``) pins nothing."""
    code = """if True:
        import json, os, sys, cv2
        from devil_dataset.cli import main
        loaded_first = sorted(m for m in ("torch", "scipy.linalg") if m in sys.modules)
        try:
            main(["--version"])
        except SystemExit:
            pass
        unpinned = "ATEN_CPU_CAPABILITY" not in os.environ and cv2.useOptimized()
        main(["weights", "list"])
        from devil_dataset.core.cpu_pins import pins_provenance
        print(json.dumps({"first": loaded_first, "pins": pins_provenance(), "cv2": cv2.useOptimized(),
                          "version_unpinned": unpinned}))
    """
    [seen] = _run_together(["-c", code])
    assert seen["first"] == []  # nothing the pins must precede was loaded by importing the command
    assert seen["cv2"] is False and seen["version_unpinned"] is True
    if PINNED_CPU:
        expected = {name: value for name, value in AVX2_PINS.items() if pin_applies(name)}
        assert seen["pins"]["pinned"] == expected and seen["pins"]["level"] == "avx2"


def test_engine_workers_are_pinned_and_the_caller_is_not():
    """The local engine's workers start with the pin variables and OpenCV pinned, even when the caller (a library
    user's process) is not pinned; the caller's environment is given back after the workers start."""
    code = """if __name__ == "__main__":
        import json, os, cv2
        from devil_dataset.core.engines.local import map_ordered, shutdown_pools
        from process_state_probe import worker_state
        env = dict(os.environ)
        seen = list(map_ordered(worker_state, ["ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE", "MKL_CBWR"], jobs=2))
        again = list(map_ordered(worker_state, ["ATEN_CPU_CAPABILITY"], jobs=2))  # a kept worker adopts the caller
        shutdown_pools()
        print(json.dumps({"workers": seen + again, "caller_env_same": env == dict(os.environ),
                          "caller_cv2": cv2.useOptimized()}))
    """
    [seen] = _run_together(["-c", code])
    assert seen["caller_env_same"] is True and seen["caller_cv2"] is True
    for state in seen["workers"]:
        assert state["cv2_optimized"] is False and state["cv2_ipp"] is False
    if PINNED_CPU:
        assert [s["value"] for s in seen["workers"]] == ["avx2", "Haswell", "AVX2", "avx2"]


def test_metric_calls_pin_for_their_duration_and_give_the_commands_values():
    """A metric call of an unpinned process computes the pinned process's value (DIS flow, OpenCV) and gives
    OpenCV back as it found it."""
    code = """if True:
        import json, sys, cv2, numpy as np
        import devil_dataset
        if sys.argv[1] == "pinned":
            devil_dataset.pin_process()
        from devil_dataset.eval import functional as F
        rng = np.random.default_rng(3)
        base = np.kron(rng.integers(0, 256, (10, 14, 3), dtype=np.uint8), np.ones((6, 6, 1), np.uint8))
        gt = np.stack([base[:, k : k + 72] for k in range(4)])
        hole = np.zeros(gt.shape[:3], bool); hole[:, 16:40, 20:50] = True
        pred = gt.copy(); pred[hole] = 128
        value = F.warp_error(pred, gt, hole, flow="dis")
        print(json.dumps({"value": repr(value), "cv2": cv2.useOptimized()}))
    """
    unpinned, pinned = _run_together(["-c", code, "unpinned"], ["-c", code, "pinned"])
    assert unpinned["value"] == pinned["value"]
    assert unpinned["cv2"] is True and pinned["cv2"] is False


def test_library_build_pins_opencv_for_its_duration(tmp_path):
    """``build()`` called from an unpinned process (a library user's script) labels its clips with OpenCV pinned, as
    ``devil build`` does, and gives OpenCV back when it returns; the labelling functions called alone do the same."""
    code = """if True:
        import json, sys, cv2, numpy as np
        from pathlib import Path
        from devil_dataset.builder.build import build
        from devil_dataset.builder.build_options import BuildHooks, BuildOptions
        from devil_dataset.builder.camera_motion import camera_motion_score
        from devil_dataset.core.video_io import write_video
        root = Path(sys.argv[1])
        base = (np.random.default_rng(0).random((48, 140, 3)) * 255).astype(np.uint8)
        sources = [write_video(root / f"src{i}.mp4", np.stack([base[:, k : k + 80] for k in range(45)]), fps=25)
                   for i in range(2)]
        seen = []
        def scorer(frames):
            seen.append(cv2.useOptimized())
            return float(frames[..., 0].mean()) / 255.0
        def mask(preset, index):
            m = np.zeros((90, 48, 64), bool); m[:, 10:30, index % 20 : index % 20 + 16] = True
            return m
        build(sources, root / "ds", BuildOptions(size=(64, 48), curate_options={"min_size": (64, 48)},
              progress=False), hooks=BuildHooks(camera_scorer=scorer, scene_scorer=scorer, mask_loader=mask))
        after_build = cv2.useOptimized()
        camera_motion_score(np.stack([base[:, k : k + 80] for k in range(12)]))
        print(json.dumps({"during": sorted(set(seen)), "after_build": after_build, "after": cv2.useOptimized()}))
    """
    [seen] = _run_together(["-c", code, str(tmp_path)])
    assert seen["after_build"] is True and seen["after"] is True
    assert seen["during"] == ([True] if os.environ.get("DEVIL_FAST_SIMD") == "1" else [False])


def test_pinned_opencv_restores_the_flag_and_each_threads_ipp():
    """Nested and overlapping blocks: the process flag comes back when the last block ends; a thread's IPP is its
    own; a package thread follows the process's pin."""
    import threading

    import cv2

    from devil_dataset.core.cv_determinism import fast_simd, follow_opencv_pin, pinned_opencv

    if fast_simd():
        pytest.skip("DEVIL_FAST_SIMD=1 pins nothing")
    saved = cv2.useOptimized(), cv2.ipp.useIPP()
    try:
        cv2.setUseOptimized(True)
        assert follow_opencv_pin() is False and cv2.ipp.useIPP() is True  # an unpinned process: nothing changes
        seen = []

        def other_thread():
            with pinned_opencv():
                seen.append((cv2.useOptimized(), cv2.ipp.useIPP()))
            seen.append(cv2.useOptimized())  # the main thread's block still holds the process pinned

        with pinned_opencv():
            with pinned_opencv():
                assert (cv2.useOptimized(), cv2.ipp.useIPP()) == (False, False)
            assert cv2.useOptimized() is False
            worker = threading.Thread(target=other_thread)
            worker.start()
            worker.join()
        assert seen == [(False, False), False]
        assert (cv2.useOptimized(), cv2.ipp.useIPP()) == (True, True)
    finally:
        cv2.setUseOptimized(saved[0])
        cv2.ipp.setUseIPP(saved[1])


def test_pins_provenance_records_what_is_in_force(monkeypatch):
    """Read, not set: without the variables the level is none and says how to pin; a pin set after its library
    loaded is marked late; a user's value is named as the user's."""
    import torch  # noqa: F401  (loaded: a pin set now is late for it)

    from devil_dataset.core import cpu_pins

    if not PINNED_CPU:
        pytest.skip("the AVX2 pins apply only on AVX2 x86-64")
    for name in AVX2_PINS:
        monkeypatch.delenv(name, raising=False)
    state = cpu_pins.pins_provenance()
    assert state["level"] == "none" and "pin_process" in str(state["reason"]) and state["pinned"] == {}
    assert "ATEN_CPU_CAPABILITY" not in os.environ  # reading set nothing
    monkeypatch.setattr(cpu_pins, "_SET_HERE", {})
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    cpu_pins.pin_environment()
    state = cpu_pins.pins_provenance()
    assert state["level"] == "avx2"
    assert state["pinned"]["ATEN_CPU_CAPABILITY"] == "avx2 (late: torch was imported first)"  # torch is loaded here
    assert state["pinned"]["MKL_CBWR"] == "COMPATIBLE (set by the user)"
    for name in AVX2_PINS:  # give the test process its pins back as they were
        monkeypatch.delenv(name, raising=False)
