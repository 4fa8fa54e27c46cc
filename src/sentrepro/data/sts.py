"""The ``sts`` benchmark's parsers under their historical name: the unit is :mod:`sentrepro.data.benchmarks.sts`."""

from sentrepro.data.benchmarks.sts import *  # noqa: F401,F403  (a thin re-export; the unit is the one place)
