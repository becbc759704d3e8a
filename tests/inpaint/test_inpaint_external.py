"""External methods: a command template run per clip on the release layout, and a module:function callable."""
import sys
import textwrap

import numpy as np
import pytest

from devil_dataset.core.errors import DevilError
from devil_dataset.inpaint.external import callable_inpainter, command_inpainter, fill_template, load_callable

# A tiny "method": fills hole pixels with the mean known colour of each frame, after checking its inputs.
METHOD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import numpy as np
    from PIL import Image

    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    src, dst = Path(args["--in"]), Path(args["--out"])
    mode = args.get("--mode", "ok")
    gts = sorted(src.glob("frame_*_gt.png"))
    masks = sorted(src.glob("frame_*_mask.png"))
    assert len(gts) == len(masks) == int(args["--n"]), (len(gts), len(masks))
    if mode == "fail":
        print("boom: the model crashed", file=sys.stderr)
        sys.exit(3)
    for i, (g, m) in enumerate(zip(gts, masks)):
        frame = np.asarray(Image.open(g).convert("RGB")).copy()
        known = np.asarray(Image.open(m).convert("1"))
        assert frame.shape[1] == int(args["--w"]) and frame.shape[0] == int(args["--h"])
        if args.get("--expect-zero") == "1":
            assert (frame[~known] == 0).all(), "hole pixels were not blanked"
        if "--divisor" in args:
            assert frame.shape[0] % int(args["--divisor"]) == 0 and frame.shape[1] % int(args["--divisor"]) == 0
        frame[~known] = frame[known].mean(axis=0).astype(np.uint8)
        if (mode == "few" and i == len(gts) - 1) or (mode == "gap" and i == 0):
            continue
        if mode == "small":
            frame = frame[:-2]
        Image.fromarray(frame).save(dst / f"frame_{i:04d}_pred.png")
    """
)


@pytest.fixture
def inpaint_method_script(tmp_path):
    path = tmp_path / "method.py"
    path.write_text(METHOD)
    return path


@pytest.fixture
def inpaint_ext_clip():
    rng = np.random.default_rng(1)
    frames = rng.integers(0, 256, (3, 30, 44, 3), dtype=np.uint8)
    hole = np.zeros((3, 30, 44), bool)
    hole[:, 10:20, 12:30] = True
    return frames, hole


def _expected(frames, hole):
    out = frames.copy()
    for t in range(len(frames)):
        out[t][hole[t]] = frames[t][~hole[t]].mean(axis=0).astype(np.uint8)
    return out


def _template(script, extra=""):
    return (f"{sys.executable} {script} --in {{input_dir}} --out {{output_dir}} --n {{num_frames}} "
            f"--w {{width}} --h {{height}} {extra}")


def test_command_success_zero_hole_pixels(inpaint_method_script, inpaint_ext_clip):
    frames, hole = inpaint_ext_clip
    inpaint = command_inpainter(_template(inpaint_method_script, "--expect-zero 1"))
    out = inpaint(frames, hole, clip_id="c1")
    assert out.shape == frames.shape and out.dtype == np.uint8
    assert np.array_equal(out, _expected(frames, hole))


def test_command_gt_hole_pixels_reach_the_method(inpaint_method_script, inpaint_ext_clip):
    frames, hole = inpaint_ext_clip
    with pytest.raises(DevilError, match="hole pixels were not blanked"):
        command_inpainter(_template(inpaint_method_script, "--expect-zero 1"), hole_pixels="gt")(frames, hole)
    out = command_inpainter(_template(inpaint_method_script), hole_pixels="gt")(frames, hole)
    assert np.array_equal(out, _expected(frames, hole))


def test_command_with_size_divisor_pads_and_crops(inpaint_method_script, inpaint_ext_clip):
    frames, hole = inpaint_ext_clip
    out = command_inpainter(_template(inpaint_method_script, "--divisor 16"), size_divisor=16)(frames, hole)
    assert out.shape == frames.shape
    assert np.array_equal(out[~hole], frames[~hole])
    for t in range(len(frames)):  # one flat colour per frame (the mean over the padded frame's known pixels)
        assert len(np.unique(out[t][hole[t]], axis=0)) == 1
    # the method saw padded 32x48 frames: the width/height placeholders were filled with the padded size
    with pytest.raises(DevilError, match="AssertionError"):
        command_inpainter(_template(inpaint_method_script, "--divisor 64"), size_divisor=16)(frames, hole, clip_id="p")


@pytest.mark.parametrize(
    "mode, message",
    [
        ("fail", r"clip bad-clip: command failed with exit code 3: .*\n.*boom: the model crashed"),
        ("few", r"clip bad-clip: the command wrote 2 frame_%04d_pred.png files .*expected 3"),
        ("gap", r"clip bad-clip: bad output in {output_dir}: .*not numbered 0..N-1 \(missing \[0\]\)"),
        ("small", r"clip bad-clip: the command wrote 44x28 predictions, expected 44x30"),
    ],
)
def test_command_failures_name_the_clip(inpaint_method_script, inpaint_ext_clip, mode, message):
    frames, hole = inpaint_ext_clip
    with pytest.raises(DevilError, match=message):
        command_inpainter(_template(inpaint_method_script, f"--mode {mode}"))(frames, hole, clip_id="bad-clip")


def test_command_template_errors(inpaint_ext_clip):
    frames, hole = inpaint_ext_clip
    with pytest.raises(DevilError, match="must contain {output_dir}"):
        command_inpainter("python x.py {input_dir}")
    with pytest.raises(DevilError, match="command not found: 'no-such-program-xyz'"):
        command_inpainter("no-such-program-xyz {output_dir}")(frames, hole, clip_id="c")
    with pytest.raises(DevilError, match="cannot parse"):
        fill_template("python 'unclosed {output_dir}", {})


def test_fill_template_substitutes_only_known_placeholders():
    args = fill_template("m.py --in {input_dir} {unknown} --json '{\"a\": 1}' --id={clip_id}",
                         {"input_dir": "/x y", "clip_id": "c"})
    assert args == ["m.py", "--in", "/x y", "{unknown}", "--json", '{"a": 1}', "--id=c"]


def test_callable_from_file_and_module(tmp_path, inpaint_ext_clip):
    frames, hole = inpaint_ext_clip
    (tmp_path / "my_method.py").write_text(
        "import numpy as np\n"
        "def inpaint(frames, hole):\n"
        "    assert (frames[hole] == 0).all()\n"
        "    out = frames.copy(); out[hole] = 77; return out\n"
        "def broken(frames, hole):\n"
        "    raise RuntimeError('nope')\n"
    )
    out = callable_inpainter(f"{tmp_path / 'my_method.py'}:inpaint")(frames, hole)
    assert (out[hole] == 77).all() and np.array_equal(out[~hole], frames[~hole])
    padded = callable_inpainter(f"{tmp_path / 'my_method.py'}:inpaint", size_divisor=16)(frames, hole)
    assert np.array_equal(padded, out)
    assert load_callable("devil_dataset.inpaint.spatial:telea").__name__ == "telea"
    with pytest.raises(DevilError, match="has no callable 'missing'"):
        load_callable(f"{tmp_path / 'my_method.py'}:missing")
    with pytest.raises(DevilError, match="no such file"):
        load_callable(f"{tmp_path / 'nope.py'}:inpaint")
    with pytest.raises(DevilError, match="cannot import no_such_module_xyz"):
        load_callable("no_such_module_xyz:fn")
    with pytest.raises(DevilError, match="expected module:function"):
        load_callable("just_a_name")


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for its reaper counts as dead)."""
    import pathlib

    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_dead(pid: int, seconds: float = 5.0) -> bool:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _spawning_template(pid_file) -> str:
    # the shell starts a long sleep in the background, records its pid and waits: a GPU job stand-in
    return f"sh -c 'sleep 120 & echo $! > {pid_file}; wait' {{output_dir}}"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_command_timeout_kills_the_whole_process_group(tmp_path, inpaint_ext_clip):
    import time

    frames, hole = inpaint_ext_clip
    pid_file = tmp_path / "child.pid"
    t0 = time.monotonic()
    with pytest.raises(DevilError, match=r"clip slow: command timed out after 1.0 s"):
        command_inpainter(_spawning_template(pid_file), timeout=1.0)(frames, hole, clip_id="slow")
    assert time.monotonic() - t0 < 30  # did not wait for the sleeping child
    child = int(pid_file.read_text())
    assert _wait_dead(child), f"child {child} survived the timeout"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_ctrl_c_kills_the_whole_process_group(tmp_path, inpaint_ext_clip):
    import signal

    frames, hole = inpaint_ext_clip
    pid_file = tmp_path / "child.pid"

    def interrupt(signum, frame):  # what Ctrl-C does to the main thread
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, interrupt)
    signal.setitimer(signal.ITIMER_REAL, 1.5)
    try:
        with pytest.raises(KeyboardInterrupt):
            command_inpainter(_spawning_template(pid_file))(frames, hole, clip_id="c")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    child = int(pid_file.read_text())
    assert _wait_dead(child), f"child {child} survived Ctrl-C"
