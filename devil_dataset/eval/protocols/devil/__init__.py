"""DEVIL's own evaluation protocol: the release's metrics over a slice, scored by :mod:`devil_dataset.eval.scoring`
(the release's metrics); ``definition.py`` is the protocol as the registry reads it."""
