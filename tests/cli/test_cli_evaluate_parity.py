"""``devil evaluate --parity X`` with a protocol that does not declare X is refused (exit 2, naming the protocol's
modes) by the one runner path, before any input is read; a declared mode runs."""
from __future__ import annotations

import pytest

from devil_dataset.cli import main
from devil_dataset.eval.protocols.declaration import EvaluationProtocol, InputLayout, ResultKey
from devil_dataset.eval.protocols.registry import get_protocol, protocols, register_protocol, unregister_protocol

CALLS: list = []


def _evaluate(request) -> dict:
    """The protocol's run: records the request and stops (the refusal happens before it)."""
    CALLS.append(request)
    raise SystemExit(0)


@pytest.fixture
def release_only():
    protocol = register_protocol(EvaluationProtocol(
        name="release_only", description="a protocol with one way of scoring",
        keys=(ResultKey("ro_err", False, ".3f", "RO error"),), layouts=(InputLayout("pairs", ("gt_dir", "pred_dir")),),
        metrics=("ro_err",), default_metrics=("ro_err",), parity_modes={"release": "as its paper"},
        evaluate=f"{__name__}:_evaluate"))
    CALLS.clear()
    yield protocol
    unregister_protocol("release_only")


def test_a_parity_the_protocol_does_not_declare_is_refused(release_only, tmp_path, capsys):
    (tmp_path / "gt").mkdir(), (tmp_path / "pred").mkdir()
    code = main(["evaluate", "--protocol", "release_only", "--gt-dir", str(tmp_path / "gt"), "--pred-dir",
                 str(tmp_path / "pred"), "--parity", "corrected"])
    assert code == 2 and CALLS == []
    err = capsys.readouterr().err
    assert "--parity corrected: the release_only protocol has no corrected mode (its modes: release = as its paper)" \
        in err


def test_a_declared_parity_reaches_the_protocol(release_only, tmp_path):
    (tmp_path / "gt").mkdir(), (tmp_path / "pred").mkdir()
    with pytest.raises(SystemExit):
        main(["evaluate", "--protocol", "release_only", "--gt-dir", str(tmp_path / "gt"), "--pred-dir",
              str(tmp_path / "pred"), "--parity", "release"])
    assert len(CALLS) == 1 and CALLS[0].options.parity == "release"


def test_every_package_protocol_declares_both_parities():
    for name in ("devil", "propainter", "prove"):
        protocol = get_protocol(name)
        assert set(protocol.parity_modes) == {"release", "corrected"}
        for parity in ("release", "corrected"):
            protocol.check_parity(parity)
    assert "release_only" not in protocols()


def test_a_protocol_declaring_no_mode_takes_only_the_default():
    bare = EvaluationProtocol("bare", "", (), (), (), ())
    bare.check_parity("release")
    with pytest.raises(Exception, match="--parity corrected: the bare protocol has no corrected mode .its modes: "
                                        "release only."):
        bare.check_parity("corrected")
