"""CLI: `devil build`, `devil import-release`, `devil publish` (parsing, exit codes, output)."""
from __future__ import annotations

import hashlib
import os
import tarfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
import pytest

from devil_dataset.cli import main


@pytest.mark.parametrize("command", ["build", "import-release", "publish"])
def test_help_has_runnable_example(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert f"devil {command}" in out and "examples:" in out


def test_build_argument_errors(tmp_path, capsys):
    assert main(["build", "--out", str(tmp_path / "o")]) == 2  # neither sources nor --sample
    assert "exactly one" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["build", str(tmp_path / "missing.mp4"), "--out", str(tmp_path / "o")])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["build", "--sample", "--out", str(tmp_path / "o"), "--resolution", "832by480"])
    assert exc.value.code == 2
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(SystemExit) as exc:
        main(["build", "--sample", "--out", str(f)])
    assert exc.value.code == 2


def test_import_release_and_publish_dry_run(tmp_path, capsys):
    import io

    from PIL import Image

    def add(tar, name, array):
        buf = io.BytesIO()
        Image.fromarray(array).save(buf, format="PNG")
        info = tarfile.TarInfo(name)
        info.size = buf.tell()
        buf.seek(0)
        tar.addfile(info, buf)

    with tarfile.open(tmp_path / "flickr-all.tar", "w") as tar:
        for v in ("a-x-00000", "b-y-00000"):
            for t in range(3):
                add(tar, f"{v}/frame_{t:04d}_gt.png", np.full((16, 24, 3), t * 40, np.uint8))
    with tarfile.open(tmp_path / "fvi-fgs-h.tar", "w") as tar:
        for m in ("devil_fgs-h_fgm-h_fgd-h_00000", "devil_fgs-h_fgm-l_fgd-l_00001"):
            for t in range(3):
                add(tar, f"{m}/frame_{t:04d}_mask.png", np.ones((16, 24), bool))
    out = tmp_path / "ds"
    assert main(["import-release", str(tmp_path / "flickr-all.tar"), str(tmp_path / "fvi-fgs-h.tar"),
                 "--out", str(out), "--quiet"]) == 0
    text = capsys.readouterr().out
    assert "fg_size_high" in text and "skipped: needs fvi-all" in text
    assert main(["publish", str(out), "--repo-id", "org/devil", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "data/fg_size_high/test-00000-of-00002.parquet" in text and "would upload 6 files" in text
    assert ".devil-build" not in text
    assert main(["publish", str(out), "--repo-id", "bad id"]) == 2
    assert main(["import-release", str(tmp_path / "flickr-all.tar"), "--out", str(tmp_path / "x"), "--quiet"]) == 2


@pytest.mark.slow
def test_build_sample_end_to_end_and_byte_identical(tmp_path, capsys):
    """Slow (about 1-3 minutes per build on 2 cores): the real sample build twice, loaded through `datasets`."""
    import datasets

    from devil_dataset.core.slices import SLICES

    for name in ("a", "b"):
        assert main(["build", "--sample", "--out", str(tmp_path / name), "--quiet"]) == 0
    assert "camera_motion_high" in capsys.readouterr().out

    def hashes(root):
        return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted(root.rglob("*")) if p.is_file() and not p.relative_to(root).parts[0].startswith(".")}

    assert hashes(tmp_path / "a") == hashes(tmp_path / "b")
    for config in SLICES:
        ds = datasets.load_dataset(str(tmp_path / "a"), config, split="test", cache_dir=str(tmp_path / "cache"))
        assert 3 <= len(ds) <= 6 and 45 <= ds[0]["num_frames"] <= 60
        assert ds[0]["width"] == 832 and ds[0]["height"] == 480


@pytest.mark.parametrize("flag, backend", [([], "auto"), (["--decoder", "decord"], "decord"),
                                           (["--decoder", "pyav"], "pyav")])
def test_build_passes_the_decoder_choice_to_curation(tmp_path, monkeypatch, capsys, flag, backend):
    import devil_dataset.builder.build as B  # `devil build` imports build() from here when it runs
    from devil_dataset.builder.build import BuildResult

    seen = {}

    def fake_build(sources, out, options):
        seen.update(options.curate_options)
        return BuildResult(out, 0, 0, 0)

    monkeypatch.setattr(B, "build", fake_build)
    src = tmp_path / "v.mp4"
    src.write_bytes(b"x")
    assert main(["build", str(src), "--out", str(tmp_path / "o"), *flag]) == 0
    assert seen == {"backend": backend}
    with pytest.raises(SystemExit):
        main(["build", str(src), "--out", str(tmp_path / "o"), "--decoder", "opencv"])
    assert "invalid choice" in capsys.readouterr().err


def _captured_options(monkeypatch, tmp_path, argv):
    """The BuildOptions `devil build ARGV` passes to build() (which is replaced: nothing is built)."""
    import devil_dataset.builder.build as B  # `devil build` imports build() from here when it runs
    from devil_dataset.builder.build import BuildResult

    seen = []
    monkeypatch.setattr(B, "build", lambda sources, out, options: seen.append((sources, out, options))
                        or BuildResult(out, 0, 0, 0))
    assert main(["build", *argv, "--out", str(tmp_path / "o")]) == 0
    (sources, out, options), = seen
    return sources, options


def test_build_flags_make_the_options(tmp_path, monkeypatch):
    from devil_dataset.builder.build_options import BuildOptions
    from devil_dataset.core.engines import Engine

    src = tmp_path / "v.mp4"
    src.write_bytes(b"x")
    (tmp_path / "bg.csv").write_text("clip_id,label\nv-00000,high\n")
    sources, options = _captured_options(monkeypatch, tmp_path, [str(src)])
    assert [str(s) for s in sources] == [str(src)]
    assert options == BuildOptions(curate_options={"backend": "auto"})  # the flags' defaults are the options'
    _, options = _captured_options(monkeypatch, tmp_path, [
        str(src), "--seed", "3", "--resolution", "64x48", "--frame-format", "png", "--license", "cc-by-4.0",
        "--detector", "orb", "--bg-labels", str(tmp_path / "bg.csv"), "--jobs", "2", "--quiet", "--decoder", "pyav",
        "--parity", "corrected", "--rank-mode", "release"])
    assert options == BuildOptions(seed=3, size=(64, 48), frame_format="png", license="cc-by-4.0", detector="orb",
                                   bg_labels={"v-00000": "high"}, engine=Engine("local", 2), progress=False,
                                   curate_options={"backend": "pyav"}, parity="corrected", rank_mode="release")
    assert options.modes() == {"parity": "corrected", "scene_mode": "corrected", "rank_mode": "release"}
    _, options = _captured_options(monkeypatch, tmp_path, ["--sample", "--scene-mode", "corrected"])
    assert options.sample and options.modes() == {"parity": "release", "scene_mode": "corrected",
                                                  "rank_mode": "release"}


def test_release_rebuild_gets_the_same_options(tmp_path, monkeypatch, capsys):
    import devil_dataset.builder.release_rebuild as R  # `devil build` imports rebuild_release() when it runs

    seen = []

    def fake_rebuild(sources_dir, out, options):
        seen.append(options)
        raise SystemExit(0)

    monkeypatch.setattr(R, "rebuild_release", fake_rebuild)
    with pytest.raises(SystemExit):
        main(["build", "--release-sources", str(tmp_path), "--out", str(tmp_path / "o"), "--parity", "corrected"])
    assert seen[0].modes() == {"parity": "corrected", "scene_mode": "corrected", "rank_mode": "corrected"}


def test_build_parity_flag_errors(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["build", "--sample", "--out", str(tmp_path / "o"), "--parity", "strict"])
    assert exc.value.code == 2 and "invalid choice: 'strict'" in capsys.readouterr().err
    assert main(["build", "--sample", "--out", str(tmp_path / "o"), "--ray-address", "h:1"]) == 2
    assert "--ray-address needs --engine ray" in capsys.readouterr().err
