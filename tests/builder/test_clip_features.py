"""ClipFeatures: one parallel step for a clip's detections and the tasks that use them."""
from __future__ import annotations

import threading

import numpy as np
import pytest

import devil_dataset.builder.clip_features as cf

WAIT_SECONDS = 20.0  # bound on every wait below (a deadlock fails the test instead of hanging it)


def _frames(n: int = 6) -> np.ndarray:
    rng = np.random.default_rng(3)
    return (rng.random((n, 48, 64, 3)) * 255).astype(np.uint8)


def _index(frame: np.ndarray, frames: np.ndarray) -> int:
    """Which of ``frames`` the view ``frame`` is (ClipFeatures describes ``frames[k]``, a new view each time)."""
    return next(k for k in range(len(frames)) if np.shares_memory(frame, frames[k]))


def test_tasks_start_while_the_last_frames_are_described(monkeypatch):
    """With two threads, the description of the last frame waits until the first task has run: that only finishes
    when the tasks do not wait for every detection (the previous code described all frames, then ran the tasks)."""
    task_ran = threading.Event()
    real = cf.detect_features

    def detect(frame, detector):
        if _index(frame, frames) == 5:
            assert task_ran.wait(WAIT_SECONDS), "no task started while the last frame was described"
        return real(frame, detector)

    frames = _frames()
    monkeypatch.setattr(cf, "detect_features", detect)
    features = cf.ClipFeatures(frames, "orb", threads=2)
    features.want(range(6))

    def task(k: int):
        def run():
            task_ran.set()
            return len(features.features(k))
        return run

    got = features.detect([0, 1], then=[task(0), task(1)])
    assert features.detections == 6
    want = [len(real(frames[k], "orb")) for k in (0, 1)]
    assert got == want


def test_want_adds_frames_to_the_next_detection_after_those_asked():
    order = []
    real = cf.detect_features
    frames = _frames()
    features = cf.ClipFeatures(frames, "orb", threads=1)
    cf_detect = cf.detect_features
    try:
        cf.detect_features = lambda frame, det: order.append(_index(frame, frames)) or real(frame, det)
        features.want([5, 2, 4])
        assert features.detect([3, 0]) == []
        features.detect([1])
    finally:
        cf.detect_features = cf_detect
    assert order == [3, 0, 2, 4, 5, 1]


def test_a_failed_description_fails_the_step_without_hanging_its_tasks(monkeypatch):
    real = cf.detect_features

    def detect(frame, detector):
        if _index(frame, frames) == 1:
            raise RuntimeError("frame 1: broken")
        return real(frame, detector)

    frames = _frames()
    monkeypatch.setattr(cf, "detect_features", detect)
    features = cf.ClipFeatures(frames, "orb", threads=2)
    outcome: list[BaseException] = []

    def step():
        try:
            features.detect([0, 1], then=[lambda: features.features(1)] * 3)
        except BaseException as exc:  # noqa: BLE001  (recorded for the assertion)
            outcome.append(exc)

    worker = threading.Thread(target=step)
    worker.start()
    worker.join(WAIT_SECONDS)
    assert not worker.is_alive(), "the step hung"
    assert len(outcome) == 1 and "frame 1: broken" in str(outcome[0])


def test_threads_asking_for_one_frame_at_once_describe_it_once(monkeypatch):
    calls = []
    started = threading.Event()
    release = threading.Event()
    real = cf.detect_features

    def detect(frame, detector):
        calls.append(1)
        started.set()
        assert release.wait(WAIT_SECONDS)
        return real(frame, detector)

    monkeypatch.setattr(cf, "detect_features", detect)
    features = cf.ClipFeatures(_frames(), "orb", threads=1)
    got: list[int] = []
    first = threading.Thread(target=lambda: got.append(len(features.features(2))))
    first.start()
    assert started.wait(WAIT_SECONDS)
    second = threading.Thread(target=lambda: got.append(len(features.features(2))))
    second.start()
    release.set()
    for t in (first, second):
        t.join(WAIT_SECONDS)
    assert len(calls) == 1 and len(got) == 2 and got[0] == got[1]


@pytest.mark.parametrize("threads", [1, 3])
def test_task_results_come_in_task_order(threads):
    features = cf.ClipFeatures(_frames(), "orb", threads=threads)
    assert features.detect(range(6), then=[lambda k=k: k * k for k in range(7)]) == [k * k for k in range(7)]
    assert features.detect([2], then=[lambda: "again"]) == ["again"]  # nothing left to describe
