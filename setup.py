"""Builds hipscope's C extensions: the CSV scanner behind the fast path of
hipscope/parsers/_fastcsv.py and the Perfetto wire-format walk behind
hipscope/parsers/pftrace/fast.py, the Kineto JSON scanner and a parallel whole-file read
(parsers/reading.py). All are optional: without a C compiler the install
succeeds, the pyarrow reader reads every CSV file, the protobuf classes every
.pftrace, msgspec every Kineto file and Python's read() every file (slower on big
ones). Everything else about the package is in pyproject.toml."""

import sys

from setuptools import Extension, setup

ARGS = [] if sys.platform == "win32" else ["-O3", "-std=c99", "-Wall", "-Wextra",
                                           "-Wno-unused-parameter"]
PFT_ARGS = [] if sys.platform == "win32" else ["-O3", "-std=gnu11", "-Wall", "-Wextra",
                                               "-Wno-unused-parameter", "-pthread"]
PFT_LINK = [] if sys.platform == "win32" else ["-pthread"]  # the decode-ahead thread

setup(ext_modules=[
    Extension("hipscope.parsers._fastread",  # a big file read in parallel (parsers/reading.py)
              ["hipscope/parsers/_fastread.c"], extra_compile_args=PFT_ARGS,
              extra_link_args=PFT_LINK, optional=True),
    Extension("hipscope.parsers._csvscan", ["hipscope/parsers/_csvscan.c"],
              extra_compile_args=ARGS, optional=True),
    Extension("hipscope.parsers._kinscan",  # Kineto JSON to columns (parsers/kineto/native.py)
              ["hipscope/parsers/_kinscan.c", "hipscope/parsers/_kinjson.c"],
              depends=["hipscope/parsers/_kinscan.h"],
              extra_compile_args=[a.replace("c99", "gnu11") for a in ARGS]
              + (["-pthread"] if ARGS else []), extra_link_args=["-pthread"] if ARGS else [],
              optional=True),
    Extension("hipscope.parsers._pftscan",
              ["hipscope/parsers/_pftscan.c", "hipscope/parsers/_pftdecode.c",
               "hipscope/parsers/_pftcols.c", "hipscope/parsers/_pftnum.c"],
              depends=["hipscope/parsers/_pftscan.h"], extra_compile_args=PFT_ARGS,
              extra_link_args=PFT_LINK, optional=True),
])
