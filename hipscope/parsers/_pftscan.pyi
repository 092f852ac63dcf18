# Type stub of the optional C extension _pftscan (built from _pftscan.c,
# _pftdecode.c, _pftcols.c and _pftnum.c; see setup.py).
from typing import Any

def __getattr__(name: str) -> Any: ...
