"""Builds hipscope's one C extension, the CSV scanner behind the fast path of
hipscope/parsers/_fastcsv.py. It is optional: without a C compiler the install
succeeds and the pyarrow reader reads every CSV file (slower on big ones).
Everything else about the package is in pyproject.toml."""

import sys

from setuptools import Extension, setup

ARGS = [] if sys.platform == "win32" else ["-O3", "-std=c99", "-Wall", "-Wextra",
                                           "-Wno-unused-parameter"]

setup(ext_modules=[Extension("hipscope.parsers._csvscan", ["hipscope/parsers/_csvscan.c"],
                             extra_compile_args=ARGS, optional=True)])
