"""PROVE's declaration is the one source of its metric names: the run, the RC-S / RC-T module and the diagnosis read
the definition's tuples (no second copy to drift)."""
from __future__ import annotations

from devil_dataset.diagnosis import removal as diagnosis_removal
from devil_dataset.eval.protocols.prove import definition, removal, run


def test_removal_metrics_are_defined_once():
    assert definition.REMOVAL_METRICS == ("rc_s", "rc_t")
    assert removal.REMOVAL_METRICS is definition.REMOVAL_METRICS
    assert run.REMOVAL_METRICS is definition.REMOVAL_METRICS
    assert diagnosis_removal.REMOVAL_METRICS is definition.REMOVAL_METRICS
    assert definition.PROVE_METRICS[:2] == definition.REMOVAL_METRICS
    assert set(definition.PROTOCOL.needs) == set(definition.REMOVAL_METRICS)
