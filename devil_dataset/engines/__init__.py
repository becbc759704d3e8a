"""Engines: where a stage function runs over its records. Each gives the same results, in the same order.

- :func:`devil_dataset.engines.local.map_ordered`: in this process (``jobs=1``) or in a pool of local worker
  processes with bounded in-flight work.
"""
