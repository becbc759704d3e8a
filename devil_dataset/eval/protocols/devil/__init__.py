"""DEVIL's own evaluation protocol: the nine metrics of the release over a slice, scored by
:mod:`devil_dataset.eval.scoring` (SPEC section 7)."""
