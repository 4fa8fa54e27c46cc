"""The ``wos`` benchmark's parsers under their historical name: the unit is :mod:`sentrepro.data.benchmarks.wos`."""

from sentrepro.data.benchmarks.wos import *  # noqa: F401,F403  (a thin re-export; the unit is the one place)
