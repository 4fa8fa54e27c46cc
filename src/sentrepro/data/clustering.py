"""The ``clustering`` benchmark's parsers under their historical name: the unit is :mod:`sentrepro.data.benchmarks.clustering`."""

from sentrepro.data.benchmarks.clustering import *  # noqa: F401,F403  (a thin re-export; the unit is the one place)
