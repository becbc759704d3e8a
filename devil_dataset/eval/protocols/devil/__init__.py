"""DEVIL's own evaluation protocol: the release's metrics over a slice, scored by :mod:`devil_dataset.eval.scoring`
(SPEC section 7); ``definition.py`` is the protocol as the registry reads it."""
