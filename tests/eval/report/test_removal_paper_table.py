"""``devil report --paper-table`` of ``--protocol prove`` results: PROVE's removal table (one row per method, RC-S ▲,
RC-T ▼, background and masked PSNR / SSIM with intervals and a caption), in .md and .tex; mixed protocols refused."""
from __future__ import annotations

from devil_dataset.cli import main
from devil_dataset.eval.scoring.results import write_results


def removal_doc(method: str, rc_s: float, rc_t: float, bg_psnr: float, n: int = 4) -> dict:
    u = {"n": n, "level": 0.95, "method": "bootstrap BCa, 9999 resamples over videos, seed 0"}
    summary = {"rc_s": rc_s, "rc_t": rc_t, "bg_psnr": bg_psnr, "bg_ssim": 0.95, "masked_psnr": 21.5,
               "masked_ssim": 0.61}
    return {"format": "devil-results", "format_version": 1, "protocol": "prove", "method": method, "slice": None,
            "num_videos": n, "summary": summary, "videos": {},
            "uncertainty": {"rc_s": {**u, "ci": [rc_s - 0.01, rc_s + 0.01]}, "rc_t": {**u, "ci": [rc_t - 0.1,
                                                                                            rc_t + 0.1]}}}


def test_removal_results_give_the_removal_table(tmp_path, capsys):
    a = write_results(tmp_path / "a.json", removal_doc("a", 0.8123, 1.5, 35.123))
    b = write_results(tmp_path / "b.json", removal_doc("b", 0.7, 2.25, 31.0))
    assert main(["report", "--paper-table", f"ROSE={a}", f"ROSE={b}", "--out", str(tmp_path / "t")]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == ("| Method | ROSE RC-S \u25b2 | ROSE RC-T \u25bc | ROSE BG PSNR \u25b2 | ROSE BG SSIM \u25b2 | "
                        "ROSE Masked PSNR \u25b2 | ROSE Masked SSIM \u25b2 |")
    assert lines[2] == "| a | 0.8123 [0.8023, 0.8223] | 1.5000 [1.4000, 1.6000] | 35.12 | 0.9500 | 21.50 | 0.6100 |"
    assert lines[3].startswith("| b | 0.7000 [0.6900, 0.7100] | 2.2500 [2.1500, 2.3500] | 31.00 |")
    assert "\u25b2 / \u25bc: higher / lower is better" in out
    assert "[lo, hi]: 95% bootstrap BCa, 9999 resamples over videos, seed 0 (RC-S, RC-T)" in out
    assert "RC-S: the fill against its surroundings" in out and "capped at the one-grey-level PSNR" in out
    assert (tmp_path / "t" / "paper_table.md").read_text() == out
    tex = (tmp_path / "t" / "paper_table.tex").read_text()
    assert r"\multicolumn{6}{c}{ROSE}" in tex and r"RC-S $\uparrow$ & RC-T $\downarrow$" in tex
    assert r"a & 0.8123 [0.8023, 0.8223] & 1.5000 [1.4000, 1.6000] & 35.12" in tex


def test_mixed_protocols_are_refused(tmp_path, capsys):
    a = write_results(tmp_path / "a.json", removal_doc("a", 0.8, 1.5, 35.0))
    pp = removal_doc("p", 0.8, 1.5, 35.0)
    pp.update(protocol="propainter", summary={"psnr": 30.0}, uncertainty={})
    p = write_results(tmp_path / "p.json", pp)
    assert main(["report", "--paper-table", f"DAVIS={p}", f"ROSE={a}"]) == 2
    assert "results of different protocols in one table (propainter: p / DAVIS, prove: a / ROSE)" in \
        capsys.readouterr().err
