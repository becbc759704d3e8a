"""The Ray engine on a real two-node Ray cluster on 127.0.0.1 (``ray.cluster_utils.Cluster``): record order,
bounded in-flight work, a killed worker retried, and a build byte-identical to the local engine's."""
from __future__ import annotations

import hashlib
import os
import signal
import sys
import tempfile
import time
from pathlib import Path

# Ray reads these when it is imported. Loopback only (the node would otherwise advertise the address of the
# default route, unreachable in sandboxes), and a private temp dir so the cluster neither joins nor replaces
# another local Ray (``ray.init()`` connects to the latest cluster recorded in the temp dir).
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
os.environ.setdefault("RAY_TMPDIR", tempfile.mkdtemp(prefix="ray", dir="/tmp"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest

from devil_dataset.core.engines import Engine, get_engine
from devil_dataset.core.engines.ray import connection_error_message, private_ray_token
from devil_dataset.core.errors import DevilError

#: per-node object store of the test cluster (Ray's minimum is 75 MiB)
OBJECT_STORE = 80 * 2**20
#: seconds the two nodes get to register
START_TIMEOUT = 90
BUILD_SIZE = (64, 48)


def _ray_or_skip():
    try:
        import ray
    except ImportError as exc:  # printed by -ra
        pytest.skip(f"ray is not importable ({exc}); install the extra: pip install 'devil-dataset[ray]'")
    # functions of this test module run on the workers: ship them by value (the workers cannot import it)
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    return ray


@pytest.fixture(scope="module")
def ray_cluster():
    """A head node and a second node, one CPU each, stopped at the end of the module. Its token lives in the
    environment only (:func:`private_ray_token`): no ``~/.ray/auth_token`` is left to break a later cluster."""
    ray = _ray_or_skip()
    from ray.cluster_utils import Cluster

    if ray.is_initialized():
        ray.shutdown()
    node = {"num_cpus": 1, "object_store_memory": OBJECT_STORE, "node_ip_address": "127.0.0.1"}
    with private_ray_token():
        cluster = Cluster(initialize_head=True, connect=False, head_node_args={**node, "include_dashboard": False})
        try:
            cluster.add_node(**node)
            ray.init(address=cluster.address, log_to_driver=False)
            cluster.wait_for_nodes(timeout=START_TIMEOUT)
            yield cluster
        finally:
            ray.shutdown()
            cluster.shutdown()


def _slow_identity(x: int) -> tuple[int, str]:
    time.sleep(0.2 + 0.1 * (x % 3))  # later records often finish first; long enough to fill both nodes
    import ray

    return x, ray.get_runtime_context().get_node_id()


def _kill_once(task: tuple[int, str]) -> int:
    """Kill this worker process (SIGKILL) the first time record 2 runs; the retry finds the marker file."""
    x, marker = task
    if x == 2 and not os.path.exists(marker):
        Path(marker).write_text("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise DevilError(f"record {x}: bad")
    return x


def test_engine_names_and_missing_ray(monkeypatch):
    assert get_engine("local", jobs=3) == Engine("local", 3)
    with pytest.raises(DevilError, match="needs --engine ray"):
        get_engine("local", address="127.0.0.1:6379")
    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    with pytest.raises(DevilError, match=r'pip install "devil-dataset\[ray\]"'):
        get_engine("ray")


def test_order_window_and_both_nodes(ray_cluster):
    eng = get_engine("ray")
    consumed, yielded, most_ahead = [0], [0], [0]

    def records():
        for x in range(12):
            consumed[0] += 1
            most_ahead[0] = max(most_ahead[0], consumed[0] - yielded[0])
            yield x

    def seen(_):
        yielded[0] += 1

    out = list(eng.map_ordered(_slow_identity, records(), window=3, on_result=seen))
    assert [x for x, _ in out] == list(range(12))
    assert most_ahead[0] <= 3  # never more than the window in flight
    assert len({node for _, node in out}) == 2  # both nodes ran tasks


def test_exception_is_raised_for_its_record(ray_cluster):
    with pytest.raises(DevilError, match="record 3: bad"):
        list(get_engine("ray").map_ordered(_fail_on_three, range(6)))


def test_killed_worker_is_retried(ray_cluster, tmp_path):
    marker = str(tmp_path / "killed")
    out = list(get_engine("ray").map_ordered(_kill_once, [(x, marker) for x in range(5)]))
    assert Path(marker).read_text() == "killed"  # the worker really died once
    assert out == [0, 1, 4, 9, 16]


# --- build: tiny sources, the same dataset from both engines ---------------------------------------------------

def _fake_mask(preset: str, index: int) -> np.ndarray:
    w, h = BUILD_SIZE
    m = np.zeros((90, h, w), bool)
    for t in range(90):
        m[t, 10:20, (index + t) % 50 : (index + t) % 50 + 10] = True
    m[:, 0, : len(preset) % 7 + 1] = True
    return m


def _fake_curate(sources, out_dir, *, progress=True, **options):
    """One lossless clip (PNG frames) per .npy source: keeps the test about the engines, not about H.264."""
    from types import SimpleNamespace

    from devil_dataset.core.release_format import write_frame_pngs

    clips = []
    for src in sources:
        frames = np.load(src)
        cid = f"{Path(src).stem}-00000"
        d = Path(out_dir) / "clips" / cid
        if not d.is_dir():
            write_frame_pngs(frames, d)
        clips.append(SimpleNamespace(clip_id=cid, path=f"clips/{cid}", source=str(src), frame_count=len(frames),
                                     fps=30.0, first_frame=0, sha256=hashlib.sha256(frames.tobytes()).hexdigest()))
    return SimpleNamespace(out_dir=Path(out_dir), clips=clips, skipped=[])


def _camera(frames: np.ndarray) -> float:
    return float(frames[..., 1].mean())


def _scene(frames: np.ndarray) -> float:
    return float(frames[..., 2].std())


class _KillingLoader:
    """The default clip loader, but the first load of ``victim`` kills its worker process (once, by marker)."""

    def __init__(self, victim: str, marker: str):
        self.victim, self.marker = victim, marker

    def __call__(self, path: Path) -> np.ndarray:
        from devil_dataset.core.video_io import load_clip

        if Path(path).name == self.victim and not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return load_clip(path)


def _sources(directory: Path, count: int = 6) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(3)
    out = []
    for i in range(count):
        base = (rng.random((48, 200, 3)) * 255).astype(np.uint8)
        np.save(directory / f"v{i}.npy", np.stack([base[:, k * (i % 3) : k * (i % 3) + 80] for k in range(45 + i)]))
        out.append(directory / f"v{i}.npy")
    return out


def _build(sources, out, engine: Engine = Engine(), **hooks):
    from devil_dataset.builder.build import build
    from devil_dataset.builder.build_options import BuildHooks, BuildOptions

    hooks = {"curate": _fake_curate, "mask_loader": _fake_mask, "camera_scorer": _camera, "scene_scorer": _scene,
             **hooks}
    return build(sources, out, BuildOptions(size=BUILD_SIZE, progress=False, engine=engine), hooks=BuildHooks(**hooks))


def _hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.relative_to(root).parts[0].startswith(".")}


@pytest.fixture(scope="module")
def local_build(tmp_path_factory):
    root = tmp_path_factory.mktemp("ray-build")
    sources = _sources(root / "src")
    _build(sources, root / "local")
    return root, sources, _hashes(root / "local")


def test_build_identical_to_local_with_a_killed_worker(ray_cluster, local_build):
    root, sources, reference = local_build
    marker = str(root / "killed")
    _build(sources, root / "ray", engine=get_engine("ray"), clip_loader=_KillingLoader("v1-00000", marker))
    assert Path(marker).is_file()  # a worker died mid-build and Ray ran its task again
    assert len(reference) == 4 + 22 and _hashes(root / "ray") == reference  # card, manifest, LICENSE.md, preview


@pytest.mark.slow  # reason: a third and fourth build of the tiny set (~30 s on two shared cores)
def test_ray_build_resumes_after_a_crash(ray_cluster, local_build):
    root, sources, reference = local_build

    class Crash(Exception):
        pass

    written: list = []

    def crash_after_five(path):
        written.append(path)
        if len(written) == 5:
            raise Crash(path)

    with pytest.raises(Crash):
        _build(sources, root / "resumed", engine=get_engine("ray"), on_shard=crash_after_five)
    assert not (root / "resumed" / "README.md").exists()
    _build(sources, root / "resumed", engine=get_engine("ray"))
    assert _hashes(root / "resumed") == reference


# --- evaluate: a slice of the tiny dataset, the same documents from both engines ------------------------------

EVAL_METRICS = ["psnr", "ssim", "warp_error"]  # pcons needs frames of 50x50+


def test_evaluate_identical_to_local(ray_cluster, local_build):
    from devil_dataset.core.release_format import write_frame_pngs
    from devil_dataset.data import iter_slice
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.scoring.evaluate import evaluate_slice

    root, _, _ = local_build
    dataset = root / "local"
    preds = {}
    for method, shift in (("dark", -30), ("bright", 20)):
        for row in iter_slice(dataset, "all"):
            frames = np.clip(row["frames"].astype(int) + shift, 0, 255).astype(np.uint8)
            write_frame_pngs(np.where(row["hole"][..., None], frames, row["frames"]), root / method / row["clip_id"],
                             "pred")
        preds[method] = root / method
    opts = EvalOptions(flow="dis")
    kw = dict(options=opts, progress=False)
    one = evaluate_slice(dataset, "all", preds, EVAL_METRICS, **kw)
    local_two = evaluate_slice(dataset, "all", preds, EVAL_METRICS, engine=get_engine("local", jobs=2), **kw)
    ray_two = evaluate_slice(dataset, "all", preds, EVAL_METRICS, engine=get_engine("ray", jobs=2), **kw)
    assert ray_two == local_two == one
    assert one["dark"]["summary"]["psnr"] != one["bright"]["summary"]["psnr"]


class _KillingRow:
    """A slice row whose frames, read in a Ray worker for the first time for ``victim``, kill that worker (once,
    by marker file); in the driver (the test process) it is a plain row."""

    def __init__(self, row: dict, victim: str, marker: str):
        self.clip_id, self.hole, self._frames = row["clip_id"], row["hole"], row["frames"]
        self.victim, self.marker, self.driver = victim, marker, os.getpid()

    @property
    def frames(self) -> np.ndarray:
        if self.clip_id == self.victim and os.getpid() != self.driver and not os.path.exists(self.marker):
            Path(self.marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGKILL)
        return self._frames


def test_evaluate_identical_with_a_killed_worker(ray_cluster, local_build):
    from devil_dataset.core.release_format import write_frame_pngs
    from devil_dataset.data import iter_slice
    from devil_dataset.eval.metrics.metric import EvalOptions
    from devil_dataset.eval.scoring.evaluate import evaluate_slice

    root, _, _ = local_build
    dataset = root / "local"
    rows = list(iter_slice(dataset, "all"))
    pred = root / "killed-pred"
    for row in rows:
        write_frame_pngs(np.where(row["hole"][..., None], 255 - row["frames"], row["frames"]), pred / row["clip_id"],
                         "pred")
    marker = str(root / "killed-eval")
    kw = dict(options=EvalOptions(flow="dis"), progress=False)
    reference = evaluate_slice(dataset, "all", [pred], EVAL_METRICS, engine=get_engine("local", jobs=2), rows=rows,
                               **kw)
    victim = str(rows[-1]["clip_id"])
    again = evaluate_slice(dataset, "all", [pred], EVAL_METRICS, engine=get_engine("ray", jobs=2),
                           rows=[_KillingRow(r, victim, marker) for r in rows], **kw)
    assert Path(marker).is_file() and int(Path(marker).read_text()) != os.getpid()  # a Ray worker died
    assert again == reference


def test_cli_evaluate_and_build_name_the_extra_without_ray(monkeypatch, tmp_path, capsys):
    from devil_dataset.cli import main

    monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    pred = tmp_path / "pred"
    pred.mkdir()
    assert main(["evaluate", "--dataset", str(tmp_path), "--config", "all", "--predictions", str(pred),
                 "--engine", "ray", "--metrics", "psnr", "--no-progress"]) == 2
    assert 'pip install "devil-dataset[ray]"' in capsys.readouterr().err
    assert main(["build", "--sample", "--out", str(tmp_path / "b"), "--engine", "ray", "--quiet"]) == 2
    assert 'pip install "devil-dataset[ray]"' in capsys.readouterr().err
    assert not (tmp_path / "b" / "README.md").exists()


def test_private_ray_token_restores_the_environment_and_removes_only_its_token_file(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    monkeypatch.delenv("RAY_AUTH_TOKEN", raising=False)  # the module's cluster (if up) holds one
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", "/elsewhere/token")
    with private_ray_token() as token:
        assert os.environ["RAY_AUTH_TOKEN"] == token and len(token) == 64
        assert os.environ["RAY_AUTH_MODE"] == "token" and "RAY_AUTH_TOKEN_PATH" not in os.environ
        os.environ["RAY_AUTH_MODE"] = "token"  # what ray.init() does to its process
        (tmp_path / ".ray").mkdir()
        (tmp_path / ".ray" / "auth_token").write_text("written by a local ray.init()")
    assert not (tmp_path / ".ray" / "auth_token").exists()
    assert "RAY_AUTH_MODE" not in os.environ and "RAY_AUTH_TOKEN" not in os.environ
    assert os.environ["RAY_AUTH_TOKEN_PATH"] == "/elsewhere/token"
    (tmp_path / ".ray" / "auth_token").write_text("the user's own token")
    with private_ray_token():
        pass
    assert (tmp_path / ".ray" / "auth_token").read_text() == "the user's own token"  # never touched


def test_connection_errors_name_the_token_mismatch_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(name, raising=False)
    failed = ConnectionError("Failed to connect to Ray cluster at 192.0.2.2:6399")
    assert connection_error_message("127.0.0.1:6399", failed) == (
        "cannot connect to the Ray cluster at 127.0.0.1:6399: Failed to connect to Ray cluster at 192.0.2.2:6399")
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("left by a local ray.init()")
    text = connection_error_message("127.0.0.1:6399", failed)
    assert "possible cause: a Ray token mismatch" in text and str(tmp_path / ".ray" / "auth_token") in text
    assert "ray get-auth-token" in text and "RAY_AUTH_MODE=disabled" in text and "docs/cluster.md" in text
    rejected = RuntimeError("Token authentication is enabled but the authentication token is invalid or incorrect.")
    assert "cause: the cluster rejected this process's Ray token (a token mismatch)" in connection_error_message(
        "127.0.0.1:6399", rejected)
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    assert "token" not in connection_error_message("127.0.0.1:6399", failed).split(": ", 1)[1]


LOCAL_RAY = """
import ray
from devil_dataset.core.engines.ray import private_ray_token
with private_ray_token():
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    assert ray.get(ray.remote(lambda: 2).remote()) == 2
    ray.shutdown()
"""


@pytest.mark.slow  # reason: starts and stops a local Ray (~20 s on two shared cores)
def test_a_local_ray_leaves_no_token_and_no_cluster_behind(tmp_path):
    """What benchmarks/ray_scaling.py does (a local ``ray.init()``), in a private HOME and temp dir."""
    _ray_or_skip()
    import shutil
    import subprocess

    ray_tmp = tempfile.mkdtemp(prefix="ray", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    env = {**os.environ, "HOME": str(tmp_path), "RAY_TMPDIR": ray_tmp}
    for name in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH", "RAY_ADDRESS"):
        env.pop(name, None)
    try:
        done = subprocess.run([sys.executable, "-c", LOCAL_RAY], env=env, capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        assert not (tmp_path / ".ray" / "auth_token").exists()
        time.sleep(2)
        assert [p.name for p in Path("/proc").iterdir() if p.name.isdigit() and ray_tmp in _cmdline(p)] == []
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""
