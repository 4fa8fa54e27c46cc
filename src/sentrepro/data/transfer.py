"""The ``transfer`` benchmark's parsers under their historical name: the unit is :mod:`sentrepro.data.benchmarks.transfer`."""

from sentrepro.data.benchmarks.transfer import *  # noqa: F401,F403  (a thin re-export; the unit is the one place)
