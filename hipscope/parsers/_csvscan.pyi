# Type stub of the optional C extension _csvscan (built from _csvscan.c; see setup.py).
from typing import Any

def __getattr__(name: str) -> Any: ...
